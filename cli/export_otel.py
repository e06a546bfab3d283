"""``plantrail export otel``: a run, or every run of a store, sent as OpenTelemetry spans over OTLP/HTTP, once
or as the runs grow (``--follow``).

The spans are the projection's (:mod:`plantrail.projections.otel_spans`); the SDK is imported only here, when
the command runs (:mod:`plantrail.cli.otel_sdk`). A follower sends each span when the record that ends it
lands, and keeps the seq it has sent up to in a small JSON file beside the run (``<log>.otel.json`` next to a
JSONL log, or ``<run id>.otel.json`` in ``--marks FOLDER``): started again, it reads the run from its start
and sends only the spans ended after that seq, so no span is sent twice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from plantrail.cli.common import FilePath, emit, json_option, mark_printed, raise_if_torn, store_option
from plantrail.cli.terminal import printable

if TYPE_CHECKING:
    import threading

    from plantrail.cli.otel_sdk import Sender
    from plantrail.ledger.stores.owned import Folder
    from plantrail.ledger.stores.protocol import Run, Store
    from plantrail.projections.otel_spans import Span, SpanProjector

__all__ = ["Follower", "otel"]

_MARK_LIMIT = 4096


class Follower:
    """One run being exported as it grows: its projector, and the seq its spans are sent up to (its mark)."""

    def __init__(self, location: str, run_id: str, marks: Folder, mark_name: str, payloads: bool) -> None:
        from plantrail.projections.otel_spans import SpanProjector

        self.location = location
        self.run_id = run_id
        self.projector: SpanProjector = SpanProjector(payloads=payloads)
        self._marks = marks
        self._mark_name = mark_name
        self.sent = self._read_mark()

    def _read_mark(self) -> int:
        import orjson

        from plantrail.ledger.vocabulary.errors import error

        data = self._marks.read(self._mark_name, _MARK_LIMIT, what="export mark")
        if data is None:
            return -1
        try:
            mark = orjson.loads(data)
        except orjson.JSONDecodeError:
            mark = None
        if not (isinstance(mark, dict) and mark.get("run") == self.run_id and type(mark.get("seq")) is int):
            raise error("USAGE", f"{self._marks.child(self._mark_name)} is not this run's export mark")
        seq: int = mark["seq"]
        return seq

    def _write_mark(self, seq: int) -> None:
        import orjson

        body = orjson.dumps({"run": self.run_id, "seq": seq}) + b"\n"
        self._marks.replace(self._mark_name, body, what="export mark")
        self.sent = seq

    def poll(self, sender: Sender) -> list[Span]:
        """Read the records appended since the last poll, send the spans they ended that were not sent before,
        and move the mark; the spans sent."""
        from plantrail.ledger.stores.opener import as_run

        with as_run(self.location) as run:
            records = list(run.records(after=self.projector.last_seq))
        if not records:
            return []
        ended = [span for record in records for span in self.projector.add(record)]
        fresh = [span for span in ended if span.end_seq is not None and span.end_seq > self.sent]
        sender.send(fresh)
        if self.projector.last_seq > self.sent:
            self._write_mark(self.projector.last_seq)
        return fresh


def _marks_for(run: Run, marks: str | None) -> tuple[Folder, str]:
    """Where a run's mark is kept: ``marks`` (a folder, one ``<run id>.otel.json`` per run), else beside a JSONL
    log (``<log>.otel.json``); a database run needs ``--marks``."""
    from plantrail.ledger.stores.jsonl.run import FileRun
    from plantrail.ledger.stores.owned import Folder
    from plantrail.ledger.vocabulary.errors import error

    if marks is not None:
        return Folder.open(marks, create=True), f"{run.header().run}.otel.json"
    if not isinstance(run, FileRun):
        raise error("USAGE", "export otel --follow of a database run needs --marks FOLDER (to keep what it sent)")
    folder, name = os.path.split(os.path.abspath(run.location))
    return Folder.open(folder), f"{name.removesuffix('.jsonl')}.otel.json"


def _one_shot(runs: list[Run], sender: Sender, payloads: bool) -> tuple[list[dict[str, Any]], list[Run]]:
    """Send each run's spans; what was sent, and the runs whose read ended on a torn tail."""
    from plantrail.projections.otel_spans import spans

    sent = []
    torn = []
    for run in runs:
        with run:
            found = spans(run.records(), payloads=payloads)
            if run.torn is not None:
                torn.append(run)
        sender.send(found)
        if found:
            run_id = str(dict(found[-1].attributes).get("plantrail.run.id", ""))
            sent.append({"run": run_id, "trace_id": found[0].trace_id.hex(), "spans": len(found)})
    return sent, torn


