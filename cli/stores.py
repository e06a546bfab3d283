"""Commands about where runs live: copy runs between stores, and set up a database store."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from plantrail.cli.common import emit, json_option, mark_printed, store_option
from plantrail.cli.terminal import screen

if TYPE_CHECKING:
    from plantrail.ledger.stores.copy import CopiedRun

__all__ = ["copy_command", "store"]


@click.command("copy")
@click.argument("source", metavar="SRC")
@click.argument("destination", metavar="[DST]", required=False)
@store_option
@json_option
def copy_command(source: str, destination: str | None, store: str | None, as_json: bool) -> None:
    """Copy runs between stores byte for byte: each copy verifies with the same head hash as its source.

    SRC and DST name runs as LOG does for every command: a path, a postgresql://.../db#RUN_ID URL, or a run id
    in --store (PLANTRAIL_STORE); a folder, or a database URL without a run, names every run in it. Without
    DST the runs go into the store. Each run is reported: copied, skipped (DST holds the same records up to
    the same head hash already: run the copy again to finish one that stopped), or failed with why (a damaged
    source, a DST that exists and differs: LOG_EXISTS); a failed run does not stop the others, and the copy
    exits with the first failure's code once all are done.

    \b
    Example:
      plantrail copy run.jsonl 'postgresql://localhost/plantrail#run'
      plantrail copy 'postgresql://localhost/plantrail#run' copy.jsonl
      plantrail copy runs/ postgresql://localhost/plantrail
      plantrail copy run.jsonl --store postgresql://localhost/plantrail
    """
    from plantrail.ledger.stores.copy import copy_runs
    from plantrail.ledger.vocabulary.errors import PlantrailError, error

    if destination is None and not store:
        raise error("USAGE", "copy SRC DST, or copy SRC with --store (or PLANTRAIL_STORE) to copy into that store")
    done: list[CopiedRun] = []

    def told(run: CopiedRun) -> None:
        done.append(run)
        if not as_json:
            click.echo(screen(_copied_line(run)))

    try:
        copy_runs(source, destination, store=store, on_run=told)
    except PlantrailError:
        if not done:
            raise
        if as_json:
            emit(True, _copy_data(done), str)
        raise
    if as_json:
        emit(True, _copy_data(done), str)
    else:
        mark_printed()


def _copied_line(run: CopiedRun) -> str:
    if run.status == "copied":
        return f"copied {run.source} -> {run.destination}: {run.records} records, head {run.head}"
    if run.status == "skipped":
        return f"skipped {run.source}: {run.destination} holds the same {run.records} records already (head {run.head})"
    assert run.problem is not None
    return f"failed {run.source}: error[{run.problem.code}] {run.problem.message}"


def _copy_data(done: list[CopiedRun]) -> dict[str, object]:
    runs = [
        {
            "source": c.source,
            "destination": c.destination,
            "status": c.status,
            "records": c.records,
            "head": c.head,
            "anchor": None if c.head is None else f"{c.records - 1}:{c.head}",
            "error": None if c.problem is None else {"code": c.problem.code, "message": c.problem.message},
        }
        for c in done
    ]
    return {"ok": all(c.problem is None for c in done), "runs": runs}


@click.group()
def store() -> None:
    """Set up a database store.

    \b
    Example:
      plantrail store init postgresql://localhost/plantrail
    """


@store.command("init")
@click.argument("url", metavar="URL")
@json_option
def init(url: str, as_json: bool) -> None:
    """Create or upgrade plantrail's tables in a PostgreSQL database (idempotent; a newer schema is refused).

    \b
    Example:
      plantrail store init postgresql://localhost/plantrail
    """
    from plantrail.ledger.stores.postgres_run import DatabaseStore

    database = DatabaseStore(url)
    version = database.init_schema()
    emit(as_json, {"ok": True, "schema_version": version}, lambda: f"{database}: plantrail schema v{version}")
