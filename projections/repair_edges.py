"""Readiness with repair edges (the edges are validated by :mod:`ledger.vocabulary.repair_edges`).

A step A may name a repair step R (``on_failure: R``). The rules, all derived from the state the reducer keeps
(``StepState.repair`` on R: the failed steps waiting for it, each with the attempt that failed):

- when A fails with attempts left, A is pending but waits (wait reason ``awaiting_repair``) until R completes.
  The failure calls R: R's run lists A; a completed R returns to pending for a new run (its next start is a
  new attempt; the attempts of its earlier runs are not charged to the new run);
- R is ready only while a failed step waits for it; otherwise it is an *idle* repair step (wait reason
  ``repair_not_needed``): never offered, never started (``REPAIR_NOT_NEEDED``), and it does not hold up the
  run's completion (the stop policy's ``complete``, ``finish complete``, the open work lists);
- when R completes, every step waiting for it may retry; a second failure of A calls R again. The loop is
  bounded by A's attempts: when they run out A is blocked (exhausted) and calls nothing;
- a step that names itself, or no step, is retried directly as before;
- a replan starts every pending step that had attempts again at attempt 0 (as always), so no step of the new
  version waits for a repair; a wait is judged against the active version's edges, so a removed or changed
  ``on_failure`` releases the step.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plantrail.ledger.vocabulary.repair_edges import repair_edges
from plantrail.projections.model import RepairRun, StepState

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec
    from plantrail.projections.state import StateView

__all__ = [
    "awaited_repair",
    "called",
    "edges_of",
    "idle_repairs",
    "repair_reason",
    "repaired",
    "repairs_of",
    "repairs_view",
    "waiting_for",
]

_NONE: Mapping[str, str] = {}
#: The statuses a step may start from: the repair edges gate both (a repair step gone stale, its input changed
#: since it ran, is still called only by a failure).
_GATED = frozenset({"pending", "stale"})
#: The last plan whose edges were indexed, and them: records are judged against one plan version at a time.
_INDEXED: list[tuple[PlanSpec, Mapping[str, str], Mapping[str, tuple[str, ...]]]] = []


def _index(plan: PlanSpec | None) -> tuple[Mapping[str, str], Mapping[str, tuple[str, ...]]]:
    if plan is None:
        return _NONE, {}
    entry = _INDEXED[0] if _INDEXED else None  # read once: another thread may replace it
    if entry is None or entry[0] is not plan:
        edges = repair_edges(plan.steps)
        repairs: dict[str, list[str]] = {}
        for step, target in edges.items():
            repairs.setdefault(target, []).append(step)
        entry = (plan, edges, {r: tuple(steps) for r, steps in repairs.items()})
        _INDEXED[:] = [entry]
    return entry[1], entry[2]


def edges_of(plan: PlanSpec | None) -> Mapping[str, str]:
    """Each step of ``plan`` that names another step as its repair step, with that step."""
    return _index(plan)[0]


def repairs_of(plan: PlanSpec | None) -> Mapping[str, tuple[str, ...]]:
    """Each repair step of ``plan`` with the steps it repairs (plan order)."""
    return _index(plan)[1]


def called(state: StateView, failed: StepState, seq: int) -> StepState | None:
    """The repair step a failure (with attempts left) calls, in its new state; None when the step has none.

    The failed step joins the repair step's run; a completed repair step starts a new run (pending, its
    evidence and last error cleared, the attempts so far spent)."""
    target = edges_of(state.plan).get(failed.id)
    repair = None if target is None else state.steps.get(target)
    if repair is None:
        return None
    entry = (failed.id, failed.attempt)
    run = repair.repair or RepairRun()
    if repair.status == "completed":
        fresh = RepairRun((entry,), repair.attempt)
        return repair._replace(status="pending", evidence=(), error=None, reason=None, repair=fresh, last_seq=seq)
    waiting = (*(w for w in run.waiting if w[0] != failed.id), entry)
    return repair._replace(repair=run._replace(waiting=waiting), last_seq=seq)


def repaired(repair: StepState) -> StepState:
    """A completed repair step with its run's waiting steps released."""
    assert repair.repair is not None
    return repair._replace(repair=repair.repair._replace(waiting=()))


def waiting_for(state: StateView, repair: str) -> list[str]:
    """The failed steps of the active version that wait for ``repair`` now (in the order they failed)."""
    step = state.steps.get(repair)
    if step is None or step.repair is None or step.status == "completed":
        return []
    edges = edges_of(state.plan)
    result = []
    for failed, attempt in step.repair.waiting:
        current = state.steps.get(failed)
        if (
            current is not None
            and edges.get(failed) == repair
            and current.status == "pending"
            and current.attempt == attempt
        ):
            result.append(failed)
    return result


def awaited_repair(state: StateView, step: StepState) -> str | None:
    """The repair step ``step`` waits for (it failed, and its repair has not completed since); else None."""
    if step.status != "pending" or step.attempt == 0:
        return None
    target = edges_of(state.plan).get(step.id)
    if target is None:
        return None
    return target if step.id in waiting_for(state, target) else None


def idle_repairs(state: StateView) -> frozenset[str]:
    """The repair steps nothing needs now: pending (or stale: its input changed since it ran), and no failed
    step waits for them (they never start, and they do not hold up the run's completion)."""
    repairs = repairs_of(state.plan)
    if not repairs:
        return frozenset()
    return frozenset(
        r for r in repairs if (s := state.steps.get(r)) is not None and s.status in _GATED and not waiting_for(state, r)
    )


def repair_reason(state: StateView, step: StepState) -> dict[str, Any] | None:
    """The wait reason repair edges give a pending step: ``awaiting_repair`` (``repair``: the repair step,
    ``status``: its status) for a failed step whose repair has not completed, ``repair_not_needed``
    (``repairs``: the steps it repairs) for an idle repair step (pending or stale); None otherwise."""
    if step.status not in _GATED:
        return None
    target = awaited_repair(state, step)
    if target is not None:
        return {"code": "awaiting_repair", "repair": target, "status": state.steps[target].status}
    repaired_steps = repairs_of(state.plan).get(step.id)
    if repaired_steps is not None and not waiting_for(state, step.id):
        return {"code": "repair_not_needed", "repairs": list(repaired_steps)}
    return None


def repairs_view(state: StateView) -> list[dict[str, Any]]:
    """Each repair step of the active version (plan order): ``{"step", "repairs", "status", "waiting",
    "needed"}``: the steps it repairs, its status, the failed steps waiting for it now, and whether it is
    needed (something waits for it). ``resume --json`` shows it."""
    repairs = repairs_of(state.plan)
    if not repairs:
        return []
    rows = []
    for repair, repaired_steps in repairs.items():
        step = state.steps.get(repair)
        if step is None:
            continue
        waiting = waiting_for(state, repair)
        rows.append(
            {
                "step": repair,
                "repairs": list(repaired_steps),
                "status": step.status,
                "waiting": waiting,
                "needed": bool(waiting),
            }
        )
    return rows
