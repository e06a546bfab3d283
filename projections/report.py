"""The run report: one self-contained HTML page drawn in the browser from compact JSON embedded in it.

:func:`report_data` reads the log once: the records go through the timeline's collector into the version
spans of :func:`projections.history.spans` (one fold), and everything the page shows comes from the
library's views of what that fold produced (:func:`~projections.graph.plan_graph` of each version as it
stood when superseded, the changes each replan recorded, :func:`~projections.history.orphans_view`,
:func:`~projections.history.resume_receipt`). Whether ``verify`` passed is the caller's to say: verify is
its own, independent read. The page itself (:mod:`plantrail.cli.report_page`) embeds the data and draws it:
the page loads nothing, no network request of any kind.

The JSON is compact: strings that repeat (step ids, titles, status words) are kept once in ``S`` and referred
to by index, rows are positional (their field names are in the data), defaults are left out. It is embedded
gzip-compressed in base64: the benchmark's 10^5-event log (1,392 plan versions, 49,000 attempts, 26,000
distinct step titles) gives 5.4 MB of JSON but a 1 MB page, and base64 cannot hold the ``</script>`` or
``<!--`` that text from the log could. Each version's graph is drawn only when it is opened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from plantrail.projections.graph import DEPENDS_ON, PlanGraph, plan_graph
from plantrail.projections.graph_render import EDGE_STYLES, GEOMETRY, NODE_STYLES, UNKNOWN_STYLE
from plantrail.projections.history import orphans_view, resume_receipt, spans
from plantrail.projections.model import Changes, PlanState, StepChange, optional_text
from plantrail.projections.timeline import Collector, Timeline

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["CHANGE_FIELDS", "MARK_COLOURS", "REASON_COLOURS", "VERSION_FIELDS", "report_data"]

_FLAG_READY: Final = 1
_FLAG_CRITICAL: Final = 2


class _Strings:
    """The page's string table: each distinct string once, referred to by its index."""

    def __init__(self, first: Iterable[str] = ()) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}
        for text in first:  # the most used words get the shortest indexes
            self(text)

    def __call__(self, text: str | None) -> int:
        if text is None:
            return -1
        i = self._index.get(text)
        if i is None:
            i = self._index[text] = len(self.items)
            self.items.append(text)
        return i


def _trimmed(row: list[int | None], defaults: tuple[int, ...]) -> list[int | None]:
    """``row`` without its trailing values that equal their defaults (the page fills them back in)."""
    end = len(row)
    start = len(row) - len(defaults)
    while end > start and row[end - 1] == defaults[end - 1 - start]:
        end -= 1
    return row[:end]


#: A node row is [id, title, status, rank, slot, flags, attempt, max_attempts (null: no limit), invalidated_by,
#: late, reset];
#: the values from ``flags`` on are dropped from the end while they equal these defaults.
_NODE_DEFAULTS: Final = (0, 0, 3, -1, 0, -1)


def _graph_rows(graph: PlanGraph, s: _Strings, titles: dict[str, str]) -> dict[str, Any]:
    """A graph as compact rows: ``n`` nodes (see :data:`_NODE_DEFAULTS`), ``e`` edges as a flat list of
    source and target node positions, ``ce`` the positions of critical edges, ``ek`` [edge, kind] for the
    edges that are not plain dependencies. ``titles`` holds each step's title in the version before (updated
    here): a title that did not change is written as -1."""
    position = {n.id: i for i, n in enumerate(graph.nodes)}
    edges: list[int] = []
    for e in graph.edges:
        edges += (position[e.source], position[e.target])
    nodes = [
        _trimmed(
            [
                s(n.id),
                -1 if titles.get(n.id) == n.title else s(n.title),
                s(n.status),
                n.rank,
                n.slot,
                (_FLAG_READY if n.ready else 0) | (_FLAG_CRITICAL if n.critical else 0),
                n.attempt,
                n.max_attempts,
                s(n.invalidated_by),
                n.late,
                s(n.reset),
            ],
            _NODE_DEFAULTS,
        )
        for n in graph.nodes
    ]
    titles.update((n.id, n.title) for n in graph.nodes)
    return {
        "n": nodes,
        "e": edges,
        "ce": [i for i, e in enumerate(graph.edges) if e.critical],
        "ek": [[i, s(e.kind)] for i, e in enumerate(graph.edges) if e.kind != DEPENDS_ON],
        "ranks": graph.ranks,
        "widest": graph.widest,
    }


def _change_row(change: StepChange, s: _Strings) -> list[Any]:
    fields = [s(f) for f in change.fields]
    return [s(change.step), s(change.cause), s(change.was), change.attempt, s(change.upstream), fields]


