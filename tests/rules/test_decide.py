"""Decisions: every command's rules and every refusal code; a refusal leaves the log byte-for-byte unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Command, Complete, Fail, NewEvent, Start, decide
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.errors import CommandRefused, PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.events import Source
from plantrail.projections.state import evolve, initial

MakeLedger = Callable[..., Ledger]


def refused(ledger: Ledger, tmp_path: Path, action: Callable[[], Any], code: str) -> PlantrailError:
    """Run ``action``, expect refusal ``code``, and prove the log file did not change."""
    log = tmp_path / "run.jsonl"
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as info:
        action()
    assert info.value.code == code, info.value
    assert log.read_bytes() == before
    return info.value


def test_commands_before_a_plan_are_refused() -> None:
    """Without plan.created every command is PLAN_NOT_CREATED."""
    with pytest.raises(CommandRefused) as info:
        decide(initial(), Start(step="a"))
    assert info.value.code == "PLAN_NOT_CREATED"


def test_creating_twice_is_refused(make_ledger: MakeLedger, tmp_path: Path, draft: dict[str, Any]) -> None:
    """A second create on the same path is LOG_EXISTS and never overwrites."""
    make_ledger()
    before = (tmp_path / "run.jsonl").read_bytes()
    with pytest.raises(PlantrailError) as info:
        Ledger.create(tmp_path / "run.jsonl", draft)
    assert info.value.code == "LOG_EXISTS"
    assert (tmp_path / "run.jsonl").read_bytes() == before


def test_start_unknown_step(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """Starting a step the plan does not have is STEP_NOT_FOUND."""
    ledger = make_ledger()
    exc = refused(ledger, tmp_path, lambda: ledger.start("deploy"), "STEP_NOT_FOUND")
    assert exc.fields["step"] == "deploy"


def test_start_names_the_unfinished_dependencies(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """STEP_NOT_READY names every dependency that is not completed."""
    ledger = make_ledger()
    exc = refused(ledger, tmp_path, lambda: ledger.start("diagnose"), "STEP_NOT_READY")
    assert exc.fields["waiting"] == ["reproduce"]


def test_start_beyond_max_in_progress_names_the_active_steps(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """With one step in progress (the default policy) a second start is STEP_ALREADY_ACTIVE naming it."""
    plan = {
        "goal": "g",
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "steps": [{"id": i, "title": i, "completion_evidence": "e"} for i in ("a", "b", "c")],
    }
    ledger = make_ledger(plan)
    ledger.start("a")
    exc = refused(ledger, tmp_path, lambda: ledger.start("b"), "STEP_ALREADY_ACTIVE")
    assert exc.fields["active"] == ["a"]


def test_an_unlimited_policy_runs_several_steps_at_once(make_ledger: MakeLedger) -> None:
    """max_in_progress "unlimited" lets every ready step start."""
    plan = {
        "goal": "g",
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "policy": {"max_in_progress": "unlimited"},
        "steps": [{"id": i, "title": i, "completion_evidence": "e"} for i in ("a", "b", "c")],
    }
    ledger = make_ledger(plan)
    for step in ("a", "b", "c"):
        ledger.start(step)
    assert [s.status for s in ledger.state.steps.values()] == ["in_progress"] * 3


def test_start_of_a_running_step_is_an_invalid_transition(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """INVALID_TRANSITION carries the current, expected and target statuses."""
    ledger = make_ledger()
    ledger.start("reproduce")
    exc = refused(ledger, tmp_path, lambda: ledger.start("reproduce"), "INVALID_TRANSITION")
    assert (exc.fields["current"], exc.fields["expected"], exc.fields["target"]) == (
        "in_progress",
        "pending",
        "in_progress",
    )


def test_complete_needs_a_running_step(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """Completing a pending step is refused: pending never jumps to completed."""
    ledger = make_ledger()
    exc = refused(ledger, tmp_path, lambda: ledger.complete("reproduce", ["done"]), "INVALID_TRANSITION")
    assert exc.fields["current"] == "pending"


@pytest.mark.parametrize("evidence", [[], [""], ["   "], ["ok", " \n "]])
def test_complete_needs_non_blank_evidence(make_ledger: MakeLedger, tmp_path: Path, evidence: list[str]) -> None:
    """EVIDENCE_REQUIRED when the evidence is missing or blank after trimming."""
    ledger = make_ledger()
    ledger.start("reproduce")
    refused(ledger, tmp_path, lambda: ledger.complete("reproduce", evidence), "EVIDENCE_REQUIRED")


def test_block_and_fail_need_a_reason(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """REASON_REQUIRED for a blank block reason or a blank failure error."""
    ledger = make_ledger()
    ledger.start("reproduce")
    refused(ledger, tmp_path, lambda: ledger.block("reproduce", "  "), "REASON_REQUIRED")
    refused(ledger, tmp_path, lambda: ledger.fail("reproduce", ""), "REASON_REQUIRED")


def test_block_keeps_the_trimmed_reason(make_ledger: MakeLedger) -> None:
    """A blocked step records why, trimmed."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.block("reproduce", "  needs credentials for the staging database \n")
    step = ledger.state.steps["reproduce"]
    assert (step.status, step.reason) == ("blocked", "needs credentials for the staging database")


