"""Reads of a JSONL log that start from its cache when the cache checks out (see :mod:`plantrail.ledger.stores.cache`).

The answers are the log's own: a snapshot or a version index only saves folding the records it covers.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

from plantrail.ledger.errors import LogDamaged
from plantrail.ledger.events import Record
from plantrail.ledger.store import TornTail
from plantrail.ledger.stores.cache import (
    Snapshot,
    first_hash,
    index_entry,
    load_snapshot,
    version_start,
    write_version_index,
)
from plantrail.ledger.stores.jsonl import LogReader
from plantrail.projections.history import fold_span, replay_version
from plantrail.projections.model import PlanState
from plantrail.projections.state import fold

__all__ = [
    "INDEX_FROM_BYTES",
    "ReadResult",
    "build_version_index",
    "read_state",
    "rebuild_version",
    "use_cache_default",
]


class ReadResult(NamedTuple):
    """A log's current state; ``torn`` or ``damage`` say why the read stopped early (the state is the valid
    part's). ``snapshot_seq`` is the seq up to which the answer came from the snapshot: the records up to it
    were not re-read (their framing and chain are checked where the snapshot ends; ``verify`` reads every
    byte). None when every record was read."""

    state: PlanState
    torn: TornTail | None
    damage: LogDamaged | None = None
    snapshot_seq: int | None = None


def _until_damage(records: Iterable[Record], found: list[LogDamaged]) -> Iterator[Record]:
    try:
        yield from records
    except LogDamaged as exc:
        found.append(exc)


def _covering_snapshot(log_path: str) -> Snapshot | None:
    """The snapshot when it checks out and covers the whole file: then nothing else needs reading (or importing)."""
    try:
        fd = os.open(log_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None  # the slow path reports the error with its proper code
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        snapshot = load_snapshot(log_path, fd)
        covers = snapshot is not None and snapshot.position.offset == st.st_size
    finally:
        os.close(fd)
    return snapshot if covers else None


def use_cache_default() -> bool:
    """Snapshots are used unless ``PLANTRAIL_NO_CACHE`` is set to a non-empty value."""
    return not os.environ.get("PLANTRAIL_NO_CACHE")


def read_state(log_path: str, *, use_cache: bool | None = None, stop_at_damage: bool = False) -> ReadResult:
    """The current state of a log, from its snapshot plus the records after it when the snapshot checks out.

    A read never writes the cache (only writers leave snapshots). With ``stop_at_damage`` a damaged line ends
    the read instead of raising: the state is that of the valid part, and ``damage`` says what stopped it.
    """
    cached = use_cache_default() if use_cache is None else use_cache
    if cached:
        current = _covering_snapshot(log_path)
        if current is not None:
            return ReadResult(current.state, None, None, current.position.seq)
    damage: list[LogDamaged] = []
    with LogReader(log_path) as reader:
        snapshot = load_snapshot(reader.path, reader.fd) if cached else None
        start = snapshot.position if snapshot is not None else None
        records: Iterable[Record] = reader.records(start=start, run=None if snapshot is None else snapshot.state.run)
        if stop_at_damage:
            records = _until_damage(records, damage)
        state = fold(records, None if snapshot is None else snapshot.state)
    return ReadResult(
        state, reader.torn, damage[0] if damage else None, None if snapshot is None else snapshot.position.seq
    )


def build_version_index(log_path: str) -> PlanState:
    """Fold the whole log once and write its version index; return the final state (the cache is optional)."""
    entries: list[bytes] = []
    blobs: list[bytes] = []
    at = 0
    with LogReader(log_path) as reader:

        def adopted(state: PlanState) -> None:
            nonlocal at
            # just after the adopting record, which the fold has just applied
            entry, blob = index_entry(state, reader.position, at)
            entries.append(entry)
            blobs.append(blob)
            at += len(blob)

        state = fold(reader.records(), on_adopt=adopted)
        header = first_hash(reader.fd)
    if header is not None and reader.torn is None:
        write_version_index(log_path, header, entries, blobs, state)
    return state


#: Logs at least this large get a version index the first time a version is rebuilt.
INDEX_FROM_BYTES: Final = 1 << 20


def rebuild_version(
    log_path: str, version: int, *, use_cache: bool | None = None
) -> tuple[PlanState, int | None, TornTail | None]:
    """Version ``version`` as it stood when superseded (or now, for the active one), the seq of the record that
    superseded it, and the torn tail the read ended on. With the version index this folds only the version's
    own records; without one it folds from the start (and, for a large log, builds the index for next time)."""
    cached = use_cache_default() if use_cache is None else use_cache
    with LogReader(log_path) as reader:
        start = version_start(log_path, reader.fd, version) if cached else None
        if start is None and cached and os.fstat(reader.fd).st_size >= INDEX_FROM_BYTES:
            build_version_index(log_path)
            start = version_start(log_path, reader.fd, version)
        if start is None:
            span = replay_version(reader.records(), version)
        else:
            span, _ = fold_span(iter(reader.records(start=start.position, run=start.state.run)), start.state)
    return span.state, span.superseded_at, reader.torn
