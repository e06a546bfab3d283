"""Many runs at once: one summary row per run of a runs folder or a database, filtered and sorted.

A row says what the run's log says now: its goal, outcome, active plan version, when its last record was
written, how many replans it had and how many late results it holds. A JSONL log is read through its
snapshot when the snapshot checks out (a stale or missing one means the records after it, or the whole log,
are folded; nothing is written); a database answers from its per-run summaries, each checked against the
run's head seq, and a stale or missing summary is recomputed from the run's rows
(:func:`plantrail.ledger.stores.postgres.run_summaries`).

    from plantrail.ledger.runs import list_runs

    for row in list_runs(".plantrail/runs", outcome="open", has_orphans=True):
        print(row.run, row.plan_version, row.orphans)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from plantrail.ledger.stores.opener import open_store
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import REASON_CODES
from plantrail.projections.runs import RunRow, agent_of, matches, summarise

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.run import FolderStore
    from plantrail.ledger.stores.postgres_run import DatabaseStore

__all__ = ["OUTCOMES", "SORTS", "RunRow", "list_runs", "parse_when", "summarise", "with_details"]

#: The outcomes a row can have; ``open`` is a run that has not finished.
OUTCOMES: Final = ("open", "complete", "paused", "failed", "cancelled")
#: What rows can be sorted by: newest activity first, the most first for counts, by id for ``run``.
SORTS: Final = ("last_activity", "run", "plan_version", "replans", "orphans")


_UNITS: Final = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DAYS: Final = {"today": 0, "yesterday": 1}


def parse_when(text: str, *, now: datetime | None = None, option: str = "since") -> str:
    """A ``--since`` or ``--until`` moment as a record timestamp (UTC, so that rows compare by text): ``today``
    or ``yesterday`` (the start of that day in the local time zone), an age (``30m``, ``2h``, ``3d``, ``1w``
    before ``now``), or ISO 8601 (``2026-11-29``, ``2026-11-29T21:00``, with an offset or ``Z``; UTC when it has
    none). ``now`` is an aware time (default: the clock, in the local time zone). USAGE names the option when
    ``text`` is none of these."""
    word = text.strip().lower()
    if now is None:
        from plantrail.ledger.vocabulary.clock import utc_now

        now = datetime.fromisoformat(utc_now().replace("Z", "+00:00")).astimezone()
    if word in _DAYS:
        day = now.astimezone().date() - timedelta(days=_DAYS[word])
        moment = datetime(day.year, day.month, day.day).astimezone()  # local midnight, as the zone has it that day
    elif len(word) > 1 and word[-1] in _UNITS and word[:-1].isdigit() and word[:-1].isascii():
        moment = now - timedelta(seconds=int(word[:-1]) * _UNITS[word[-1]])
    else:
        try:
            moment = datetime.fromisoformat(word.upper().replace("Z", "+00:00"))
        except ValueError:
            raise error(
                "USAGE",
                f"{option} {text!r}: not today, yesterday, an age (30m, 2h, 3d, 1w) or an ISO 8601 date or time "
                "(e.g. 2026-11-29T21:00Z)",
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --------------------------------------------------------------------------- choosing rows


def _keep(
    outcome: str | None, since: str | None, until: str | None, reason: str | None, has_orphans: bool
) -> Callable[[RunRow], bool]:
    def keeps(row: RunRow) -> bool:
        if outcome is not None and (row.run is None or (row.outcome or "open") != outcome):
            return False
        if since is not None and (row.last_activity is None or row.last_activity < since):
            return False
        if until is not None and (row.last_activity is None or row.last_activity >= until):
            return False
        if has_orphans and row.orphans == 0:
            return False
        return reason is None or reason in row.reasons

    return keeps


def with_details(row: RunRow, *, titles: bool = True) -> RunRow:
    """``row`` with its details read from its run: the agent that recorded it (its first plan event's source,
    :func:`~plantrail.projections.runs.agent_of`) and, with ``titles``, its active plan's step titles (they need
    the run's current state). A run that cannot be read keeps its row without them (its ``damage`` or the
    listing says why)."""
    from plantrail.ledger.stores.opener import as_run
    from plantrail.ledger.vocabulary.errors import PlantrailError

    if row.run is None:
        return row
    try:
        with as_run(row.location) as run:
            agent = None
            for record in run.records(upto=min(row.last_seq, 64)):
                if record.type.startswith("plan."):
                    agent = agent_of(record.source)
                    break
            plan = run.current(stop_at_damage=True).state.plan if titles else None
    except PlantrailError:
        return row
    return row._replace(agent=agent, titles=() if plan is None else tuple(step.title for step in plan.steps))


def _ordered(rows: Iterable[RunRow], sort: str) -> list[RunRow]:
    by_id = sorted(rows, key=lambda r: (r.run or "", r.location))
    if sort == "run":
        return by_id
    if sort == "last_activity":
        return sorted(by_id, key=lambda r: r.last_activity or "", reverse=True)
    return sorted(by_id, key=lambda r: getattr(r, sort), reverse=True)


def list_runs(
    where: str | os.PathLike[str] | FolderStore | DatabaseStore | None = None,
    *,
    outcome: str | None = None,
    since: str | None = None,
    until: str | None = None,
    reason: str | None = None,
    has_orphans: bool = False,
    agent: str | None = None,
    search: str | None = None,
    sort: str = "last_activity",
    limit: int | None = None,
    offset: int = 0,
    reasons: bool = True,
    details: bool = False,
) -> list[RunRow]:
    """The runs of a runs folder (default: :func:`plantrail.ledger.stores.locations.runs_folder`) or a database
    (``postgresql://…/db``), or of a store already open, one row each, those the filters keep, sorted (newest
    activity first by default) and cut to ``limit``.

    ``outcome`` is one of :data:`OUTCOMES`, ``since`` a moment (see :func:`parse_when`): rows whose last
    record is at least that recent; ``until`` one too, after ``since``: rows whose last record is before it;
    ``reason`` a replan reason code the run's replans include; ``has_orphans`` keeps runs holding a late result;
    ``agent`` the runs that dialect recorded (``claude-code``, ``codex``, ``mcp``, ``acp:<agent>`` …, see
    :func:`~plantrail.projections.runs.agent_of`); ``search`` the runs whose goal or one of whose step titles
    holds that text (case-insensitive). ``offset`` skips that many rows before the limit (a page of a listing).
    Every row listed has its replan reasons (a folder's
    rows read them after the limit, unless the ``reason`` filter needed them first); ``reasons=False`` spares
    a folder's rows that read when the caller shows no reasons (their ``reasons`` are then empty unless a
    ``reason`` filter read them). USAGE names a filter that is malformed.
    """
    if outcome is not None and outcome not in OUTCOMES:
        raise error("USAGE", f"outcome {outcome!r} is not one of {', '.join(OUTCOMES)}")
    if reason is not None and reason not in REASON_CODES:
        raise error("UNKNOWN_REASON_CODE", f"replan reason code {reason!r} is not one of {', '.join(REASON_CODES)}")
    if sort not in SORTS:
        raise error("USAGE", f"sort key {sort!r} is not one of {', '.join(SORTS)}")
    if limit is not None and limit < 1:
        raise error("USAGE", f"a limit of {limit} rows: it must be at least 1")
    if offset < 0:
        raise error("USAGE", f"an offset of {offset} rows: it must be at least 0")
    if agent is not None and not agent.strip():
        raise error("USAGE", "an agent filter must name an agent (claude-code, codex, mcp, acp:NAME ...)")
    if search is not None and not search.strip():
        raise error("USAGE", "a search must hold some text")
    cutoff = None if since is None else parse_when(since, option="since")
    end = None if until is None else parse_when(until, option="until")
    if cutoff is not None and end is not None and end <= cutoff:
        raise error(
            "USAGE",
            f"the window ends ({until}: {end[:16].replace('T', ' ')} UTC) before it starts ({since}: "
            f"{cutoff[:16].replace('T', ' ')} UTC)",
        )
    store = open_store(where) if where is None or isinstance(where, str | os.PathLike) else where
    rows = store.summaries(reasons=reason is not None)
    kept = [row for row in rows if _keep(outcome, cutoff, end, reason, has_orphans)(row)]
    ordered = _ordered(kept, sort)
    detailed = agent is not None or search is not None
    if detailed:  # the details are read only for the rows the cheap filters kept
        ordered = [
            row
            for row in map(with_details, ordered)
            if (agent is None or row.agent == agent) and (search is None or matches(row, search.strip()))
        ]
    listed = ordered[offset:] if limit is None else ordered[offset : offset + limit]
    if details and not detailed:
        listed = [with_details(row, titles=False) for row in listed]
    if reasons and reason is None:
        listed = [store.with_reasons(row) for row in listed]  # read for the rows listed only, after the limit
    return listed
