"""Hook deliveries put back in the order the agent acted: an update of a task delivered before the task's
creation (parallel hooks) is read just after that creation, where the agent made it.

A transcript is written in the agent's order; hooks run in parallel and may land in any order. The only order
the mapping cannot take is an update of a task it has not seen created (it would skip it as ``unknown_task``),
so only such an update moves, and only to just after the creation of its task; everything else keeps the
order of delivery. What the mapping then has to infer (a start the updates skipped) it marks inferred.
"""

from __future__ import annotations

from collections.abc import Sequence

from plantrail.ledger.importers.model import Observation, TaskEvent

__all__ = ["as_delivered"]


def as_delivered(observations: Sequence[tuple[str, Observation]]) -> list[tuple[str, Observation]]:
    """The observations with each early task update moved to just after its task's creation."""
    created_at: dict[str, int] = {}
    for place, (_, observation) in enumerate(observations):
        if _task(observation, "created") is not None:
            created_at.setdefault(_task(observation, "created") or "", place)
    early: dict[int, list[tuple[str, Observation]]] = {}
    kept: list[tuple[int, tuple[str, Observation]]] = []
    for place, pair in enumerate(observations):
        task = _task(pair[1], "updated")
        creation = created_at.get(task) if task is not None else None
        if creation is not None and creation > place:
            early.setdefault(creation, []).append(pair)
        else:
            kept.append((place, pair))
    ordered: list[tuple[str, Observation]] = []
    for place, pair in kept:
        ordered.append(pair)
        ordered += early.get(place, [])
    return ordered


def _task(observation: Observation, kind: str) -> str | None:
    if isinstance(observation, TaskEvent) and observation.kind == kind:
        return observation.task_id
    return None
