"""``plantrail runs``: one row per run of a runs folder or a database (:func:`plantrail.ledger.runs.list_runs`)."""

from __future__ import annotations

import click

from plantrail.cli.common import STORE_ENV, count_line, emit, json_option, layout_options, table
from plantrail.ledger.runs import OUTCOMES, SORTS
from plantrail.ledger.vocabulary.events import REASON_CODES

__all__ = ["runs"]


@click.command()
@click.argument("where", metavar="[DIR]", required=False)
@click.option(
    "--store",
    metavar="URL",
    envvar=STORE_ENV,
    help=f"A database (or runs folder) instead of DIR (default: ${STORE_ENV}).",
)
@click.option("--outcome", type=click.Choice(OUTCOMES), help="Only runs with this outcome (open: not finished).")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only runs whose last record is this recent: today, yesterday (local days), an age (30m, 2h, 3d, 1w) "
    "or an ISO date or time (UTC unless it names its offset).",
)
@click.option("--until", metavar="WHEN", help="Only runs whose last record is before WHEN (as --since takes it).")
@click.option(
    "--reason", type=click.Choice(REASON_CODES), metavar="CODE", help="Only runs with a replan for this reason code."
)
@click.option("--has-orphans", is_flag=True, help="Only runs holding a late result.")
@click.option("--agent", metavar="NAME", help="Only runs this agent recorded (claude-code, codex, mcp, acp:NAME ...).")
@click.option("--search", metavar="TEXT", help="Only runs whose goal or a step title holds TEXT (any case).")
@click.option(
    "--sort", type=click.Choice(SORTS), default="last_activity", show_default=True, help="Newest, or most, first."
)
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="At most N rows.")
@layout_options
@json_option
def runs(
    where: str | None,
    store: str | None,
    outcome: str | None,
    since: str | None,
    until: str | None,
    reason: str | None,
    has_orphans: bool,
    agent: str | None,
    search: str | None,
    sort: str,
    limit: int | None,
    as_json: bool,
) -> None:
    """List runs, one row each: run id, goal, outcome, plan version, last activity, replans and late results
    (orphans). DIR is a runs folder (default: $PLANTRAIL_HOME/runs, else .plantrail/runs); --store a database.

    What a row says is what the log says: a JSONL log is read from its snapshot when the snapshot checks out
    (else its records are folded; nothing is written), a database run from its summary when the summary is at
    the run's head (else from its rows). A log that is damaged shows what its valid part says, with "damage".

    \b
    JSON: [{"run", "goal", "outcome", "plan_version", "last_activity", "replans", "orphans", "last_seq",
      "location", "reasons", "damage", "agent"}] ("outcome" null while open; "reasons" the count of replans
      per reason code; "damage" null or the code that cut the read short; "agent" the agent that recorded the
      run, read with --agent or --search, else null)

    \b
    Example:
      plantrail runs
      plantrail runs .plantrail/runs --outcome open --has-orphans
      plantrail runs --agent claude-code --search login
      plantrail runs --store postgresql://localhost/plantrail --reason failed_assumption --json
    """
    from plantrail.ledger.runs import list_runs, parse_when
    from plantrail.ledger.vocabulary.errors import error

    if where is not None and store is not None and store != where and not _from_environment(store):
        raise error("USAGE", "give a runs folder or --store, not both")
    found = list_runs(
        where if where is not None else store,
        outcome=outcome,
        since=since,
        until=until,
        reason=reason,
        has_orphans=has_orphans,
        agent=agent,
        search=search,
        sort=sort,
        limit=limit,
        reasons=as_json,  # the table shows no reasons: a folder's rows need not read them
    )

    def human() -> str:
        start = None if since is None else parse_when(since, option="since")
        end = None if until is None else parse_when(until, option="until")
        window = _window(start, end)
        if not found:
            return f"no runs{window}"
        rows = [
            [
                r.run or "?",
                r.goal or "",
                r.outcome or ("open" if r.run is not None else ""),
                f"v{r.plan_version}",
                (r.last_activity or "")[:19].replace("T", " "),
                str(r.replans),
                str(r.orphans),
                r.damage or "",
            ]
            for r in found
        ]
        header = ["RUN", "GOAL", "OUTCOME", "PLAN", "LAST ACTIVITY (UTC)", "REPLANS", "ORPHANS", "DAMAGE"]
        return f"{table(header, rows, texts=(1,))}\n{count_line(len(found), 'run', 'runs')}{window}"

    emit(as_json, [r.as_dict() for r in found], human)


def _utc(stamp: str) -> str:
    """A record timestamp as people read it, the zone named: ``2026-12-03 23:00 UTC``."""
    return f"{stamp[:16].replace('T', ' ')} UTC"


def _window(start: str | None, end: str | None) -> str:
    """What the time filters kept, said after the count: `` with last activity from ... until ...``."""
    if start is None and end is None:
        return ""
    said = [f"from {_utc(start)}"] if start is not None else []
    said += [f"before {_utc(end)}"] if end is not None else []
    return f" with last activity {' and '.join(said)}"


def _from_environment(store: str) -> bool:
    """True when ``store`` came from $PLANTRAIL_STORE (a DIR given on the command line then wins)."""
    import os

    return os.environ.get(STORE_ENV) == store
