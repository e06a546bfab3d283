"""Read one run, whichever store holds it: the reads behind every read-only command and the audit views.

A target is a JSONL log's path or a database run's URL (``postgresql://…/db#RUN``). Each function here
answers the same question of either store with the same types, so the reducer, ``verify``, the views and the
front doors never ask which store they read: a JSONL log is read through its own reader and cache
(:mod:`plantrail.ledger.stores.jsonl.current`, :mod:`plantrail.ledger.stores.jsonl.reads`,
:mod:`plantrail.ledger.stores.jsonl.seek`), a database run through :mod:`plantrail.ledger.stores.postgres` by
folding its rows (it keeps no snapshot, and is never torn: a transaction commits whole or not at all).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from plantrail.ledger.stores.jsonl.current import ReadResult
from plantrail.ledger.stores.targets import is_database_url

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.cache import Position
    from plantrail.ledger.stores.jsonl.log import LogReader
    from plantrail.ledger.stores.jsonl.reads import Versions
    from plantrail.ledger.stores.protocol import TornTail
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


class DatabaseReader:
    """What a JSONL :class:`~plantrail.ledger.stores.jsonl.log.LogReader` tells its caller, for a database run:
    its records, checked, and ``torn`` (always None: a database run has no torn tail)."""

    torn: TornTail | None = None

    def __init__(self, url: str, *, from_seq: int = 0) -> None:
        self.url = url
        self._from_seq = from_seq

    def records(self) -> Iterator[Record]:
        """The run's records in order, each checked to follow the one before it."""
        from plantrail.ledger.stores.postgres import read_range

        return read_range(self.url, from_seq=self._from_seq)


@contextmanager
def open_records(target: Target) -> Iterator[tuple[LogReader | DatabaseReader, Iterator[Record]]]:
    """Open a run read-only and stream its checked records; the reader's ``torn`` says, once the records are
    exhausted, whether a torn tail followed them."""
    name = os.fspath(target)
    if is_database_url(name):
        reader = DatabaseReader(name)
        yield reader, reader.records()
        return
    from plantrail.ledger.stores.jsonl.log import LogReader

    with LogReader(name) as log:
        yield log, log.records()


def records_from(target: Target, from_seq: int) -> Iterator[Record]:
    """A database run's records from seq ``from_seq`` on (the JSONL timeline seeks in its file instead)."""
    return DatabaseReader(os.fspath(target), from_seq=from_seq).records()


def read_state(target: Target, *, use_cache: bool | None = None, stop_at_damage: bool = False) -> ReadResult:
    """The run's current state (see :func:`plantrail.ledger.stores.jsonl.current.read_state`): for a JSONL log from its
    snapshot when it checks out; for a database run, the fold of its rows."""
    name = os.fspath(target)
    if not is_database_url(name):
        from plantrail.ledger.stores.jsonl.current import read_state as read_file

        return read_file(name, use_cache=use_cache, stop_at_damage=stop_at_damage)
    from plantrail.ledger.vocabulary.errors import LogDamaged
    from plantrail.projections.state import fold

    damage: list[LogDamaged] = []

    def until_damage(records: Iterator[Record]) -> Iterator[Record]:
        try:
            yield from records
        except LogDamaged as exc:
            if not stop_at_damage:
                raise
            damage.append(exc)

    state = fold(until_damage(DatabaseReader(name).records()))
    return ReadResult(state, None, damage[0] if damage else None, None)


def record_at(target: Target, seq: int) -> Record:
    """Record ``seq`` of the run, checked; UNKNOWN_SEQ when the run does not reach it."""
    name = os.fspath(target)
    if is_database_url(name):
        from plantrail.ledger.stores.postgres import record_at as database_record

        return database_record(name, seq)
    from plantrail.ledger.stores.jsonl.seek import record_at as file_record

    return file_record(name, seq)


def tail_records(
    target: Target, count: int, keep: Callable[[Record], bool], *, stop_below: int = 0
) -> tuple[list[Record], TornTail | None]:
    """The last ``count`` records ``keep`` accepts (in log order), read backwards from the run's end, never below
    seq ``stop_below``; and the torn tail after them (always None for a database run)."""
    name = os.fspath(target)
    if is_database_url(name):
        from plantrail.ledger.stores.postgres import tail_records as database_tail

        return database_tail(name, count, keep, stop_below=stop_below), None
    from plantrail.ledger.stores.jsonl.seek import tail_records as file_tail

    return file_tail(name, count, keep, stop_below=stop_below)


