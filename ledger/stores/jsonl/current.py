"""The current state of a JSONL log: from its snapshot when the snapshot checks out, plus the records after it.

This is the read behind ``status``, ``next`` and every command that only needs where the run stands, so it
imports the store and the reducer only when the snapshot does not cover the whole log: a covered read
decodes one snapshot and nothing else. A read never writes the cache (only writers leave snapshots).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from plantrail.ledger.stores.jsonl.cache import Snapshot, load_snapshot, superseded_state
from plantrail.ledger.stores.values import ReadResult, until_damage
from plantrail.ledger.vocabulary.errors import LogDamaged

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.log import LogReader
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.projections.model import PlanState

__all__ = ["ReadResult", "read_state", "superseded_version", "use_cache_default"]


def _light_fd(log_path: str, fd: int | None) -> int | None:
    """``fd`` when given (a run's own), else the log opened read-only without the store (None when it cannot
    be: the slow path reports the error with its proper code)."""
    if fd is not None:
        return fd
    try:
        return os.open(log_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None


def _covering_snapshot(log_path: str, given: int | None = None) -> Snapshot | None:
    """The snapshot when it checks out and covers the whole file: then nothing else needs reading (or importing)."""
    fd = _light_fd(log_path, given)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        snapshot = load_snapshot(log_path, fd)
        covers = snapshot is not None and snapshot.position.offset == st.st_size
    finally:
        if given is None:
            os.close(fd)
    return snapshot if covers else None


def use_cache_default() -> bool:
    """Snapshots are used unless ``PLANTRAIL_NO_CACHE`` is set to a non-empty value."""
    return not os.environ.get("PLANTRAIL_NO_CACHE")


def superseded_version(log_path: str, version: int, given: int | None = None) -> tuple[PlanState, int] | None:
    """A superseded version as it stood when superseded and the seq that superseded it, from the version index
    alone (:func:`~plantrail.ledger.stores.jsonl.cache.superseded_state`), without importing the store or the
    reducer; None when the index cannot answer (the active version, no index, anything not checking out). ``given``
    is the log's open descriptor, when the caller holds one."""
    fd = _light_fd(log_path, given)
    if fd is None:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return superseded_state(log_path, fd, version)
    finally:
        if given is None:
            os.close(fd)


def read_state(
    log_path: str,
    *,
    use_cache: bool | None = None,
    stop_at_damage: bool = False,
    reader: LogReader | None = None,
    fd: int | None = None,
    open_reader: Callable[[], LogReader] | None = None,
) -> ReadResult:
    """The current state of a log, from its snapshot plus the records after it when the snapshot checks out.

    A read never writes the cache (only writers leave snapshots). With ``stop_at_damage`` a damaged line ends
    the read instead of raising: the state is that of the valid part, and ``damage`` says what stopped it.
    ``reader`` is the log's reader when the caller holds one open (a run's own); else ``fd`` is the log's open
    descriptor for the snapshot's check and ``open_reader`` gives the reader when the records must be read.
    """
    cached = use_cache_default() if use_cache is None else use_cache
    if cached:
        current = _covering_snapshot(log_path, reader.fd if reader is not None else fd)
        if current is not None:
            return ReadResult(current.state, None, None, current.position.seq)
    if reader is None and open_reader is not None:
        reader = open_reader()
    from plantrail.ledger.stores.jsonl.log import opened
    from plantrail.ledger.stores.jsonl.read_ahead import reading
    from plantrail.projections.state import fold

    damage: list[LogDamaged] = []
    with opened(log_path, reader) as reader:
        snapshot = load_snapshot(reader.path, reader.fd) if cached else None
        start = snapshot.position if snapshot is not None else None
        # a long read is done by a child on another core while this process folds (ledger.stores.jsonl.read_ahead)
        with reading(reader, start, None if snapshot is None else snapshot.state.run) as read:
            records: Iterable[Record] = read.records()
            if stop_at_damage:
                records = until_damage(records, damage)
            state = fold(records, None if snapshot is None else snapshot.state)
    return ReadResult(
        state, read.torn, damage[0] if damage else None, None if snapshot is None else snapshot.position.seq
    )
