"""The reducer's orphan path: late results are kept in the state's history and never touch the plan."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plantrail.ledger.api import Ledger
from plantrail.projections.model import Orphan, PlanState
from plantrail.projections.state import evolve, fold, initial
from tests.logs import read_records


def _plan_part(state: PlanState) -> PlanState:
    """The state without the orphan list, what every record moves, and the attempts cut off in flight (a late
    result closes its attempt's entry)."""
    return state._replace(orphans=(), last_seq=0, head=None, cut_off=())


def _retitled(draft: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(draft)
    new["steps"][0]["title"] = "Reproduce with the auth service logs on"
    return new


def test_a_late_result_never_overwrites_the_new_version(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A v1 completion arriving while v2 re-runs the step leaves v2's attempt in progress."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.replan("failed_assumption", "need the auth logs", plan=_retitled(draft))
    ledger.start("reproduce")
    before = ledger.state

    ack = ledger.complete("reproduce", ["old output"], plan_version=1)

    after = ledger.state
    assert ack.orphan == "SUPERSEDED_VERSION"
    assert _plan_part(after) == _plan_part(before)
    assert after.steps["reproduce"].status == "in_progress"
    [orphan] = after.orphans
    assert orphan.contract is not None and orphan.contract.title == draft["steps"][0]["title"]  # v1's contract
    assert (orphan._replace(contract=None),) == (
        Orphan(
            seq=ack.seq,
            type="step.completed",
            step="reproduce",
            plan_version=1,
            attempt=1,
            active_version=2,
            why="SUPERSEDED_VERSION",
            evidence=("old output",),
        ),
    )


def test_a_cancelled_steps_late_result_lands_on_the_orphan_path(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A step removed by a replan while it ran still gets its result recorded, as an orphan."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 500"])
    ledger.start("diagnose")
    ledger.replan(
        "agent_revision",
        "diagnosis moves to another run",
        patch={"base_version": 1, "operations": [{"op": "remove_step", "step_id": "diagnose"}]},
    )

    ack = ledger.fail("diagnose", "auth-service timed out", plan_version=1)

    assert ack.orphan == "SUPERSEDED_VERSION"
    assert "diagnose" not in ledger.state.steps
    assert ledger.state.orphans[-1].reason == "auth-service timed out"


def test_a_result_for_a_stale_attempt_is_an_orphan(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """A result for attempt 1 after attempt 2 started is STALE_ATTEMPT and leaves attempt 2 running."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.fail("reproduce", "npm install timed out")
    ledger.start("reproduce")

    ack = ledger.complete("reproduce", ["late output of attempt 1"], attempt=1)

    assert ack.orphan == "STALE_ATTEMPT"
    assert (ledger.state.steps["reproduce"].status, ledger.state.steps["reproduce"].attempt) == ("in_progress", 2)


def test_a_result_after_the_run_was_cancelled_is_an_orphan(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A running step's result after a cancelled finish is recorded as RUN_FINISHED and changes nothing."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.finish("cancelled", "the user stopped the run")
    before = ledger.state

    ack = ledger.complete("reproduce", ["finished anyway"])

    assert ack.orphan == "RUN_FINISHED"
    assert _plan_part(ledger.state) == _plan_part(before)


def test_dropping_orphan_events_gives_the_same_plan(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """The fold without the late results equals the fold with them, but for the orphan list."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.replan("failed_assumption", "need the auth logs", plan=_retitled(draft))
    ledger.complete("reproduce", ["old output"], plan_version=1)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["500 from auth-service /v1/token"])
    records = read_records(tmp_path / "run.jsonl")
    orphan_seqs = {o.seq for o in ledger.state.orphans}

    kept = fold(r for r in records if r.seq not in orphan_seqs)

    assert orphan_seqs == {4}
    assert _plan_part(kept) == _plan_part(fold(records))


def test_evolve_never_mutates_its_inputs(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Folding a log with a replan and a late result leaves every input state and record as it was."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.replan("failed_assumption", "need the auth logs", plan=_retitled(draft))
    ledger.complete("reproduce", ["old output"], plan_version=1)
    records = read_records(tmp_path / "run.jsonl")
    state = initial()
    for record in records:
        copies = (copy.deepcopy(state), copy.deepcopy(record))
        after = evolve(state, record)
        assert (state, record) == copies
        state = after