#: The positions of a version's row and of its ``changes`` row (the page reads them by these names).
VERSION_FIELDS: Final = (
    "v", "seq", "ts", "actor", "reason", "why", "obs", "causes", "patched", "sup", "ch", "crit",
    "n", "e", "ce", "ek", "ranks", "widest",
)  # fmt: skip
CHANGE_FIELDS: Final = (
    "kept", "reset", "added", "removed", "criteria_kept", "criteria_reset", "criteria_added",
    "criteria_removed", "policy_changed",
)  # fmt: skip


def _changes_row(changes: Changes, s: _Strings) -> list[Any]:
    """What a replan changed (:func:`~projections.history.changes_view`) in the order of
    :data:`CHANGE_FIELDS`, ids as string indexes and each change as [step, cause, was, attempt, upstream,
    [fields]]."""
    return [
        [s(i) for i in changes.kept],
        [_change_row(c, s) for c in changes.reset],
        [s(i) for i in changes.added],
        [_change_row(c, s) for c in changes.removed],
        [s(i) for i in changes.criteria_kept],
        [_change_row(c, s) for c in changes.criteria_reset],
        [s(i) for i in changes.criteria_added],
        [s(i) for i in changes.criteria_removed],
        changes.policy_changed,
    ]


def _version_rows(
    ends: Sequence[tuple[PlanState, int | None]], final: PlanState, seen: Mapping[int, tuple[str, str]], s: _Strings
) -> list[list[Any]]:
    """Each version as a row of :data:`VERSION_FIELDS`: when, who and why it was adopted, its causes (seq,
    type, step), the seq that superseded it, what its replan changed, its criteria at its end, and its graph
    at its end (:func:`_graph_rows`; a node's title is -1 when the step had the same title in the version
    before)."""
    rows = []
    titles: dict[str, str] = {}
    for state, superseded_at in ends:
        info = state.adopted
        if info is None:  # the header's span, before the plan
            continue
        graph = _graph_rows(plan_graph(state, final.orphans), s, titles)
        row = {
            "v": info.version,
            "seq": info.seq,
            "ts": info.ts,
            "actor": s(info.actor),
            "reason": s(info.reason),
            "why": info.why,
            "obs": list(info.observations),
            "causes": [[c, *seen.get(c, ("", ""))] for c in info.causes],
            "patched": info.patched,
            "sup": superseded_at,
            "ch": None if info.changes is None else _changes_row(info.changes, s),
            "crit": [[s(c.id), s(c.status)] for c in state.criteria.values_in_order()],
            **graph,
        }
        rows.append([row[name] for name in VERSION_FIELDS])
    return rows


def _timeline_rows(line: Timeline, s: _Strings) -> dict[str, Any]:
    """The timeline in milliseconds from its first event: ``a`` holds six numbers per attempt (lane, start
    after the previous attempt's start, duration or -1 while running, outcome, attempt, version after the
    previous attempt's version); ``late`` [lane, ms, type, plan_version, attempt, seq]; ``replans`` [ms,
    version, seq]."""
    if line.first_ts is None:
        return {"t0": None, "end": 0, "lanes": [], "a": [], "late": [], "replans": [], "marks": []}
    origin = datetime.fromisoformat(line.first_ts)

    def ms(ts: str) -> int:
        return round((datetime.fromisoformat(ts) - origin).total_seconds() * 1000)

    lane = {step: i for i, step in enumerate(line.lanes)}
    flat: list[int] = []
    started = version = 0
    for a in line.attempts:  # starts and versions as the change from the attempt before: small numbers
        start = ms(a.start_ts)
        flat += (lane[a.step], start - started, -1 if a.end_ts is None else ms(a.end_ts) - start)
        flat += (s(a.outcome), a.attempt, a.version - version)
        started, version = start, a.version
    return {
        "t0": line.first_ts,
        "end": ms(line.last_ts or line.first_ts),
        "lanes": [s(step) for step in line.lanes],
        "a": flat,
        "late": [[lane[m.step], ms(m.ts), s(m.type), m.plan_version, m.attempt, m.seq] for m in line.late],
        "replans": [[ms(r.ts), r.version, r.seq, s(r.reason or None)] for r in line.replans],
        "marks": [[ms(m.ts), s(m.kind), -1 if m.step is None else lane[m.step], m.seq, s(m.text)] for m in line.marks],
    }


