"""Pictures of a run: ``graph`` (the plan as SVG, DOT or Mermaid), ``report`` (one HTML file), ``watch`` (live).

Each command reads the log, calls the library's pure renderers (:mod:`projections.graph_render`,
:mod:`projections.report`, :mod:`cli.watching`) and writes the text.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from plantrail.cli.common import (
    FilePath,
    current_state,
    emit,
    json_option,
    log_argument,
    raise_if_torn,
    run_records,
)

if TYPE_CHECKING:
    from plantrail.projections.model import Orphan, PlanState

__all__ = ["graph", "report", "watch"]

_FORMATS = ("svg", "dot", "mermaid")


def _write(text: str, output: str | None) -> None:
    """``text`` to stdout, or to the file ``output``: written beside it and renamed over it, so a browser or a
    reader of ``output`` never sees half a page."""
    if output is None or output == "-":
        click.echo(text, nl=False)
        return
    import os

    from plantrail.ledger.stores.files import check_path, os_error

    check_path(output, "output file")
    partial = f"{output}.partial-{os.getpid()}"
    try:
        with open(partial, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(partial, output)
    except OSError as exc:
        if os.path.lexists(partial):
            os.unlink(partial)
        raise os_error(exc, output, "output file") from None


def _graph_state(log: str, version: int | None, at_seq: int | None) -> tuple[PlanState, tuple[Orphan, ...]]:
    """The state to draw and the late results to mark on it: for a past version, every late result the
    whole log holds for it; at a seq, only those that had arrived by then."""
    from plantrail.ledger.stores.opener import as_run
    from plantrail.ledger.vocabulary.errors import error
    from plantrail.projections.history import replay_at_seq

    if version is not None and at_seq is not None:
        raise error("USAGE", "give --version V or --at-seq N, not both")
    if at_seq is not None:
        with run_records(log) as (_, records):
            state = replay_at_seq(records, at_seq)
        return state, state.orphans
    final, torn = current_state(log)
    raise_if_torn(log, torn)
    if version is None:
        return final, final.orphans
    with as_run(log) as run:
        state, _, torn = run.version_state(version)
    raise_if_torn(log, torn)
    return state, final.orphans


@click.command()
@log_argument
@click.option("--version", "version", type=click.IntRange(min=1), metavar="V", help="Draw plan version V.")
@click.option("--at-seq", type=click.IntRange(min=0), metavar="N", help="Draw the plan as it stood after event N.")
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="svg", show_default=True, help="Output format.")
@click.option("-o", "--output", type=FilePath(dir_okay=False, path_type=str), help="Write to FILE instead of stdout.")
@json_option
def graph(log: str, version: int | None, at_seq: int | None, fmt: str, output: str | None, as_json: bool) -> None:
    """The plan as a graph: steps coloured by status, ready ones marked, steps reset by lineage marked, late
    results as marks on their step, and the critical path (the longest chain of steps not yet completed)
    highlighted. SVG is laid out by plantrail itself; dot is for Graphviz, mermaid for Markdown on GitHub.
    Every node and edge has a stable id and data-step-id, data-status and data-version attributes.

    \b
    JSON (instead of --format): {"run", "version", "nodes": [{"id", "title", "status", "ready", "attempt",
      "max_attempts", "reset", "invalidated_by", "late", "critical", "rank", "slot"}], "edges": [{"source",
      "target", "kind", "critical"}], "ranks", "widest", "critical": [step ids, first to last]}

    \b
    Example:
      plantrail graph samples/login-fix-replans.jsonl --version 1 -o v1.svg
      plantrail graph samples/login-fix-replans.jsonl --format mermaid
    """
    from plantrail.projections.graph import plan_graph
    from plantrail.projections.graph_render import render_dot, render_mermaid, render_svg

    state, late = _graph_state(log, version, at_seq)
    drawn = plan_graph(state, late)
    if as_json:
        import orjson

        nodes, edges = [n._asdict() for n in drawn.nodes], [e._asdict() for e in drawn.edges]
        data = drawn._asdict() | {"nodes": nodes, "edges": edges}
        if output is None:
            emit(True, data, str)
        else:
            _write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n", output)
        return
    renderers = {"svg": render_svg, "dot": render_dot, "mermaid": render_mermaid}
    _write(renderers[fmt](drawn), output)


def verified_report(run: Any) -> dict[str, Any]:
    """The report's data of ``run`` (a run object) with what verify says of it."""
    from plantrail.projections.report import report_data

    return report_data(run.records(), verify=_verify(run.location))


