"""A writer that starts from a snapshot keeps the evidence the snapshot points at unread (LazyText): every
answer is the one a writer that reads it (and a full fold) gives, and a record changed under it is caught."""

from __future__ import annotations

import contextlib
import itertools
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantrail.ledger.acknowledgement import ack_view
from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Command, Replan
from plantrail.ledger.stores.jsonl import cache, reads
from plantrail.ledger.stores.jsonl import log as jsonl
from plantrail.ledger.stores.protocol import ReadResult
from plantrail.ledger.vocabulary.errors import PlantrailError, Refused
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections.brief import brief_view
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.model import LazyText, PlanState, resolved
from plantrail.projections.state_json import INLINE_MAX
from plantrail.projections.views import (
    advice,
    capacity_view,
    next_view,
    ready_steps,
    startable_steps,
    status_document,
)
from tests.conftest import CliResult, Clock
from tests.stores.test_cache import _payload
from tests.strategies import commands, plans

_NOW = "2026-01-01T00:00:01.000000Z"


def _lazies(state: PlanState) -> list[LazyText]:
    """Every LazyText of the state's evidence."""
    found: list[Any] = [e for s in state.steps.values() for e in s.evidence]
    found += [c.evidence for c in state.criteria.values()]
    found += [e for o in state.orphans for e in o.evidence]
    return [e for e in found if isinstance(e, LazyText)]


def _views(state: PlanState) -> list[Any]:
    """What the views that read a state answer (status, next, brief, the acknowledgement's parts)."""
    return [
        status_document(state, _NOW),
        next_view(state, _NOW),
        brief_view(state),
        ready_steps(state),
        startable_steps(state, _NOW),
        capacity_view(state),
        advice(state),
    ]


@contextlib.contextmanager
def _eager() -> Iterator[None]:
    """Writers opened inside read every text their snapshot points at (as before LazyText)."""
    load = cache.load_snapshot

    def eager(*args: Any, **kwargs: Any) -> cache.Snapshot | None:
        return load(*args, **{**kwargs, "lazy": False})

    with mock.patch.object(jsonl, "load_snapshot", eager):
        yield


class _Unique:
    """Makes every enlarged text distinct (two records with one large text may share one reference)."""

    def __init__(self) -> None:
        self.count = itertools.count()

    def enlarge(self, command: Command, factor: int) -> Command:
        fields: dict[str, Any] = {}
        for name in ("evidence", "reason", "error", "why"):
            if name == "reason" and isinstance(command, Replan):
                continue  # a replan's reason is a code from a closed set, not a text
            value = getattr(command, name, None)
            if isinstance(value, str):
                fields[name] = f"{next(self.count)}:" + value * factor
            elif isinstance(value, tuple | list):
                fields[name] = type(value)(f"{next(self.count)}:" + v * factor for v in value)
        return msgspec.structs.replace(command, **fields)


def _head_state_line(log: Path) -> bytes:
    return _payload(Path(str(log) + cache.SUFFIX) / "head.snap").split(b"\n", 1)[1]


