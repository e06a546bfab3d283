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
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from plantrail.ledger.stores.targets import is_database_url
from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.events import REASON_CODES
from plantrail.projections.runs import RunRow, summarise

__all__ = ["OUTCOMES", "SORTS", "RunRow", "list_runs", "parse_since", "summarise"]

#: The outcomes a row can have; ``open`` is a run that has not finished.
OUTCOMES: Final = ("open", "complete", "paused", "failed", "cancelled")
#: What rows can be sorted by: newest activity first, the most first for counts, by id for ``run``.
SORTS: Final = ("last_activity", "run", "plan_version", "replans", "orphans")


def parse_since(text: str) -> str:
    """A ``--since`` date or time (ISO 8601: ``2026-11-29``, ``2026-11-29T21:00``, with an offset or ``Z``; UTC
    when it has none) as a record timestamp, so that rows compare by text; USAGE when it is neither."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise error("USAGE", f"since {text!r}: not an ISO 8601 date or time (e.g. 2026-11-29T21:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --------------------------------------------------------------------------- a folder of JSONL logs


def _file_reasons(path: str, version: int) -> tuple[str, ...]:
    """The reason codes of every replan of a JSONL log (read only when a filter asks for them)."""
    if version <= 1:
        return ()
    from plantrail.ledger.reading import read_versions

    found = read_versions(path)
    return tuple(e.info.reason for e in found.entries(2, found.total) if e.info.reason is not None)


def _covered_row(path: str) -> RunRow | None:
    """The row from the log's snapshot when it checks out and covers the whole file (its last line, which the
    check reads, gives the time), else None."""
    import stat

    from plantrail.ledger.stores.jsonl.cache import load_summary
    from plantrail.ledger.stores.jsonl.current import use_cache_default

    if not use_cache_default():
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None  # the slow path reports the error with its proper code
    try:
        st = os.fstat(fd)
        found = load_summary(path, fd) if stat.S_ISREG(st.st_mode) else None
    finally:
        os.close(fd)
    if found is None or found.position.offset != st.st_size:
        return None
    return RunRow(
        run=found.run,
        goal=found.goal,
        outcome=found.outcome,
        plan_version=found.version,
        last_activity=found.last_ts,
        replans=max(found.version - 1, 0),
        orphans=found.orphans,
        last_seq=found.position.seq,
        location=path,
    )


def _file_row(path: str, with_reasons: bool) -> RunRow:
    from plantrail.ledger.reading import read_state, tail_records

    covered = _covered_row(path)
    if covered is not None:
        if not with_reasons or covered.replans == 0:
            return covered
        return covered._replace(reasons=_file_reasons(path, covered.plan_version))
    result = read_state(path, stop_at_damage=True)
    state = result.state
    damage = result.damage.code if result.damage is not None else ("TORN_TAIL" if result.torn is not None else None)
    last_activity = None
    if damage is None and state.last_seq >= 0:
        last, _ = tail_records(path, 1, lambda _: True)
        last_activity = last[-1].ts if last else None
    reasons = _file_reasons(path, state.version) if with_reasons and damage is None else ()
    return summarise(state, last_activity, reasons, path, damage)


def _unreadable(path: str, exc: PlantrailError) -> RunRow:
    """The row of a file the folder holds that cannot be read as a log at all."""
    return RunRow(None, None, None, 0, None, 0, 0, -1, path, (), exc.code)


def _folder_rows(folder: Path, with_reasons: bool) -> list[RunRow]:
    if not folder.is_dir():
        raise error("FOLDER_NOT_FOUND", f"runs folder {folder} does not exist", path=str(folder))
    rows = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if not entry.name.endswith(".jsonl") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            rows.append(_file_row(entry.path, with_reasons))
        except PlantrailError as exc:
            rows.append(_unreadable(entry.path, exc))
    return rows


# --------------------------------------------------------------------------- choosing rows


def _keep(outcome: str | None, since: str | None, reason: str | None, has_orphans: bool) -> Callable[[RunRow], bool]:
    def keeps(row: RunRow) -> bool:
        if outcome is not None and (row.run is None or (row.outcome or "open") != outcome):
            return False
        if since is not None and (row.last_activity is None or row.last_activity < since):
            return False
        if has_orphans and row.orphans == 0:
            return False
        return reason is None or reason in row.reasons

    return keeps


def _ordered(rows: Iterable[RunRow], sort: str) -> list[RunRow]:
    by_id = sorted(rows, key=lambda r: (r.run or "", r.location))
    if sort == "run":
        return by_id
    if sort == "last_activity":
        return sorted(by_id, key=lambda r: r.last_activity or "", reverse=True)
    return sorted(by_id, key=lambda r: getattr(r, sort), reverse=True)


def list_runs(
    where: str | os.PathLike[str] | None = None,
    *,
    outcome: str | None = None,
    since: str | None = None,
    reason: str | None = None,
    has_orphans: bool = False,
    sort: str = "last_activity",
    limit: int | None = None,
    reasons: bool = True,
) -> list[RunRow]:
    """The runs of a runs folder (default: :func:`plantrail.ledger.stores.locations.runs_folder`) or a database
    (``postgresql://…/db``), one row each, those the filters keep, sorted (newest activity first by default)
    and cut to ``limit``.

    ``outcome`` is one of :data:`OUTCOMES`, ``since`` a date or time (see :func:`parse_since`): rows whose last
    record is at least that recent; ``reason`` a replan reason code the run's replans include;
    ``has_orphans`` keeps runs holding a late result. Every row listed has its replan reasons (a folder's
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
    cutoff = None if since is None else parse_since(since)
    name = None if where is None else os.fspath(where)
    if name is not None and is_database_url(name):
        from plantrail.ledger.stores.postgres import run_summaries

        rows = run_summaries(name)
    else:
        from plantrail.ledger.stores.locations import runs_folder

        rows = _folder_rows(runs_folder(name), with_reasons=reason is not None)
    kept = [row for row in rows if _keep(outcome, cutoff, reason, has_orphans)(row)]
    ordered = _ordered(kept, sort)
    listed = ordered if limit is None else ordered[:limit]
    if reasons and reason is None and not (name is not None and is_database_url(name)):
        listed = [_with_reasons(row) for row in listed]  # read for the rows listed only, after the limit
    return listed


def _with_reasons(row: RunRow) -> RunRow:
    """A folder's row with its replan reasons read (a damaged or unreadable log's stay unread: none)."""
    if row.replans == 0 or row.damage is not None:
        return row
    return row._replace(reasons=_file_reasons(row.location, row.plan_version))
