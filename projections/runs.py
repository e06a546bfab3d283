"""A run in one row: what its log says it stands at now, for a list of many runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["RunRow", "kept_row", "summarise"]


class RunRow(NamedTuple):
    """One run as its log says it stands: ``replans`` counts the versions adopted after the first, ``reasons``
    their reason codes in order; ``damage`` is the code of the damage that cut the read short (the row then
    says what the valid part says), None for a whole log."""

    run: str | None
    goal: str | None
    outcome: str | None
    plan_version: int
    last_activity: str | None
    replans: int
    orphans: int
    last_seq: int
    location: str
    reasons: tuple[str, ...] = ()
    damage: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``runs --json`` item, with ``reasons`` as the count of replans per reason code."""
        item = self._asdict()
        item["reasons"] = dict(sorted(Counter(self.reasons).items()))
        return item


def summarise(
    state: Any, last_activity: str | None, reasons: Sequence[str], location: str, damage: str | None = None
) -> RunRow:
    """The row of a run whose folded state is ``state`` (a :class:`~plantrail.projections.model.PlanState`)."""
    return RunRow(
        run=state.run,
        goal=state.goal,
        outcome=state.outcome,
        plan_version=state.version,
        last_activity=last_activity,
        replans=max(state.version - 1, 0),
        orphans=len(state.orphans),
        last_seq=state.last_seq,
        location=location,
        reasons=tuple(reasons),
        damage=damage,
    )


def kept_row(
    run: str | None,
    goal: str | None,
    outcome: str | None,
    plan_version: int,
    last_activity: str | None,
    orphans: int,
    last_seq: int,
    location: str,
    reasons: Sequence[str] = (),
) -> RunRow:
    """The row of a run from what a store kept of it (a snapshot's summary, a database's summary row): the same
    row :func:`summarise` gives its folded state."""
    return RunRow(
        run=run,
        goal=goal,
        outcome=outcome,
        plan_version=plan_version,
        last_activity=last_activity,
        replans=max(plan_version - 1, 0),
        orphans=orphans,
        last_seq=last_seq,
        location=location,
        reasons=tuple(reasons),
    )
