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
from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Complete, Start
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.stores.jsonl.read_ahead import ReadAhead, worth_forking
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Record, Source, StepCompleted
from tests.strategies import EVENTS, SOURCES, TRACES

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the read ahead forks")

EVENTS_IN_LOG = 1500  # three batches and a part


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a run with replans and late results, recorded through the ledger."""
    path = record_run(tmp_path_factory.mktemp("read-ahead") / "run.jsonl", EVENTS_IN_LOG)
    return path.read_bytes()


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a run written in group commits of 300 starts and 300 completions, so that the child's batches
    of 512 records end inside a group commit (where the reader stands after the group, not after the record)."""
    steps = [{"id": f"s{i}", "title": f"step {i}", "completion_evidence": "done"} for i in range(300)]
    draft = {
        "goal": "many steps at once",
        "acceptance_criteria": [{"id": "c1", "description": "all done"}],
        "steps": steps,
        "policy": {"max_in_progress": "unlimited"},
    }
    path = tmp_path_factory.mktemp("grouped") / "run.jsonl"
    with Ledger.create(path, draft, fsync="none", nonce="0" * 32) as ledger:
        ledger.execute_many([Start(step=s["id"]) for s in steps])
        ledger.execute_many([Complete(step=s["id"], evidence=["ok"]) for s in steps])
    data = path.read_bytes()
    assert data.count(b'"type":"log.batch"') == 4
    return data


def _log(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_bytes(data)
    return path


def _damaged(data: bytes, how: str) -> bytes:
    """The recorded log with one kind of damage, far enough in that whole batches come before it."""
    lines = data.split(b"\n")
    at = min(1100, len(lines) - 10)
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
@given(st.lists(st.tuples(EVENTS, SOURCES, st.none() | st.text(max_size=8), TRACES), min_size=1, max_size=6))
def test_records_of_every_type_cross_the_pipe_unchanged(
    batch: list[tuple[Any, Source | None, str | None, Any]],
) -> None:
    """A batch of records of any type, source, key and trace context, sent as the child sends it, decodes to
    equal records."""
    records = []
    for seq, (event, source, key, trace) in enumerate(batch):
        line, _ = encode(
            seq=seq, ts="2026-12-02T10:00:00Z", run="r", plan_version=1, actor="agent", data=event,
            prev=GENESIS_PREV, source=source, key=key, trace=trace,
        )  # fmt: skip
        records.append(decode(line[:-1], seq + 1))
    batch_of, decode_batch = read_ahead._message_types()
    assert decode_batch(msgspec.msgpack.Encoder().encode(batch_of(None, records))).records == records


def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_ahead, "worth_forking", lambda size: True)


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


def _garbling(reader: LogReader, start: Any, run: Any, fd: int) -> None:
    os.write(fd, read_ahead._HEAD.pack(read_ahead._RECORDS, 4) + b"\xc1\xc1\xc1\xc1")
    os._exit(0)


def _dying_after(batches: int) -> Callable[..., None]:
    """A child's send that sends ``batches`` batches of records, then kills the child (as out of memory would)."""
    send = read_ahead._send
    sent = [0]

    def sending(out: Any, kind: bytes, body: bytes) -> None:
        if kind == read_ahead._RECORDS:
            sent[0] += 1
            if sent[0] > batches:
                os._exit(1)
        send(out, kind, body)

    return sending


@pytest.mark.parametrize("log", ["recorded", "grouped"])
@pytest.mark.parametrize("how", ["dies at once", "garbles", "dies after a batch", "dies after two batches"])
def test_a_child_that_fails_costs_time_not_the_answer(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, how: str, log: str
) -> None:
    """A child that exits without a word (killed, out of memory) or sends what cannot be read: the caller's reader
    reads the rest, from the last record the child's batches reached, and the read gives what a read here gives
    (in the grouped log, the second batch ends inside a group commit: the rest is read from the first's end)."""
    path = _log(tmp_path, _damaged(request.getfixturevalue(log), "torn tail"))
    with LogReader(path) as reader:
        here = _outcome(reader.records, lambda: (reader.end, reader.torn))
    verdict = verify_log(path)
    if how == "dies at once":
        monkeypatch.setattr(read_ahead, "_serve", lambda reader, start, run, fd: os._exit(1))
    elif how == "garbles":
        monkeypatch.setattr(read_ahead, "_serve", _garbling)
    else:
        monkeypatch.setattr(read_ahead, "_send", _dying_after(1 if how == "dies after a batch" else 2))
    with LogReader(path) as reader, ReadAhead(reader) as ahead:
        assert _outcome(ahead.records, lambda: (ahead.end, ahead.torn)) == here
    _forking(monkeypatch)
    assert verify_log(path) == verdict