def _follow(
    watched: Run | Store,
    sender: Sender,
    *,
    marks: str | None,
    payloads: bool,
    interval: float,
    report: Callable[[Follower, list[Span]], None],
) -> None:
    """Follow the run (or every run of the store) until SIGINT or SIGTERM, which end it between two sends: a
    send and the mark that records it are never separated by a stop."""
    import signal
    import threading

    stopped = threading.Event()

    def stop(signum: int, frame: object) -> None:
        stopped.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _send_until(watched, sender, marks=marks, payloads=payloads, interval=interval, report=report, stopped=stopped)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _send_until(
    watched: Run | Store,
    sender: Sender,
    *,
    marks: str | None,
    payloads: bool,
    interval: float,
    report: Callable[[Follower, list[Span]], None],
    stopped: threading.Event,
) -> None:
    """Send what the run (or each run of the store) holds past its mark, then what each run the changes name
    holds, until ``stopped``. The changes are :func:`plantrail.ledger.run_changes.run_changes`'s, which looks at
    least every ``interval`` seconds; they start before the first sends, so nothing appended meanwhile is
    missed. A run of the store that is gone is passed over."""
    from plantrail.ledger.run_changes import run_changes
    from plantrail.ledger.stores.protocol import Store

    followers: dict[str, Follower] = {}

    def send(run: Run, *, of_store: bool) -> None:
        if run.location not in followers:
            with run:
                if not run.exists():
                    return
                folder, name = _marks_for(run, marks)
                followers[run.location] = Follower(run.location, run.header().run, folder, name, payloads)
        elif of_store and not run.exists():
            return
        follower = followers[run.location]
        sent = follower.poll(sender)
        if sent:
            report(follower, sent)

    changes = run_changes(watched, poll=interval, stop=stopped.is_set)
    if not isinstance(watched, Store):
        send(watched, of_store=False)
        for _ in changes:
            send(watched, of_store=False)
        return
    for run_id in watched.run_ids():
        send(watched.run(run_id), of_store=True)
    for changed in changes:
        for run_id in sorted(changed):
            send(watched.run(run_id), of_store=True)


@click.command()
@click.argument("log", required=False, type=FilePath(dir_okay=True, path_type=str))
@store_option
@click.option(
    "--endpoint",
    metavar="URL",
    help="The OTLP/HTTP traces URL (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
    "else $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else http://localhost:4318/v1/traces).",
)
@click.option(
    "--follow", is_flag=True, help="Keep running: send each span when it ends, as the run (or the store) grows."
)
@click.option(
    "--with-payloads", "payloads", is_flag=True, help="Send evidence as it is (default: a digest and a size)."
)
@click.option(
    "--marks",
    metavar="FOLDER",
    type=FilePath(file_okay=False, path_type=str),
    help="With --follow: where to keep what was sent, one <run id>.otel.json per run (default: beside "
    "each JSONL log; a database store needs it).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01, max=3600),
    default=0.5,
    show_default=True,
    help="With --follow: the most seconds between two looks for changes (a database's notice, or on Linux a "
    "folder's, wakes it sooner).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1, max=600),
    default=10.0,
    show_default=True,
    help="Seconds to wait for the receiver.",
)
@json_option
def otel(
    log: str | None,
    store: str | None,
    endpoint: str | None,
    follow: bool,
    payloads: bool,
    marks: str | None,
    interval: float,
    timeout: float,
    as_json: bool,
) -> None:
    """Send a run as OpenTelemetry spans over OTLP/HTTP (protobuf): the run as the root span, each plan
    version a `plan` span, each step attempt a span under its version, the events as span events, with links
    for replans, late results, forks and retries (docs/observability.md). The ids are derived from the run,
    so sending it twice gives the same spans. Evidence is sent as a SHA-256 digest and a size unless
    --with-payloads. Without LOG, every run of --store. With --follow it keeps running and sends each span
    when it ends, and started again it goes on from what it sent (Ctrl-C ends it). Needs
    `pip install 'plantrail[otel]'`.

    \b
    JSON: {"ok", "endpoint", "runs": [{"run", "trace_id", "spans"}]}; with --follow, JSON Lines, one
      {"run", "trace_id", "spans", "seq"} per send.

    \b
    Example:
      plantrail export otel run.jsonl --endpoint http://localhost:6006/v1/traces
      plantrail export otel --store runs/ --follow
    """
    from plantrail.cli.common import locate_log
    from plantrail.cli.otel_sdk import Sender
    from plantrail.ledger.stores.opener import as_run, open_store
    from plantrail.ledger.stores.protocol import Store
    from plantrail.ledger.vocabulary.errors import error

    if log is None and store is None:
        raise error("USAGE", "export otel needs a LOG or --store URL")
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise error("USAGE", f"--endpoint must be an http:// or https:// URL, not {endpoint!r}")
    watched: Run | Store = as_run(locate_log(log, store)) if log is not None else open_store(store)
    sender = Sender(endpoint, timeout=timeout)
    try:
        if not follow:
            runs = list(watched.runs()) if isinstance(watched, Store) else [watched]
            sent, torn = _one_shot(runs, sender, payloads)
            summary = {"ok": True, "endpoint": endpoint, "runs": sent}
            emit(as_json, summary, lambda: "\n".join(f"sent {r['spans']} spans of {r['run']}" for r in sent))
            for run in torn:  # what the valid part holds was sent; the torn tail is reported after it
                raise_if_torn(run.location, run.torn)
            return

        def report(follower: Follower, spans: list[Span]) -> None:
            line = {
                "run": follower.run_id,
                "trace_id": spans[0].trace_id.hex(),
                "spans": len(spans),
                "seq": follower.sent,
            }
            if as_json:
                import orjson

                sys.stdout.write(orjson.dumps(line).decode() + "\n")
                sys.stdout.flush()
                mark_printed()
            else:
                text = f"sent {len(spans)} spans of {follower.run_id} (up to seq {follower.sent})"
                click.echo(printable(text), err=True)

        _follow(watched, sender, marks=marks, payloads=payloads, interval=interval, report=report)
        sys.stdout.flush()
    finally:
        sender.close()
