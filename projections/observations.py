"""Observations in the state: whether the active plan was made from the versions that are current now."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec
    from plantrail.projections.model import Observed

__all__ = ["plan_drift"]


def plan_drift(plan: PlanSpec | None, observations: tuple[Observed, ...]) -> list[dict[str, Any]]:
    """Each observation whose current version differs from the one the plan was made from: ``key``,
    ``planned`` (None: the plan recorded none), ``current``, ``dirty`` and the ``seq`` that recorded it."""
    if plan is None:
        return []
    made = {} if plan.artifacts is None else {o.key: o for o in plan.artifacts.observed}
    drift = []
    for seen in observations:
        planned = made.get(seen.key)
        if planned is None or planned.version != seen.version or planned.dirty != seen.dirty:
            drift.append(
                {
                    "key": seen.key,
                    "planned": None if planned is None else planned.version,
                    "current": seen.version,
                    "dirty": list(seen.dirty),
                    "seq": seen.seq,
                }
            )
    return drift
