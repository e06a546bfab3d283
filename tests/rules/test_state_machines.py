"""The rules of the plan state machine and of the todo state machine, one test each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Block, Complete, Start, decide
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Record
from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanSpec, StepSpec, parse_draft
from plantrail.projections.state import evolve, fold, initial
from plantrail.projections.views import advice, ready_steps

MakeLedger = Callable[..., Ledger]


def _code(action: Callable[[], Any]) -> str:
    with pytest.raises(PlantrailError) as info:
        action()
    return info.value.code


# --------------------------------------------------------------------------- the plan state machine


def test_plan_rejects_a_step_whose_dependency_is_unfinished(make_ledger: MakeLedger) -> None:
    """The next step is reproduce; starting diagnose first is refused as not ready."""
    ledger = make_ledger()
    assert ready_steps(ledger.state)[0] == "reproduce"
    assert _code(lambda: ledger.start("diagnose")) == "STEP_NOT_READY"


def test_plan_prevents_two_steps_from_running_at_once(make_ledger: MakeLedger) -> None:
    """With reproduce running, starting diagnose is refused because a step is already in progress."""
    ledger = make_ledger()
    ledger.start("reproduce")
    assert _code(lambda: ledger.start("diagnose")) == "STEP_ALREADY_ACTIVE"


def test_plan_requires_evidence_before_completing(make_ledger: MakeLedger) -> None:
    """Blank evidence cannot complete a step."""
    ledger = make_ledger()
    ledger.start("reproduce")
    assert _code(lambda: ledger.complete("reproduce", ["   "])) == "EVIDENCE_REQUIRED"


def test_plan_replans_after_repeated_tool_failures(make_ledger: MakeLedger) -> None:
    """Two consecutive failures make the advice repeated_tool_failure."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.fail("reproduce", "tool timed out")
    assert advice(ledger.state) is None
    ledger.start("reproduce")
    ledger.fail("reproduce", "tool timed out again")
    assert advice(ledger.state) == "repeated_tool_failure"


def test_plan_preserves_completed_work_when_replanning(make_ledger: MakeLedger, draft: dict[str, Any]) -> None:
    """A replan that only rewords diagnose keeps reproduce completed with its evidence; the goal is kept."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 401"])
    draft["steps"][1]["title"] = "Check what the auth service returns"
    del draft["goal"]
    ledger.replan("failed_assumption", "the 401 comes from the auth service", plan=draft)
    state = ledger.state
    assert state.version == 2
    assert state.goal == "Fix the login failure and run the tests"
    kept = state.steps["reproduce"]
    assert (kept.status, kept.evidence) == ("completed", ("login.test.ts fails with 401",))


def test_plan_invalidates_completed_work_when_the_contract_changes(make_ledger: MakeLedger) -> None:
    """A completed step whose title and evidence requirement change starts again, pending with no evidence."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", ["saved failure output"])
    ledger.replan(
        "failed_assumption",
        "reproducing is not enough",
        plan={
            "acceptanceCriteria": [{"id": "login-test-passes", "description": "the login test passes"}],
            "steps": [
                {
                    "id": "reproduce",
                    "title": "Reproduce and locate the login failure",
                    "dependsOn": [],
                    "completionEvidence": "failing output and root cause",
                }
            ],
        },
    )
    step = ledger.state.steps["reproduce"]
    assert (step.status, step.evidence, step.reset) == ("pending", (), "contract_changed")


def test_plan_invalidates_passed_criteria_when_their_description_changes(
    make_ledger: MakeLedger, draft: dict[str, Any]
) -> None:
    """A passed criterion whose description changes returns to unverified, without its evidence."""
    ledger = make_ledger()
    ledger.verify_criterion("login-test-passes", True, "old evidence")
    draft["acceptanceCriteria"][0]["description"] = "login and logout tests both pass"
    ledger.replan("new_constraint", "the user wants logout covered too", plan=draft)
    criterion = ledger.state.criteria["login-test-passes"]
    assert (criterion.status, criterion.evidence) == ("unverified", None)


def test_plan_rejects_duplicate_acceptance_criterion_ids() -> None:
    """Two criteria named the same are refused."""
    raw = {
        "goal": "g",
        "acceptanceCriteria": [{"id": "same", "description": "first"}, {"id": "same", "description": "second"}],
        "steps": [{"id": "inspect", "title": "Inspect", "dependsOn": [], "completionEvidence": "output"}],
    }
    from plantrail.ledger.vocabulary.plan import build_plan

    assert _code(lambda: build_plan(parse_draft(raw))) == "DUPLICATE_CRITERION_ID"


def test_plan_rejects_early_completion_while_criteria_remain_unverified(make_ledger: MakeLedger) -> None:
    """Every step completed but a criterion unverified: the run cannot finish complete; once it passes it can."""
    ledger = make_ledger()
    for step in ("reproduce", "diagnose"):
        ledger.start(step)
        ledger.complete(step, ["done"])
    assert _code(lambda: ledger.finish("complete", "all steps done")) == "CRITERIA_UNVERIFIED"
    ledger.verify_criterion("login-test-passes", True, "login.test.ts passed")
    ledger.finish("complete", "all criteria passed")
    assert ledger.state.outcome == "complete"


