"""The outcomes finish records beyond v1's: partial (only with allowed_partial; done, not done and where to
resume), budget_exhausted (the unmet checks), complete never against the stop policy, and resume's exit code
for each outcome."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.history import resume_receipt
from plantrail.projections.stop import StopDecision
from tests.logs import read_records


def plan(**policy: Any) -> dict[str, Any]:
    """Three steps (reproduce -> implement -> verify, docs on its own) and one criterion, with a run policy."""
    return {
        "goal": "Reject expired sessions",
        "acceptance_criteria": [{"id": "expired-gets-401", "description": "an expired session gets 401"}],
        "steps": [
            {"id": "reproduce", "title": "Reproduce", "completion_evidence": "the new test fails"},
            {"id": "implement", "title": "Fix", "depends_on": ["reproduce"], "completion_evidence": "it passes"},
            {"id": "verify", "title": "Suite", "depends_on": ["implement"], "completion_evidence": "suite passes"},
        ],
        "policy": policy,
    }


def refused(path: Path, call: Callable[[], object]) -> PlantrailError:
    """Run a call that must be refused; return the error after checking the log kept its bytes."""
    before = path.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        call()
    assert path.read_bytes() == before
    return caught.value


def test_partial_is_refused_unless_the_plan_allows_it(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """finish partial without allowed_partial is PARTIAL_NOT_ALLOWED, the log unchanged."""
    ledger = make_ledger(plan())
    error = refused(tmp_path / "run.jsonl", lambda: ledger.finish("partial", "out of time"))
    assert error.code == "PARTIAL_NOT_ALLOWED"


def test_partial_lists_done_not_done_and_where_to_resume(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A partial finish (a v2 line) lists what is done, what is not, and the steps a continuation
    resumes from; it is final, verify passes, and resume exits 16 saying where to resume."""
    ledger = make_ledger(plan(allowed_partial=True))
    ledger.start("reproduce")
    ledger.complete("reproduce", "test fails as expected")
    ledger.finish("partial", "the fix needs a decision from the auth team")
    record = read_records(tmp_path / "run.jsonl")[-1]
    assert (record.v, record.data.outcome) == (2, "partial")
    assert record.data.done == ("step:reproduce",)
    assert record.data.not_done == ("step:implement", "step:verify", "criterion:expired-gets-401")
    assert record.data.resume_from == ("implement",)
    assert ledger.state.finished
    assert refused(tmp_path / "run.jsonl", lambda: ledger.start("implement")).code == "RUN_FINISHED"
    assert verify_log(tmp_path / "run.jsonl").records == 5
    receipt = resume_receipt(ledger.state)
    assert receipt["verdict"] == "partial" and "resumes from implement" in receipt["next"]


def test_budget_exhausted_lists_the_checks_still_unmet(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """finish budget_exhausted records the steps and criteria still unmet (a spent budget is not completion
    evidence); the run is over and resume says budget_exhausted."""
    ledger = make_ledger(plan())
    ledger.start("reproduce")
    ledger.complete("reproduce", "test fails as expected")
    ledger.start("implement")
    ledger.finish("budget_exhausted", "12 turns spent")
    record = read_records(tmp_path / "run.jsonl")[-1]
    assert record.v == 2
    assert record.data.unmet == ("step:implement", "step:verify", "criterion:expired-gets-401")
    assert (record.data.done, record.data.not_done, record.data.resume_from) == ((), (), ())
    receipt = resume_receipt(ledger.state)
    assert (receipt["verdict"], receipt["stop"]["outcome"]) == ("budget_exhausted", "budget_exhausted")
    assert "unmet: step:implement" in receipt["next"]


@pytest.mark.parametrize("outcome", ["partial", "budget_exhausted"])
def test_an_ending_that_leaves_nothing_to_do_must_be_complete(
    make_ledger: Callable[..., Ledger], tmp_path: Path, outcome: str
) -> None:
    """With every step completed and every criterion passed, partial and budget_exhausted are
    OUTCOME_CONTRADICTS_STOP, the log unchanged; complete is accepted."""
    ledger = make_ledger(plan(allowed_partial=True))
    for step in ("reproduce", "implement", "verify"):
        ledger.start(step)
        ledger.complete(step, "done")
    ledger.verify_criterion("expired-gets-401", True, "curl gave 401")
    error = refused(tmp_path / "run.jsonl", lambda: ledger.finish(outcome, "done anyway"))  # type: ignore[arg-type]
    assert error.code == "OUTCOME_CONTRADICTS_STOP"
    ledger.finish("complete", "all checks passed")
    assert read_records(tmp_path / "run.jsonl")[-1].v == 1  # v1's outcome words keep their v1 bytes


def test_complete_is_refused_while_the_stop_policy_says_otherwise(
    make_ledger: Callable[..., Ledger], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a v2 plan, finish complete asks the stop policy at the command's time and is refused
    (OUTCOME_CONTRADICTS_STOP, naming the rule) when its decision is not complete (here a scope pause)."""
    import plantrail.projections.stop as stop

    ledger = make_ledger(plan(max_turns=50))
    for step in ("reproduce", "implement", "verify"):
        ledger.start(step)
        ledger.complete(step, "done")
    ledger.verify_criterion("expired-gets-401", True, "curl gave 401")
    paused = StopDecision("paused", "scope_violation", "package.json changed outside the scope")
    monkeypatch.setattr(stop, "stop_decision", lambda state, now=None: paused)
    error = refused(tmp_path / "run.jsonl", lambda: ledger.finish("complete", "green"))
    assert (error.code, error.fields["rule"]) == ("OUTCOME_CONTRADICTS_STOP", "scope_violation")


def test_complete_with_a_step_open_keeps_its_v1_code(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """finish complete with work open is CRITERIA_UNVERIFIED (the v1 code) for v1 and v2 plans alike."""
    for name, draft in (("v1.jsonl", plan()), ("v2.jsonl", plan(max_turns=5))):
        ledger = make_ledger(draft, name=name)
        assert refused(tmp_path / name, lambda run=ledger: run.finish("complete", "green")).code == (
            "CRITERIA_UNVERIFIED"
        )


def test_resume_documents_an_exit_code_for_each_outcome(
    run_cli: Callable[..., Any], write_json: Callable[[str, Any], Path], tmp_path: Path
) -> None:
    """plantrail resume exits 13 after complete, failed or cancelled, 16 after partial, 15 after
    budget_exhausted and 12 while paused."""
    draft = write_json("d.json", plan(allowed_partial=True))
    codes = {}
    for outcome in ("failed", "cancelled", "partial", "budget_exhausted", "paused"):
        log = tmp_path / f"{outcome}.jsonl"
        assert run_cli("create", log, "--plan", draft).code == 0
        assert run_cli("finish", log, "--outcome", outcome, "--reason", "because").code == 0
        codes[outcome] = run_cli("resume", log).code
    assert codes == {"failed": 13, "cancelled": 13, "partial": 16, "budget_exhausted": 15, "paused": 12}
