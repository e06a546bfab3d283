"""A snapshot's kept members (late results, cut-off attempts, adoption seqs) live in their own sealed file,
written only when they changed or the file was replaced: a stale, forged or missing one never changes an answer."""

from __future__ import annotations

import contextlib
import copy
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Command
from plantrail.ledger.stores.jsonl import cache, reads, seal
from plantrail.ledger.vocabulary.errors import Refused
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections.canonical import state_hash
from plantrail.projections.model import PlanState
from tests.conftest import LOGIN_DRAFT
from tests.strategies import commands, plans


def _kept(log: Path) -> Path:
    return Path(str(log) + cache.SUFFIX) / cache.KEPT_FILE


def _full(log: Path) -> PlanState:
    return reads.read_state(str(log), use_cache=False).state


def _same_as_the_log(log: Path) -> None:
    """A read and a writer's open give the state a full fold gives: every member, the kept ones included (the
    cut-off attempts are not in the state hash, so the states are compared whole)."""
    full = _full(log)
    read = reads.read_state(str(log)).state
    assert read == full and state_hash(read) == state_hash(full)
    with Ledger.open(log, fsync="none", cache=False) as plain, Ledger.open(log, fsync="none") as resumed:
        assert resumed.state == plain.state == full


def _late_result_run(folder: Path) -> Path:
    """A run with a replan that cut a step off in flight and that step's late result: every kept member set."""
    draft = copy.deepcopy(LOGIN_DRAFT)
    first = draft["steps"][0]["id"]
    log = folder / "run.jsonl"
    with Ledger.create(log, draft, fsync="none") as ledger:
        ledger.start(first)
        draft["steps"][0]["title"] += ", again"
        ledger.replan("new_constraint", "the step changed", plan=draft)
        ledger.complete(first, ["late output"], plan_version=1, attempt=1)
        assert ledger.state.orphans and ledger.state.adoptions
    return log


def test_an_append_that_changes_no_kept_member_leaves_their_file_as_it_was(tmp_path: Path) -> None:
    """A criterion verdict changes none of the kept members: its writer writes the snapshot but not the kept
    members' file; a late result changes them, and its writer writes the file again."""
    log = _late_result_run(tmp_path)
    before = _kept(log).stat()
    with Ledger.open(log, fsync="none") as ledger:
        ledger.verify_criterion("login-test-passes", passed=False, evidence="still 401")
    after = _kept(log).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    with Ledger.open(log, fsync="none") as ledger:
        ledger.complete("reproduce", ["a second late output"], plan_version=1, attempt=1)
    assert _kept(log).stat().st_ino != before.st_ino
    _same_as_the_log(log)


def test_a_kept_file_replaced_under_a_writer_is_written_again(tmp_path: Path) -> None:
    """Two writers hold the log: the first appends a verdict (its kept members unchanged), the second then adds
    a late result and closes (its kept file replaces the one the first read); the first, closing without a turn
    after that, leaves a snapshot at its own head whose kept members it writes again rather than naming a file
    that is no longer there: that snapshot is used, and the reads give the full fold."""
    log = _late_result_run(tmp_path)
    first = Ledger.open(log, fsync="none")
    second = Ledger.open(log, fsync="none")
    first.verify_criterion("login-test-passes", passed=False, evidence="still 401")
    second.complete("reproduce", ["another late output"], plan_version=1, attempt=1)
    second.close()
    seen = reads.read_state(str(log)).snapshot_seq
    first.close()
    after = reads.read_state(str(log)).snapshot_seq
    assert seen is not None and after is not None and after < seen  # the first writer's snapshot, behind the log
    _same_as_the_log(log)


def test_a_missing_or_forged_kept_file_leaves_the_snapshot_unused(tmp_path: Path) -> None:
    """A kept file that is not the one the snapshot names by its SHA-256 (one of an earlier snapshot of the same
    log, sealed by this user's plantrail; one sealed as another kind; none at all) and the snapshot is not used:
    the answer is the full fold's."""
    log = _late_result_run(tmp_path)
    older = tmp_path / "older.snap"
    shutil.copyfile(_kept(log), older)
    with Ledger.open(log, fsync="none") as ledger:
        ledger.complete("reproduce", ["another late output"], plan_version=1, attempt=1)
    current = _kept(log).read_bytes()
    key = seal.cache_key(create=False)
    assert key is not None
    payload = seal.unseal(key, "snapshot.kept", current)
    assert payload is not None
    for forged in (older.read_bytes(), seal.seal(key, "keys", payload), None):
        if forged is None:
            _kept(log).unlink()
        else:
            _kept(log).write_bytes(forged)
        assert reads.read_state(str(log)).snapshot_seq is None
        _same_as_the_log(log)
        _kept(log).write_bytes(current)
        assert reads.read_state(str(log)).snapshot_seq is not None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.lists(st.tuples(commands(), st.integers(0, 3)), max_size=25))
def test_two_writers_taking_turns_leave_snapshots_that_give_the_full_fold(
    plan: PlanSpec, turns: list[tuple[Command, int]]
) -> None:
    """Two writers hold one log and take turns at random, each closing and reopening now and then (so each
    writes its snapshot and kept members while the other may have replaced them): every read, and every
    writer's open, gives the full fold's state."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "run.jsonl"
        Ledger.create(log, plan, fsync="none").close()
        writers = [Ledger.open(log, fsync="none"), Ledger.open(log, fsync="none")]
        try:
            for command, move in turns:
                which = move % 2
                with contextlib.suppress(Refused):  # illegal commands are part of a random log
                    writers[which].execute(command)
                if move >= 2:
                    writers[which].close()
                    assert reads.read_state(str(log)).state == _full(log)
                    writers[which] = Ledger.open(log, fsync="none")
                    assert writers[which].state == _full(log)
        finally:
            for writer in writers:
                writer.close()
        _same_as_the_log(log)
