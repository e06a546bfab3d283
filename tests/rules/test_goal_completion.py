"""Completion on the executable plan contract: every step done does not make the goal done while a final check
fails, and the planner's own word never stands in for the deterministic checker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.evidence import Observation, Report
from plantrail.projections.stop import stop_decision

MakeLedger = Callable[..., Ledger]


def _exit_check(check_id: str, code: int) -> dict[str, Any]:
    return {"id": check_id, "kind": "command_exit", "command": f"npm run {check_id}", "expected_exit_code": code}


def draft() -> dict[str, Any]:
    """Two steps with command checks and a final criterion whose check is the whole suite exiting 0."""
    return {
        "goal": "Reject expired sessions with a regression test",
        "acceptance_criteria": [
            {"id": "suite-green", "description": "the whole suite passes", "checks": [_exit_check("suite", 0)]}
        ],
        "steps": [
            {
                "id": "reproduce",
                "title": "Add a regression test",
                "completion_evidence": "the new test fails",
                "checks": [_exit_check("repro", 1)],
            },
            {
                "id": "implement",
                "title": "Check expiry",
                "depends_on": ["reproduce"],
                "completion_evidence": "the new test passes",
                "checks": [_exit_check("target", 0)],
            },
        ],
        "policy": {"max_turns": 50},
    }


def observed(check: str, exit_code: int, **fields: Any) -> Report:
    """A report of one command check with its exit code."""
    return Report(
        command=f"npm run {check}",
        exit_code=exit_code,
        observations=(Observation(check, exit_code=exit_code, **fields),),
    )


def refused(log: Path, call: Callable[[], object]) -> str:
    """Run a call that must be refused with the log byte for byte unchanged; return its code."""
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        call()
    assert log.read_bytes() == before
    return caught.value.code


def all_steps_done(make_ledger: MakeLedger) -> Ledger:
    ledger = make_ledger(draft())
    ledger.start("reproduce")
    ledger.complete("reproduce", "the new test fails with 200", report=observed("repro", 1))
    ledger.start("implement")
    ledger.complete("implement", "the new test passes with 401", report=observed("target", 0))
    return ledger


def test_every_step_succeeds_but_the_final_check_fails_so_the_goal_stays_unfinished(
    make_ledger: MakeLedger, tmp_path: Path
) -> None:
    """With every step completed and the final check failing, the criterion cannot pass, the stop
    policy does not say complete, and finish complete is refused with the log unchanged."""
    ledger = all_steps_done(make_ledger)
    log = tmp_path / "run.jsonl"
    assert all(step.status == "completed" for step in ledger.state.steps.values())
    red = observed("suite", 1)
    assert refused(log, lambda: ledger.verify_criterion("suite-green", True, "looks green", report=red)) == (
        "CHECK_NOT_MET"
    )
    ledger.verify_criterion("suite-green", False, "the suite still fails", report=red)
    assert ledger.state.criteria["suite-green"].status == "failed"
    assert stop_decision(ledger.state).outcome != "complete"
    assert refused(log, lambda: ledger.finish("complete", "every step succeeded")) == "CRITERIA_UNVERIFIED"
    ledger.verify_criterion("suite-green", True, "the suite passes", report=observed("suite", 0))
    assert stop_decision(ledger.state).outcome == "complete"
    ledger.finish("complete", "every step and the final check passed")


@pytest.mark.parametrize(
    "report",
    [
        None,
        Report(meta={"planner": "all tests pass, I verified it myself"}),
        observed("target", 0, truncated=True),
        observed("target", 0, started=False),
        observed("target", 1),
    ],
    ids=["no-report", "self-report-only", "truncated", "not-started", "wrong-exit"],
)
def test_the_planners_own_word_does_not_bypass_the_checker(
    make_ledger: MakeLedger, tmp_path: Path, report: Report | None
) -> None:
    """A completion whose evidence text claims success passes only on an observation that meets the
    check; the claim alone, truncated output, a command that never started or the wrong exit code is CHECK_NOT_MET."""
    ledger = make_ledger(draft())
    log = tmp_path / "run.jsonl"
    ledger.start("reproduce")
    ledger.complete("reproduce", "the new test fails with 200", report=observed("repro", 1))
    ledger.start("implement")
    claim = "done: all tests pass"
    assert refused(log, lambda: ledger.complete("implement", claim, report=report)) == "CHECK_NOT_MET"
    assert ledger.state.steps["implement"].status == "in_progress"
