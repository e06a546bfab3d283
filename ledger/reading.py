"""Read one run by what names it: the functions of the library's earlier releases, kept for their callers, each
now one method of the run object :func:`plantrail.ledger.stores.opener.as_run` gives (see
:class:`plantrail.ledger.stores.protocol.RunReader`). Nothing in plantrail calls them.

New code opens the run once and asks it everything (``with open_run("run.jsonl") as run: run.versions() …``):
each function here opens the run again for one answer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.stores.postgres_run import DatabaseRun
from plantrail.ledger.stores.targets import is_database_url
from plantrail.ledger.stores.values import ReadResult

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.log import LogReader
    from plantrail.ledger.stores.values import TornTail
    from plantrail.ledger.stores.versions import Versions
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.projections.model import PlanState

__all__ = [
    "DatabaseReader",
    "ReadResult",
    "follow",
    "is_database_url",
    "open_records",
    "read_state",
    "read_versions",
    "rebuild_version",
    "record_at",
    "records_from",
    "replan_audit",
    "run_exists",
    "tail_records",
    "version_diff",
]

Target = str | os.PathLike[str]

#: A database run read like a file's :class:`~plantrail.ledger.stores.jsonl.log.LogReader` (``torn`` is None).
DatabaseReader = DatabaseRun


@contextmanager
def open_records(target: Target) -> Iterator[tuple[LogReader | DatabaseRun, Iterator[Record]]]:
    """The run's checked records, with what reads them: a file's reader or the database run, whose ``torn`` says,
    once the records are exhausted, whether a torn tail followed them."""
    with as_run(target) as run:
        records = run.records()
        reader: Any = getattr(run, "reader", run)  # a file's reader (its progress can be measured), or the run
        yield reader, records


def records_from(target: Target, from_seq: int) -> Iterator[Record]:
    """The run's records from seq ``from_seq`` on."""
    return as_run(target).records(after=from_seq - 1)


def read_state(target: Target, *, use_cache: bool | None = None, stop_at_damage: bool = False) -> ReadResult:
    """The run's current state (:meth:`~plantrail.ledger.stores.protocol.RunReader.current`)."""
    with as_run(target) as run:
        return run.current(use_cache=use_cache, stop_at_damage=stop_at_damage)


def record_at(target: Target, seq: int) -> Record:
    """Record ``seq`` of the run, checked; UNKNOWN_SEQ when the run does not reach it."""
    with as_run(target) as run:
        return run.record_at(seq)


def tail_records(
    target: Target, count: int, keep: Callable[[Record], bool], *, stop_below: int = 0
) -> tuple[list[Record], TornTail | None]:
    """The last ``count`` records ``keep`` accepts, never below seq ``stop_below``, and the torn tail after them."""
    with as_run(target) as run:
        return run.tail(count, keep, stop_below=stop_below)


def follow(
    target: Target, *, after: int = -1, poll: float = 0.2, stop: Callable[[], bool] | None = None
) -> Iterator[list[Record]]:
    """The run's records after seq ``after`` as they are appended, a batch at a time, until ``stop()``."""
    return as_run(target).follow(after=after, poll=poll, stop=stop)


def read_versions(target: Target) -> Versions:
    """The run's plan versions."""
    with as_run(target) as run:
        return run.versions()


def rebuild_version(target: Target, version: int) -> tuple[PlanState, int | None, TornTail | None]:
    """Version ``version`` as it stood when superseded (or now), the seq that superseded it, and the torn tail."""
    with as_run(target) as run:
        return run.version_state(version)


def version_diff(target: Target, old: int, new: int) -> tuple[dict[str, Any], PlanState]:
    """``plantrail diff`` of versions ``old`` and ``new``, and the state at the end of ``new``."""
    from plantrail.ledger.stores.versions import diff_of
    from plantrail.ledger.vocabulary.errors import error

    if old >= new:
        raise error("USAGE", f"diff compares an earlier version with a later one, not v{old} with v{new}")
    with as_run(target) as run:
        return diff_of(run.versions(), old, new)


def replan_audit(target: Target, version: int | None = None) -> tuple[dict[str, Any], TornTail | None]:
    """``plantrail why`` of the replan that created ``version``, and the torn tail the run ends on."""
    from plantrail.ledger.stores.versions import why_of

    with as_run(target) as run:
        found = run.versions()
        return why_of(found, version, run.record_at, run.current().state), found.torn


def run_exists(target: Target) -> bool:
    """True when the run exists."""
    return as_run(target).exists()
