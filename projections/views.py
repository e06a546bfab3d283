"""Queries over the plan state: readiness, what can start now, replan advice, and the JSON views the CLI prints.

All pure functions of a :class:`~projections.model.PlanState`. The JSON shapes here are the ``--json``
contract documented in docs/cli.md and docs/semantics.md.

*Ready* means a pending step whose dependencies are all completed. *Can start* is what a
``start`` would accept now: ready, and the run has room under ``max_in_progress`` (and is not finished). A step
that cannot start carries its *wait reasons*, each a JSON object with a ``code`` and the fields that explain
it. The codes are an open set (readers must accept codes they do not know; approvals and write conflicts
will add theirs):

- ``run_finished`` (``outcome``): the run finished complete, failed or cancelled;
- ``status`` (``status``): the step is not pending (in progress, completed or blocked);
- ``dependencies`` (``waiting``): the dependencies not completed yet;
- ``inputs`` (``waiting``): the inputs the step declares whose producer is not completed (format v2);
- ``capacity`` (``max_in_progress``, ``in_progress``): the limit is reached by the steps named;
- ``stop_policy`` (``outcome``, ``rule``, ``reason``): the stop policy forbids new work;
- ``scope_violation`` (``step``, ``paths``, ``tools``): the run is paused by a result that left its scope;
- ``approval_denied`` (``steps``): the run is paused by a denied approval;
- ``waiting_approval`` (``because``: ``requires_approval`` or ``widened``, ``requests``: the pending requests
  that cover the step): no granted approval for the active version covers the step;
- ``write_conflict`` (``step``, ``glob``): a step in progress writes where this one would;
- ``awaiting_repair`` (``repair``, ``status``): the step failed and waits until its repair step completes;
- ``repair_not_needed`` (``repairs``): a repair step no failed step waits for (:mod:`projections.repair_edges`).
"""

from __future__ import annotations

from typing import Any

from plantrail.ledger.vocabulary.artifacts import input_key
from plantrail.ledger.vocabulary.coverage import coverage_view
from plantrail.ledger.vocabulary.plan import StepSpec
from plantrail.ledger.vocabulary.versions import plain
from plantrail.projections.approvals import authority_reasons
from plantrail.projections.effects import check_first, effects_view
from plantrail.projections.leases import lease_view
from plantrail.projections.lineage import lineage_view
from plantrail.projections.lineage_digest import lineage_of, missing_inputs
from plantrail.projections.model import Orphan, PlanState, StepState, optional_text, texts
from plantrail.projections.repair_edges import edges_of, idle_repairs, repair_reason, repairs_view
from plantrail.projections.stop import STOPPING, budget_view, stop_decision

__all__ = [
    "WaitReason",
    "advice",
    "anchor",
    "approvals_view",
    "capacity_view",
    "drift_view",
    "effects_to_check",
    "in_doubt",
    "next_view",
    "orphan_view",
    "ready_steps",
    "specs",
    "startable_steps",
    "status_document",
    "status_view",
    "wait_reasons",
]

#: One reason a step cannot start now: ``{"code": ..., <fields>}`` (the codes are an open set).
WaitReason = dict[str, Any]


def specs(state: PlanState) -> dict[str, StepSpec]:
    """The active version's step contracts by id."""
    return {} if state.plan is None else {s.id: s for s in state.plan.steps}


def ready_steps(state: PlanState) -> list[str]:
    """Pending (or stale) steps whose dependencies are all completed (and, for a step that declares inputs,
    every input current), in the stable topological order."""
    if state.plan is None or state.finished:
        return []
    contracts = specs(state)
    steps = state.steps
    ready = [
        s.id
        for s in steps.values_in_order()
        if (s.status == "pending" or s.status == "stale")
        and all(steps[d].status == "completed" for d in contracts[s.id].depends_on)
    ]
    if state.contract and edges_of(state.plan):  # repair edges (v2): a failed step waits, an idle repair too
        ready = [s for s in ready if repair_reason(state, steps[s]) is None]
    if lineage_of(state.plan) is None:
        return ready
    return [s for s in ready if not missing_inputs(state, contracts[s])]


def in_doubt(state: PlanState) -> list[StepState]:
    """Steps started with no result yet: after a crash nobody knows whether their work happened."""
    return [s for s in state.steps.values_in_order() if s.status == "in_progress"]


