"""Queries over the plan state: readiness, replan advice, and the JSON views the CLI prints.

All pure functions of a :class:`~projections.model.PlanState`. The JSON shapes here are the ``--json``
contract documented in the README.
"""

from __future__ import annotations

from typing import Any

from plantrail.ledger.plan import StepSpec
from plantrail.ledger.versions import plain
from plantrail.projections.model import Orphan, PlanState, StepState
from plantrail.projections.stop import budget_view, stop_decision

__all__ = [
    "advice",
    "in_doubt",
    "orphan_view",
    "ready_steps",
    "specs",
    "status_view",
]


def specs(state: PlanState) -> dict[str, StepSpec]:
    """The active version's step contracts by id."""
    return {} if state.plan is None else {s.id: s for s in state.plan.steps}


def ready_steps(state: PlanState) -> list[str]:
    """Pending steps whose dependencies are all completed, in the stable topological order."""
    if state.plan is None or state.finished:
        return []
    contracts = specs(state)
    steps = state.steps
    return [
        s.id
        for s in steps.values_in_order()
        if s.status == "pending" and all(steps[d].status == "completed" for d in contracts[s.id].depends_on)
    ]


def in_doubt(state: PlanState) -> list[StepState]:
    """Steps started with no result yet: after a crash nobody knows whether their work happened."""
    return [s for s in state.steps.values_in_order() if s.status == "in_progress"]


def advice(state: PlanState) -> str | None:
    """Seed 000 ``shouldReplan`` over what the log can tell: the replan reason code to consider, or None.

    ``repeated_tool_failure`` after two consecutive failed attempts; ``retries_exhausted`` when a step ran out
    of attempts; ``no_ready_step`` when work remains but nothing is running and nothing can start.
    """
    if state.plan is None or state.finished:
        return None
    if state.consecutive_failures >= 2:
        return "repeated_tool_failure"
    steps = list(state.steps.values_in_order())
    if any(s.exhausted and s.status == "blocked" for s in steps):
        return "retries_exhausted"
    unfinished = any(s.status in ("pending", "in_progress", "blocked") for s in steps)
    active = any(s.status == "in_progress" for s in steps)
    if unfinished and not active and not ready_steps(state):
        return "no_ready_step"
    return None


def orphan_view(orphan: Orphan) -> dict[str, Any]:
    """One late result as JSON."""
    return orphan._asdict() | {"evidence": list(orphan.evidence)}


def _step_view(step: StepState, spec: StepSpec, ready: bool) -> dict[str, Any]:
    return {
        "id": step.id,
        "title": spec.title,
        "status": step.status,
        "ready": ready,
        "attempt": step.attempt,
        "max_attempts": step.max_attempts,
        "priority": spec.priority,
        "checks": [plain(c) for c in spec.checks],
        "depends_on": list(spec.depends_on),
        "completion_evidence": spec.completion_evidence,
        "evidence": list(step.evidence),
        "reason": step.reason,
        "error": step.error,
        "reset": step.reset,
        "invalidated_by": step.invalidated_by,
        "last_seq": step.last_seq,
    }


def status_view(state: PlanState, now: str | None = None) -> dict[str, Any]:
    """The ``status --json`` document; ``now`` is the time the stop policy judges a deadline at."""
    contracts = specs(state)
    ready = set(ready_steps(state))
    criteria_specs = {} if state.plan is None else {c.id: c for c in state.plan.acceptance_criteria}
    policy = None if state.plan is None else state.plan.policy.max_in_progress
    return {
        "run": state.run,
        "goal": state.goal,
        "plan_version": state.version,
        "outcome": state.outcome,
        "outcome_reason": state.outcome_reason,
        "max_in_progress": "unlimited" if state.plan is not None and policy is None else policy,
        "steps": [_step_view(s, contracts[s.id], s.id in ready) for s in state.steps.values_in_order()],
        "criteria": [
            {
                "id": c.id,
                "description": criteria_specs[c.id].description,
                "checks": [plain(check) for check in criteria_specs[c.id].checks],
                "status": c.status,
                "evidence": c.evidence,
                "reset": c.reset,
            }
            for c in state.criteria.values_in_order()
        ],
        "ready": [s for s in state.steps if s in ready],
        "advice": advice(state),
        "orphans": [orphan_view(o) for o in state.orphans],
        "last_seq": state.last_seq,
        "head_hash": state.head,
        "stop": stop_decision(state, now).as_dict(),
        "budget": budget_view(state),
    }