def _full(log: Path) -> ReadResult:
    return reads.read_state(str(log), use_cache=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(plans(), plans(checks=True)),
    st.lists(st.tuples(commands(), st.sampled_from([1, 300, 2000]), st.booleans()), max_size=25),
)
def test_a_writer_with_unread_evidence_answers_as_one_that_reads_it(
    plan: PlanSpec, steps: list[tuple[Command, int, bool]]
) -> None:
    """Twin logs get the same commands with the same clock, one by writers that keep the snapshot's evidence
    unread, one by writers that read it; reopened at random points. Every state, state hash, canonical bytes,
    view and snapshot is the same in both and as the full fold's, after appends on top too; and deciding,
    appending and writing the next snapshot never reads a lazy text."""
    with tempfile.TemporaryDirectory() as folder:
        lazy_log, eager_log = Path(folder) / "lazy.jsonl", Path(folder) / "eager.jsonl"
        lazy_clock, eager_clock, unique = Clock(), Clock(), _Unique()
        lazy = Ledger.create(lazy_log, plan, fsync="none", nonce="0" * 32, run="r", clock=lazy_clock)
        eager = Ledger.create(eager_log, plan, fsync="none", nonce="0" * 32, run="r", clock=eager_clock)
        unread: list[LazyText] = []
        try:
            for command, factor, reopen in steps:
                big = unique.enlarge(command, factor)
                for ledger in (lazy, eager):
                    with contextlib.suppress(Refused):  # illegal commands are part of a random log
                        ledger.execute(big)
                if not reopen:
                    continue
                lazy.close()
                eager.close()
                assert not any(t.resolved for t in unread)  # no rule, append or snapshot read one
                assert _head_state_line(lazy_log) == _head_state_line(eager_log)
                lazy = Ledger.open(lazy_log, fsync="none", clock=lazy_clock)
                with _eager():
                    eager = Ledger.open(eager_log, fsync="none", clock=eager_clock)
                full = _full(lazy_log).state
                state = lazy.unread_state
                assert not _lazies(eager.unread_state)
                if any(len(e) > INLINE_MAX for s in full.steps.values() for e in s.evidence):
                    assert _lazies(state)
                assert not any(t.resolved for t in _lazies(state))
                assert _views(state) == _views(eager.state) == _views(full)
                assert canonical_bytes(state) == canonical_bytes(eager.state) == canonical_bytes(full)
                assert state_hash(state) == state_hash(full)
                assert resolved(state) == lazy.state == eager.state == full
                lazy.close()  # the next ones are left unread while more is appended on top
                lazy = Ledger.open(lazy_log, fsync="none", clock=lazy_clock)
                unread = _lazies(lazy.unread_state)
        finally:
            lazy.close()
            eager.close()
        assert _head_state_line(lazy_log) == _head_state_line(eager_log)
        with Ledger.open(lazy_log, fsync="none") as ledger:
            assert ledger.state == _full(lazy_log).state
            assert state_hash(ledger.unread_state) == state_hash(_full(eager_log).state)


def _heavy(path: Path, steps: int = 4, size: int = 8 * INLINE_MAX) -> Path:
    """A run whose every step completed with its own large evidence, and a large criterion verdict."""
    draft = {
        "goal": "an evidence-heavy run",
        "acceptanceCriteria": [{"id": "c", "description": "done"}, {"id": "d", "description": "also"}],
        "steps": [
            {"id": f"s{i}", "title": f"step {i}", "dependsOn": [], "completionEvidence": "out"} for i in range(steps)
        ],
    }
    with Ledger.create(path, draft, fsync="none") as ledger:
        for i in range(steps):
            ledger.start(f"s{i}")
            ledger.complete(f"s{i}", [f"{i}" + "o" * size])
        ledger.verify_criterion("c", True, "v" * size)
    with Ledger.open(path, fsync="none"):  # a writer of this very file leaves the snapshot it will trust
        pass
    return path


@contextlib.contextmanager
def _watching_reads() -> Iterator[list[int]]:
    """The offsets of the records the cache reads back (to resolve a text) while the block runs."""
    read_back: list[int] = []
    record_at = cache._record_at

    def watched(fd: int, offset: int, *args: Any, **kwargs: Any) -> Any:
        read_back.append(offset)
        return record_at(fd, offset, *args, **kwargs)

    with mock.patch.object(cache, "_record_at", watched):
        yield read_back


def test_opening_appending_and_closing_read_no_evidence(tmp_path: Path) -> None:
    """A writer from a snapshot opens with every large evidence text unread, appends, acknowledges and writes
    its snapshot without reading one, and no record the texts come from is opened."""
    log = _heavy(tmp_path / "run.jsonl")
    with _watching_reads() as read_back:
        with Ledger.open(log, fsync="none") as ledger:
            texts = _lazies(ledger.unread_state)
            assert len(texts) == 5
            ack = ledger.verify_criterion("d", passed=True, evidence="checked")
            ack_view(ledger.unread_state, ack)
        assert not any(t.resolved for t in texts)
        assert read_back == []
        with Ledger.open(log, fsync="none") as ledger:
            assert ledger.state == _full(log).state  # reading them is what reads the records
        assert len(read_back) == 5
    assert state_hash(reads.read_state(str(log)).state) == state_hash(_full(log).state)


