"""Replan decisions: what a replan records, and every refusal with its stable code (the log stays unchanged)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import PlanReplanned
from plantrail.ledger.vocabulary.plan import apply_patch, parse_patch
from plantrail.projections.history import history
from tests.logs import read_records


def _refused(log: Path, code: str, call: Callable[[], object]) -> None:
    """Assert that ``call`` raises ``code`` and leaves the log's bytes as they were."""
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as raised:
        call()
    assert raised.value.code == code
    assert log.read_bytes() == before


def _last_replan(log: Path) -> tuple[str, PlanReplanned]:
    record = [r for r in read_records(log) if r.type == "plan.replanned"][-1]
    assert isinstance(record.data, PlanReplanned)
    return record.actor, record.data


def test_a_patch_replan_records_the_whole_plan_the_patch_reason_why_causes_and_actor(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """The plan.replanned event carries the resulting whole plan beside the patch it came from."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 500"])
    patch = {
        "base_version": 1,
        "operations": [
            {
                "op": "add_step",
                "step": {
                    "id": "check-auth",
                    "title": "Check the auth service",
                    "depends_on": ["reproduce"],
                    "completion_evidence": "auth service logs",
                },
            },
            {
                "op": "replace_criterion",
                "criterion_id": "login-test-passes",
                "criterion": {"id": "login-test-passes", "description": "login passes against the real auth service"},
            },
        ],
    }

    ledger.replan(
        "failed_assumption", "auth returns 500", patch=patch, causes=[3], observations=["HTTP 500"], actor="user"
    )

    actor, data = _last_replan(tmp_path / "run.jsonl")
    assert actor == "user"
    assert (data.new_version, data.reason, data.why, data.causes, data.observations) == (
        2,
        "failed_assumption",
        "auth returns 500",
        (3,),
        ("HTTP 500",),
    )
    assert data.patch == parse_patch(patch)
    assert data.plan == apply_patch(history(read_records(tmp_path / "run.jsonl")).versions[0].plan, parse_patch(patch))
    assert [s.id for s in data.plan.steps] == ["reproduce", "diagnose", "check-auth"]


@pytest.mark.parametrize(
    ("code", "why", "causes", "goal"),
    [
        ("REASON_REQUIRED", "   ", (), None),
        ("UNKNOWN_CAUSE", "auth returns 500", (99,), None),
        ("UNKNOWN_CAUSE", "auth returns 500", (0,), None),
        ("GOAL_CHANGED", "auth returns 500", (), "Rewrite the login page"),
    ],
)
def test_a_replan_is_refused_with_a_stable_code(
    tmp_path: Path,
    make_ledger: Callable[..., Ledger],
    draft: dict[str, Any],
    code: str,
    why: str,
    causes: tuple[int, ...],
    goal: str | None,
) -> None:
    """A blank why, a cause outside the log's events, or a changed goal is refused and nothing is written."""
    ledger = make_ledger(draft)
    revised = copy.deepcopy(draft) | ({"goal": goal} if goal else {})
    _refused(tmp_path / "run.jsonl", code, lambda: ledger.replan("failed_assumption", why, plan=revised, causes=causes))


def test_an_invalid_draft_is_refused_with_its_draft_code(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A replan draft with a dependency cycle is refused DEPENDENCY_CYCLE."""
    ledger = make_ledger(draft)
    cyclic = copy.deepcopy(draft)
    cyclic["steps"][0]["dependsOn"] = ["diagnose"]
    _refused(
        tmp_path / "run.jsonl", "DEPENDENCY_CYCLE", lambda: ledger.replan("agent_revision", "reorder", plan=cyclic)
    )


def test_a_replan_of_a_finished_run_is_refused_before_the_draft_is_judged(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """After a cancelled finish, even an invalid draft is refused RUN_FINISHED: nothing can continue the run."""
    ledger = make_ledger(draft)
    ledger.finish("cancelled", "the user stopped the run")
    _refused(tmp_path / "run.jsonl", "RUN_FINISHED", lambda: ledger.replan("user_request", "go on", plan={"steps": []}))


def test_a_patch_on_a_superseded_base_is_refused(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A patch written against version 1 after version 2 exists is refused STALE_PLAN_VERSION."""
    ledger = make_ledger(draft)
    patch = {"base_version": 1, "operations": [{"op": "remove_step", "step_id": "diagnose"}]}
    ledger.replan("agent_revision", "diagnosis is not needed", patch=patch)
    _refused(
        tmp_path / "run.jsonl", "STALE_PLAN_VERSION", lambda: ledger.replan("agent_revision", "again", patch=patch)
    )


def test_a_result_stamped_with_a_plan_version_that_never_existed_is_refused(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Version 0 is not a plan version: a result stamped with it is refused, not filed as an orphan."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.replan("agent_revision", "retitle", plan=copy.deepcopy(draft) | {"goal": draft["goal"]})
    _refused(
        tmp_path / "run.jsonl",
        "UNKNOWN_PLAN_VERSION",
        lambda: ledger.complete("reproduce", ["output"], plan_version=0, attempt=1),
    )
    _refused(
        tmp_path / "run.jsonl",
        "UNKNOWN_PLAN_VERSION",
        lambda: ledger.complete("reproduce", ["output"], plan_version=3, attempt=1),
    )