def test_no_child_outlives_a_verify_that_stops_early(
    tmp_path: Path, recorded: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record refused near the start stops verify while the child still reads; the child is stopped and reaped."""
    path = _log(tmp_path, recorded)
    judged = verify_module.judge

    def refusing(state: Any, data: Any, plan_version: int, *, now: str | None = None) -> Any:
        if state.last_seq == 10:
            raise PlantrailError("STEP_NOT_FOUND", "refused for the test")
        return judged(state, data, plan_version, now=now)

    monkeypatch.setattr(verify_module, "judge", refusing)
    _forking(monkeypatch)
    forked: list[int] = []
    fork = os.fork

    def forking() -> int:
        pid = fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(read_ahead.os, "fork", forking)
    with pytest.raises(PlantrailError, match="seq 11"):
        verify_log(path)
    assert len(forked) == 1
    with pytest.raises(ChildProcessError):  # reaped already
        os.waitpid(forked[0], os.WNOHANG)


def test_only_a_large_log_in_a_process_of_one_thread_is_read_in_a_child() -> None:
    """Small logs are read in the process; so is any log while another thread runs (a fork copies one thread)."""
    large = read_ahead.WORTH_FORKING
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert not worth_forking(large - 1)
    assert worth_forking(large) == (cores >= 2 and threading.active_count() == 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not worth_forking(large)
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize("how", ["intact", "flipped byte", "torn tail"])
@pytest.mark.parametrize("stop_at_damage", [False, True])
def test_a_full_replay_gives_the_same_state_read_in_a_child(
    tmp_path: Path, recorded: bytes, how: str, stop_at_damage: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read without the cache (what ``status --no-cache`` runs) folds the same records either way: the same
    state, torn tail and damage, or the same error."""
    from plantrail.ledger.stores.jsonl.current import read_state

    path = _log(tmp_path, recorded if how == "intact" else _damaged(recorded, how))

    def replayed() -> Any:
        try:
            result = read_state(str(path), use_cache=False, stop_at_damage=stop_at_damage)
        except PlantrailError as exc:
            return type(exc), exc.code, exc.message
        damage = None if result.damage is None else (result.damage.code, result.damage.message)
        return result.state, result.torn, damage

    here = replayed()
    _forking(monkeypatch)
    assert replayed() == here


@pytest.mark.parametrize("dies", [False, True])
def test_a_read_from_a_checked_position_is_the_same_in_a_child(
    tmp_path: Path, recorded: bytes, monkeypatch: pytest.MonkeyPatch, dies: bool
) -> None:
    """A read that starts where a snapshot ends (a checked position of the run) gives the same records after it,
    and the same end and torn tail, in a child; a child that dies after a batch leaves the rest to the reader."""
    path = _log(tmp_path, _damaged(recorded, "torn tail"))
    with LogReader(path) as reader:
        for record in reader.records():
            if record.seq == 200:
                break
        start, run = reader.position, record.run
    with LogReader(path) as reader:
        here = _outcome(lambda: reader.records(start=start, run=run), lambda: (reader.end, reader.torn))
    if dies:
        monkeypatch.setattr(read_ahead, "_send", _dying_after(1))
    with LogReader(path) as reader, ReadAhead(reader, start, run) as ahead:
        there = _outcome(ahead.records, lambda: (ahead.end, ahead.torn))
    assert there == here
    assert here[0][0].seq == 201


def test_a_fork_that_fails_leaves_the_read_to_the_process(
    tmp_path: Path, recorded: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No process left to fork (EAGAIN) or no memory for one: verify reads the log itself, with the same answer,
    and leaves no pipe open."""
    path = _log(tmp_path, recorded)
    here = verify_log(path)
    _forking(monkeypatch)

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(read_ahead.os, "fork", no_fork)
    open_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    assert verify_log(path) == here
    if open_before is not None:
        assert len(os.listdir("/proc/self/fd")) == open_before


def test_the_pipe_holds_several_batches_where_the_system_sizes_pipes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's pipe is widened to hold a few batches (the child reads on while the caller judges a slow
    stretch); where resizing is refused, or the system has no such call, the pipe keeps its size."""
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_GETPIPE_SZ"):
        pytest.skip("pipes are sized on Linux only")
    limit = Path("/proc/sys/fs/pipe-max-size")
    if os.geteuid() != 0 and int(limit.read_text()) < read_ahead._PIPE_BYTES:
        pytest.skip("this system lets a process size its pipes below the size asked for")
    read_end, write_end = os.pipe()
    try:
        before = fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ)
        read_ahead._widen(write_end)
        assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) == read_ahead._PIPE_BYTES > before

        def refused(fd: int, command: int, value: int = 0) -> int:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(fcntl, "fcntl", refused)
        read_ahead._widen(write_end)  # (nothing raised)
        monkeypatch.delattr(fcntl, "F_SETPIPE_SZ")
        read_ahead._widen(write_end)
    finally:
        os.close(read_end)
        os.close(write_end)
