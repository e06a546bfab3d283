"""The timeline: a log's records as a stream, filtered, with each record's place on the orphan path.

:func:`timeline` yields the records a filter keeps, reading the log once and holding only one chunk of it
(``log`` at 10^6 events uses as much memory as at 10^3); ``tail`` reads backwards from the end instead;
:func:`follow` keeps yielding records as they are appended. :func:`timeline_entry` and :func:`full_entry`
are the ``log --json`` and ``log --jsonl`` items, :func:`event_view` the ``show`` document.

Whether a record landed on the orphan path is read from the log's current state (a snapshot when one checks
out: its late results name their seqs); a record appended after that state is evolved onto it, so the
answer is the fold's. Reading starts at the first record asked for (found by seq), so the chain before it
is not checked here: ``verify`` checks every line.

The shape is the store's, not the file's: another store implements the same generators over its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Iterator
from typing import Any, NamedTuple

import msgspec
import orjson

from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.stores.values import Rewound, TornTail
from plantrail.ledger.vocabulary.events import Record
from plantrail.ledger.vocabulary.versions import plain
from plantrail.projections.model import Orphan, PlanState
from plantrail.projections.views import orphan_view

__all__ = [
    "Filter",
    "Timeline",
    "event",
    "event_view",
    "follow",
    "following",
    "full_entry",
    "full_line",
    "summary",
    "timeline",
    "timeline_entry",
]


class Filter(NamedTuple):
    """Which records a timeline keeps: a seq range (both ends included), event types, one step, one plan version;
    ``hidden`` the record types it leaves out (the human timeline leaves out the group commits' bounds,
    ``log.batch``)."""

    from_seq: int = 0
    to_seq: int | None = None
    types: Collection[str] = ()
    step: str | None = None
    version: int | None = None
    hidden: Collection[str] = ()

    def keeps(self, record: Record) -> bool:
        """True when ``record`` passes every filter that is set."""
        if record.seq < self.from_seq or (self.to_seq is not None and record.seq > self.to_seq):
            return False
        if self.types and record.type not in self.types:
            return False
        if self.hidden and record.type in self.hidden:
            return False
        if self.version is not None and record.plan_version != self.version:
            return False
        return self.step is None or getattr(record.data, "step", None) == self.step


class _Late:
    """Tells which records landed on the orphan path: by seq up to a known state, by evolving it after."""

    def __init__(self, path: str, state: PlanState | None = None) -> None:
        self._path = path
        self._learn(_current(path) if state is None else state)

    def _learn(self, state: PlanState) -> None:
        self._state = state
        self._known = state.last_seq
        self._seqs = {o.seq: o for o in state.orphans}

    def __call__(self, record: Record) -> Orphan | None:
        if record.seq > self._state.last_seq + 1:
            self._learn(_current(self._path))  # the log grew past the state and its records were skipped
        if record.seq <= self._known:
            return self._seqs.get(record.seq)
        from plantrail.projections.state import evolve

        before = len(self._state.orphans)
        self._state = evolve(self._state, record)
        return self._state.orphans[-1] if len(self._state.orphans) > before else None


class Timeline(NamedTuple):
    """A timeline being read: ``items`` yields each kept record with its orphan entry (None when it is not one);
    ``torn()`` says, once ``items`` is exhausted, whether a torn tail followed the records; ``last_seq`` and
    ``version`` are the log's last seq and active plan version when the read began (``follow`` picks up there)."""

    items: Iterator[tuple[Record, Orphan | None]]
    torn: Callable[[], TornTail | None]
    last_seq: int
    version: int
    head: str | None = None  # the hash of record last_seq (a follower checks that the log still holds it)


def _current(path: str) -> PlanState:
    """The state now (a new read each time: the log may have grown since the last)."""
    with as_run(path) as run:
        return run.current().state


