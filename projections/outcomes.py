"""What a ``partial`` or ``budget_exhausted`` finish records, derived from the state.

``done`` and ``not_done`` (and ``unmet``) are ``step:ID`` / ``criterion:ID``, as the stop policy's ``unmet``;
``resume_from`` is the step ids a continuation starts from. Pure: the decision records these lists
(:mod:`ledger.rules.outcomes`), and ``resume`` shows them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from plantrail.projections.repair_edges import idle_repairs

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = ["OutcomeLists", "outcome_lists"]


class OutcomeLists(NamedTuple):
    """What a ``partial`` or ``budget_exhausted`` finish records."""

    done: tuple[str, ...] = ()
    not_done: tuple[str, ...] = ()
    resume_from: tuple[str, ...] = ()
    unmet: tuple[str, ...] = ()


def _resume_from(state: StateView) -> tuple[str, ...]:
    """The steps a continuation starts from: those not completed whose dependencies are all completed
    (in progress, ready or blocked), in the plan's order."""
    assert state.plan is not None
    depends = {s.id: s.depends_on for s in state.plan.steps}
    steps = state.steps
    idle = idle_repairs(state)
    return tuple(
        s.id
        for s in steps.values()
        if s.status != "completed" and s.id not in idle and all(steps[d].status == "completed" for d in depends[s.id])
    )


def outcome_lists(state: StateView, outcome: str) -> OutcomeLists:
    """The lists the state gives a finish with ``outcome`` (empty for v1's outcome words)."""
    if outcome not in ("partial", "budget_exhausted") or state.plan is None:
        return OutcomeLists()
    done = [f"step:{s.id}" for s in state.steps.values() if s.status == "completed"]
    done += [f"criterion:{c.id}" for c in state.criteria.values() if c.status == "passed"]
    idle = idle_repairs(state)  # a repair step nothing needs is no open work
    open_work = [f"step:{s.id}" for s in state.steps.values() if s.status != "completed" and s.id not in idle]
    open_work += [f"criterion:{c.id}" for c in state.criteria.values() if c.status != "passed"]
    if outcome == "budget_exhausted":
        return OutcomeLists(unmet=tuple(open_work))
    return OutcomeLists(done=tuple(done), not_done=tuple(open_work), resume_from=_resume_from(state))