def _capacity_reason(state: PlanState) -> WaitReason | None:
    """The ``capacity`` reason when ``max_in_progress`` steps are in progress, else None (room, or unlimited)."""
    limit = None if state.plan is None else state.plan.policy.max_in_progress
    if limit is None:
        return None
    active = [s.id for s in in_doubt(state)]
    return {"code": "capacity", "max_in_progress": limit, "in_progress": active} if len(active) >= limit else None


def _stop_reason(state: PlanState, now: str | None) -> WaitReason | None:
    """The ``stop_policy`` reason when the stop policy forbids new work (a v2 plan: no progress, a budget or the
    deadline spent), else None."""
    if not state.contract:
        return None
    decision = stop_decision(state, now)
    if decision.outcome not in STOPPING:
        return None
    return {"code": "stop_policy", "outcome": decision.outcome, "rule": decision.rule, "reason": decision.reason}


def _reasons(
    state: PlanState, step: StepState, spec: StepSpec, capacity: WaitReason | None, stop: WaitReason | None = None
) -> list[WaitReason]:
    """Why ``step`` cannot start now, in a fixed order; empty when it can."""
    reasons: list[WaitReason] = []
    if state.finished:
        reasons.append({"code": "run_finished", "outcome": state.outcome})
    if step.status != "pending" and step.status != "stale":
        reasons.append({"code": "status", "status": step.status})
        return reasons
    steps = state.steps
    waiting = [d for d in dict.fromkeys(spec.depends_on) if steps[d].status != "completed"]
    if waiting:
        reasons.append({"code": "dependencies", "waiting": waiting})
    repair = repair_reason(state, step) if state.contract and edges_of(state.plan) else None
    if repair is not None:
        reasons.append(repair)
    if spec.inputs:
        not_current = missing_inputs(state, spec)
        if not_current:
            reasons.append({"code": "inputs", "waiting": not_current})
    if capacity is not None:
        reasons.append({**capacity, "in_progress": list(capacity["in_progress"])})  # each step its own copy
    if stop is not None:
        reasons.append(dict(stop))
    if state.contract or state.authority is not None:  # scopes and approvals: v2 plans only
        reasons += authority_reasons(state, spec)
    return reasons


#: The wait reasons that make a step not *ready* as this module defines it (capacity, the stop policy and reasons added
#: later do not).
_NOT_READY = frozenset({"run_finished", "status", "dependencies", "inputs", "awaiting_repair", "repair_not_needed"})


def wait_reasons(state: PlanState, now: str | None = None) -> dict[str, list[WaitReason]]:
    """Why each step of the active version cannot start now, by id in the stable order (empty: it can start).
    ``now`` is the time the stop policy judges a deadline at."""
    if state.plan is None:
        return {}
    contracts = specs(state)
    capacity = _capacity_reason(state)
    stop = _stop_reason(state, now)
    return {s.id: _reasons(state, s, contracts[s.id], capacity, stop) for s in state.steps.values_in_order()}


def startable_steps(state: PlanState, now: str | None = None) -> list[str]:
    """The ready steps a ``start`` would accept now, in the stable order: none while ``max_in_progress`` steps
    are in progress, nor while the stop policy forbids new work (judged at ``now``: a deadline). Each can
    start on its own; :func:`capacity_view` says how many may start together."""
    if _capacity_reason(state) is not None or _stop_reason(state, now) is not None:
        return []
    ready = ready_steps(state)
    if not (state.contract or state.authority is not None) or not ready:
        return ready
    contracts = specs(state)
    return [s for s in ready if not authority_reasons(state, contracts[s])]


def capacity_view(state: PlanState) -> dict[str, Any]:
    """The run's room to start steps: ``max_in_progress`` (a number or ``"unlimited"``), ``in_progress`` (how
    many steps are) and ``free`` (how many more may start; None when unlimited)."""
    limit = None if state.plan is None else state.plan.policy.max_in_progress
    active = len(in_doubt(state))
    return {
        "max_in_progress": "unlimited" if limit is None else limit,
        "in_progress": active,
        "free": None if limit is None else max(limit - active, 0),
    }


