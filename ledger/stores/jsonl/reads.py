"""Reads of a JSONL log's plan versions that start from its cache when the cache checks out (see
:mod:`plantrail.ledger.stores.jsonl.cache`): one version rebuilt, and the versions, diffs and replans the audit
commands show. The current state is :mod:`plantrail.ledger.stores.jsonl.current`'s (re-exported here).

The answers are the log's own: a version or history index only saves folding the records it covers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

from plantrail.ledger.stores.jsonl.cache import (
    HistoryEntry,
    HistoryIndex,
    HistoryWriter,
    Position,
    first_hash,
    history_lock,
    index_entry,
    load_history,
    read_history_entries,
    read_version_start,
    version_start,
    write_version_index,
)
from plantrail.ledger.stores.jsonl.current import read_state, superseded_version, use_cache_default
from plantrail.ledger.stores.jsonl.log import LogReader, opened
from plantrail.ledger.stores.values import ReadResult, TornTail
from plantrail.ledger.stores.versions import (
    VersionEntry,
    Versions,
    diff_of,
    listed_versions,
    versions_in,
    why_of,
)
from plantrail.ledger.vocabulary.errors import error
from plantrail.projections.history import (
    fold_span,
    replay_version,
)
from plantrail.projections.model import PlanState, VersionInfo
from plantrail.projections.state import initial
from plantrail.projections.state_json import decode_state, decode_version, encode_state, encode_version

__all__ = [
    "INDEX_FROM_BYTES",
    "ReadResult",
    "VersionEntry",
    "Versions",
    "build_version_index",
    "diff_of",
    "is_fork",
    "listed_versions",
    "read_state",
    "read_versions",
    "rebuild_version",
    "replan_audit",
    "use_cache_default",
    "version_diff",
    "versions_in",
    "why_of",
]


def build_version_index(log_path: str) -> PlanState:
    """Fold the whole log once, version by version (as :func:`rebuild_version` does without the index), and
    write its version index: each version's state just after its adopting record and, once superseded, as
    it stood then. Return the final state (the cache is optional)."""
    entries: list[bytes] = []
    blobs: list[bytes] = []
    at = 0
    with LogReader(log_path) as reader:
        records = iter(reader.records())
        state = initial()
        start: tuple[PlanState, Position] | None = None  # the current version's start, once it has one
        while True:
            span, after = fold_span(records, state)
            if start is not None:
                entry, blob = index_entry(*start, at, None if after is None else span.state)
                entries.append(entry)
                blobs.append(blob)
                at += len(blob)
            if after is None:
                break
            start, state = (after, reader.position), after  # just after the adopting record fold_span applied
        header = first_hash(reader.fd)
    if header is not None and reader.torn is None:
        write_version_index(log_path, header, entries, blobs, span.state)
    return span.state


#: Logs at least this large get a version index the first time a version is rebuilt.
INDEX_FROM_BYTES: Final = 1 << 20


def rebuild_version(
    log_path: str, version: int, *, use_cache: bool | None = None, reader: LogReader | None = None
) -> tuple[PlanState, int | None, TornTail | None]:
    """Version ``version`` as it stood when superseded (or now, for the active one), the seq of the record that
    superseded it, and the torn tail the read ended on. With the version index this folds only the version's
    own records; without one it folds from the start (and, for a large log, builds the index for next time).
    ``reader`` is the log's reader when the caller holds one open."""
    cached = use_cache_default() if use_cache is None else use_cache
    ended = superseded_version(log_path, version, None if reader is None else reader.fd) if cached else None
    if ended is not None:
        return ended[0], ended[1], None
    with opened(log_path, reader) as reader:
        start = version_start(log_path, reader.fd, version) if cached else None
        big = cached and os.fstat(reader.fd).st_size >= INDEX_FROM_BYTES
        if start is None and big and not is_fork(log_path, reader=reader):
            build_version_index(log_path)
            start = version_start(log_path, reader.fd, version)
        if start is None:
            span = replay_version(reader.records(), version)
        else:
            span, _ = fold_span(iter(reader.records(start=start.position, run=start.state.run)), start.state)
    return span.state, span.superseded_at, reader.torn


# --------------------------------------------------------------------------- the history index


