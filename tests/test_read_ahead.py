"""verify reads a large log in a forked child: the same records, the same end, the same errors, the same report.

:mod:`ledger.read_ahead` runs a log's checked read in a child and sends the records over a pipe. These tests
hold it to a read in the process itself: every record type comes back equal, a damaged or torn log gives
the same records and then the same error or torn tail, ``verify`` gives the same report or the same error
either way, a child that dies leaves ``verify`` to read the log itself, and no child outlives the call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.scenario import record_run
from plantrail.ledger import read_ahead
from plantrail.ledger import verify as verify_module
from plantrail.ledger.codec import GENESIS_PREV, decode, encode
from plantrail.ledger.errors import PlantrailError
from plantrail.ledger.events import Record, Source, StepCompleted
from plantrail.ledger.read_ahead import ReadAhead, worth_forking
from plantrail.ledger.stores.jsonl import LogReader
from plantrail.ledger.verify import verify_log
from tests.strategies import EVENTS, SOURCES

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the read ahead forks")

EVENTS_IN_LOG = 1500  # three batches and a part


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a run with replans and late results, recorded through the ledger."""
    path = record_run(tmp_path_factory.mktemp("read-ahead") / "run.jsonl", EVENTS_IN_LOG)
    return path.read_bytes()


def _log(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_bytes(data)
    return path


def _damaged(data: bytes, how: str) -> bytes:
    """The recorded log with one kind of damage, far enough in that whole batches come before it."""
    lines = data.split(b"\n")
    at = 1100
    if how == "flipped byte":
        line = lines[at]
        lines[at] = line[:40] + bytes([line[40] ^ 1]) + line[41:]
    elif how == "line removed":
        del lines[at]
    elif how == "lines swapped":
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    elif how == "torn tail":
        return data + lines[at][:100]
    elif how == "zero-filled tail":
        return data + b"\0" * 300
    elif how == "not json":
        lines[at] = b"{" + lines[at][2:]
    return b"\n".join(lines)


def _outcome(read: Callable[[], Iterator[Record]], ended: Callable[[], tuple[int, Any]]) -> tuple[Any, ...]:
    """The records a read yields, then how it ended: its end and torn tail, or its error (class and fields)."""
    records: list[Record] = []
    try:
        for record in read():
            records.append(record)
    except PlantrailError as exc:
        return records, (type(exc), exc.code, exc.message, dict(exc.fields))
    return records, ended()


@pytest.mark.parametrize(
    "how", ["intact", "flipped byte", "line removed", "lines swapped", "torn tail", "zero-filled tail", "not json"]
)
def test_the_child_reads_what_a_reader_reads(tmp_path: Path, recorded: bytes, how: str) -> None:
    """Records, end and torn tail, or the records before the damage and the same error."""
    path = _log(tmp_path, recorded if how == "intact" else _damaged(recorded, how))
    with LogReader(path) as reader:
        here = _outcome(reader.records, lambda: (reader.end, reader.torn))
    with LogReader(path) as reader, ReadAhead(reader) as ahead:
        there = _outcome(ahead.records, lambda: (ahead.end, ahead.torn))
    assert there == here
    assert len(here[0]) > 1000


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(EVENTS, SOURCES, st.none() | st.text(max_size=8)), min_size=1, max_size=6))
def test_records_of_every_type_cross_the_pipe_unchanged(batch: list[tuple[Any, Source | None, str | None]]) -> None:
    """A batch of records of any type, source and key, sent as the child sends it, decodes to equal records."""
    records = []
    for seq, (event, source, key) in enumerate(batch):
        line, _ = encode(
            seq=seq, ts="2026-12-02T10:00:00Z", run="r", plan_version=1, actor="agent", data=event,
            prev=GENESIS_PREV, source=source, key=key,
        )  # fmt: skip
        records.append(decode(line[:-1], seq + 1))
    assert read_ahead._decoder()(msgspec.msgpack.Encoder().encode(records)) == records


def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "worth_forking", lambda size: True)


def _verdict(path: Path) -> Any:
    try:
        return verify_log(path)
    except PlantrailError as exc:
        return type(exc), exc.code, exc.message, dict(exc.fields)


def _illegal(data: bytes) -> bytes:
    """The recorded log with one more record no rule allows (a completion of a step that never started)."""
    path_lines = data.rstrip(b"\n").split(b"\n")
    last = decode(path_lines[-1], len(path_lines))
    line, _ = encode(
        seq=last.seq + 1, ts=last.ts, run=last.run, plan_version=last.plan_version, actor="agent",
        data=StepCompleted(step="no-such-step", attempt=1, evidence=("x",)), prev=last.h,
    )  # fmt: skip
    return data + line


@pytest.mark.parametrize("how", ["intact", "flipped byte", "torn tail", "illegal event"])
def test_verify_gives_the_same_answer_read_in_a_child(
    tmp_path: Path, recorded: bytes, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report (or the error) of verify reading in a child equals the one of verify reading itself."""
    data = {"intact": recorded, "illegal event": _illegal(recorded)}.get(how) or _damaged(recorded, how)
    path = _log(tmp_path, data)
    here = _verdict(path)
    _forking(monkeypatch)
    assert _verdict(path) == here
    if how == "illegal event":
        assert here[1] == "ILLEGAL_EVENT"


def _garbling(reader: LogReader, fd: int) -> None:
    os.write(fd, read_ahead._HEAD.pack(read_ahead._RECORDS, 12) + b"\0" * 8 + b"\xc1\xc1\xc1\xc1")
    os._exit(0)


@pytest.mark.parametrize("child", [lambda reader, fd: os._exit(1), _garbling], ids=["dies silently", "garbles"])
def test_a_child_that_fails_leaves_verify_to_read_the_log_itself(
    tmp_path: Path, recorded: bytes, monkeypatch: pytest.MonkeyPatch, child: Callable[[LogReader, int], None]
) -> None:
    """A child that exits without a word (killed, out of memory) or sends what cannot be read costs time, not the
    answer."""
    path = _log(tmp_path, recorded)
    here = verify_log(path)
    _forking(monkeypatch)
    monkeypatch.setattr(read_ahead, "_serve", child)
    with LogReader(path) as reader, ReadAhead(reader) as ahead, pytest.raises(read_ahead.ReadAheadLost):
        list(ahead.records())
    assert verify_log(path) == here


def test_no_child_outlives_a_verify_that_stops_early(
    tmp_path: Path, recorded: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record refused near the start stops verify while the child still reads; the child is stopped and reaped."""
    path = _log(tmp_path, recorded)
    judged = verify_module.check

    def refusing(state: Any, data: Any, plan_version: int, *, now: str | None = None) -> Any:
        if state.last_seq == 10:
            raise PlantrailError("STEP_NOT_FOUND", "refused for the test")
        return judged(state, data, plan_version, now=now)

    monkeypatch.setattr(verify_module, "check", refusing)
    _forking(monkeypatch)
    with pytest.raises(PlantrailError, match="seq 11"):
        verify_log(path)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_only_a_large_log_in_a_process_of_one_thread_is_read_in_a_child() -> None:
    """Small logs are read in the process; so is any log while another thread runs (a fork copies one thread)."""
    large = read_ahead.WORTH_FORKING
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert not worth_forking(large - 1)
    assert worth_forking(large) == (cores >= 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not worth_forking(large)
    finally:
        stop.set()
        other.join()