#: The colour of each way a plan version came to be (its replan's reason code; ``created`` for version 1), on the
#: version strip and the timeline's replan lines: each at least 3:1 against the page's white (WCAG 2's contrast
#: for graphics) and far from every other (tests/projections/test_report_colours.py measures both).
REASON_COLOURS: Final = {
    "created": "#18181b",
    "new_constraint": "#1d4ed8",
    "failed_assumption": "#dc2626",
    "repeated_tool_failure": "#db2777",
    "no_ready_step": "#a16207",
    "retries_exhausted": "#831843",
    "coverage_gap": "#0f766e",
    "budget_change": "#4d7c0f",
    "user_request": "#7c3aed",
    "agent_revision": "#0369a1",
}
#: The colour of each kind of timeline mark (:data:`~plantrail.projections.timeline.MARK_KINDS`).
MARK_COLOURS: Final = {
    "repair": "#b91c1c",
    "abandon": "#52525b",
    "lease_expired": "#b45309",
    "approval_requested": "#6d28d9",
    "approval_granted": "#15803d",
    "approval_denied": "#be123c",
}


def _styles() -> dict[str, Any]:
    return {
        "reasons": dict(REASON_COLOURS),
        "marks": dict(MARK_COLOURS),
        "nodes": {k: v._asdict() for k, v in NODE_STYLES.items()} | {"": UNKNOWN_STYLE._asdict()},
        "edges": {k: v._asdict() for k, v in EDGE_STYLES.items()},
        "geometry": GEOMETRY._asdict(),
    }


def report_data(
    records: Iterable[Record],
    *,
    verify: Mapping[str, Any],
    on_record: Callable[[Record], None] | None = None,
) -> dict[str, Any]:
    """Everything the report page shows, from one read and one fold of ``records``.

    ``verify`` is what ``plantrail verify`` found (``{"ok": bool, "code", "message"}``); ``on_record``, when
    given, sees each record as it is read (a progress bar).
    """
    collector = Collector()
    seen: dict[int, tuple[str, str]] = {}
    traces: dict[int, tuple[str, str | None]] = {}

    def noted(stream: Iterable[Record]) -> Iterable[Record]:
        for record in stream:
            step = getattr(record.data, "step", None)
            seen[record.seq] = (record.type, step if isinstance(step, str) else "")
            if record.trace is not None:
                traces[record.seq] = (record.trace.traceparent, record.trace.tracestate)
            if on_record is not None:
                on_record(record)
            yield record

    ends = [(span.state, span.superseded_at) for span in spans(collector.tap(noted(records)))]
    final = ends[-1][0]
    s = _Strings([*NODE_STYLES, "superseded", "in_progress", "failed", DEPENDS_ON])
    versions = _version_rows(ends, final, seen, s)
    criteria_text = {} if final.plan is None else {c.id: c.description for c in final.plan.acceptance_criteria}
    line = collector.timeline([o.seq for o in final.orphans])
    data: dict[str, Any] = {
        "run": final.run,
        "goal": final.goal,
        "outcome": final.outcome,
        "outcome_reason": final.outcome_reason,
        "version": final.version,
        "last_seq": final.last_seq,
        "head": final.head,
        "verify": dict(verify),
        "versions": versions,
        "criteria": [
            {
                "id": c.id,
                "description": criteria_text.get(c.id, ""),
                "status": c.status,
                "evidence": optional_text(c.evidence),
            }
            for c in final.criteria.values_in_order()
        ],
        "orphans": orphans_view(final),
        "receipt": resume_receipt(final),
        "timeline": _timeline_rows(line, s),
        "styles": _styles(),
    }
    if traces:  # left out when no record has one: a report of such a log is the one it was
        data["traces"] = [[seq, s(parent), s(state)] for seq, (parent, state) in sorted(traces.items())]
        data["timeline"]["at"] = _attempt_traces(line, traces)
    data["S"] = s.items
    data["fields"] = {"version": list(VERSION_FIELDS), "changes": list(CHANGE_FIELDS)}
    return data


def _attempt_traces(line: Timeline, traces: Mapping[int, tuple[str, str | None]]) -> list[list[int | None]]:
    """For each attempt of the timeline whose start or result carried a W3C trace context: [the attempt's index in
    ``a``, the seq of its start when it carried one (else None), the seq of its result when it carried one (else
    None)]; the page looks the trace contexts up in ``traces`` by seq."""
    rows: list[list[int | None]] = []
    for i, a in enumerate(line.attempts):
        start = a.start_seq if a.start_seq in traces else None
        end = a.end_seq if a.end_seq is not None and a.end_seq in traces else None
        if start is not None or end is not None:
            rows.append([i, start, end])
    return rows