def _verify(log: str) -> dict[str, Any]:
    """What ``plantrail verify`` says of the log, as the report's header shows it."""
    from plantrail.ledger.verify import verify_log
    from plantrail.ledger.vocabulary.errors import PlantrailError

    try:
        found = verify_log(log)
    except PlantrailError as exc:
        return {"ok": False, "code": exc.code, "message": exc.message}
    if found.torn is not None:
        return {"ok": False, "code": "TORN_TAIL", "message": "the log ends with an incomplete record"}
    return {"ok": True, "code": None, "message": f"{found.records} records, state hash {found.state_hash}"}


@click.command()
@log_argument
@click.option(
    "-o", "--output", type=FilePath(dir_okay=False, path_type=str), required=True, help="The HTML file to write."
)
@json_option
def report(log: str, output: str, as_json: bool) -> None:
    """One self-contained HTML report of the run, to open from disk (it makes no network request): header
    (goal, outcome, head hash, whether verify passed), the version strip (open a version for its graph, why
    and diff), a timeline lane per step, the criteria matrix, the late results and the resume receipt, with
    filters (failed only, superseded only, one step).

    \b
    JSON: {"ok", "output", "bytes", "run", "versions", "last_seq", "head_hash", "verify": {"ok", "code",
      "message"}}

    \b
    Example:
      plantrail report samples/login-fix-replans.jsonl -o run.html
    """
    from plantrail.cli.progress import progress_for
    from plantrail.cli.report_page import render_report
    from plantrail.ledger.stores.jsonl.run import FileRun
    from plantrail.ledger.stores.opener import as_run
    from plantrail.projections.report import report_data

    verified = _verify(log)
    with as_run(log) as run:
        if isinstance(run, FileRun):  # a file's read can show its progress through the bytes
            with progress_for(run.reader, "report", enabled=not as_json) as tick:
                data = report_data(run.records(), verify=verified, on_record=tick)
        else:
            data = report_data(run.records(), verify=verified)
    page = render_report(data)
    _write(page, output)
    summary = {
        "ok": True,
        "output": output,
        "bytes": len(page.encode()),
        "run": data["run"],
        "versions": len(data["versions"]),
        "last_seq": data["last_seq"],
        "head_hash": data["head"],
        "verify": verified,
    }
    if as_json:
        emit(True, summary, str)
    else:
        click.echo(f"wrote {output}: {summary['versions']} plan versions, {summary['last_seq']} events", err=True)
    raise_if_torn(log, run.torn)


@click.command()
@log_argument
@click.option("--events", type=click.IntRange(min=0), default=8, show_default=True, help="How many recent events.")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01, max=3600),
    default=0.05,
    show_default=True,
    help="Seconds between checks (at most 3600).",
)
@json_option
def watch(log: str, events: int, interval: float, as_json: bool) -> None:
    """A live view of a run in progress: the status table, the last few events and the advice, redrawn as
    events arrive (it follows the file and never re-reads it from the start). Ctrl-C ends it. When stdout is
    not a terminal it prints plain lines, one per event, instead of redrawing.

    \b
    JSON: JSON Lines: the status --json document first, then {"event": <the record quoted as in why's
      causes>, "advice"} per new event.

    \b
    Example:
      plantrail watch run.jsonl
    """
    from plantrail.cli.watching import follow

    follow(log, sys.stdout, recent=events, interval=interval, as_json=as_json)