def follow(
    target: Target, *, after: int = -1, poll: float = 0.2, stop: Callable[[], bool] | None = None
) -> Iterator[list[Record]]:
    """The run's records after seq ``after`` as they are appended, a batch at a time, until ``stop()`` is true
    (asked before each wait; never, without it). A JSONL log is watched by its size every ``poll`` seconds (a
    line still being written is waited for); a database run wakes on NOTIFY and looks again every ``poll``
    seconds as the fallback. UNKNOWN_SEQ when the run does not reach ``after``."""
    name = os.fspath(target)
    if is_database_url(name):
        from plantrail.ledger.stores.postgres import follow_run

        return follow_run(name, after=after, poll_s=poll, stop=stop)
    return _follow_file(name, after, poll, stop)


class _Stopped(Exception):
    """The follower's ``stop()`` said to end the wait."""


def _follow_file(path: str, after: int, poll: float, stop: Callable[[], bool] | None) -> Iterator[list[Record]]:
    import time

    from plantrail.ledger.stores.jsonl.log import LogReader
    from plantrail.ledger.stores.jsonl.seek import after_record, follow_records
    from plantrail.ledger.vocabulary.errors import error

    with LogReader(path) as reader:
        start = after_record(reader.fd, after)
    if start is None:
        raise error("UNKNOWN_SEQ", f"seq {after} is not in the log", seq=after)

    def wait(seconds: float) -> None:
        if stop is not None and stop():
            raise _Stopped
        time.sleep(seconds)

    def batches(start: Position) -> Iterator[list[Record]]:
        try:
            for record in follow_records(path, start, poll=poll, sleep=wait):
                yield [record]
        except _Stopped:
            return

    return batches(start)


# --------------------------------------------------------------------------- plan versions


def _folded_versions(url: str) -> Versions:
    """A database run's plan versions, from one fold of its rows (a database run keeps no history index)."""
    from plantrail.ledger.stores.jsonl.reads import VersionEntry, listed_versions, versions_in
    from plantrail.projections.state import initial

    found: list[VersionEntry] = []
    final, _ = versions_in(DatabaseReader(url).records(), initial(), lambda entry, _, __: found.append(entry))

    def ending(version: int) -> PlanState:
        return rebuild_version(url, version)[0]

    return listed_versions(found, final.run, None, ending)


def read_versions(target: Target) -> Versions:
    """The run's plan versions (see :func:`plantrail.ledger.stores.jsonl.reads.read_versions`)."""
    name = os.fspath(target)
    if is_database_url(name):
        return _folded_versions(name)
    from plantrail.ledger.stores.jsonl.reads import read_versions as read_file

    return read_file(name)


def rebuild_version(target: Target, version: int) -> tuple[PlanState, int | None, TornTail | None]:
    """Version ``version`` as it stood when superseded (or now, for the active one), the seq that superseded it,
    and the torn tail the read ended on (see :func:`plantrail.ledger.stores.jsonl.reads.rebuild_version`)."""
    name = os.fspath(target)
    if not is_database_url(name):
        from plantrail.ledger.stores.jsonl.reads import rebuild_version as rebuild_file

        return rebuild_file(name, version)
    from plantrail.projections.history import replay_version

    span = replay_version(DatabaseReader(name).records(), version)
    return span.state, span.superseded_at, None


def version_diff(target: Target, old: int, new: int) -> tuple[dict[str, Any], PlanState]:
    """``plantrail diff`` of versions ``old`` and ``new`` (see
    :func:`plantrail.ledger.stores.jsonl.reads.version_diff`)."""
    from plantrail.ledger.stores.jsonl.reads import diff_of
    from plantrail.ledger.stores.jsonl.reads import version_diff as diff_file

    name = os.fspath(target)
    if not is_database_url(name):
        return diff_file(name, old, new)
    from plantrail.ledger.vocabulary.errors import error

    if old >= new:
        raise error("USAGE", f"diff compares an earlier version with a later one, not v{old} with v{new}")
    return diff_of(_folded_versions(name), old, new)


def replan_audit(target: Target, version: int | None = None) -> tuple[dict[str, Any], TornTail | None]:
    """``plantrail why`` of the replan that created ``version`` (see
    :func:`plantrail.ledger.stores.jsonl.reads.replan_audit`), and the torn tail the run ends on."""
    from plantrail.ledger.stores.jsonl.reads import replan_audit as audit_file
    from plantrail.ledger.stores.jsonl.reads import why_of

    name = os.fspath(target)
    if not is_database_url(name):
        return audit_file(name, version)
    found = _folded_versions(name)
    return why_of(found, version, lambda seq: record_at(name, seq), read_state(name).state), None


def run_exists(target: Target) -> bool:
    """True when the run exists: a file (or anything) at a JSONL path, a database run with its header."""
    name = os.fspath(target)
    if not is_database_url(name):
        return os.path.lexists(name)
    from plantrail.ledger.vocabulary.errors import PlantrailError

    try:
        record_at(name, 0)
    except PlantrailError as exc:
        if exc.code in ("RUN_NOT_FOUND", "UNKNOWN_SEQ"):
            return False
        raise
    return True
