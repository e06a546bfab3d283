"""The replan brief (seed 002 重规划上下文): what a planner needs to write the next plan, derived from the state.

One JSON document: the round (how many replans so far), the completed steps with their evidence (to keep:
plantrail keeps completed steps under their ids, where seed 002 renumbers), the failed steps with their
errors and reasons, the steps in doubt, the steps not run and what each waits on, the criteria not yet
passed, the late results, the coverage matrix, the work remaining, the budget left, and the side effects in
doubt. Each step carries
its whole contract (title, dependencies, completion evidence, attempts, priority, what it covers), so a patch
(``replace_step``, ``add_step``) can be written from the brief alone.

Pure: no I/O (the library call that reads a log is :func:`ledger.audit.brief`).
"""

from __future__ import annotations

from typing import Any

from plantrail.ledger.coverage import coverage_view
from plantrail.ledger.plan import StepSpec
from plantrail.ledger.versions import plain
from plantrail.projections.effects import effect_view, unresolved
from plantrail.projections.lineage import lineage_view
from plantrail.projections.model import PlanState, StepState
from plantrail.projections.repair_edges import idle_repairs, repairs_of, waiting_for
from plantrail.projections.stop import budget_view
from plantrail.projections.views import drift_view, orphan_view

__all__ = ["brief_view"]


def _contract(spec: StepSpec) -> dict[str, Any]:
    """A step's contract as a draft writes it (what ``add_step``/``replace_step`` take)."""
    contract: dict[str, Any] = {
        "id": spec.id,
        "title": spec.title,
        "depends_on": list(spec.depends_on),
        "completion_evidence": spec.completion_evidence,
        "max_attempts": spec.max_attempts,
    }
    if spec.priority:
        contract["priority"] = spec.priority
    if spec.covers:
        contract["covers"] = list(spec.covers)
    if spec.outputs:
        contract["outputs"] = [plain(o) for o in spec.outputs]
    if spec.inputs:
        contract["inputs"] = [plain(i) for i in spec.inputs]
    return contract


def _completed(step: StepState, spec: StepSpec) -> dict[str, Any]:
    done = {"id": step.id, "attempt": step.attempt, "evidence": list(step.evidence), "last_seq": step.last_seq}
    return done | {"artifacts": [plain(a) for a in step.artifacts], "step": _contract(spec)}


def _stale(step: StepState, spec: StepSpec) -> dict[str, Any]:
    """A stale step (format v2): which input changed, what it had consumed, and its contract."""
    return {
        "id": step.id,
        "reason": step.reason,
        "invalidated_by": step.invalidated_by,
        "consumed": [c._asdict() for c in step.consumed],
        "step": _contract(spec),
    }


def _failed(step: StepState, spec: StepSpec) -> dict[str, Any]:
    return {
        "id": step.id,
        "status": step.status,
        "attempt": step.attempt,
        "max_attempts": step.max_attempts,
        "exhausted": step.exhausted,
        "error": step.error,
        "reason": step.reason,
        "last_seq": step.last_seq,
        "step": _contract(spec),
    }


def _waiting(step: StepState, spec: StepSpec, state: PlanState) -> dict[str, Any]:
    unmet = [d for d in spec.depends_on if state.steps[d].status != "completed"]
    entry = {"id": step.id, "waiting_on": unmet, "reset": step.reset, "step": _contract(spec)}
    repaired = repairs_of(state.plan).get(step.id)
    if repaired is None:
        return entry
    return entry | {"repairs": list(repaired), "needed": bool(waiting_for(state, step.id))}


def _is_failed(step: StepState) -> bool:
    """A step whose last attempt failed (back to pending with attempts left) or that is blocked."""
    return step.status == "blocked" or (step.status == "pending" and step.error is not None)


def brief_view(state: PlanState) -> dict[str, Any]:
    """The ``brief --json`` document of a state (see the module's docstring); ``plan`` None before a plan.

    ``{"run", "goal", "plan_version", "round", "outcome", "completed": [{"id", "attempt", "evidence",
    "last_seq", "artifacts", "step"}], "failed": [{"id", "status", "attempt", "max_attempts", "exhausted", "error",
    "reason", "last_seq", "step"}], "in_progress": [{"id", "attempt", "step"}], "not_run": [{"id",
    "waiting_on", "reset", "step"} and, for a repair step, "repairs" and "needed"], "unmet_criteria": [{"id",
    "description", "status", "evidence"}],
    "orphans", "coverage", "remaining": {"steps", "criteria"}, "budget", "lineage", "effects_in_doubt", "stale":
    [{"id", "reason", "invalidated_by", "consumed", "step"}]}`` (``step``: the step's contract as a draft writes
    it; ``artifacts`` what a completion produced; ``effects_in_doubt``: every side effect requested and never
    known committed, in doubt or of a superseded attempt, as ``status --json`` shows effects: a new plan must not
    perform one blindly; ``remaining`` leaves out a repair step nothing needs, as the outcome lists do), and for
    a run with observations ``observations``, ``possibly_stale``, ``drift`` and
    ``cancel`` (format v2).
    """
    specs = {} if state.plan is None else {s.id: s for s in state.plan.steps}
    steps = [(s, specs[s.id]) for s in state.steps.values_in_order()]
    descriptions = {} if state.plan is None else {c.id: c.description for c in state.plan.acceptance_criteria}
    unmet = [c for c in state.criteria.values_in_order() if c.status != "passed"]
    idle = idle_repairs(state)  # a repair step nothing needs is no work left
    return {
        "run": state.run,
        "goal": state.goal,
        "plan_version": state.version,
        "round": max(state.version - 1, 0),
        "outcome": state.outcome,
        "completed": [_completed(s, spec) for s, spec in steps if s.status == "completed"],
        "failed": [_failed(s, spec) for s, spec in steps if _is_failed(s)],
        "in_progress": [
            {"id": s.id, "attempt": s.attempt, "step": _contract(spec)}
            for s, spec in steps
            if s.status == "in_progress"
        ],
        "not_run": [_waiting(s, spec, state) for s, spec in steps if s.status == "pending" and s.error is None],
        "unmet_criteria": [
            {"id": c.id, "description": descriptions[c.id], "status": c.status, "evidence": c.evidence} for c in unmet
        ],
        "orphans": [orphan_view(o) for o in state.orphans],
        "coverage": coverage_view(state.plan),
        "remaining": {
            "steps": [s.id for s, _ in steps if s.status != "completed" and s.id not in idle],
            "criteria": [c.id for c in unmet],
        },
        "budget": budget_view(state),
        "lineage": lineage_view(state),
        "effects_in_doubt": [effect_view(state, e) for e in unresolved(state)],
        "stale": [_stale(s, spec) for s, spec in steps if s.status == "stale"],
    } | drift_view(state)
