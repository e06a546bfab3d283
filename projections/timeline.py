"""Per-step attempt intervals: the timeline lanes of the run report.

Every ``step.started`` opens an attempt; the result that answers it (``step.completed``, ``failed`` or
``blocked``) closes it with that outcome; a replan closes every attempt still open as ``superseded`` (the
step must start again in the new version); an attempt still open at the end of the log stays
``in_progress``. A late result (one the reducer put on the orphan path) closes nothing: it is a point on its
step's lane. Which results were late is the reducer's verdict, not a second rule here: :meth:`Collector.timeline`
takes the seqs of the orphans from the folded state.

:class:`Collector` watches records go by (:meth:`Collector.tap`), so the report folds the log once and
collects its timeline on the same read. Pure: no clock and no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["Attempt", "Collector", "LateMark", "Outcome", "ReplanMark", "Timeline", "timeline"]

Outcome = Literal["completed", "failed", "blocked", "abandoned", "superseded", "in_progress"]
_RESULTS: Final[dict[str, Outcome]] = {
    "step.completed": "completed",
    "step.failed": "failed",
    "step.blocked": "blocked",
    "step.abandoned": "abandoned",
}


class Attempt(NamedTuple):
    """One attempt at a step: from its start to its result (``end_seq`` None while it runs)."""

    step: str
    attempt: int
    version: int
    start_seq: int
    start_ts: str
    outcome: Outcome
    end_seq: int | None = None
    end_ts: str | None = None


class LateMark(NamedTuple):
    """A late result, a point on its step's lane."""

    step: str
    seq: int
    ts: str
    type: str
    plan_version: int
    attempt: int


class ReplanMark(NamedTuple):
    """A replan, a vertical line across the lanes."""

    version: int
    seq: int
    ts: str


class Timeline(NamedTuple):
    """Every attempt in the order it started, the late results and the replans in log order, and the steps
    in the order they first appear (one lane each)."""

    attempts: tuple[Attempt, ...]
    late: tuple[LateMark, ...]
    replans: tuple[ReplanMark, ...]
    lanes: tuple[str, ...]
    first_ts: str | None
    last_ts: str | None


class _Seen(NamedTuple):
    seq: int
    ts: str
    type: str
    step: str
    attempt: int
    plan_version: int


class Collector:
    """Collects the step and plan records a read passes by; :meth:`timeline` pairs them up afterwards."""

    __slots__ = ("_first", "_last", "_seen")

    def __init__(self) -> None:
        self._seen: list[_Seen | ReplanMark] = []
        self._first: str | None = None
        self._last: str | None = None

    def tap(self, records: Iterable[Record]) -> Iterator[Record]:
        """``records`` unchanged, each noted on the way through."""
        seen = self._seen
        for record in records:
            kind = record.type
            if kind.startswith("step."):
                data = record.data
                seen.append(_Seen(record.seq, record.ts, kind, data.step, data.attempt, record.plan_version))  # type: ignore[union-attr]
            elif kind == "plan.replanned":
                seen.append(ReplanMark(record.data.new_version, record.seq, record.ts))  # type: ignore[union-attr]
            if kind.startswith(("step.", "plan.", "criterion.", "run.")):
                if self._first is None:
                    self._first = record.ts
                self._last = record.ts
            yield record

    def timeline(self, late_seqs: Collection[int]) -> Timeline:
        """The timeline of what was collected; ``late_seqs`` are the seqs of the results on the orphan path."""
        late_set = set(late_seqs)
        attempts: list[Attempt] = []
        open_at: dict[str, int] = {}  # step -> index of its open attempt
        late: list[LateMark] = []
        replans: list[ReplanMark] = []
        lanes: dict[str, None] = {}
        for item in self._seen:
            if isinstance(item, ReplanMark):
                replans.append(item)
                for i in open_at.values():
                    attempts[i] = attempts[i]._replace(outcome="superseded", end_seq=item.seq, end_ts=item.ts)
                open_at.clear()
                continue
            lanes.setdefault(item.step)
            if item.type == "step.started":
                open_at[item.step] = len(attempts)
                attempts.append(Attempt(item.step, item.attempt, item.plan_version, item.seq, item.ts, "in_progress"))
            elif item.seq in late_set:
                late.append(LateMark(item.step, item.seq, item.ts, item.type, item.plan_version, item.attempt))
            elif item.type in _RESULTS and item.step in open_at:
                i = open_at.pop(item.step)
                attempts[i] = attempts[i]._replace(outcome=_RESULTS[item.type], end_seq=item.seq, end_ts=item.ts)
        return Timeline(tuple(attempts), tuple(late), tuple(replans), tuple(lanes), self._first, self._last)


def timeline(records: Iterable[Record], late_seqs: Collection[int]) -> Timeline:
    """The timeline of ``records`` (see the module); ``late_seqs`` as in :meth:`Collector.timeline`."""
    collector = Collector()
    for _ in collector.tap(records):
        pass
    return collector.timeline(late_seqs)


def millis(ts: str, origin: datetime) -> int:
    """Milliseconds from ``origin`` to the ISO timestamp ``ts``."""
    return round((datetime.fromisoformat(ts) - origin).total_seconds() * 1000)
