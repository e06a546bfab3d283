"""Timeline lanes: attempts from start to result, superseded by a replan, late results as points."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from plantrail.ledger.api import Ledger
from plantrail.projections.timeline import timeline
from tests.logs import read_records
from tests.pictures import record_replanned_run


def test_attempts_replans_and_late_results(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """a completes, b fails then completes (attempt 2), c is superseded by the replan and its result is late."""
    ledger = record_replanned_run(make_ledger)
    line = timeline(read_records(tmp_path / "run.jsonl"), [o.seq for o in ledger.state.orphans])
    got = [(a.step, a.attempt, a.version, a.outcome) for a in line.attempts]
    assert got == [
        ("a", 1, 1, "completed"),
        ("b", 1, 1, "failed"),
        ("b", 2, 1, "completed"),
        ("c", 1, 1, "superseded"),
    ]
    (replan,) = line.replans
    assert (replan.version, line.attempts[3].end_seq) == (2, replan.seq)
    (late,) = line.late
    assert (late.step, late.plan_version, late.type) == ("c", 1, "step.completed")
    assert line.lanes == ("a", "b", "c")
    assert all(a.end_ts is not None and a.start_ts <= a.end_ts for a in line.attempts)


def test_an_attempt_without_a_result_is_still_running(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A started step with no result yet is one open bar, in progress."""
    ledger = make_ledger()
    ledger.start("reproduce")
    line = timeline(read_records(tmp_path / "run.jsonl"), ())
    (attempt,) = line.attempts
    assert (attempt.outcome, attempt.end_seq, attempt.end_ts) == ("in_progress", None, None)
    assert line.first_ts is not None and line.last_ts == attempt.start_ts
