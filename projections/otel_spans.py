"""A run as OpenTelemetry spans: the run, each plan version, each step attempt and each late result, with the
records as span events and the links between them (docs/observability.md). Pure: records in, span
descriptions out; no SDK, no I/O (the exporter in the command line turns them into OTLP).

The ids are derived, never drawn: the trace id is the first 16 bytes of SHA-256 over ``plantrail/`` and the
run id, a span id the first 8 bytes of SHA-256 over the run id, the span's kind and the seq of the record that
opened it. So exporting a run twice gives the same spans, and a link can name a span of another run (a fork's
parent) without reading it.

Model (:class:`Span`, :class:`SpanLink`, :class:`SpanEvent`), then the builder (:class:`SpanProjector`: one
record at a time, it hands back the spans that record ended), then :func:`spans` over a whole log. A span
ends when the log says it is over: an attempt at its result (or when it is abandoned, or superseded by a
replan), a version when a later one replaces it, the run (with its versions and open attempts) at a finish
with a final outcome; a late result is a span of its own that ends where it starts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

import msgspec

from plantrail.projections.model import FINAL_OUTCOMES, PlanState
from plantrail.projections.state import evolve, initial

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record

__all__ = [
    "PAYLOAD_FIELDS",
    "AttributeValue",
    "Span",
    "SpanEvent",
    "SpanKind",
    "SpanLink",
    "SpanProjector",
    "parse_traceparent",
    "span_id",
    "spans",
    "trace_id",
]

SpanKind = Literal["run", "version", "attempt", "late"]
AttributeValue = str | bool | int | float | tuple[str, ...] | tuple[int, ...] | tuple[float, ...] | tuple[bool, ...]

#: Members of an event that hold evidence or other payloads: exported as a SHA-256 digest and a size (in UTF-8
#: bytes) unless payloads are asked for.
PAYLOAD_FIELDS: Final = frozenset({"evidence", "observations", "before", "result", "value", "meta"})

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_TRACEPARENT: Final = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_PLAN_TYPES: Final = frozenset({"plan.created", "plan.replanned", "run.forked"})
_RESULTS: Final = frozenset({"step.completed", "step.blocked", "step.failed"})


class SpanLink(NamedTuple):
    """A link from a span to another span: ``relation`` says why (``cause``, ``attempt``, ``fork_parent``,
    ``previous_attempt``, ``adopted``, ``caller``)."""

    trace_id: bytes
    span_id: bytes
    relation: str
    attributes: tuple[tuple[str, AttributeValue], ...] = ()


class SpanEvent(NamedTuple):
    """One record as an event of the span it concerns."""

    name: str
    time_ns: int
    attributes: tuple[tuple[str, AttributeValue], ...]


class Span(NamedTuple):
    """One span as the projection describes it; ``end_seq`` is None for a span still open at the last record
    (its ``end_ns`` is then that record's time)."""

    trace_id: bytes
    span_id: bytes
    parent_id: bytes | None
    kind: SpanKind
    name: str
    start_ns: int
    end_ns: int
    start_seq: int
    end_seq: int | None
    attributes: tuple[tuple[str, AttributeValue], ...]
    events: tuple[SpanEvent, ...]
    links: tuple[SpanLink, ...]
    status: Literal["unset", "ok", "error"]
    status_message: str | None = None


def trace_id(run: str) -> bytes:
    """The trace id of a run: the first 16 bytes of SHA-256 over ``plantrail/`` and the run id."""
    return hashlib.sha256(f"plantrail/{run}".encode()).digest()[:16]


def span_id(run: str, kind: SpanKind, seq: int) -> bytes:
    """The span id of the ``kind`` span a run's record ``seq`` opened: the first 8 bytes of SHA-256 over the
    run id, the kind and the seq (separated by NUL bytes)."""
    return hashlib.sha256(f"{run}\0{kind}\0{seq}".encode()).digest()[:8]


def parse_traceparent(value: object) -> tuple[bytes, bytes] | None:
    """The trace id and span id a W3C ``traceparent`` names (``00-<32 hex>-<16 hex>-<2 hex>``), or None when
    it is not one (wrong shape, version ``ff``, or an all-zero id)."""
    if not isinstance(value, str):
        return None
    match = _TRACEPARENT.match(value)
    if match is None or match[1] == "ff" or set(match[2]) == {"0"} or set(match[3]) == {"0"}:
        return None
    return bytes.fromhex(match[2]), bytes.fromhex(match[3])


def _time_ns(ts: str) -> int:
    """Nanoseconds since the epoch of a record's ISO 8601 time (UTC when it names no zone)."""
    moment = datetime.fromisoformat(ts)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def _digest(value: Any) -> tuple[str, int]:
    data = value.encode() if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest(), len(data)


def _scalar_list(values: list[Any]) -> AttributeValue | None:
    """A homogeneous list of scalars as an attribute (None when it is not one)."""
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and kinds <= {str, int, float, bool}:
        return tuple(values)
    return None


def _flatten(prefix: str, value: Any, payloads: bool, out: dict[str, AttributeValue]) -> None:
    """``value`` as attributes under ``prefix``: a mapping one dotted name per member, a scalar or a list of
    scalars as it is, anything else as JSON; a member of :data:`PAYLOAD_FIELDS` as ``.sha256`` and ``.size``
    (lists of them for a list) unless ``payloads``."""
    if value is None:
        return
    name = prefix.rpartition(".")[2]
    if name in PAYLOAD_FIELDS and not payloads:
        items = list(value) if isinstance(value, list | tuple) else [value]
        if not items:
            out[f"{prefix}.count"] = 0
            return
        digests = [_digest(item) for item in items]
        out[f"{prefix}.sha256"] = tuple(d for d, _ in digests)
        out[f"{prefix}.size"] = tuple(s for _, s in digests)
        out[f"{prefix}.count"] = len(items)
        return
    if isinstance(value, dict):
        for key, member in value.items():
            _flatten(f"{prefix}.{key}", member, payloads, out)
    elif isinstance(value, str | bool | int | float):
        out[prefix] = value
    elif isinstance(value, list | tuple):
        if not value:
            return
        listed = _scalar_list(list(value))
        out[prefix] = listed if listed is not None else json.dumps(value, sort_keys=True, default=str)
    else:
        out[prefix] = json.dumps(value, sort_keys=True, default=str)


def _trace_of(record: Record) -> Any:
    """The trace context a record carries (its optional ``trace`` member), as a mapping or an object."""
    trace = getattr(record, "trace", None)
    if trace is None:
        return None
    if isinstance(trace, Mapping):
        return trace.get("traceparent"), trace.get("tracestate")
    return getattr(trace, "traceparent", None), getattr(trace, "tracestate", None)


@dataclass
class _Draft:
    kind: SpanKind
    span_id: bytes
    parent_id: bytes | None
    name: str
    start_ns: int
    start_seq: int
    attributes: dict[str, AttributeValue]
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    status: Literal["unset", "ok", "error"] = "unset"
    status_message: str | None = None
    last_ns: int = 0

    def done(self, trace: bytes, end_ns: int, end_seq: int | None) -> Span:
        return Span(
            trace,
            self.span_id,
            self.parent_id,
            self.kind,
            self.name,
            self.start_ns,
            max(end_ns, self.start_ns),
            self.start_seq,
            end_seq,
            tuple(sorted(self.attributes.items())),
            tuple(self.events),
            tuple(self.links),
            self.status,
            self.status_message,
        )


class SpanProjector:
    """Builds a run's spans one record at a time: :meth:`add` returns the spans the record ended (the run's
    last), :meth:`still_open` the spans not ended yet. ``payloads``: evidence as it is, not as digests."""

    def __init__(self, *, payloads: bool = False) -> None:
        self.payloads = payloads
        self.state: PlanState = initial()
        self.run: str | None = None
        self.trace = b""
        self.last_seq = -1
        self._last_ns = 0
        self._root: _Draft | None = None  # None before the first record and after a final finish
        self._root_id = b""
        self._version: _Draft | None = None
        self._attempts: dict[tuple[str, int, int], _Draft] = {}  # open attempts by (step, version, attempt)
        self._started: dict[tuple[str, int, int], bytes] = {}  # every attempt's span id
        self._previous: dict[str, tuple[bytes, str]] = {}  # step -> its last attempt's span id and outcome
        self._holder: dict[int, bytes] = {}  # seq -> the span holding its event
        self._late: dict[int, bytes] = {}  # a late result's seq -> its span id

    # ------------------------------------------------------------------ spans

    def _open(self, kind: SpanKind, seq: int, name: str, now: int) -> _Draft:
        """A new span opened by record ``seq``: the run's has no parent, a version's is the run, the others' the
        version in force (the run when there is none)."""
        assert self.run is not None
        attributes: dict[str, AttributeValue] = {"gen_ai.conversation.id": self.run, "plantrail.run.id": self.run}
        parent: bytes | None = self._root_id
        if kind == "run":
            parent = None
        elif kind != "version" and self._version is not None:
            parent = self._version.span_id
        return _Draft(kind, span_id(self.run, kind, seq), parent, name, now, seq, attributes, last_ns=now)

    def _link(
        self,
        draft: _Draft,
        target: bytes,
        relation: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        trace: bytes | None = None,
    ) -> None:
        """Link ``draft`` to span ``target`` (of ``trace``, else this run's), and name it in an attribute too."""
        draft.links.append(SpanLink(trace or self.trace, target, relation, tuple(sorted((attributes or {}).items()))))
        name = f"plantrail.link.{relation}"
        value = target.hex() if trace is None or trace == self.trace else f"{trace.hex()}-{target.hex()}"
        kept = draft.attributes.get(name)
        draft.attributes[name] = (*kept, value) if isinstance(kept, tuple) else (value,)

    def _event(self, draft: _Draft, record: Record, now: int) -> None:
        attributes: dict[str, AttributeValue] = {
            "plantrail.seq": record.seq,
            "plantrail.actor": record.actor,
            "plantrail.plan_version": record.plan_version,
        }
        data = msgspec.to_builtins(record.data)
        if isinstance(data, dict):
            data.pop("plan", None)
            data.pop("state", None)
            for key, value in data.items():
                _flatten(f"plantrail.event.{key}", value, self.payloads, attributes)
        draft.events.append(SpanEvent(record.type, now, tuple(sorted(attributes.items()))))
        draft.last_ns = max(draft.last_ns, now)
        self._holder[record.seq] = draft.span_id
        trace = _trace_of(record)
        if trace is not None:
            caller = parse_traceparent(trace[0])
            if caller is not None and all(link.span_id != caller[1] for link in draft.links):
                extra: dict[str, AttributeValue] = {"plantrail.seq": record.seq}
                if isinstance(trace[1], str) and trace[1]:
                    extra["w3c.tracestate"] = trace[1]
                self._link(draft, caller[1], "caller", extra, caller[0])

    # ------------------------------------------------------------------ records

    def add(self, record: Record) -> list[Span]:
        """Take the next record; the spans it ended, each finished (the run's own span last)."""
        before, self.state = self.state, evolve(self.state, record)
        now = _time_ns(record.ts)
        self._last_ns = max(self._last_ns, now)
        self.last_seq = record.seq
        ended: list[Span] = []
        if not self._root_id:  # the first record opens the run
            self.run = record.run
            self.trace = trace_id(record.run)
            self._root = self._open("run", record.seq, "invoke_agent", now)
            self._root_id = self._root.span_id
            self._root.attributes.update(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.id": record.run,
                    "openinference.span.kind": "AGENT",
                }
            )
        kind = record.type
        if kind == "plan.replanned":
            for step in before.steps.values_in_order():
                if step.status == "in_progress":
                    ended += self._end_attempt((step.id, before.version, step.attempt), record, now, "superseded")
        if self.state.version != before.version or (kind in _PLAN_TYPES and self._version is None):
            if self._version is not None:
                self._version.attributes["plantrail.plan.ended_by"] = "replaced"
                self._version.attributes["plantrail.plan.replaced_by"] = self.state.version
                ended.append(self._version.done(self.trace, now, record.seq))
            self._version = self._new_version(record, now)
            self._event(self._version, record, now)
        elif kind == "step.started":
            self._start_attempt(record, now)
        elif kind in _RESULTS:
            ended += self._result(record, before, now)
        elif kind == "step.abandoned":
            ended += self._abandoned(record, before, now)
        elif kind == "run.finished":
            ended += self._finished(record, now)
        else:
            holder = self._holder_for(record)
            if holder is None:  # after the run ended: a span of its own, like a late result
                holder = self._open("late", record.seq, record.type, now)
                self._event(holder, record, now)
                return [holder.done(self.trace, now, record.seq)]
            self._event(holder, record, now)
        return ended

    def still_open(self) -> list[Span]:
        """The spans not ended yet, each ending at the last record's time, marked ``plantrail.open``."""
        drafts = [
            *self._attempts.values(),
            *([self._version] if self._version else []),
            *([self._root] if self._root else []),
        ]
        for draft in drafts:
            draft.attributes["plantrail.open"] = True
        return [draft.done(self.trace, self._last_ns, None) for draft in drafts]

    # ------------------------------------------------------------------ what each kind of record does

    def _holder_for(self, record: Record) -> _Draft | None:
        data: Any = record.data
        step, attempt = getattr(data, "step", None), getattr(data, "attempt", None)
        if isinstance(step, str) and isinstance(attempt, int):
            draft = self._attempts.get((step, record.plan_version, attempt))
            if draft is not None:
                if record.type == "step.adopted" and data.orphan_seq in self._late:
                    self._link(draft, self._late[data.orphan_seq], "adopted", {"orphan_seq": data.orphan_seq})
                return draft
        if self._version is not None and not record.type.startswith("log."):
            return self._version
        return self._root

    def _new_version(self, record: Record, now: int) -> _Draft:
        assert self._root is not None
        draft = self._open("version", record.seq, "plan", now)
        plan = self.state.plan
        attributes = draft.attributes
        attributes.update(
            {
                "gen_ai.operation.name": "plan",
                "gen_ai.agent.id": self.run or "",
                "openinference.span.kind": "CHAIN",
                "plantrail.plan.version": self.state.version,
                "plantrail.plan.adopted_by": record.type,
            }
        )
        if plan is not None:
            attributes["plantrail.plan.goal"] = plan.goal
            if plan.steps:
                attributes["plantrail.plan.steps"] = tuple(step.id for step in plan.steps)
            if plan.acceptance_criteria:
                attributes["plantrail.plan.criteria"] = tuple(c.id for c in plan.acceptance_criteria)
            if self._root.attributes.get("plantrail.run.goal") is None:
                self._root.attributes["plantrail.run.goal"] = plan.goal
        data: Any = record.data
        if record.type == "plan.replanned":
            attributes["plantrail.replan.reason"] = data.reason
            attributes["plantrail.replan.why"] = data.why
            for cause in (*data.causes, *data.parent_causes):
                target = self._holder.get(cause)
                if target is not None:
                    self._link(draft, target, "cause", {"plantrail.seq": cause})
        elif record.type == "run.forked":
            attributes["plantrail.fork.parent"] = data.parent
            attributes["plantrail.fork.seq"] = data.seq
            parent_trace = trace_id(data.parent)
            self._link(
                draft,
                span_id(data.parent, "run", 0),
                "fork_parent",
                {"plantrail.fork.seq": data.seq, "plantrail.fork.head": data.head},
                parent_trace,
            )
            self._root.attributes["plantrail.fork.parent"] = data.parent
        return draft

    def _start_attempt(self, record: Record, now: int) -> None:
        data: Any = record.data
        key = (data.step, record.plan_version, data.attempt)
        draft = self._open("attempt", record.seq, f"step {data.step}", now)
        self._describe_attempt(draft, key)
        previous = self._previous.get(data.step)
        if previous is not None:
            self._link(draft, previous[0], "previous_attempt", {"plantrail.attempt.outcome": previous[1]})
        self._attempts[key] = draft
        self._started[key] = draft.span_id
        self._event(draft, record, now)

    def _describe_attempt(self, draft: _Draft, key: tuple[str, int, int]) -> None:
        step, version, attempt = key
        draft.attributes.update(
            {
                "openinference.span.kind": "CHAIN",
                "plantrail.step.id": step,
                "plantrail.plan.version": version,
                "plantrail.attempt": attempt,
            }
        )
        plan = self.state.plan
        spec = next((s for s in plan.steps if s.id == step), None) if plan is not None else None
        if spec is not None:
            draft.attributes["plantrail.step.title"] = spec.title

    def _result(self, record: Record, before: PlanState, now: int) -> list[Span]:
        data: Any = record.data
        key = (data.step, record.plan_version, data.attempt)
        outcome = record.type.removeprefix("step.")
        if len(self.state.orphans) > len(before.orphans):  # a late result: a span of its own
            draft = self._open("late", record.seq, f"late {data.step}", now)
            self._describe_attempt(draft, key)
            draft.attributes["plantrail.late.why"] = self.state.orphans[-1].why
            draft.attributes["plantrail.attempt.outcome"] = outcome
            self._outcome_attributes(draft, record)
            target = self._started.get(key)
            if target is not None:
                self._link(draft, target, "attempt")
            self._late[record.seq] = draft.span_id
            self._event(draft, record, now)
            return [draft.done(self.trace, now, record.seq)]
        if key not in self._attempts:  # a result whose start the log does not hold (an imported log)
            draft = self._open("attempt", record.seq, f"step {data.step}", now)
            self._describe_attempt(draft, key)
            self._attempts[key] = draft
            self._started[key] = draft.span_id
        self._event(self._attempts[key], record, now)
        return self._end_attempt(key, record, now, outcome)

    def _outcome_attributes(self, draft: _Draft, record: Record) -> None:
        data = msgspec.to_builtins(record.data)
        attributes = draft.attributes
        if "evidence" in data:
            _flatten("plantrail.evidence", data["evidence"], self.payloads, attributes)
        reason = data.get("reason") or data.get("error")
        if isinstance(reason, str):
            attributes["plantrail.attempt.reason"] = reason
        report = data.get("report")
        if isinstance(report, dict):
            usage = report.pop("usage", None)
            _flatten("plantrail.report", report, self.payloads, attributes)
            if isinstance(usage, dict):
                _flatten("plantrail.usage", usage, self.payloads, attributes)

    def _end_attempt(self, key: tuple[str, int, int], record: Record, now: int, outcome: str) -> list[Span]:
        draft = self._attempts.pop(key, None)
        if draft is None:
            return []
        draft.attributes["plantrail.attempt.outcome"] = outcome
        if record.type in _RESULTS or record.type == "step.abandoned":
            self._outcome_attributes(draft, record)
        if outcome == "completed":
            draft.status = "ok"
        elif outcome == "failed":
            draft.status, draft.status_message = "error", getattr(record.data, "error", None)
        self._previous[key[0]] = (draft.span_id, outcome)
        return [draft.done(self.trace, now, record.seq)]

    def _abandoned(self, record: Record, before: PlanState, now: int) -> list[Span]:
        data: Any = record.data
        key = (data.step, record.plan_version, data.attempt)
        draft = self._holder_for(record)
        if draft is not None:
            self._event(draft, record, now)
        step, then = self.state.steps.get(data.step), before.steps.get(data.step)
        ended = step is not None and data.attempt in step.abandoned
        if ended and (then is None or data.attempt not in then.abandoned):
            return self._end_attempt(key, record, now, "abandoned")
        return []

    def _finished(self, record: Record, now: int) -> list[Span]:
        data: Any = record.data
        if self._root is None:  # a second finish after a final one (only a hand-made log holds it)
            draft = self._open("late", record.seq, record.type, now)
            self._event(draft, record, now)
            return [draft.done(self.trace, now, record.seq)]
        self._event(self._root, record, now)
        root = self._root.attributes
        root["plantrail.run.outcome"] = data.outcome
        root["plantrail.run.finish_reason"] = data.reason
        if data.outcome not in FINAL_OUTCOMES:
            return []
        ended = [span for key in list(self._attempts) for span in self._end_attempt(key, record, now, "unfinished")]
        if self._version is not None:
            self._version.attributes["plantrail.plan.ended_by"] = "run.finished"
            ended.append(self._version.done(self.trace, now, record.seq))
            self._version = None
        if data.outcome == "failed":
            self._root.status, self._root.status_message = "error", data.reason
        elif data.outcome == "complete":
            self._root.status = "ok"
        root["plantrail.run.last_seq"] = record.seq
        ended.append(self._root.done(self.trace, now, record.seq))
        self._root = None  # the run is over: a later record is a span of its own
        return ended


def spans(records: Iterable[Record], *, payloads: bool = False) -> list[Span]:
    """Every span of a run: those its records ended, in the order they ended, then those still open."""
    projector = SpanProjector(payloads=payloads)
    found = [span for record in records for span in projector.add(record)]
    return found + projector.still_open()
