"""The timeline commands: ``log`` (streamed, filtered, followed) and ``show`` (one event in full).

Both render what :mod:`plantrail.ledger.timeline` reads; output is written as it is read, so memory stays
flat whatever the size of the log.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, get_args

import click

from plantrail.cli.common import (
    count_line,
    json_option,
    layout_options,
    log_argument,
    mark_printed,
    raise_if_torn,
    truncate,
)
from plantrail.cli.tables import CELL_MOST, cell, wrap
from plantrail.cli.terminal import columns, printable, wrapping

if TYPE_CHECKING:
    from plantrail.ledger.stores.values import Rewound
    from plantrail.ledger.timeline import Filter

from plantrail.ledger.timeline import full_line, summary, timeline_entry
from plantrail.ledger.times import UNRECORDED, log_times_recorded
from plantrail.ledger.vocabulary.events import Event, Record
from plantrail.projections.model import Orphan

__all__ = ["log_command", "show", "timeline_commands"]

_FLUSH_EVERY: Final = 512
_MIDDLES: Final = 256  # the most formatted middle columns a human timeline keeps at once
EVENT_TYPES: Final = sorted(kind.TYPE for kind in get_args(Event))
_TYPE_WIDTH: Final = len("criterion.verified (late)")
_ACTOR_WIDTH: Final = len("importer")
#: What the human timeline leaves out unless --all: a group commit's bounds say nothing of the run.
BOOKKEEPING: Final = frozenset({"log.batch"})

Item = tuple[Record, Orphan | None]


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _in_chunks(pieces: Iterable[str], *, every: int) -> None:
    """Write the pieces as they come, flushing every ``every`` of them (every one when following)."""
    buffer: list[str] = []
    for piece in pieces:
        buffer.append(piece)
        if len(buffer) >= every:
            _write("".join(buffer))
            buffer.clear()
    if buffer:
        _write("".join(buffer))


class _Rows:
    """The human timeline in fixed columns, so that each row can be printed as soon as it is read."""

    def __init__(self, last_seq: int, version: int, *, times_recorded: bool = True) -> None:
        self.times_recorded = times_recorded
        self.widths = [
            max(len(str(max(last_seq, 0))) + 1, 3),
            19,
            _ACTOR_WIDTH,
            _TYPE_WIDTH,
            max(len(f"v{version}") + 1, 4),
        ]
        room = columns() - sum(w + 2 for w in self.widths) - 2
        self.summary_width = max(room, 12)
        self.wrap = wrapping()
        self.shown = 0  # rows printed so far
        self._format = "  " + "  ".join(f"{{:<{w}}}" for w in self.widths) + "  {}"
        # The actor, type and plan columns of a row, formatted once per combination (a plan version holds a
        # few dozen; the table is emptied past _MIDDLES, so memory stays flat): a row is then its seq, its
        # time, this and its summary.
        middle = "  ".join(f"{{:<{w}}}" for w in self.widths[2:])
        self._middles: dict[tuple[str, str, int], str] = {}
        self._middle = f"  {middle}  "
        self._seq_width = self.widths[0]

    def header(self) -> str:
        """The column names and the rule under them."""
        names = self._format.format("SEQ", "TIME (UTC)", "ACTOR", "TYPE", "PLAN", "SUMMARY")
        rule = "  " + "  ".join("-" * w for w in [*self.widths, self.summary_width])
        return f"{names}\n{rule}\n"

    def row(self, record: Record, orphan: Orphan | None) -> str:
        """One event's row (what ``self._format`` gives for its six columns, right-stripped), put together by
        concatenation: ``str.format`` with widths costs five times as much, and this runs for every line of a
        human timeline."""
        kind = record.type if orphan is None else record.type + " (late)"
        key = (record.actor, kind, record.plan_version)
        middle = self._middles.get(key)
        if middle is None:
            if len(self._middles) >= _MIDDLES:
                self._middles.clear()
            plan = "-" if kind.startswith("log.") else f"v{record.plan_version}"  # a log record has no plan version
            middle = self._middles[key] = self._middle.format(record.actor, kind, plan)
        source = record.source  # (times.time_recorded, inlined: this runs for every line)
        recorded = (self.times_recorded or not kind.startswith("log.")) if source is None else source.timestamp
        when = record.ts[:19].replace("T", " ") if recorded else "-"
        self.shown += 1
        if self.wrap:
            return self._wrapped("  " + str(record.seq).ljust(self._seq_width) + "  " + when.ljust(19) + middle, record)
        text = _cut(summary(record), self.summary_width)
        line = "  " + str(record.seq).ljust(self._seq_width) + "  " + when.ljust(19) + middle + text
        return (line.rstrip() if not text or text[-1].isspace() else line) + "\n"

    def _wrapped(self, start: str, record: Record) -> str:
        """A row whose summary goes on over more lines, under the SUMMARY column, instead of being cut."""
        lines = wrap(cell(summary(record)), self.summary_width)
        indent = " " * len(start)
        return "".join(f"{start if n == 0 else indent}{text}".rstrip() + "\n" for n, text in enumerate(lines))

    def count(self) -> str:
        """The line under the timeline that counts its rows."""
        return count_line(self.shown, "event", "events") + "\n"


def _cut(text: str, width: int) -> str:
    """:func:`truncate`, with its answer computed directly when the text's first ``width + 1`` characters are
    printable ASCII (one column each): the text when it fits, else its first ``width - 1`` and an ellipsis.
    Only those characters are looked at (a summary may hold a long evidence list that the row cuts)."""
    if width < 1:  # (as truncate takes it)
        width = 1
    head = text[: width + 1]
    if head.isascii() and head.isprintable() and width < CELL_MOST:
        return text if len(text) <= width else text[: width - 1] + "…"
    return truncate(text, width)


def _human(items: Iterator[Item], rows: _Rows, *, first: bool, every: int) -> None:
    """Print the rows as they are read, flushing every ``every`` of them (every one when following); the header
    comes before the first row (``first``), and ``(none)`` when there is no row at all."""
    shown = not first
    row = rows.row
    buffer: list[str] = []
    for record, orphan in items:
        if not shown:
            buffer.append(rows.header())
            shown = True
        buffer.append(row(record, orphan))
        if len(buffer) >= every:
            _write("".join(buffer))
            buffer.clear()
    if not shown:
        buffer.append("  (none)\n")
    if buffer:
        _write("".join(buffer))


def _jsonl(items: Iterator[Item]) -> Iterator[str]:
    for record, orphan in items:
        yield full_line(record, orphan)


def _json_array(items: Iterator[Item], batch: int = 256) -> Iterator[str]:
    """The same document ``orjson.dumps(entries, option=OPT_INDENT_2)`` gives, written a batch at a time (the
    items of an indented array are the array's lines between its brackets)."""
    import orjson

    opener = "[\n"
    entries: list[dict[str, Any]] = []
    for record, orphan in items:
        entries.append(timeline_entry(record, orphan))
        if len(entries) >= batch:
            yield opener + orjson.dumps(entries, option=orjson.OPT_INDENT_2)[2:-2].decode()
            opener, entries = ",\n", []
    if entries:
        yield opener + orjson.dumps(entries, option=orjson.OPT_INDENT_2)[2:-2].decode()
        opener = ",\n"
    yield "[]\n" if opener == "[\n" else "\n]\n"


@click.command(name="log")
@log_argument
@click.option("--from-seq", type=click.IntRange(min=0), default=0, help="Start at this seq.")
@click.option("--to-seq", type=click.IntRange(min=0), help="Stop after this seq.")
@click.option(
    "--type",
    "types",
    multiple=True,
    type=click.Choice(EVENT_TYPES),
    metavar="TYPE",
    help="Only events of this type (repeatable), e.g. plan.replanned.",
)
@click.option("--step", metavar="STEP", help="Only events about this step.")
@click.option(
    "--version", "version", type=click.IntRange(min=0), metavar="V", help="Only events stamped with plan version V."
)
@click.option("--tail", type=click.IntRange(min=1), metavar="N", help="Only the last N events (read from the end).")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many events.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they are appended (Ctrl-C stops, exit 0).")
@click.option("--jsonl", is_flag=True, help="One full record per line (data included), for jq.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also show the group commits' bounds (log.batch records), which the human timeline leaves out.",
)
@layout_options
@json_option
def log_command(
    log: str,
    from_seq: int,
    to_seq: int | None,
    types: tuple[str, ...],
    step: str | None,
    version: int | None,
    tail: int | None,
    limit: int | None,
    follow: bool,
    jsonl: bool,
    show_all: bool,
    as_json: bool,
) -> None:
    """The timeline: every event with its seq, time, actor, type, plan version and a summary, printed as it is
    read (memory stays flat at any size). Filters combine; --tail N reads backwards from the end of the log.

    Reading starts at --from-seq (found by seq), so the chain before it is not checked here (verify checks it).

    The human timeline ends with the count of its rows, and leaves out the group commits' bounds (log.batch
    records, which say nothing of the run; --all shows them); log records (log.opened, log.repaired ...) show
    no plan version. --json and --jsonl hold every record.

    \b
    JSON: --json prints one array of {"seq", "ts", "actor", "type", "plan_version", "summary", "orphan",
      "source"?, "trace"?}; --jsonl prints one such object per line, plus "data", "h" and "key"? (works with --follow).

    \b
    Example:
      plantrail log samples/login-fix.jsonl --from-seq 5
      plantrail log run.jsonl --tail 20 --follow
      plantrail log run.jsonl --type plan.replanned --jsonl | jq .data.reason
    """
    from plantrail.ledger.timeline import Filter, timeline
    from plantrail.ledger.vocabulary.errors import error

    if as_json and jsonl:
        raise error("USAGE", "give --json or --jsonl, not both")
    if follow and as_json:
        raise error("USAGE", "--follow never ends a JSON array: use --jsonl with --follow")
    if to_seq is not None and to_seq < from_seq:
        raise error("USAGE", f"--to-seq {to_seq} is before --from-seq {from_seq}")
    hidden = frozenset() if show_all or as_json or jsonl else BOOKKEEPING
    where = Filter(from_seq=from_seq, to_seq=to_seq, types=frozenset(types), step=step, version=version, hidden=hidden)
    read = timeline(log, where, tail=tail, limit=limit)
    mark_printed()
    recorded = True if as_json or jsonl else log_times_recorded(log)
    rows = _Rows(read.last_seq, read.version, times_recorded=recorded)
    if not recorded:
        print(f"{UNRECORDED} (TIME shows - where the transcript gave none)")
    try:
        if as_json:
            _in_chunks(_json_array(read.items), every=1)
        elif jsonl:
            _in_chunks(_jsonl(read.items), every=_FLUSH_EVERY)
        else:
            _human(read.items, rows, first=True, every=_FLUSH_EVERY)
            if not follow and rows.shown:
                _write(rows.count())
        if not follow:
            raise_if_torn(log, read.torn())
            return
        if to_seq is not None and to_seq <= read.last_seq:
            return
        _followed(log, read.last_seq, where, jsonl=jsonl, rows=rows, head=read.head)
    except KeyboardInterrupt:
        if not follow:
            raise
        sys.stdout.flush()


def _followed(log: str, after: int, where: Filter, *, jsonl: bool, rows: _Rows, head: str | None) -> None:
    """Print the events appended after seq ``after`` until interrupted (or past ``where.to_seq``)."""
    from plantrail.ledger.timeline import following

    def told(notice: Rewound) -> None:
        sys.stdout.flush()
        click.echo(f"note: {printable(notice.message)}", err=True)

    def until_end() -> Iterator[Item]:
        for record, orphan in following(log, after, where, on_rewound=told, head=head):
            if where.to_seq is not None and record.seq > where.to_seq:
                return
            yield record, orphan

    if jsonl:
        _in_chunks(_jsonl(until_end()), every=1)
    else:
        _human(until_end(), rows, first=False, every=1)


@click.command()
@log_argument
@click.argument("seq", metavar="SEQ", type=click.IntRange(min=0))
@json_option
def show(log: str, seq: int, as_json: bool) -> None:
    """One event in full: its envelope, where it came from (source, key), its data, its hash and link, and the
    late result it became, if it is one. The line's own hash is checked (verify checks the chain).

    \b
    JSON: {"seq", "ts", "run", "actor", "type", "plan_version", "source", "key", "data", "prev", "h",
      "summary", "orphan": null | <orphans --json item without status_now>, and "trace": {"traceparent",
      "tracestate"} when the command carried a W3C trace context}

    \b
    Example:
      plantrail show samples/login-fix-replans.jsonl 12
    """
    from plantrail.cli.common import emit
    from plantrail.ledger.timeline import event, event_view

    view = event_view(*event(log, seq))
    emit(as_json, view, lambda: _render_event(view))


def _render_event(view: dict[str, Any]) -> str:
    import orjson

    lines = [
        f"seq {view['seq']} · {view['ts']} · {view['actor']} · {view['type']}"
        + ("" if view["type"].startswith("log.") else f" (plan v{view['plan_version']})"),
        f"run {view['run']} · hash {view['h']}",
        f"prev {view['prev']}",
    ]
    if view["source"] is not None:
        source = view["source"]
        where = ", ".join(f"{k} {v}" for k, v in source.items() if v not in (None, False) and k != "file")
        lines.append(f"source: {source['file']}" + (f" ({where})" if where else ""))
    if view["key"] is not None:
        lines.append(f"key: {view['key']}")
    if "trace" in view:
        trace = view["trace"]
        lines.append(f"trace: {trace['traceparent']}" + (f" ({trace['tracestate']})" if trace["tracestate"] else ""))
    if view["summary"]:
        lines.append(f"summary: {view['summary']}")
    if view["orphan"] is not None:
        o = view["orphan"]
        lines.append(f"late result: {o['why']}, stamped v{o['plan_version']}, arrived under v{o['active_version']}")
    body = orjson.dumps(view["data"], option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    lines += ["data:", *("  " + line for line in body.splitlines())]
    return "\n".join(lines)


timeline_commands = (log_command, show)