def advice(state: PlanState) -> str | None:
    """Replan advice from what the log can tell: the replan reason code to consider, or None.

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
    idle = idle_repairs(state)  # a repair step nothing needs is not unfinished work
    unfinished = any(s.status in ("pending", "in_progress", "blocked") and s.id not in idle for s in steps)
    active = any(s.status == "in_progress" for s in steps)
    if unfinished and not active and not ready_steps(state):
        return "no_ready_step"
    return None


def approvals_view(state: PlanState) -> dict[str, Any]:
    """Approvals and the pauses they govern: every request (``id``, ``status``, ``steps``, ``plan_version``,
    ``question``, ``writes``, ``tools``, ``seq``, ``by``, ``why``, ``decided_seq``), the steps of the active
    version ``waiting_approval`` (``{step, because, requests}``), the ``violation`` pausing the run (or None)
    and the ``denied`` steps."""
    from plantrail.projections.approvals import needs_approval

    authority = state.authority
    waiting = []
    for spec in () if state.plan is None else state.plan.steps:
        step = state.steps.get(spec.id)
        if step is None or step.status == "completed":
            continue
        why = needs_approval(spec, authority, state.version)
        if why is not None:
            requests = [
                a.id
                for a in (() if authority is None else authority.approvals)
                if a.status == "requested" and a.plan_version == state.version and spec.id in a.steps
            ]
            waiting.append({"step": spec.id, "because": why, "requests": requests})
    return {
        "requests": [] if authority is None else [a._asdict() for a in authority.approvals],
        "waiting_approval": waiting,
        "violation": None if authority is None or authority.violation is None else authority.violation._asdict(),
        "denied": [] if authority is None else list(authority.denied),
    }


def orphan_view(orphan: Orphan) -> dict[str, Any]:
    """One late result as JSON."""
    view = orphan._asdict()
    del view["contract"]  # what adopt compares with; it locates nothing a reader needs
    return view | {"evidence": texts(orphan.evidence)}


def _step_view(step: StepState, spec: StepSpec, ready: bool, waits: list[WaitReason]) -> dict[str, Any]:
    return {
        "id": step.id,
        "title": spec.title,
        "status": step.status,
        "ready": ready,
        "can_start": not waits,
        "wait_reasons": waits,
        "attempt": step.attempt,
        "max_attempts": step.max_attempts,
        "charged": step.charged,
        "abandoned": list(step.abandoned),
        "priority": spec.priority,
        "checks": [plain(c) for c in spec.checks],
        "depends_on": list(spec.depends_on),
        "on_failure": spec.on_failure,
        "completion_evidence": spec.completion_evidence,
        "evidence": texts(step.evidence),
        "reason": step.reason,
        "error": step.error,
        "reset": step.reset,
        "invalidated_by": step.invalidated_by,
        "last_seq": step.last_seq,
    } | _lineage_view(step, spec)


def _lineage_view(step: StepState, spec: StepSpec) -> dict[str, Any]:
    """A step's artifacts, what it consumed and whether its attempt is to be cancelled (format v2: present only
    for a step that declares outputs or inputs, so the v1 document is unchanged)."""
    if not spec.outputs and not spec.inputs and not step.artifacts:
        return {}
    return {
        "outputs": [plain(o) for o in spec.outputs],
        "inputs": [input_key(r) for r in spec.inputs],
        "artifacts": [plain(a) for a in step.artifacts] if step.status == "completed" else [],
        "consumed": [c._asdict() for c in step.consumed],
        "cancel": step.cancel,
    }


def status_view(state: PlanState, now: str | None = None) -> dict[str, Any]:
    """The ``status --json`` document; ``now`` is the time the stop policy judges a deadline at."""
    contracts = specs(state)
    waits = wait_reasons(state, now)
    ready = {s for s, w in waits.items() if not any(r["code"] in _NOT_READY for r in w)}  # one pass for both
    criteria_specs = {} if state.plan is None else {c.id: c for c in state.plan.acceptance_criteria}
    policy = None if state.plan is None else state.plan.policy.max_in_progress
    return {
        "run": state.run,
        "goal": state.goal,
        "plan_version": state.version,
        "outcome": state.outcome,
        "outcome_reason": state.outcome_reason,
        "max_in_progress": "unlimited" if state.plan is not None and policy is None else policy,
        "steps": [_step_view(s, contracts[s.id], s.id in ready, waits[s.id]) for s in state.steps.values_in_order()],
        "criteria": [
            {
                "id": c.id,
                "description": criteria_specs[c.id].description,
                "checks": [plain(check) for check in criteria_specs[c.id].checks],
                "status": c.status,
                "evidence": optional_text(c.evidence),
                "reset": c.reset,
            }
            for c in state.criteria.values_in_order()
        ],
        "ready": [s for s in state.steps if s in ready],
        "can_start": [s for s in state.steps if not waits[s]],
        "capacity": None if state.plan is None else capacity_view(state),
        "advice": advice(state),
        "orphans": [orphan_view(o) for o in state.orphans],
        "last_seq": state.last_seq,
        "head_hash": state.head,
        "stop": stop_decision(state, now).as_dict(),
        "budget": budget_view(state),
        "leases": lease_view(state, now),
        "lineage": lineage_view(state),
        "coverage": coverage_view(state.plan),
        "approvals": approvals_view(state),
        "effects": effects_view(state),
    } | drift_view(state)


def drift_view(state: PlanState) -> dict[str, Any]:
    """The observations (format v2) and whether the plan is possibly stale: each current observation version
    that differs from the one the plan was made from (absent from a document whose run records none)."""
    if not state.observations and (state.plan is None or state.plan.artifacts is None):
        return {}
    from plantrail.projections.observations import plan_drift

    drift = plan_drift(state.plan, state.observations)
    return {
        "observations": [
            {"key": o.key, "version": o.version, "dirty": list(o.dirty), "seq": o.seq} for o in state.observations
        ],
        "possibly_stale": bool(drift),
        "drift": drift,
        "cancel": [s.id for s in state.steps.values_in_order() if s.cancel is not None],
    }


def anchor(seq: int, head: str | None) -> str | None:
    """The anchor ``SEQ:HASH`` (all 64 hex digits) to paste into ``verify --anchor`` or ``repair --acked``."""
    return None if head is None else f"{seq}:{head}"


def status_document(state: PlanState, now: str | None = None) -> dict[str, Any]:
    """The status document every front door gives: :func:`status_view` (at ``now``: the deadline and the leases
    are judged then) with the anchor and the state hash."""
    from plantrail.projections.canonical import state_hash

    return status_view(state, now) | {"anchor": anchor(state.last_seq, state.head), "state_hash": state_hash(state)}


def next_view(state: PlanState, now: str | None = None) -> dict[str, Any]:
    """The ``next --json`` document: what is ready, what can start now and why the rest waits, the advice, and
    the stop policy's decision at ``now`` (while a v2 plan's says failed or budget_exhausted, nothing can
    start), the repair steps (``repairs``: :func:`projections.repair_edges.repairs_view`) and, for a run that
    records side effects, what to check before a ready step starts again (``check_first``:
    :func:`effects_to_check`)."""
    ready = ready_steps(state)
    waits = wait_reasons(state, now)
    stop = stop_decision(state, now)
    return {
        "plan_version": state.version,
        "outcome": state.outcome,
        "ready": ready,
        "stop": stop.as_dict(),
        "can_start": startable_steps(state, now),
        "waiting": [{"step": s, "wait_reasons": waits[s]} for s in ready if waits[s]],
        "capacity": None if state.plan is None else capacity_view(state),
        "in_progress": [s.id for s in in_doubt(state)],
        "advice": advice(state),
        "leases": lease_view(state, now),
        "approvals": approvals_view(state),
        "repairs": repairs_view(state),
        **_check_first(state),
    } | drift_view(state)


def _check_first(state: PlanState) -> dict[str, Any]:
    """``next``'s ``check_first`` member, for a run that records side effects (absent otherwise)."""
    return {"check_first": effects_to_check(state)} if state.effects else {}


def effects_to_check(state: PlanState) -> list[dict[str, str]]:
    """Each ready step whose side effects are never known committed, with what to check before it starts again
    (``{"step", "check"}``; :func:`projections.effects.check_first`): it would do them again."""
    return [{"step": step, "check": note} for step in ready_steps(state) if (note := check_first(state, step))]
