"""Reconcile on replan: the work a new plan version keeps or resets, and lineage invalidation downstream."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from plantrail.ledger.api import Ledger
from plantrail.projections.model import StepChange

#: A diamond with a side branch: inspect -> (api, db) -> integrate; docs stands alone.
DIAMOND: dict[str, Any] = {
    "goal": "Ship the export endpoint",
    "acceptance_criteria": [
        {"id": "export-works", "description": "GET /export returns the CSV"},
        {"id": "docs-updated", "description": "the API docs mention /export"},
    ],
    "policy": {"max_in_progress": "unlimited"},
    "steps": [
        {"id": "inspect", "title": "Read the routes", "completion_evidence": "route table"},
        {"id": "api", "title": "Add the handler", "depends_on": ["inspect"], "completion_evidence": "handler diff"},
        {"id": "db", "title": "Add the query", "depends_on": ["inspect"], "completion_evidence": "query diff"},
        {
            "id": "integrate",
            "title": "Wire handler and query",
            "depends_on": ["api", "db"],
            "completion_evidence": "integration test output",
        },
        {"id": "docs", "title": "Update the docs", "completion_evidence": "docs diff"},
    ],
}


def _complete(ledger: Ledger, *steps: str) -> None:
    for step in steps:
        ledger.start(step)
        ledger.complete(step, [f"{step} done"])


def _retitle(plan: dict[str, Any], step: str, title: str) -> dict[str, Any]:
    new = copy.deepcopy(plan)
    next(s for s in new["steps"] if s["id"] == step)["title"] = title
    return new


def _reset(ledger: Ledger) -> dict[str, StepChange]:
    changes = ledger.state.adopted.changes  # type: ignore[union-attr]
    assert changes is not None
    return {c.step: c for c in changes.reset}


def test_completed_work_is_kept_when_its_contract_is_unchanged(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A replan that only retitles diagnose keeps reproduce completed with its evidence."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 401"])
    revised = copy.deepcopy(draft)
    revised["steps"][1]["title"] = "Check what the auth service returns"

    ledger.replan("failed_assumption", "the 401 comes from the auth service", plan=revised)

    state = ledger.state
    assert state.version == 2
    assert state.goal == draft["goal"]
    reproduce = state.steps["reproduce"]
    assert (reproduce.status, reproduce.evidence) == ("completed", ("login.test.ts fails with 401",))
    assert state.adopted is not None and state.adopted.changes is not None
    assert state.adopted.changes.kept == ("reproduce",)


def test_completed_work_is_invalidated_when_its_contract_changes(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Changing a completed step's title and completion evidence sends it back to pending."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["saved failure output"])
    revised = {
        "acceptanceCriteria": draft["acceptanceCriteria"],
        "steps": [
            {
                "id": "reproduce",
                "title": "Reproduce and locate the login failure",
                "dependsOn": [],
                "completionEvidence": "failing output and root cause",
            }
        ],
    }

    ledger.replan("failed_assumption", "one step is enough", plan=revised)

    reproduce = ledger.state.steps["reproduce"]
    assert (reproduce.status, reproduce.evidence, reproduce.attempt) == ("pending", (), 0)
    change = _reset(ledger)["reproduce"]
    assert (change.cause, change.was, change.fields) == (
        "contract_changed",
        "completed",
        ("title", "completion_evidence"),
    )


def test_a_passed_criterion_is_reset_when_its_description_changes(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A passed criterion whose description changes returns to unverified without evidence."""
    ledger = make_ledger(draft)
    ledger.verify_criterion("login-test-passes", True, "old evidence")
    revised = copy.deepcopy(draft)
    revised["acceptanceCriteria"][0]["description"] = "the login and logout tests both pass"

    ledger.replan("new_constraint", "the user wants logout covered too", plan=revised)

    criterion = ledger.state.criteria["login-test-passes"]
    assert (criterion.status, criterion.evidence, criterion.reset) == ("unverified", None, "description_changed")


