"""The replan brief: what a planner needs to write the next plan, derived from the state.

One JSON document: the round (how many replans so far), the completed steps with their evidence (to keep:
a replan keeps completed steps under their ids, nothing is renumbered), the failed steps with their
errors and reasons, the steps in doubt, the steps not run and what each waits on, the criteria not yet
passed, the late results, the coverage matrix, the work remaining, the budget and the scope left (the task
scope and the approvals that bear on the open steps), and the side effects in doubt. Each step carries its
whole contract as a draft writes it (:func:`ledger.vocabulary.draft_writer.step_draft`: every term, defaults left out),
so a patch (``replace_step``, ``add_step``) can be written from the brief alone, and ``draft`` is the active
plan as a whole draft (:func:`ledger.vocabulary.draft_writer.plan_draft`), which ``replan --plan`` takes as it is.

Pure: no I/O (the library call that reads a log is :func:`ledger.audit.brief`).
"""

from __future__ import annotations

from typing import Any

from plantrail.ledger.vocabulary.coverage import coverage_view
from plantrail.ledger.vocabulary.draft_writer import plan_draft, step_draft
from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec
from plantrail.ledger.vocabulary.versions import plain
from plantrail.projections.approvals import Approval
from plantrail.projections.effects import effect_view, unresolved
from plantrail.projections.lineage import lineage_view
from plantrail.projections.model import PlanState, StepState, optional_text, texts
from plantrail.projections.repair_edges import idle_repairs, repairs_of, waiting_for
from plantrail.projections.stop import budget_view
from plantrail.projections.views import approvals_view, drift_view, orphan_view

__all__ = ["brief_view", "scope_left"]


def _contract(spec: StepSpec) -> dict[str, Any]:
    """A step's contract as a draft writes it (what ``add_step``/``replace_step`` take): every term it has."""
    return step_draft(spec)


def _approval(approval: Approval) -> dict[str, Any]:
    """An approval request as the brief lists it (lists, not tuples: the document is plain JSON)."""
    return {
        "id": approval.id,
        "steps": list(approval.steps),
        "question": approval.question,
        "writes": list(approval.writes),
        "tools": list(approval.tools),
        "seq": approval.seq,
    } | ({} if approval.status == "requested" else {"by": approval.by, "why": approval.why})


def _task_scope(plan: PlanSpec) -> dict[str, Any] | None:
    scope = plan.scope
    if scope is None:
        return None
    return {
        "reads": None if scope.reads is None else list(scope.reads),
        "writes": None if scope.writes is None else list(scope.writes),
    }


def scope_left(state: PlanState) -> dict[str, Any]:
    """The scope what is left works within: the task scope (None: undeclared), the granted widenings and the
    pending requests of the active version that cover a step not completed, the steps waiting for an approval,
    the denied steps (the run is paused until a replan changes or removes them) and the scope violation that
    paused the run (None: none)."""
    if state.plan is None:
        return {"task": None, "granted": [], "pending": [], "waiting_approval": [], "denied": [], "violation": None}
    open_steps = {s.id for s in state.steps.values_in_order() if s.status != "completed"}
    approvals = () if state.authority is None else state.authority.approvals
    current = [a for a in approvals if a.plan_version == state.version and open_steps.intersection(a.steps)]
    gates = approvals_view(state)
    return {
        "task": _task_scope(state.plan),
        "granted": [_approval(a) for a in current if a.status == "granted"],
        "pending": [_approval(a) for a in current if a.status == "requested"],
        "waiting_approval": gates["waiting_approval"],
        "denied": gates["denied"],
        "violation": None if gates["violation"] is None else _violation(gates["violation"]),
    }


def _violation(held: dict[str, Any]) -> dict[str, Any]:
    return held | {"paths": list(held["paths"]), "tools": list(held["tools"])}


def _completed(step: StepState, spec: StepSpec) -> dict[str, Any]:
    done = {"id": step.id, "attempt": step.attempt, "evidence": texts(step.evidence), "last_seq": step.last_seq}
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
    [{"id", "reason", "invalidated_by", "consumed", "step"}], "scope": {"task", "granted", "pending",
    "waiting_approval", "denied", "violation"}, "draft"}`` (``step``: the step's contract as a draft writes
    it; ``scope``: :func:`scope_left`; ``draft``: the active plan as a draft, None before a plan;
    ``artifacts`` what a completion produced; ``effects_in_doubt``: every side effect requested and never known
    committed, in doubt or of a superseded attempt, as ``status --json`` shows effects: a new plan must not
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
            {"id": c.id, "description": descriptions[c.id], "status": c.status, "evidence": optional_text(c.evidence)}
            for c in unmet
        ],
        "orphans": [orphan_view(o) for o in state.orphans],
        "coverage": coverage_view(state.plan),
        "remaining": {
            "steps": [s.id for s, _ in steps if s.status != "completed" and s.id not in idle],
            "criteria": [c.id for c in unmet],
        },
        "budget": budget_view(state),
        "scope": scope_left(state),
        "lineage": lineage_view(state),
        "effects_in_doubt": [effect_view(state, e) for e in unresolved(state)],
        "stale": [_stale(s, spec) for s, spec in steps if s.status == "stale"],
        "draft": None if state.plan is None else plan_draft(state.plan),
    } | drift_view(state)