def timeline(path: str, where: Filter | None = None, *, tail: int | None = None, limit: int | None = None) -> Timeline:
    """The records of the log at ``path`` that ``where`` keeps, in log order, each with its orphan entry.

    With ``tail`` only the last ``tail`` of them (read backwards from the end); with ``limit`` at most the first
    ``limit``. The read starts at ``where.from_seq`` and stops after ``where.to_seq``.
    """
    where = Filter() if where is None else where
    if tail is not None:
        with as_run(path) as run:
            records, torn = run.tail(tail, where.keeps, stop_below=where.from_seq)
        state = _current(path)  # read after the records, so it covers them
        late = _Late(path, state)
        kept = ((r, late(r)) for r in records[:limit])
        return Timeline(kept, lambda: torn, state.last_seq, state.version, state.head)
    state = _current(path)
    late = _Late(path, state)
    run = as_run(path)

    def read() -> Generator[Record]:
        with run:
            yield from run.records(after=where.from_seq - 1)

    def items() -> Iterator[tuple[Record, Orphan | None]]:
        records = read()
        try:
            # the seek did from_seq; with no other filter set, only the hidden types are left to judge
            every = not where.types and where.step is None and where.version is None
            hidden = frozenset(where.hidden)
            to_seq = where.to_seq
            known, orphans = state.last_seq, {o.seq: o for o in state.orphans}
            shown = 0
            for record in records:
                seq = record.seq
                if to_seq is not None and seq > to_seq:
                    return
                late_entry = orphans.get(seq) if seq <= known else late(record)
                if (record.type not in hidden) if every else where.keeps(record):
                    if limit is not None and shown >= limit:
                        return
                    shown += 1
                    yield record, late_entry
        finally:
            records.close()

    return Timeline(items(), lambda: run.torn, state.last_seq, state.version, state.head)


def follow(
    path: str,
    *,
    after: int = -1,
    poll: float = 0.2,
    on_rewound: Callable[[Rewound], None] | None = None,
    head: str | None = None,
) -> Iterator[Record]:
    """Every record after seq ``after`` (-1: from the first), as it is appended; it waits for more forever
    (stop iterating to stop following). A line still being written is waited for, never reported torn. When
    the log changes under the follower (a file cut back or replaced), ``on_rewound`` is told, and the records
    after the last one the log still holds as given follow (those up to it are not given again). ``head`` is
    the hash the caller read record ``after`` with (a log that no longer holds it is said the same way)."""
    known = after
    for item in _followed(path, after, poll, head):
        if isinstance(item, Rewound):
            if on_rewound is not None:
                on_rewound(item)
            known = item.kept if item.from_seq == 0 else known
        elif item.seq > known:
            known = item.seq
            yield item


def _followed(path: str, after: int, poll: float, head: str | None) -> Iterator[Record | Rewound]:
    for batch in as_run(path).follow(after=after, poll=poll, head=head):
        if isinstance(batch, Rewound):
            yield batch
        else:
            yield from batch


def following(
    path: str,
    after: int,
    where: Filter,
    state: PlanState | None = None,
    *,
    on_rewound: Callable[[Rewound], None] | None = None,
    head: str | None = None,
) -> Iterator[tuple[Record, Orphan | None]]:
    """:func:`follow` with the filter applied and each record's orphan entry (evolved onto ``state``; after a
    notice that starts over, evolved again from the log's start)."""
    from plantrail.projections.state import initial

    late = _Late(path, state)
    known = after
    for item in _followed(path, after, 0.2, head):
        if isinstance(item, Rewound):
            if on_rewound is not None:
                on_rewound(item)
            if item.from_seq == 0:
                known, late = item.kept, _Late(path, initial())
            continue
        entry = late(item)
        if item.seq > known:
            known = item.seq
            if where.keeps(item):
                yield item, entry


def summary(record: Record) -> str:
    """One line saying what the record did."""
    data: Any = record.data
    match record.type:
        case "log.opened":
            return f"log opened for run {data.run} (fsync {data.fsync})"
        case "plan.created":
            return f"plan v1: {len(data.plan.steps)} steps, {len(data.plan.acceptance_criteria)} criteria"
        case "step.started":
            return f"{data.step} attempt {data.attempt}"
        case "step.completed":
            return f"{data.step} attempt {data.attempt}: {'; '.join(data.evidence)}"
        case "step.blocked":
            return f"{data.step} attempt {data.attempt}: {data.reason}"
        case "step.failed":
            return f"{data.step} attempt {data.attempt}: {data.error}"
        case "criterion.verified":
            return f"{data.criterion} {data.verdict}: {data.evidence}"
        case "run.finished":
            return f"{data.outcome}: {data.reason}"
        case "plan.replanned":
            cited = [*map(str, data.causes), *(f"parent's {c}" for c in data.parent_causes)]
            causes = f" (caused by {', '.join(cited)})" if cited else ""
            return f"v{data.new_version} [{data.reason}] {data.why}{causes}"
        case "plan.extended":
            added = [*(s.id for s in data.steps), *(c.id for c in data.criteria)]
            return f"v{record.plan_version} extended in place: added {', '.join(added)}"
        case "log.repaired":
            return f"repaired: {data.bytes} torn bytes moved to {data.quarantine}"
        case "log.checkpoint":
            return f"checkpoint over seq {data.covers_seq}"
        case "log.signed":
            return f"signed checkpoint over seq {data.covers_seq} by {data.signer}+{data.key_id}"
        case "run.forked":
            reason = f": {data.reason}" if data.reason else ""
            return f"forked from run {data.parent} at seq {data.seq} (plan v{record.plan_version}){reason}"
        case "effect.requested":
            before = f" (before: {data.before})" if data.before else ""
            return f"{data.step} attempt {data.attempt}: effect {data.key} requested on {data.target}{before}"
        case "effect.committed":
            result = f": {data.result}" if data.result else ""
            return f"{data.step} attempt {data.attempt}: effect {data.key} committed{result}"
        case "step.heartbeat":
            return f"{data.step} attempt {data.attempt}: alive, lease {data.lease_s:g} s"
        case "step.abandoned":
            return f"{data.step} attempt {data.attempt} abandoned: {data.reason}"
        case "step.adopted":
            return f"{data.step} attempt {data.attempt} completed by adopting the late result at seq {data.orphan_seq}"
        case "approval.requested":
            asked = f" for {', '.join(data.steps)}" if data.steps else ""
            return f"approval {data.request} asked{asked}: {data.question}"
        case "approval.granted" | "approval.denied":
            why = f": {data.why}" if data.why else ""
            return f"approval {data.request} {record.type.removeprefix('approval.')} by {data.by}{why}"
        case "observation.recorded":
            dirty = f" ({len(data.dirty)} dirty)" if data.dirty else ""
            return f"observed {data.key} at {data.version}{dirty}"
    return ""  # a group commit's bounds (log.batch) say nothing of the run


