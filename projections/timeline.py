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
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["MARK_KINDS", "Attempt", "Collector", "LateMark", "Mark", "Outcome", "ReplanMark", "Timeline", "timeline"]

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
    """A replan, a vertical line across the lanes, coloured by its reason code."""

    version: int
    seq: int
    ts: str
    reason: str = ""


#: What the timeline marks besides attempts: a crash's repair (a torn tail cut off: ``log.repaired``), an
#: abandoned attempt, a lease that ran out while its attempt was still open, and an approval asked, granted or
#: denied.
MARK_KINDS: Final = ("repair", "abandon", "lease_expired", "approval_requested", "approval_granted", "approval_denied")


class Mark(NamedTuple):
    """A moment on the timeline (see :data:`MARK_KINDS`): on its step's lane, or across every lane when
    ``step`` is None (a repair; an approval that names no step); ``seq`` the record that says so (for a lease
    expiry, the start or heartbeat that last renewed the lease); ``text`` a few words on it."""

    kind: str
    ts: str
    seq: int
    step: str | None
    text: str


class Timeline(NamedTuple):
    """Every attempt in the order it started, the late results and the replans in log order, and the steps
    in the order they first appear (one lane each)."""

    attempts: tuple[Attempt, ...]
    late: tuple[LateMark, ...]
    replans: tuple[ReplanMark, ...]
    lanes: tuple[str, ...]
    first_ts: str | None
    last_ts: str | None
    marks: tuple[Mark, ...] = ()


class _Seen(NamedTuple):
    seq: int
    ts: str
    type: str
    step: str
    attempt: int
    plan_version: int


class Collector:
    """Collects the step and plan records a read passes by; :meth:`timeline` pairs them up afterwards."""

    __slots__ = ("_first", "_last", "_leases", "_marks", "_requests", "_seen", "_timeouts")

    def __init__(self) -> None:
        self._seen: list[_Seen | ReplanMark] = []
        self._first: str | None = None
        self._last: str | None = None
        self._marks: list[Mark] = []
        self._timeouts: dict[str, float] = {}  # step -> its lease in seconds, as the latest plan declares it
        #: step -> [ts, seconds, seq] of the lease of its open attempt (renewed by heartbeats)
        self._leases: dict[str, tuple[str, float, int]] = {}
        self._requests: dict[str, tuple[str, ...]] = {}  # approval request -> the steps it covers

    def tap(self, records: Iterable[Record]) -> Iterator[Record]:
        """``records`` unchanged, each noted on the way through."""
        seen = self._seen
        for record in records:
            kind = record.type
            if kind.startswith("step."):
                data = record.data
                seen.append(_Seen(record.seq, record.ts, kind, data.step, data.attempt, record.plan_version))  # type: ignore[union-attr]
                self._note_step(record)
            elif kind == "plan.replanned":
                data = record.data
                seen.append(ReplanMark(data.new_version, record.seq, record.ts, data.reason))  # type: ignore[union-attr]
                self._note_plan(record)
            elif kind.startswith("plan."):
                self._note_plan(record)
            elif kind == "log.repaired" or kind.startswith("approval."):
                self._note_mark(record)
            if kind.startswith(("step.", "plan.", "criterion.", "run.", "approval.", "log.repaired")):
                if self._first is None:
                    self._first = record.ts
                self._last = record.ts
            yield record

    def _note_plan(self, record: Record) -> None:
        """The lease each step of a plan declares (``timeout_s``); a replan ends every open attempt's lease."""
        data: Any = record.data
        if record.type == "plan.replanned":
            self._leases.clear()
        plan = getattr(data, "plan", None)
        steps = plan.steps if plan is not None else getattr(data, "steps", ())
        for step in steps:
            timeout = getattr(step, "timeout_s", None)
            if timeout is None:
                self._timeouts.pop(step.id, None)
            else:
                self._timeouts[step.id] = float(timeout)

    def _note_step(self, record: Record) -> None:
        """Leases taken and renewed, a lease that ran out before its attempt's next word, abandons."""
        data: Any = record.data
        kind, step = record.type, data.step
        held = self._leases.get(step)
        if held is not None and kind in ("step.heartbeat", *_RESULTS):
            ran_out = _expiry(step, held, record.ts)
            if ran_out is not None:
                self._marks.append(ran_out)
        if kind == "step.started":
            timeout = self._timeouts.get(step)
            if timeout is None:
                self._leases.pop(step, None)
            else:
                self._leases[step] = (record.ts, timeout, record.seq)
        elif kind == "step.heartbeat":  # renewed (even after it ran out) for its own seconds or the step's
            seconds = getattr(data, "lease_s", None) or (None if held is None else held[1])
            if seconds is not None:
                self._leases[step] = (record.ts, float(seconds), record.seq)
        elif kind in _RESULTS:
            self._leases.pop(step, None)
        if kind == "step.abandoned":
            self._marks.append(Mark("abandon", record.ts, record.seq, step, f"attempt {data.attempt}: {data.reason}"))

    def _note_mark(self, record: Record) -> None:
        data: Any = record.data
        if record.type == "log.repaired":
            text = f"a crash's torn tail cut off: {data.bytes} bytes at offset {data.truncated_at}"
            self._marks.append(Mark("repair", record.ts, record.seq, None, text))
            return
        kind = record.type.replace(".", "_")
        if record.type == "approval.requested":
            steps = self._requests[data.request] = tuple(data.steps)
            text = f"{data.request}: {data.question}"
        else:  # granted or denied: on the lanes of the steps the request covers
            steps = self._requests.get(data.request, ())
            text = f"{data.request} by {data.by}" + (f": {data.why}" if data.why else "")
        for step in steps or (None,):
            self._marks.append(Mark(kind, record.ts, record.seq, step, text))

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
        marks = list(self._marks)
        for step, held in self._leases.items():  # a lease still held at the end of the log: ran out before it?
            ran_out = None if self._last is None else _expiry(step, held, self._last)
            if ran_out is not None:
                marks.append(ran_out)
        for m in marks:
            if m.step is not None:
                lanes.setdefault(m.step)
        marks.sort(key=lambda m: (m.ts, m.seq))
        return Timeline(
            tuple(attempts), tuple(late), tuple(replans), tuple(lanes), self._first, self._last, tuple(marks)
        )


def _expiry(step: str, held: tuple[str, float, int], before: str) -> Mark | None:
    """The lease-expiry mark of the lease ``held`` (taken or renewed at its ts, for its seconds, by its seq) when
    it ran out before ``before``; None when it did not, or a hand-made log's timestamp says nothing."""
    since, seconds, seq = held
    try:
        ends = datetime.fromisoformat(since) + timedelta(seconds=seconds)
        if ends >= datetime.fromisoformat(before):
            return None
    except (ValueError, OverflowError, TypeError):
        return None
    at = ends.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return Mark("lease_expired", at, seq, step, f"its {seconds:g} s lease ran out")


def timeline(records: Iterable[Record], late_seqs: Collection[int]) -> Timeline:
    """The timeline of ``records`` (see the module); ``late_seqs`` as in :meth:`Collector.timeline`."""
    collector = Collector()
    for _ in collector.tap(records):
        pass
    return collector.timeline(late_seqs)


def millis(ts: str, origin: datetime) -> int:
    """Milliseconds from ``origin`` to the ISO timestamp ``ts``."""
    return round((datetime.fromisoformat(ts) - origin).total_seconds() * 1000)