def test_a_failed_attempt_returns_to_pending_until_attempts_run_out(make_ledger: MakeLedger) -> None:
    """step.failed goes back to pending while attempts remain and blocks the step when they are exhausted."""
    plan = {
        "goal": "g",
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "steps": [{"id": "a", "title": "a", "completion_evidence": "e", "max_attempts": 2}],
    }
    ledger = make_ledger(plan)
    ledger.start("a")
    ledger.fail("a", "exit 1")
    assert (ledger.state.steps["a"].status, ledger.state.steps["a"].attempt) == ("pending", 1)
    ledger.start("a")
    ledger.fail("a", "exit 1 again")
    step = ledger.state.steps["a"]
    assert (step.status, step.attempt, step.exhausted) == ("blocked", 2, True)
    assert "exit 1 again" in (step.reason or "")


def test_criterion_must_exist_and_carry_evidence(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """CRITERION_NOT_FOUND for an unknown criterion; EVIDENCE_REQUIRED for a blank verdict."""
    ledger = make_ledger()
    refused(ledger, tmp_path, lambda: ledger.verify_criterion("nope", True, "x"), "CRITERION_NOT_FOUND")
    refused(ledger, tmp_path, lambda: ledger.verify_criterion("login-test-passes", True, " "), "EVIDENCE_REQUIRED")


def test_finish_complete_needs_every_step_and_criterion(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """CRITERIA_UNVERIFIED names the open steps and criteria."""
    ledger = make_ledger()
    exc = refused(ledger, tmp_path, lambda: ledger.finish("complete", "done?"), "CRITERIA_UNVERIFIED")
    assert exc.fields["steps"] == ["reproduce", "diagnose"]
    assert exc.fields["criteria"] == ["login-test-passes"]


def test_finish_complete_refuses_completed_steps_with_unverified_criteria(
    make_ledger: MakeLedger, tmp_path: Path
) -> None:
    """All steps completed is not enough: every criterion must have passed."""
    ledger = make_ledger()
    for step in ("reproduce", "diagnose"):
        ledger.start(step)
        ledger.complete(step, ["ok"])
    exc = refused(ledger, tmp_path, lambda: ledger.finish("complete", "done"), "CRITERIA_UNVERIFIED")
    assert (exc.fields["steps"], exc.fields["criteria"]) == ([], ["login-test-passes"])
    ledger.verify_criterion("login-test-passes", False, "still 401")
    refused(ledger, tmp_path, lambda: ledger.finish("complete", "done"), "CRITERIA_UNVERIFIED")
    ledger.verify_criterion("login-test-passes", True, "login.test.ts passed")
    ledger.finish("complete", "done")
    assert ledger.state.outcome == "complete"


def test_a_finished_run_refuses_everything_but_late_results(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """After complete, failed or cancelled every command is RUN_FINISHED."""
    ledger = make_ledger()
    ledger.finish("cancelled", "user stopped the run")
    refused(ledger, tmp_path, lambda: ledger.start("reproduce"), "RUN_FINISHED")
    refused(ledger, tmp_path, lambda: ledger.finish("failed", "again"), "RUN_FINISHED")
    refused(ledger, tmp_path, lambda: ledger.verify_criterion("login-test-passes", True, "x"), "RUN_FINISHED")


def test_a_result_for_a_step_running_when_the_run_was_cancelled_is_an_orphan(make_ledger: MakeLedger) -> None:
    """A cancelled node's late result lands on the orphan path and changes nothing."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.finish("cancelled", "user stopped the run")
    ack = ledger.complete("reproduce", ["the worker finished anyway"])
    assert ack.orphan == "RUN_FINISHED"
    assert ledger.state.steps["reproduce"].status == "in_progress"
    assert ledger.state.orphans[0].why == "RUN_FINISHED"


def test_paused_is_not_final(make_ledger: MakeLedger) -> None:
    """A paused run continues with the next start; the pause stays in history."""
    ledger = make_ledger()
    ledger.finish("paused", "waiting for the user")
    assert ledger.state.outcome == "paused"
    ledger.start("reproduce")
    assert ledger.state.outcome is None


def test_a_start_stamped_with_a_superseded_version_is_refused(
    make_ledger: MakeLedger, tmp_path: Path, draft: dict[str, Any]
) -> None:
    """STALE_PLAN_VERSION for a start issued against an older plan version."""
    ledger = make_ledger()
    ledger.replan("new_constraint", "the user wants a logout test too", plan=draft)
    refused(ledger, tmp_path, lambda: ledger.start("reproduce", plan_version=1), "STALE_PLAN_VERSION")


def test_a_version_from_the_future_is_refused(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """UNKNOWN_PLAN_VERSION for a command stamped with a version that does not exist yet."""
    ledger = make_ledger()
    refused(ledger, tmp_path, lambda: ledger.start("reproduce", plan_version=2), "UNKNOWN_PLAN_VERSION")


def test_a_stale_attempt_lands_on_the_orphan_path(make_ledger: MakeLedger) -> None:
    """A result for an earlier attempt of a retried step is kept as an orphan (STALE_ATTEMPT)."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.fail("reproduce", "flaky runner")
    ledger.start("reproduce")
    ack = ledger.complete("reproduce", ["attempt 1's worker reported late"], attempt=1)
    assert ack.orphan == "STALE_ATTEMPT"
    assert ledger.state.steps["reproduce"].status == "in_progress"


def test_an_attempt_that_never_started_is_refused(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A result for an attempt from the future is an invalid transition, not an orphan."""
    ledger = make_ledger()
    ledger.start("reproduce")
    refused(ledger, tmp_path, lambda: ledger.complete("reproduce", ["x"], attempt=2), "INVALID_TRANSITION")


def test_expected_seq_must_match_the_end_of_the_log(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """STALE_EXPECTED_SEQ carries the expected and actual seqs."""
    ledger = make_ledger()
    exc = refused(ledger, tmp_path, lambda: ledger.start("reproduce", expected_seq=0), "STALE_EXPECTED_SEQ")
    assert (exc.fields["expected"], exc.fields["actual"]) == (0, 1)
    assert ledger.start("reproduce", expected_seq=1).seq == 2


def test_a_retried_key_returns_the_original_seq_and_writes_nothing(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """The same idempotency key with the same content is acknowledged again without a write."""
    ledger = make_ledger()
    first = ledger.start("reproduce", idempotency_key="start-reproduce-1")
    before = (tmp_path / "run.jsonl").read_bytes()
    again = ledger.start("reproduce", idempotency_key="start-reproduce-1", expected_seq=1)
    assert (again.seq, again.hash, again.duplicate) == (first.seq, first.hash, True)
    assert (tmp_path / "run.jsonl").read_bytes() == before


def test_a_key_reused_for_other_content_is_refused(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """IDEMPOTENCY_CONFLICT when a key comes back with different content."""
    ledger = make_ledger()
    ledger.start("reproduce", idempotency_key="k")
    refused(ledger, tmp_path, lambda: ledger.complete("reproduce", ["x"], idempotency_key="k"), "IDEMPOTENCY_CONFLICT")


def test_a_batch_is_all_or_nothing(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """execute_many writes nothing when any command in it is refused."""
    ledger = make_ledger()
    refused(
        ledger,
        tmp_path,
        lambda: ledger.execute_many(
            [
                Start(step="reproduce"),
                Complete(step="reproduce", evidence=["ok"]),
                Start(step="nope"),
            ]
        ),
        "STEP_NOT_FOUND",
    )
    acks = ledger.execute_many([Start(step="reproduce"), Complete(step="reproduce", evidence=["ok"])])
    assert [a.seq for a in acks] == [3, 4]  # between the log.batch bounds at seqs 2 and 5


def test_a_draft_error_is_a_plan_refusal(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A replan with an invalid draft is refused with the draft's code and writes nothing."""
    ledger = make_ledger()
    bad = {
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "steps": [{"id": "a", "title": "a", "depends_on": ["a"], "completion_evidence": "e"}],
    }
    exc = refused(ledger, tmp_path, lambda: ledger.replan("failed_assumption", "why", plan=bad), "SELF_DEPENDENCY")
    assert isinstance(exc, PlanInvalid)


def test_the_ledger_appends_exactly_the_events_decide_returns(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A group commit decides each command as decide() does, against the state the batch has reached: the
    same data, plan version, envelope and orphan verdict; a key repeated inside the batch acks its first use."""
    ledger = make_ledger()
    source = Source(file="transcript.jsonl", line=3)
    commands: list[Command] = [
        Start(step="reproduce", key="s"),
        Fail(step="reproduce", error=" flaky runner ", actor="runtime", source=source),
        Start(step="reproduce"),
        Complete(step="reproduce", evidence=[" attempt 1 reported late "], attempt=1, key="late"),
        Start(step="reproduce", key="s"),
        Complete(step="reproduce", evidence=["  401 reproduced  "]),
    ]
    before = ledger.state
    acks = ledger.execute_many(commands)
    assert [a.duplicate for a in acks] == [False, False, False, False, True, False]
    assert acks[4].seq == acks[0].seq
    with LogReader(tmp_path / "run.jsonl") as reader:
        written = {r.seq: r for r in reader.records()}
    state = before
    for command, ack in zip(commands, acks, strict=True):
        if ack.duplicate:
            continue
        record = written[ack.seq]
        fields = (record.plan_version, record.actor, record.source, record.key, ack.orphan)
        assert decide(state, command) == [NewEvent(record.data, *fields)]
        state = evolve(state, record)
    assert acks[3].orphan == "STALE_ATTEMPT"
    assert [written[acks[0].seq - 1].type, written[max(written)].type] == ["log.batch", "log.batch"]
    assert state._replace(last_seq=0, head=None) == ledger.state._replace(last_seq=0, head=None)
    assert ledger.state.last_seq == max(written)