def test_a_passed_criterion_is_reset_when_the_replan_invalidates_completed_work(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A criterion with an unchanged description loses its verdict when completed work is invalidated."""
    ledger = make_ledger(draft)
    _complete(ledger, "reproduce")
    ledger.verify_criterion("login-test-passes", True, "login.test.ts passed")

    ledger.replan("failed_assumption", "reproduced the wrong failure", plan=_retitle(draft, "reproduce", "Reproduce"))

    assert ledger.state.criteria["login-test-passes"].reset == "work_invalidated"


def test_a_passed_criterion_keeps_its_verdict_when_no_work_is_lost(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Retitling a step that never ran loses no work, so a passed criterion keeps its verdict and evidence."""
    ledger = make_ledger(draft)
    _complete(ledger, "reproduce")
    ledger.verify_criterion("login-test-passes", True, "login.test.ts passed")

    ledger.replan("agent_revision", "clearer title", plan=_retitle(draft, "diagnose", "Find the root cause"))

    criterion = ledger.state.criteria["login-test-passes"]
    assert (criterion.status, criterion.evidence) == ("passed", "login.test.ts passed")


def test_invalidation_follows_lineage_transitively_and_names_the_root(make_ledger: Callable[..., Ledger]) -> None:
    """Changing inspect resets api, db and integrate, each naming inspect as the upstream cause."""
    ledger = make_ledger(DIAMOND)
    _complete(ledger, "inspect", "api", "db", "integrate", "docs")

    ledger.replan("failed_assumption", "the routes moved", plan=_retitle(DIAMOND, "inspect", "Read the new router"))

    reset = _reset(ledger)
    assert reset["inspect"].cause == "contract_changed"
    for step in ("api", "db", "integrate"):
        assert (reset[step].cause, reset[step].upstream, reset[step].was) == (
            "upstream_invalidated",
            "inspect",
            "completed",
        )
        assert ledger.state.steps[step].invalidated_by == "inspect"
        assert ledger.state.steps[step].status == "pending"


def test_unrelated_successes_are_reused(make_ledger: Callable[..., Ledger]) -> None:
    """A change on one branch keeps the other branch and the unrelated step completed."""
    ledger = make_ledger(DIAMOND)
    _complete(ledger, "inspect", "api", "db", "integrate", "docs")

    ledger.replan("failed_assumption", "the handler needs paging", plan=_retitle(DIAMOND, "api", "Add a paged handler"))

    changes = ledger.state.adopted.changes  # type: ignore[union-attr]
    assert changes is not None
    assert changes.kept == ("docs", "inspect", "db")  # the stable topological order
    assert _reset(ledger)["integrate"].upstream == "api"
    assert ledger.state.steps["docs"].evidence == ("docs done",)


def test_a_step_in_progress_at_the_replan_is_superseded(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A step running when the replan lands starts again at attempt 0 in the new version."""
    ledger = make_ledger(draft)
    _complete(ledger, "reproduce")
    ledger.start("diagnose")

    ledger.replan("new_constraint", "also check the logs", plan=_retitle(draft, "reproduce", "Reproduce"))

    diagnose = ledger.state.steps["diagnose"]
    assert (diagnose.status, diagnose.attempt, diagnose.reset) == ("pending", 0, "superseded")
    assert _reset(ledger)["diagnose"].attempt == 1


def test_dependencies_are_compared_as_a_set_and_attempt_budgets_are_not_contract(
    make_ledger: Callable[..., Ledger],
) -> None:
    """Reordering depends_on or raising max_attempts keeps completed work."""
    ledger = make_ledger(DIAMOND)
    _complete(ledger, "inspect", "api", "db", "integrate")
    revised = copy.deepcopy(DIAMOND)
    revised["steps"][3]["depends_on"] = ["db", "api"]
    revised["steps"][3]["max_attempts"] = 5

    ledger.replan("budget_change", "more retries for the integration", plan=revised)

    integrate = ledger.state.steps["integrate"]
    assert (integrate.status, integrate.max_attempts) == ("completed", 5)


def test_a_kept_step_forgets_why_it_restarted_in_an_earlier_version(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """reset and invalidated_by describe the latest replan only: a step kept into v3 carries neither."""
    ledger = make_ledger(draft)
    _complete(ledger, "reproduce")
    v2 = _retitle(draft, "reproduce", "Reproduce with auth logs on")
    ledger.replan("failed_assumption", "need the auth logs", plan=v2)
    _complete(ledger, "reproduce")
    v3 = copy.deepcopy(v2)
    v3["acceptanceCriteria"][0]["description"] = "login and logout pass"

    ledger.replan("new_constraint", "cover logout", plan=v3)

    reproduce = ledger.state.steps["reproduce"]
    assert (reproduce.status, reproduce.reset, reproduce.invalidated_by) == ("completed", None, None)


def test_a_renamed_step_invalidates_its_dependents(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """A patch replacing reproduce by a new id rewrites diagnose's dependency, so diagnose's contract changed."""
    ledger = make_ledger(draft)
    _complete(ledger, "reproduce", "diagnose")
    patch = {
        "base_version": 1,
        "operations": [
            {
                "op": "replace_step",
                "step_id": "reproduce",
                "step": {
                    "id": "reproduce-e2e",
                    "title": "Reproduce in the browser",
                    "completion_evidence": "playwright trace",
                },
            }
        ],
    }

    ledger.replan("failed_assumption", "unit test cannot show it", patch=patch)

    changes = ledger.state.adopted.changes  # type: ignore[union-attr]
    assert changes is not None
    assert [c.step for c in changes.removed] == ["reproduce"]
    assert changes.added == ("reproduce-e2e",)
    assert _reset(ledger)["diagnose"].fields == ("depends_on",)