def _versions_from(
    reader: LogReader,
    start: Position | None,
    state: PlanState,
    add: Callable[[VersionEntry, Position, PlanState], None],
    known: VersionInfo | None = None,
) -> tuple[PlanState, bool]:
    """Fold the log from ``start`` (the state there: ``state``) to its end, reporting every version adopted on the
    way with the position and state just after its adopting record (:func:`versions_in`)."""
    stream = reader.records(start=start, run=state.run if start is not None else None)
    return versions_in(stream, state, add, where=lambda: reader.position, known=known)


def _in_memory(log_path: str, use_cache: bool, reader: LogReader | None = None) -> Versions:
    """Every version from one fold of the whole log (no history index), with the state at each version's end
    (states share what they have in common) and at the end of the log."""
    found: list[VersionEntry] = []
    endings: dict[int, PlanState] = {}
    with opened(log_path, reader) as reader:
        stream = reader.records()
        final, _ = versions_in(stream, initial(), lambda entry, _, __: found.append(entry), at_end=endings.__setitem__)
        torn = reader.torn

    def ending(version: int) -> PlanState:
        if version in endings:
            return endings[version]
        return rebuild_version(log_path, version, use_cache=use_cache)[0]

    return listed_versions(found, final.run, torn, ending)._replace(final=final)


class _Unreadable(Exception):
    """The history index did not hold what its sealed meta vouches for (changed or damaged since it was loaded)."""


def _entries_of(log_path: str, index: HistoryIndex, first: int, last: int) -> list[HistoryEntry]:
    found = [] if last < first else read_history_entries(log_path, index, first, last)
    if found is None:
        raise _Unreadable
    return found


def _indexed(log_path: str, index: HistoryIndex, torn: TornTail | None, reader: LogReader | None = None) -> Versions:
    """The versions the history index holds; a version's end is folded from its stored start (its own records).
    An index that turns out not to hold what it vouched for is dropped for a fold of the log (a cache is a hint:
    it never changes an answer, nor turns one into an error)."""
    fallback: list[Versions] = []

    def folded() -> Versions:
        if not fallback:
            fallback.append(_in_memory(log_path, False, reader))
        return fallback[0]

    def entries(first: int, last: int) -> list[VersionEntry]:
        try:
            return [VersionEntry(*decode_version(e.summary)) for e in _entries_of(log_path, index, first, last)]
        except _Unreadable:
            return folded().entries(first, last)

    def ending(version: int) -> PlanState:
        try:
            (entry,) = _entries_of(log_path, index, version, version)
        except _Unreadable:
            return folded().ending(version)
        with opened(log_path, reader) as log:
            start = read_version_start(log_path, log.fd, entry)
            if start is None:
                return folded().ending(version)
            state = decode_state(start)
            span, _ = fold_span(iter(log.records(start=entry.start, run=state.run)), state)
        return span.state

    return Versions(index.run, index.versions, torn, entries, ending)


def _resumed(log_path: str, fd: int, index: HistoryIndex) -> tuple[Position, PlanState, VersionInfo] | None:
    """Where an update of ``index`` starts folding: the active version's start, the state there, and the version
    as its entry describes it."""
    if index.versions == 0:
        return None
    entries = read_history_entries(log_path, index, index.versions, index.versions)
    start = None if entries is None else read_version_start(log_path, fd, entries[0])
    if entries is None or start is None:
        return None
    return entries[0].start, decode_state(start), decode_version(entries[0].summary)[0]


def _updated_history(log_path: str, reader: LogReader | None = None) -> tuple[HistoryIndex | None, TornTail | None]:
    """The log's history index, extended to the end of the log (or built, the first time) when it does not cover
    it; None when it cannot be written (the caller folds the log instead)."""
    with opened(log_path, reader) as reader:
        index = load_history(log_path, reader.fd)
        size = os.fstat(reader.fd).st_size
        if index is not None and index.covered.offset == size:
            return index, None
        header = first_hash(reader.fd)
        if header is None or (index is None and (size < INDEX_FROM_BYTES or is_fork(log_path, reader=reader))):
            return None, None  # a small log folds faster than an index is written
        with history_lock(log_path):
            index = load_history(log_path, reader.fd)  # another reader may have updated it meanwhile
            if index is not None and index.covered.offset == os.fstat(reader.fd).st_size:
                return index, None
            resumed = None if index is None else _resumed(log_path, reader.fd, index)
            if not _write_history(log_path, reader, index, resumed, header) and index is not None:
                # the active version's entry no longer says what the version holds (extended since): start over
                with LogReader(log_path) as again:
                    _write_history(log_path, again, None, None, header)
        return load_history(log_path, reader.fd), reader.torn