def test_two_records_with_one_large_text_read_back_the_same(tmp_path: Path) -> None:
    """When a later record repeats a large text an unread one holds, the unread text keeps the reference it was
    read with (the eager writer's snapshot points both at the later record): both snapshots read back as the
    full fold."""
    log = _heavy(tmp_path / "run.jsonl")
    again = "0" + "o" * (8 * INLINE_MAX)  # s0's evidence
    twin = tmp_path / "twin.jsonl"
    twin.write_bytes(log.read_bytes())
    shutil.copytree(str(log) + cache.SUFFIX, str(twin) + cache.SUFFIX)
    with Ledger.open(log, fsync="none") as ledger:
        ledger.verify_criterion("d", passed=True, evidence=again)
    with _eager(), Ledger.open(twin, fsync="none") as ledger:
        ledger.verify_criterion("d", passed=True, evidence=again)
    refs = [re.findall(rb'\{"\$ref":\[(\d+)', _head_state_line(path)) for path in (log, twin)]
    assert refs[0][1:] == refs[1][1:] and refs[0][0] != refs[1][0] == refs[1][-1]
    for path in (log, twin):
        assert reads.read_state(str(path)).snapshot_seq is not None
        assert state_hash(reads.read_state(str(path)).state) == state_hash(_full(path).state)
        with Ledger.open(path, fsync="none") as ledger:
            assert state_hash(ledger.unread_state) == state_hash(_full(path).state)


def test_a_record_changed_under_an_unread_text_is_caught_when_it_is_read(tmp_path: Path) -> None:
    """Changing a byte of a record an unread text comes from (the file's size kept) after the writer opened:
    reading the text fails (ValueError naming the offset), the ledger's state is HASH_MISMATCH, and the
    snapshot that writer leaves is not used by the next reader, whose full read names the damage."""
    log = _heavy(tmp_path / "run.jsonl")
    ledger = Ledger.open(log, fsync="none")
    try:
        [first, *_] = _lazies(ledger.unread_state)
        data = bytearray(log.read_bytes())
        at = first.ref[0] + 100
        data[at : at + 1] = b"O" if data[at : at + 1] != b"O" else b"P"
        with open(log, "r+b") as f:
            f.write(bytes(data))
        with pytest.raises(ValueError, match="byte offset"):
            first.resolve()
        with pytest.raises(PlantrailError) as caught:
            ledger.state  # noqa: B018 - the property reads the evidence
        assert caught.value.code == "HASH_MISMATCH"
    finally:
        ledger.close()
    damaged = reads.read_state(str(log), stop_at_damage=True)
    assert damaged.snapshot_seq is None and damaged.damage is not None


def test_unread_evidence_is_read_from_the_file_it_was_checked_in(tmp_path: Path) -> None:
    """A text left unread is read from the very file the writer opened, after the ledger closed and the log was
    renamed: the state is the full fold's."""
    log = _heavy(tmp_path / "run.jsonl")
    with Ledger.open(log, fsync="none") as ledger:
        ledger.verify_criterion("d", passed=True, evidence="checked")
    assert _lazies(ledger.unread_state)
    moved = log.rename(tmp_path / "moved.jsonl")
    assert ledger.state == _full(moved).state
    assert state_hash(ledger.unread_state) == state_hash(_full(moved).state)


def test_the_cli_acknowledges_a_write_without_reading_evidence(
    tmp_path: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`plantrail criterion` and `plantrail start` on a log whose snapshot points at large evidence answer
    (human and --json) as writers that read it do, and read no record back; `status --json` after them is the
    full fold's."""
    log = _heavy(tmp_path / "run.jsonl")
    twin = tmp_path / "twin.jsonl"
    twin.write_bytes(log.read_bytes())
    shutil.copytree(str(log) + cache.SUFFIX, str(twin) + cache.SUFFIX)
    calls = [("criterion", "d", "--passed", "--evidence", "checked"), ("start", "s0", "--json")]
    with _watching_reads() as read_back:
        lazy = [run_cli(c[0], log, *c[1:]) for c in calls]
    assert read_back == []
    with _eager():
        eager = [run_cli(c[0], twin, *c[1:]) for c in calls]
    hashes = re.compile(r"[0-9a-f]{64}")  # the records' own hashes: the CLI's clock is the wall clock

    def answer(r: CliResult) -> tuple[int, str, str]:
        return r.code, hashes.sub("H", r.out), hashes.sub("H", r.err)

    assert [answer(r) for r in lazy] == [answer(r) for r in eager]
    assert lazy[0].code == 0 and lazy[1].code != 0  # a completed step does not start again: refused alike
    status = [orjson.loads(run_cli("status", path, "--json").out)["steps"] for path in (log, twin)]
    monkeypatch.setenv("PLANTRAIL_NO_CACHE", "1")
    full = orjson.loads(run_cli("status", log, "--json").out)["steps"]
    assert status[0] == status[1] == full and len(full[0]["evidence"][0]) > INLINE_MAX
