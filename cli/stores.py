"""Commands about where runs live: copy runs between stores, and set up a database store."""

from __future__ import annotations

import click

from plantrail.cli.common import emit, json_option

__all__ = ["copy_command", "store"]


@click.command("copy")
@click.argument("source", metavar="SRC")
@click.argument("destination", metavar="DST")
@json_option
def copy_command(source: str, destination: str, as_json: bool) -> None:
    """Copy runs between stores byte for byte: each copy verifies with the same head hash as its source.

    A JSONL run is its path, a database run is postgresql://.../db#RUN_ID; a folder copies every *.jsonl in
    it, a database URL without a run copies every run in the database. An existing destination run is
    refused (LOG_EXISTS); a damaged source copies nothing.

    \b
    Example:
      plantrail copy run.jsonl 'postgresql://localhost/plantrail#run'
      plantrail copy 'postgresql://localhost/plantrail#run' copy.jsonl
      plantrail copy runs/ postgresql://localhost/plantrail
    """
    from plantrail.ledger.stores.copy import copy_runs

    copied = copy_runs(source, destination)
    data = {"ok": True, "runs": [c._asdict() | {"anchor": f"{c.records - 1}:{c.head}"} for c in copied]}
    emit(
        as_json,
        data,
        lambda: "\n".join(f"copied {c.source} -> {c.destination}: {c.records} records, head {c.head}" for c in copied),
    )


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