def _write_history(
    log_path: str,
    reader: LogReader,
    index: HistoryIndex | None,
    resumed: tuple[Position, PlanState, VersionInfo] | None,
    header: str,
) -> bool:
    """Extend ``index`` from ``resumed`` (the active version's start; from scratch without either) to the end of
    the log; False, with nothing committed, when the version resumed in was extended in place since its entry
    was written (that entry is stale)."""
    if resumed is None:
        index, start, state, known = None, None, initial(), None
    else:
        start, state, known = resumed
    with HistoryWriter(log_path, index) as writer:

        def add(entry: VersionEntry, where: Position, after: PlanState) -> None:
            summary = encode_version(entry.info, entry.ended)
            writer.add(entry.info.version, where, summary, encode_state(after._replace(orphans=())))

        final, stale = _versions_from(reader, start, state, add, known)
        if stale and index is not None:
            return False
        unchanged = index is not None and writer.versions == index.versions and reader.position == index.covered
        if writer.versions and final.run is not None and not unchanged:
            writer.commit(header, final.run, reader.position)
    return True


def read_versions(log_path: str, *, use_cache: bool | None = None, reader: LogReader | None = None) -> Versions:
    """A log's plan versions, from its history index (brought up to date first; built the first time for a log
    of at least :data:`INDEX_FROM_BYTES`) or, without the cache, for a smaller log, or when the index cannot be
    written, from a fold of the whole log. Either way the entries are the fold's. ``reader`` is the log's reader
    when the caller holds one open."""
    cached = use_cache_default() if use_cache is None else use_cache
    if cached:
        index, torn = _updated_history(log_path, reader)
        if index is not None:
            return _indexed(log_path, index, torn, reader)
    return _in_memory(log_path, cached, reader)


def is_fork(log_path: str, *, reader: LogReader | None = None) -> bool:
    """Whether the log is a forked run (its record at seq 1 is ``run.forked``): its versions start at the one
    it carries, so it gets no version index (which numbers versions from 1) and is folded instead."""
    with opened(log_path, reader) as reader:
        for record in reader.records():
            if record.seq >= 1:
                return record.type == "run.forked"
    return False


def version_diff(
    log_path: str, old: int, new: int, *, use_cache: bool | None = None, reader: LogReader | None = None
) -> tuple[dict[str, Any], PlanState]:
    """``plantrail diff``: :func:`projections.history.diff_view` of versions ``old`` and ``new``, from the history
    index (each version's adoption and its criteria's verdict seqs when it ended) and the state at the end of
    ``old`` (folded from its start, which the index holds); and the state at the end of ``new``."""
    if old >= new:
        raise error("USAGE", f"diff compares an earlier version with a later one, not v{old} with v{new}")
    return diff_of(read_versions(log_path, use_cache=use_cache, reader=reader), old, new)


def replan_audit(
    log_path: str, version: int | None = None, *, use_cache: bool | None = None, reader: LogReader | None = None
) -> tuple[dict[str, Any], TornTail | None]:
    """``plantrail why``: :func:`projections.history.why_view` of the replan that created ``version`` (default:
    the latest), from the history index (the two versions, the end of the replaced one folded from its start),
    the quoted records read by seq, and the late results of the log's current state; and the torn tail the log
    ends on."""
    from plantrail.ledger.stores.jsonl.seek import record_at

    with opened(log_path, reader) as reader:
        found = read_versions(log_path, use_cache=use_cache, reader=reader)
        current = (
            found.final if found.final is not None else read_state(log_path, use_cache=use_cache, reader=reader).state
        )
        return why_of(found, version, lambda seq: record_at(log_path, seq, reader=reader), current), found.torn