def timeline_entry(record: Record, orphan: Orphan | None) -> dict[str, Any]:
    """A ``log --json`` item: ``seq``, ``ts``, ``actor``, ``type``, ``plan_version``, ``summary``, ``orphan``
    (a bool), ``source`` when the record was imported, and ``trace`` (``traceparent``, ``tracestate``) when its
    command carried a W3C trace context."""
    entry: dict[str, Any] = {
        "seq": record.seq,
        "ts": record.ts,
        "actor": record.actor,
        "type": record.type,
        "plan_version": record.plan_version,
        "summary": summary(record),
        "orphan": orphan is not None,
    }
    if record.source is not None:
        entry["source"] = record.source
    if record.trace is not None:
        entry["trace"] = record.trace.as_json()
    return entry


def full_entry(record: Record, orphan: Orphan | None) -> dict[str, Any]:
    """A ``log --jsonl`` line: the ``log --json`` item plus the event's ``data``, its ``key`` when it has one,
    and its hash ``h``."""
    entry = timeline_entry(record, orphan) | {"data": orjson.loads(_stored(record.data)), "h": record.h}
    if record.key is not None:
        entry["key"] = record.key
    return entry


def full_line(record: Record, orphan: Orphan | None) -> str:
    """:func:`full_entry` as one line of JSON (with its newline), encoded straight from the record."""
    entry = timeline_entry(record, orphan)
    entry["data"] = msgspec.Raw(_stored(record.data))
    entry["h"] = record.h
    if record.key is not None:
        entry["key"] = record.key
    return _ENCODE(entry).decode() + "\n"


_ENCODE = msgspec.json.Encoder().encode


def _stored(data: Any) -> bytes:
    """An event's data as its line holds it: the fields format v2 added left out at their defaults."""
    return orjson.dumps(data, default=plain, option=orjson.OPT_PASSTHROUGH_DATACLASS)


def event_view(record: Record, orphan: Orphan | None) -> dict[str, Any]:
    """``plantrail show``: one record in full (``seq``, ``ts``, ``run``, ``actor``, ``type``, ``plan_version``,
    ``source`` or None, ``key`` or None, ``data``, ``prev``, ``h``) with ``summary`` and ``orphan`` (the late
    result it became, as in ``orphans``, or None), and ``trace`` (``traceparent``, ``tracestate``) when its
    command carried a W3C trace context."""
    view: dict[str, Any] = {
        "seq": record.seq,
        "ts": record.ts,
        "run": record.run,
        "actor": record.actor,
        "type": record.type,
        "plan_version": record.plan_version,
        "source": None if record.source is None else plain(record.source),
        "key": record.key,
        "data": orjson.loads(_stored(record.data)),
        "prev": record.prev,
        "h": record.h,
        "summary": summary(record),
        "orphan": None if orphan is None else orphan_view(orphan),
    }
    if record.trace is not None:
        view["trace"] = record.trace.as_json()
    return view


def event(path: str, seq: int) -> tuple[Record, Orphan | None]:
    """Record ``seq`` of the log, checked, and the late result it became (None when it is not one)."""
    with as_run(path) as run:
        record = run.record_at(seq)
    return record, _Late(path)(record)
