"""Budgets, usage and the stop policy: derived decisions in the documented order,
shown by status, next and resume; a start they forbid is refused with the log unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.evidence import Report, Usage
from plantrail.projections.history import resume_receipt
from plantrail.projections.stop import budget_view, stop_decision


def session_draft(**policy: Any) -> dict[str, Any]:
    """The session plan with a run policy (the stop settings under test)."""
    return {
        "goal": "Reject expired sessions with a regression test",
        "acceptance_criteria": [{"id": "expired-gets-401", "description": "an expired session gets 401"}],
        "steps": [
            {"id": "implement", "title": "Check expiry", "completion_evidence": "the new test passes"},
            {"id": "verify", "title": "Suite", "depends_on": ["implement"], "completion_evidence": "suite passes"},
        ],
        "policy": {"max_in_progress": 1, **policy},
    }


def spent(turns: int = 0, tool_calls: int = 0, cost: float = 0.0, exit_code: int | None = None) -> Report:
    """A report of what one attempt spent."""
    return Report(exit_code=exit_code, usage=Usage(turns=turns, tool_calls=tool_calls, cost_usd=cost))


def test_stop_policy_continue(make_ledger: Callable[..., Ledger]) -> None:
    """Nothing holds, so the run continues with the next bounded step."""
    ledger = make_ledger(session_draft(max_turns=6))
    ledger.start("implement")
    ledger.fail("implement", "assertion failed", report=spent(turns=2))
    assert stop_decision(ledger.state).outcome == "continue"


def test_stop_policy_repeated_failure_stops(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """The same failure twice (a v2 plan's default) is failed for no progress; start is
    refused STOP_POLICY with the log unchanged, and resume exits 14."""
    ledger = make_ledger(session_draft(max_turns=60))
    for n in (1, 2):
        ledger.start("implement")
        ledger.fail("implement", f"AssertionError at line {n * 10}: 200 != 401", report=spent(turns=1, exit_code=1))
    decision = stop_decision(ledger.state)
    assert (decision.outcome, decision.rule) == ("failed", "no_progress")
    before = (tmp_path / "run.jsonl").read_bytes()
    with pytest.raises(PlantrailError) as caught:
        ledger.start("implement")
    assert caught.value.code == "STOP_POLICY" and (tmp_path / "run.jsonl").read_bytes() == before
    assert resume_receipt(ledger.state)["verdict"] == "failed"


def test_a_different_failure_is_progress(make_ledger: Callable[..., Ledger]) -> None:
    """A changed exit code or error resets the streak: two different failures are not 'no progress'."""
    ledger = make_ledger(session_draft(max_turns=60))
    ledger.start("implement")
    ledger.fail("implement", "AssertionError: 200 != 401", report=spent(exit_code=1))
    ledger.start("implement")
    ledger.fail("implement", "ImportError: no module named jwt", report=spent(exit_code=1))
    assert stop_decision(ledger.state).outcome == "continue"


def test_stop_policy_turn_budget_exhausted(make_ledger: Callable[..., Ledger]) -> None:
    """The turn budget used up is budget_exhausted, listing what is still unmet."""
    ledger = make_ledger(session_draft(max_turns=6))
    ledger.start("implement")
    ledger.complete("implement", ["target test passed"], report=spent(turns=6))
    decision = stop_decision(ledger.state)
    assert (decision.outcome, decision.rule) == ("budget_exhausted", "budget")
    assert decision.unmet == ("step:verify", "criterion:expired-gets-401")


def test_stop_policy_complete_wins_over_a_spent_budget(make_ledger: Callable[..., Ledger]) -> None:
    """The documented order: every check passed is complete even with the budget spent."""
    ledger = make_ledger(session_draft(max_turns=2))
    ledger.start("implement")
    ledger.complete("implement", ["ok"], report=spent(turns=1))
    ledger.start("verify")
    ledger.complete("verify", ["ok"], report=spent(turns=1))
    ledger.verify_criterion("expired-gets-401", True, "curl saw 401")
    assert stop_decision(ledger.state).outcome == "complete"


def test_no_progress_comes_before_a_spent_budget(make_ledger: Callable[..., Ledger]) -> None:
    """Rule 6 before rule 7: a run that both repeated a failure and spent its budget is failed."""
    ledger = make_ledger(session_draft(max_turns=2))
    for _ in range(2):
        ledger.start("implement")
        ledger.fail("implement", "same", report=spent(turns=1, exit_code=1))
    assert stop_decision(ledger.state).rule == "no_progress"


def test_the_deadline_is_judged_at_the_time_asked(make_ledger: Callable[..., Ledger]) -> None:
    """A hard deadline is budget_exhausted only after it passed, at the time the caller asks (never the clock)."""
    ledger = make_ledger(session_draft(deadline="2026-01-01T00:00:00.000010Z"))
    assert stop_decision(ledger.state).outcome == "continue"
    assert stop_decision(ledger.state, "2026-01-01T00:00:00.000009Z").outcome == "continue"
    assert stop_decision(ledger.state, "2026-01-02T00:00:00Z").rule == "deadline"


def test_a_start_after_the_deadline_is_refused_and_verify_replays_it(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """The test clock ticks a microsecond per event: past the deadline, start is STOP_POLICY; verify passes."""
    ledger = make_ledger(session_draft(deadline="2026-01-01T00:00:00.000001Z"))
    with pytest.raises(PlantrailError) as caught:
        ledger.start("implement")
    assert caught.value.code == "STOP_POLICY" and caught.value.fields["rule"] == "deadline"
    assert verify_log(tmp_path / "run.jsonl").records == 2


def test_a_step_budget_spent_stops_the_run(make_ledger: Callable[..., Ledger]) -> None:
    """A step's own tool-call budget used up by its failed attempts is budget_exhausted naming the step."""
    draft = session_draft()
    draft["steps"][0]["max_tool_calls"] = 10
    ledger = make_ledger(draft)
    ledger.start("implement")
    ledger.fail("implement", "timeout", report=spent(tool_calls=10))
    decision = stop_decision(ledger.state)
    assert decision.outcome == "budget_exhausted" and "step implement" in decision.reason


def test_status_shows_used_and_left_and_soft_advice(make_ledger: Callable[..., Ledger]) -> None:
    """Usage is summed per step and per run; at 80% (the default) the budget gives advice, not an outcome."""
    ledger = make_ledger(session_draft(max_cost_usd=1.0))
    ledger.start("implement")
    ledger.fail("implement", "flaky", report=spent(cost=0.5, tool_calls=3))
    ledger.start("implement")
    ledger.complete("implement", ["ok"], report=spent(cost=0.35, tool_calls=2))
    view = budget_view(ledger.state)
    assert view["run"]["cost_usd"]["used"] == pytest.approx(0.85)
    assert view["run"]["cost_usd"]["left"] == pytest.approx(0.15)
    assert view["run"]["cost_usd"]["level"] == "soft"
    assert view["steps"]["implement"]["tool_calls"]["used"] == 5
    assert view["advice"] and "cost_usd" in view["advice"][0]
    assert stop_decision(ledger.state).outcome == "continue"


def test_the_soft_threshold_is_settable(make_ledger: Callable[..., Ledger]) -> None:
    """A policy soft_threshold of 0.5 gives advice at half the budget."""
    ledger = make_ledger(session_draft(max_turns=10, soft_threshold=0.5))
    ledger.start("implement")
    ledger.complete("implement", ["ok"], report=spent(turns=5))
    assert budget_view(ledger.state)["run"]["turns"]["level"] == "soft"


def test_a_late_result_spends_the_run_budget_but_not_the_plan(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """A late worker's usage counts toward the run (it was spent); its result stays off the plan; verify passes."""
    ledger = make_ledger(session_draft(max_turns=100))
    ledger.start("implement")
    ledger.replan(
        "agent_revision", "reword", plan=session_draft(max_turns=100) | {"steps": [session_draft()["steps"][0]]}
    )
    ledger.complete("implement", ["late"], plan_version=1, attempt=1, report=spent(turns=7))
    assert ledger.state.usage is not None and ledger.state.usage.turns == 7
    assert ledger.state.steps["implement"].usage is None
    assert verify_log(tmp_path / "run.jsonl").orphans == 1


def test_a_v1_plan_keeps_v1_answers_after_repeated_failures(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Without the v2 contract two identical failures are advice only (v1's answers), never a stop."""
    ledger = make_ledger(draft)
    for _ in range(2):
        ledger.start("reproduce")
        ledger.fail("reproduce", "same")
    assert stop_decision(ledger.state).outcome == "continue"
    assert ledger.state.failure_streak is None
    ledger.start("reproduce")


@pytest.mark.parametrize(
    ("policy", "fragment"),
    [
        ({"max_turns": 0}, "policy.max_turns"),
        ({"max_cost_usd": -1}, "policy.max_cost_usd"),
        ({"deadline": "tomorrow"}, "policy.deadline"),
        ({"deadline": "2026-01-01T00:00:00"}, "policy.deadline"),
        ({"soft_threshold": 1.5}, "policy.soft_threshold"),
        ({"allowed_partial": "yes"}, "policy.allowed_partial"),
    ],
)
def test_a_malformed_budget_is_refused(tmp_path: Path, policy: dict[str, Any], fragment: str) -> None:
    """Each malformed run budget is DRAFT_INVALID naming the field; nothing is created."""
    with pytest.raises(PlanInvalid) as caught:
        Ledger.create(tmp_path / "run.jsonl", session_draft(**policy))
    assert caught.value.code == "DRAFT_INVALID" and fragment in caught.value.message


def test_resume_exits_15_when_the_budget_is_spent(
    run_cli: Callable[..., Any], write_json: Callable[[str, Any], Path], tmp_path: Path
) -> None:
    """plantrail resume: verdict budget_exhausted, exit 15, the stop decision in its JSON."""
    log = tmp_path / "cli.jsonl"
    assert run_cli("create", log, "--plan", write_json("d.json", session_draft(max_turns=3))).code == 0
    assert run_cli("start", log, "implement").code == 0
    report = write_json("r.json", {"usage": {"turns": 3}})
    assert run_cli("fail", log, "implement", "--error", "slow", "--report", report).code == 0
    result = run_cli("resume", log, "--json")
    assert (result.code, result.json()["verdict"], result.json()["stop"]["rule"]) == (15, "budget_exhausted", "budget")
    upcoming = run_cli("next", log, "--json").json()
    assert upcoming["ready"] == ["implement"] and upcoming["can_start"] == []
    assert upcoming["waiting"][0]["wait_reasons"][-1]["code"] == "stop_policy"
    assert run_cli("status", log, "--json").json()["budget"]["run"]["turns"]["left"] == 0


def test_the_session_expiry_sample_ends_with_its_turn_budget_spent() -> None:
    """samples/session-expiry.jsonl (record_session_expiry.sh) verifies, mixes v1 and v2 lines, and its stop
    decision is budget_exhausted with verify and the criterion still unmet."""
    from plantrail.ledger.stores.jsonl.reads import read_state

    sample = Path(__file__).parents[2] / "samples" / "session-expiry.jsonl"
    assert verify_log(sample).records == 10
    state = read_state(str(sample), use_cache=False).state
    decision = stop_decision(state)
    assert (decision.outcome, decision.rule) == ("budget_exhausted", "budget")
    assert decision.unmet == ("step:docs", "step:verify", "criterion:expired-gets-401")
    assert state.usage == Usage(turns=12, tool_calls=18, tokens=30600, cost_usd=pytest.approx(1.06))
    assert [s for s in state.steps] == ["reproduce", "implement", "docs", "verify"]


def test_what_can_start_now_follows_the_stop_policy(
    make_ledger: Callable[..., Ledger], run_cli: Any, tmp_path: Path
) -> None:
    """While the stop policy forbids new work, no view offers a start: the ready step is still ready, but the
    ack, next --json and the lines a recording command prints say nothing can start now, and why."""
    from plantrail.projections.views import next_view, startable_steps

    ledger = make_ledger(session_draft(max_turns=60))
    ledger.start("implement")
    ledger.fail("implement", "AssertionError at line 10: 200 != 401", report=spent(turns=1, exit_code=1))
    assert startable_steps(ledger.state) == ["implement"]  # one failure is not yet "no progress"
    ledger.start("implement")
    ledger.close()
    report = tmp_path / "report.json"
    report.write_text('{"exit_code": 1, "usage": {"turns": 1}}')
    log = tmp_path / "run.jsonl"
    failed = run_cli("fail", log, "implement", "--error", "AssertionError at line 10: 200 != 401", "--report", report)
    assert failed.code == 0, failed.err
    assert "can start now: none (stop policy)" in failed.out
    acked = run_cli("next", log, "--json").json()
    assert acked["stop"]["outcome"] == "failed" and "implement" in acked["ready"] and acked["can_start"] == []
    reopened = Ledger.open(log)
    try:
        assert startable_steps(reopened.state) == [] and next_view(reopened.state)["can_start"] == []
    finally:
        reopened.close()
