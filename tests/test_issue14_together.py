"""Issue 14's parts together (artifacts and ``stale``, side effects, repair edges, forks): scenarios that
combine them, each checked against docs/contract.md and docs/semantics.md."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.errors import PlantrailError
from plantrail.projections.stop import stop_decision
from plantrail.projections.views import ready_steps, wait_reasons

MakeLedger = Callable[..., Ledger]

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
C = "sha256:" + "c" * 64

#: build -> test (on_failure: fix) -> deploy; fix, the repair step, reads the repository.
TOGETHER: dict[str, Any] = {
    "goal": "Ship the release",
    "acceptance_criteria": [{"id": "green", "description": "the suite passes"}],
    "observed": {"repo": "aaaa"},
    "steps": [
        {"id": "build", "title": "Build", "completion_evidence": "binary", "outputs": ["bin"]},
        {
            "id": "test",
            "title": "Run the suite",
            "completion_evidence": "green run",
            "depends_on": ["build"],
            "inputs": [{"step": "build", "output": "bin"}],
            "on_failure": "fix",
        },
        {
            "id": "fix",
            "title": "Fix what failed",
            "completion_evidence": "patch",
            "outputs": ["patch"],
            "inputs": [{"observation": "repo"}],
        },
        {"id": "deploy", "title": "Deploy", "completion_evidence": "serving", "depends_on": ["test"]},
    ],
}


def _draft(**changes: Any) -> dict[str, Any]:
    draft = copy.deepcopy(TOGETHER)
    draft.update(changes)
    return draft


def _repaired_then_observed(make_ledger: MakeLedger) -> Ledger:
    """A run where test failed, fix repaired it, and then the repository moved (fix read it)."""
    ledger = make_ledger(_draft())
    ledger.start("build")
    ledger.complete("build", "ok", artifacts=[f"bin={A}"])
    ledger.start("test")
    ledger.fail("test", "2 tests fail")
    ledger.start("fix")
    ledger.complete("fix", "patched", artifacts=[f"patch={C}"])
    ledger.observe("repo", "bbbb")
    return ledger


# --------------------------------------------------------------------------- a stale repair step


def test_a_stale_repair_step_nothing_waits_for_is_not_ready(make_ledger: MakeLedger) -> None:
    """A completed repair step whose input changed goes stale, but is ready only while a failed step waits for it."""
    ledger = _repaired_then_observed(make_ledger)
    state = ledger.state
    assert state.steps["fix"].status == "stale"
    assert "fix" not in ready_steps(state)
    assert {"code": "repair_not_needed", "repairs": ["test"]} in wait_reasons(state)["fix"]


def test_starting_a_stale_repair_step_nothing_waits_for_is_refused(make_ledger: MakeLedger) -> None:
    """``start`` refuses a stale repair step no failed step waits for (REPAIR_NOT_NEEDED), the log unchanged."""
    ledger = _repaired_then_observed(make_ledger)
    seq = ledger.state.last_seq
    with pytest.raises(PlantrailError) as caught:
        ledger.start("fix")
    assert caught.value.code == "REPAIR_NOT_NEEDED"
    assert ledger.state.last_seq == seq


def test_a_stale_idle_repair_step_does_not_hold_up_completion(make_ledger: MakeLedger) -> None:
    """Once the repaired step and the rest complete, a stale repair step nothing needs is no open work."""
    ledger = _repaired_then_observed(make_ledger)
    ledger.start("test")
    ledger.complete("test", "green")
    ledger.start("deploy")
    ledger.complete("deploy", "serving")
    ledger.verify_criterion("green", True, "suite output")
    assert stop_decision(ledger.state, None).outcome == "complete"
    ledger.finish("complete", reason="all done")
    assert ledger.state.outcome == "complete"


def test_a_stale_repair_step_runs_again_when_a_failure_calls_it(make_ledger: MakeLedger) -> None:
    """A second failure of the repaired step calls its stale repair step, which is then ready and starts."""
    ledger = _repaired_then_observed(make_ledger)
    ledger.start("test")
    ledger.fail("test", "1 test fails")
    state = ledger.state
    assert ready_steps(state) == ["fix"]
    ledger.start("fix")
    ledger.complete("fix", "patched again", artifacts=[f"patch={B}"])
    assert ready_steps(ledger.state) == ["test"]