# --------------------------------------------------------------------------- the todo state machine


TODO = PlanSpec(
    goal="todo",
    acceptance_criteria=(CriterionSpec("done", "every todo completed"),),
    steps=tuple(StepSpec(f"todo-{i:03d}", f"task {i}", (), "done") for i in range(1, 13)),
)


def test_todo_ids_are_stable_and_ordered() -> None:
    """Twelve todos keep their zero-padded ids in creation order; a status change never moves them."""
    expected = [f"todo-{i:03d}" for i in range(1, 13)]
    assert list(fold(_records(TODO, [])).steps) == expected
    started = fold(_records(TODO, [Start(step="todo-007"), Complete(step="todo-007", evidence=["ok"])]))
    assert list(started.steps) == expected
    assert started.steps["todo-007"].status == "completed"


def _records(plan: PlanSpec, commands: list[Any]) -> list[Record]:
    """Decide commands in memory and return the records a log would hold (no file involved)."""
    from plantrail.ledger.rules.decide import Create
    from plantrail.ledger.vocabulary.codec import GENESIS_PREV
    from plantrail.ledger.vocabulary.events import FORMAT_VERSION

    records: list[Record] = []
    state = initial()
    for seq, command in enumerate([Create(plan=plan), *commands], start=1):
        try:
            events = decide(state, command)
        except PlantrailError:
            continue
        for event in events:
            record = Record(
                v=FORMAT_VERSION,
                seq=seq,
                ts="t",
                run="r",
                plan_version=event.plan_version,
                actor=event.actor,
                data=event.data,
                prev=GENESIS_PREV,
                h=f"{seq:064x}",
            )
            state = evolve(state, record)
            records.append(record)
    return records


def test_todo_only_legal_transitions(make_ledger: MakeLedger) -> None:
    """pending -> in_progress -> completed|blocked; nothing else (complete from pending, block from completed)."""
    ledger = make_ledger(_todo_draft(2))
    assert _code(lambda: ledger.complete("todo-001", ["x"])) == "INVALID_TRANSITION"
    ledger.start("todo-001")
    ledger.complete("todo-001", ["x"])
    assert _code(lambda: ledger.complete("todo-001", ["x"])) == "INVALID_TRANSITION"
    assert _code(lambda: ledger.block("todo-001", "why")) == "INVALID_TRANSITION"
    assert _code(lambda: ledger.start("todo-001")) == "INVALID_TRANSITION"


def test_todo_block_requires_a_reason_and_keeps_it_trimmed(make_ledger: MakeLedger) -> None:
    """An empty block reason is refused; a real one is stored trimmed."""
    ledger = make_ledger(_todo_draft(1))
    ledger.start("todo-001")
    assert _code(lambda: ledger.block("todo-001", " ")) == "REASON_REQUIRED"
    ledger.block("todo-001", "  waiting for API key  ")
    assert ledger.state.steps["todo-001"].reason == "waiting for API key"


def test_todo_unknown_id_is_refused_before_any_transition(make_ledger: MakeLedger) -> None:
    """An unknown id is STEP_NOT_FOUND for every command."""
    ledger = make_ledger(_todo_draft(1))
    for action in (
        lambda: ledger.start("todo-999"),
        lambda: ledger.complete("todo-999", ["x"]),
        lambda: ledger.block("todo-999", "r"),
    ):
        assert _code(action) == "STEP_NOT_FOUND"


def test_todo_snapshots_are_immutable(make_ledger: MakeLedger) -> None:
    """A state handed to a caller cannot be changed, not even one step inside it."""
    ledger = make_ledger(_todo_draft(1))
    state = ledger.state
    with pytest.raises(AttributeError):
        state.version = 9  # type: ignore[misc]
    with pytest.raises(AttributeError):
        state.steps["todo-001"].status = "completed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        state.steps["todo-001"] = state.steps["todo-001"]  # type: ignore[index]


def _todo_draft(n: int) -> dict[str, Any]:
    return {
        "goal": "todo",
        "acceptance_criteria": [{"id": "done", "description": "every todo completed"}],
        "steps": [
            {"id": f"todo-{i:03d}", "title": f"task {i}", "completion_evidence": "done"} for i in range(1, n + 1)
        ],
    }


_OPS = st.lists(
    st.tuples(st.sampled_from(["start", "complete", "block"]), st.integers(min_value=1, max_value=4)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(_OPS)
def test_todo_no_sequence_of_operations_makes_two_todos_in_progress(ops: list[tuple[str, int]]) -> None:
    """Whatever the operations (legal or not), at most one todo is ever in progress."""
    plan = PlanSpec(
        goal="todo",
        acceptance_criteria=(CriterionSpec("done", "all done"),),
        steps=tuple(StepSpec(f"todo-{i:03d}", f"task {i}", (), "done") for i in range(1, 5)),
    )
    commands: list[Any] = []
    for op, i in ops:
        step = f"todo-{i:03d}"
        commands.append(
            {
                "start": Start(step=step),
                "complete": Complete(step=step, evidence=["ok"]),
                "block": Block(step=step, reason="stuck"),
            }[op]
        )
    state = initial()
    for record in _records(plan, commands):
        state = evolve(state, record)
        assert sum(s.status == "in_progress" for s in state.steps.values()) <= 1
