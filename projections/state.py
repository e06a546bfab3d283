"""The plan state's reducer: ``initial``, ``evolve`` and ``fold`` over the model of :mod:`projections.model`.

``evolve`` is total and pure: it never mutates its inputs, does no I/O, reads no clock, and returns the
state unchanged (but for ``last_seq``/``head``) for a record it cannot apply. Rules are checked before
anything is written (:mod:`ledger.decide`); ``verify`` replays those checks to catch a hand-made log.

Late results (``step.completed``/``blocked``/``failed`` for a superseded plan version, a stale attempt, or
after the run finished) never touch the plan: they land on ``orphans``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ledger.errors import PlanInvalid
from ledger.plan import PlanSpec, validate_plan
from projections.model import CriterionState, Orphan, OrphanWhy, PlanState, StepState, VersionInfo
from projections.reconcile import reconcile
from projections.table import Table

if TYPE_CHECKING:
    from ledger.events import (
        CriterionVerified,
        LogOpened,
        PlanCreated,
        PlanReplanned,
        Record,
        RunFinished,
        StepBlocked,
        StepCompleted,
        StepFailed,
        StepStarted,
    )

__all__ = [
    "evolve",
    "fold",
    "initial",
    "orphan_reason",
]

def initial() -> PlanState:
    """The state of an empty log."""
    return PlanState()


# --------------------------------------------------------------------------- evolve


def evolve(state: PlanState, record: Record) -> PlanState:
    """Apply one record; never mutates ``state`` or ``record``."""
    handler = _HANDLERS.get(record.type)
    moved = state._replace(last_seq=record.seq, head=record.h)
    return moved if handler is None else handler(moved, record, record.data)


def fold(records: Iterable[Record], state: PlanState | None = None) -> PlanState:
    """Evolve ``state`` (default: the empty state) through every record in order."""
    current = initial() if state is None else state
    for record in records:
        current = evolve(current, record)
    return current


def orphan_reason(state: PlanState, plan_version: int, step: str, attempt: int) -> OrphanWhy | None:
    """Why a result stamped (version, step, attempt) is late, or None when it applies to the active plan."""
    if plan_version < state.version:
        return "SUPERSEDED_VERSION"
    current = state.steps.get(step)
    if current is not None and attempt != current.attempt:
        return "STALE_ATTEMPT"
    if state.finished:
        return "RUN_FINISHED"
    return None


def _opened(state: PlanState, record: Record, data: LogOpened) -> PlanState:
    return state._replace(run=data.run)


def _valid_order(plan: PlanSpec) -> tuple[str, ...] | None:
    """The plan's step order, or None for a plan that never validated (only a hand-made log holds one;
    it is not applied, and ``verify`` reports it as ILLEGAL_EVENT)."""
    try:
        return validate_plan(plan)
    except PlanInvalid:
        return None


def _step_tables(plan: PlanSpec, order: tuple[str, ...], seq: int) -> tuple[Table[StepState], Table[CriterionState]]:
    budget = {s.id: s.max_attempts for s in plan.steps}
    steps = Table(order, (StepState(id=i, max_attempts=budget[i], last_seq=seq) for i in order))
    ids = tuple(c.id for c in plan.acceptance_criteria)
    return steps, Table(ids, (CriterionState(id=i, last_seq=seq) for i in ids))


def _created(state: PlanState, record: Record, data: PlanCreated) -> PlanState:
    if state.plan is not None:
        return state
    order = _valid_order(data.plan)
    if order is None:
        return state
    steps, criteria = _step_tables(data.plan, order, record.seq)
    info = VersionInfo(version=1, seq=record.seq, ts=record.ts, actor=record.actor, plan=data.plan)
    return state._replace(plan=data.plan, version=1, steps=steps, criteria=criteria, versions=(info,))


def _continue(state: PlanState) -> PlanState:
    """A start or a replan continues a paused run."""
    if state.outcome == "paused":
        return state._replace(outcome=None, outcome_reason=None, outcome_seq=None)
    return state


def _started(state: PlanState, record: Record, data: StepStarted) -> PlanState:
    step = state.steps.get(data.step)
    if step is None or record.plan_version != state.version or state.finished:
        return state
    started = step._replace(status="in_progress", attempt=data.attempt, last_seq=record.seq)
    return _continue(state._replace(steps=state.steps.set(step.id, started)))


def _late(state: PlanState, record: Record, data: StepCompleted | StepBlocked | StepFailed) -> PlanState | None:
    """Put a late result on the orphan path; None when the result applies to the active plan."""
    why = orphan_reason(state, record.plan_version, data.step, data.attempt)
    if why is None:
        return None
    orphan = Orphan(
        seq=record.seq,
        type=record.type,
        step=data.step,
        plan_version=record.plan_version,
        attempt=data.attempt,
        active_version=state.version,
        why=why,
        evidence=getattr(data, "evidence", ()),
        reason=getattr(data, "reason", None) or getattr(data, "error", None),
    )
    return state._replace(orphans=(*state.orphans, orphan))


def _in_progress(state: PlanState, step_id: str) -> StepState | None:
    step = state.steps.get(step_id)
    return step if step is not None and step.status == "in_progress" else None


def _completed(state: PlanState, record: Record, data: StepCompleted) -> PlanState:
    late = _late(state, record, data)
    step = None if late is not None else _in_progress(state, data.step)
    if step is None:
        return late or state
    done = step._replace(status="completed", evidence=data.evidence, last_seq=record.seq)
    return state._replace(steps=state.steps.set(step.id, done), consecutive_failures=0)


def _blocked(state: PlanState, record: Record, data: StepBlocked) -> PlanState:
    late = _late(state, record, data)
    step = None if late is not None else _in_progress(state, data.step)
    if step is None:
        return late or state
    blocked = step._replace(status="blocked", reason=data.reason, last_seq=record.seq)
    return state._replace(steps=state.steps.set(step.id, blocked))


def _failed(state: PlanState, record: Record, data: StepFailed) -> PlanState:
    late = _late(state, record, data)
    step = None if late is not None else _in_progress(state, data.step)
    if step is None:
        return late or state
    if step.attempt < step.max_attempts:
        failed = step._replace(status="pending", error=data.error, last_seq=record.seq)
    else:
        reason = f"attempts exhausted ({step.attempt} of {step.max_attempts}); last error: {data.error}"
        failed = step._replace(status="blocked", error=data.error, reason=reason, exhausted=True, last_seq=record.seq)
    return state._replace(steps=state.steps.set(step.id, failed), consecutive_failures=state.consecutive_failures + 1)


def _verified(state: PlanState, record: Record, data: CriterionVerified) -> PlanState:
    criterion = state.criteria.get(data.criterion)
    if criterion is None or state.finished:
        return state
    verdict = criterion._replace(status=data.verdict, evidence=data.evidence, last_seq=record.seq, reset=None)
    return state._replace(criteria=state.criteria.set(criterion.id, verdict))


def _finished(state: PlanState, record: Record, data: RunFinished) -> PlanState:
    if state.plan is None or state.finished:
        return state
    return state._replace(outcome=data.outcome, outcome_reason=data.reason, outcome_seq=record.seq)


def _replanned(state: PlanState, record: Record, data: PlanReplanned) -> PlanState:
    if state.plan is None or state.finished or data.new_version != state.version + 1:
        return state
    if _valid_order(data.plan) is None:
        return state
    steps, criteria, changes = reconcile(state.plan, state.steps, state.criteria, data.plan, record.seq)
    info = VersionInfo(
        version=data.new_version,
        seq=record.seq,
        ts=record.ts,
        actor=record.actor,
        plan=data.plan,
        reason=data.reason,
        why=data.why,
        causes=data.causes,
        observations=data.observations,
        patched=data.patch is not None,
        changes=changes,
    )
    replanned = state._replace(
        plan=data.plan,
        version=data.new_version,
        steps=steps,
        criteria=criteria,
        versions=(*state.versions, info),
        consecutive_failures=0,
    )
    return _continue(replanned)


_HANDLERS: Final[Mapping[str, Callable[[PlanState, Record, Any], PlanState]]] = {
    "log.opened": _opened,
    "plan.created": _created,
    "step.started": _started,
    "step.completed": _completed,
    "step.blocked": _blocked,
    "step.failed": _failed,
    "criterion.verified": _verified,
    "run.finished": _finished,
    "plan.replanned": _replanned,
}
