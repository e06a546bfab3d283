"""A run kept in one JSONL file, and a runs folder of them, as the store protocols' objects.

A :class:`FileRun` opens its log on its first read and keeps that one reader (one file descriptor) for every
read after it, until :meth:`FileRun.close`; it also keeps what it folded: the plan versions, and the current
state when a read of the versions folded the whole log. So one question (``why``, ``diff``, ``orphans`` …)
opens the log once and folds it at most once. A run object answers as of its reads: to see records appended
since, open the run again (:meth:`FileRun.follow` always reads on).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Self

from plantrail.ledger.vocabulary.errors import PlantrailError, error

if TYPE_CHECKING:
    import pathlib

    from plantrail.ledger.stores.jsonl.log import JsonlStore, LogReader
    from plantrail.ledger.stores.values import PendingRecord, Quarantined, ReadResult, TornTail
    from plantrail.ledger.stores.versions import Versions
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.ledger.vocabulary.fragments import TornRecord
    from plantrail.projections.model import PlanState
    from plantrail.projections.runs import RunRow

__all__ = ["FileRun", "FolderStore"]


class _Stopped(Exception):
    """A follower's ``stop()`` said to end the wait."""


class FileRun:
    """Run ``location``: a JSONL log's path (with ``links=False``, as a runs folder gives its runs, the log is
    opened for reading and writing without following a symbolic link: NOT_A_FILE)."""

    names_its_id = False  # the header names the run; the file's name only suggests an id

    def __init__(self, location: str | os.PathLike[str], *, links: bool = True) -> None:
        self.location = os.fspath(location)
        #: Whether a symbolic link at ``location`` is followed: not for a run its folder gives by id.
        self.links = links
        self._fd: int | None = None  # the log opened once; the reader reads a duplicate of it
        self._reader: LogReader | None = None
        self._torn: TornTail | None = None
        self._versions: Versions | None = None
        self._current: ReadResult | None = None

    def __repr__(self) -> str:
        return f"FileRun({self.location!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the log (a later read opens it again)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def store(self) -> FolderStore:
        """The folder the log is in."""
        return FolderStore(os.path.dirname(self.location) or ".")

    @property
    def reader(self) -> LogReader:
        """The log's reader, opened on first use and kept (a caller may measure a read's progress through it)."""
        return self._log()

    def _descriptor(self) -> int:
        """The log opened read-only, once (NOT_A_FILE, LOG_NOT_FOUND … as for any read of it)."""
        if self._fd is None:
            from plantrail.ledger.stores.files import open_regular

            self._fd = open_regular(self.location, os.O_RDONLY | self._no_follow())
        return self._fd

    def _no_follow(self) -> int:
        """``O_NOFOLLOW`` for a run that follows no link, after a look that refuses a link in words (an open
        through one fails with ELOOP, which says less)."""
        if self.links:
            return 0
        if os.path.islink(self.location):
            raise error(
                "NOT_A_FILE",
                f"{self.location} is a symbolic link; a run id names only a regular file in its runs folder",
                path=self.location,
            )
        return os.O_NOFOLLOW

    def _log(self) -> LogReader:
        if self._reader is None:
            from plantrail.ledger.stores.jsonl.log import LogReader

            self._reader = LogReader(self.location, fd=os.dup(self._descriptor()))
        return self._reader

    # ----------------------------------------------------------- reading

    def exists(self) -> bool:
        """True when anything is at the path (reading it says what it is)."""
        return os.path.lexists(self.location)

    def header(self) -> Record:
        """The log's header record."""
        return self.record_at(0)

    @property
    def torn(self) -> TornTail | None:
        """The torn tail the last read of :meth:`records` ended on."""
        return self._torn

    def records(self, *, after: int = -1, upto: int | None = None) -> Iterator[Record]:
        """The log's checked records after seq ``after`` (found by its seq; none when the log does not reach it)
        up to seq ``upto``; then :attr:`torn` is known. A read that starts inside a group commit reads the group
        from its begin (its records are checked together) and yields those after ``after``."""
        reader = self._log()
        self._torn = None
        start, run = None, None
        if after >= 0:
            from plantrail.ledger.stores.jsonl.seek import header_run, read_start

            start = read_start(reader.fd, after)
            if start is None:
                return
            run = header_run(reader.fd)
        for record in reader.records(start=start, run=run):
            if record.seq <= after:
                continue
            if upto is not None and record.seq > upto:
                return
            yield record
        self._torn = reader.torn

    def record_at(self, seq: int) -> Record:
        """Record ``seq``, found by its seq and checked; UNKNOWN_SEQ when the log does not reach it."""
        from plantrail.ledger.stores.jsonl.seek import record_at

        return record_at(self.location, seq, reader=self._log())

    def payload(self, digest: str) -> bytes:
        """The bytes of payload ``digest`` from the log's payload folder, checked against the name
        (PAYLOAD_MISSING, PAYLOAD_ALTERED; see :mod:`plantrail.ledger.stores.jsonl.blobs`)."""
        from plantrail.ledger.stores.jsonl.blobs import read_payload

        return read_payload(self.location, digest)

    def salted_payload(self, digest: str) -> tuple[bytes, bytes]:
        """The salt and the bytes of payload ``digest`` from the log's payload folder, checked against the name."""
        from plantrail.ledger.stores.jsonl.blobs import read_salted

        return read_salted(self.location, digest)

    def payload_names(self) -> list[str]:
        """The names of the payloads the log's payload folder holds, sorted."""
        from plantrail.ledger.stores.jsonl.blobs import payload_names

        return payload_names(self.location)

    def tail(
        self, count: int, keep: Callable[[Record], bool], *, stop_below: int = 0
    ) -> tuple[list[Record], TornTail | None]:
        """The last ``count`` records ``keep`` accepts, read backwards from the end, and the torn tail after them."""
        from plantrail.ledger.stores.jsonl.seek import tail_records

        return tail_records(self.location, count, keep, stop_below=stop_below, reader=self._log())

    def follow(
        self,
        *,
        after: int = -1,
        poll: float = 0.2,
        stop: Callable[[], bool] | None = None,
        head: str | None = None,
    ) -> Iterator[list[Record]]:
        """The records after seq ``after`` as they are appended, a batch per read: the file is watched by its size,
        its times and which file is at the path every ``poll`` seconds (a line still being written, or a group
        commit without its end, is waited for); UNKNOWN_SEQ when the log does not reach ``after``. A repair is
        read on from where the follower stands; when a record given is gone (the file cut back or replaced),
        a :class:`~plantrail.ledger.stores.values.Rewound` batch says so and the follower starts over from the
        log's first record (see :mod:`plantrail.ledger.stores.jsonl.follow`). ``head`` is the hash the caller
        read record ``after`` with: when the log holds another record there (or none), that is said the same way."""
        import time

        from plantrail.ledger.vocabulary.durations import poll_seconds

        poll = poll_seconds(poll)
        from plantrail.ledger.stores.jsonl.cache import Position
        from plantrail.ledger.stores.jsonl.follow import follow_log
        from plantrail.ledger.stores.jsonl.seek import header_run, read_start
        from plantrail.ledger.vocabulary.errors import error

        reader = self._log()
        fd = reader.fd
        # From where this run's last read ended, when it ended at ``after``: the follower checks that the log still
        # holds that record there, so a change between the read and the follow is said, not missed.
        start = reader.position if reader.position.seq == after >= 0 else read_start(fd, after)
        if head is not None and after >= 0 and _hash_at(fd, after) != head:
            start = Position(0, after, head, 1)  # not what the caller read: the follower says so first
        if start is None:
            raise error("UNKNOWN_SEQ", f"seq {after} is not in the log", seq=after)
        run = header_run(fd) if start.seq >= 0 else None

        def wait(seconds: float) -> None:
            if stop is not None and stop():
                raise _Stopped
            time.sleep(seconds)

        def batches() -> Iterator[list[Record]]:
            own = os.dup(self._log().fd)  # the follower's own descriptor of the file the start was found in
            try:
                yield from follow_log(self.location, own, start, run=run, given=after, poll=poll, sleep=wait)
            except _Stopped:
                return

        return batches()

    def torn_records(self, torn: TornTail) -> tuple[TornRecord, ...]:
        """What the torn tail ``torn`` (a read of this log ended on it) reads as, as far as its bytes go."""
        from plantrail.ledger.stores.jsonl.torn import torn_records

        return torn_records(self._descriptor(), torn)

    def quarantined(self) -> tuple[Quarantined, ...]:
        """The quarantine files this log's repairs left beside it, each with what its bytes read as."""
        from plantrail.ledger.stores.jsonl.torn import quarantined

        return quarantined(self.location)

    def current(self, *, use_cache: bool | None = None, stop_at_damage: bool = False) -> ReadResult:
        """The current state: from the snapshot when it checks out, else the fold of the log (or of the records
        after the snapshot); the fold this run already made of the whole log, when it made one."""
        from plantrail.ledger.stores.jsonl.current import read_state

        plain = use_cache is None and not stop_at_damage
        if plain and self._current is not None:
            return self._current
        if plain and self._versions is not None and self._versions.final is not None:
            from plantrail.ledger.stores.values import ReadResult

            self._current = ReadResult(self._versions.final, self._versions.torn)
            return self._current
        # A snapshot that covers the whole log answers without the log's reader (nor the codec and the reducer):
        # the run's descriptor serves its check, and the reader is made from it only when records must be read.
        result = read_state(
            self.location,
            use_cache=use_cache,
            stop_at_damage=stop_at_damage,
            reader=self._reader,
            fd=self._descriptor(),
            open_reader=self._log,
        )
        if plain:
            self._current = result
        return result

    def versions(self) -> Versions:
        """The plan versions: from the history index when the cache has one, else one fold of the log."""
        if self._versions is None:
            from plantrail.ledger.stores.jsonl.reads import read_versions

            self._versions = read_versions(self.location, reader=self._log())
        return self._versions

    def version_state(self, version: int) -> tuple[PlanState, int | None, TornTail | None]:
        """Version ``version`` as it stood when superseded (or now): a superseded one straight from the version
        index when it holds it (importing neither the codec nor the reducer), else folded from the version's
        start (or from the log's, without the index)."""
        from plantrail.ledger.stores.jsonl.current import superseded_version, use_cache_default

        if use_cache_default():
            ended = superseded_version(self.location, version, self._descriptor())
            if ended is not None:
                return ended[0], ended[1], None
        from plantrail.ledger.stores.jsonl.reads import rebuild_version

        return rebuild_version(self.location, version, reader=self._log())

    # ----------------------------------------------------------- writing

    def new_run_id(self, given: str | None = None, *, what: str = "the run") -> str:
        """The id a run created here gets: ``given``, else the file's name without ``.jsonl``; INVALID_ID when
        it is no id."""
        from plantrail.ledger.stores.locations import default_run_id
        from plantrail.ledger.vocabulary.plan import check_id

        return check_id(given if given is not None else default_run_id(self.location), "run id")

    def prepare(self) -> None:
        """Make the folder the log goes in, when it is missing."""
        parent = os.path.dirname(self.location)
        if parent:
            os.makedirs(parent, exist_ok=True)

    def create(
        self, *, run: str | None, first: Sequence[PendingRecord], **options: Any
    ) -> tuple[JsonlStore, list[Record]]:
        """Create the log with its header and ``first`` records, atomically; LOG_EXISTS when the path exists.
        ``run`` defaults as :meth:`new_run_id` says; the options are :meth:`JsonlStore.create`'s."""
        from plantrail.ledger.stores.jsonl.log import JsonlStore

        return JsonlStore.create(self.location, run=self.new_run_id(run), first=first, **options)

    def open_writer(self, **options: Any) -> JsonlStore:
        """The log opened for appending (see :meth:`plantrail.ledger.stores.jsonl.log.JsonlStore.open`)."""
        from plantrail.ledger.stores.jsonl.log import JsonlStore

        return JsonlStore.open(self.location, no_follow=self._no_follow(), **options)


def _hash_at(fd: int, seq: int) -> str | None:
    """The hash of record ``seq`` as the log holds it now (None: no complete, checked record there)."""
    from plantrail.ledger.stores.jsonl.seek import after_record

    try:
        found = after_record(fd, seq)
    except PlantrailError:
        return None
    return None if found is None else found.hash


class FolderStore:
    """A runs folder: run ``ID`` is the log ``<folder>/<ID>.jsonl``. Its rows (:meth:`summaries`) come from each
    log's snapshot when that covers the whole file, else from the log (nothing is written); a log's replan
    reasons are read only when asked for (they need its versions)."""

    def __init__(self, location: str | os.PathLike[str], *, links: bool = True, remember: bool = False) -> None:
        self.location = os.fspath(location)
        #: Whether a symbolic link at ``location`` is followed: not for a run its folder gives by id.
        self.links = links
        #: With ``remember``, each log's row is kept with the log's identity, size and times, and listed again
        #: without a read while they are the same (a long-lived reader of the folder: ``plantrail serve``).
        self._memo: dict[str, tuple[tuple[int, ...], RunRow]] | None = {} if remember else None

    def __repr__(self) -> str:
        return f"FolderStore({self.location!r})"

    def run_ids(self) -> list[str]:
        """The ids of the folder's logs (``*.jsonl`` regular files: a symbolic link names no run), in order."""
        from plantrail.ledger.stores.locations import default_run_id

        try:
            entries = list(os.scandir(self.location))
        except FileNotFoundError:
            return []
        return sorted(
            default_run_id(e.name) for e in entries if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)
        )

    def head_position(self) -> dict[str, tuple[int, int]]:
        """Where the folder's changes stand now: each ``*.jsonl`` regular file's size and modification time, by
        run id (:func:`plantrail.ledger.stores.jsonl.entries.folder_entries`)."""
        from plantrail.ledger.stores.jsonl.entries import folder_entries

        return folder_entries(self.location)

    def run(self, run_id: str) -> FileRun:
        """Run ``run_id`` of the folder; INVALID_ID when it is no run id, NOT_A_FILE when the folder holds something
        other than a regular file at its name (a symbolic link is never followed)."""
        from plantrail.ledger.stores.locations import run_file

        return FileRun(run_file(self.location, run_id), links=False)

    def runs(self) -> list[FileRun]:
        """Each ``*.jsonl`` file of the folder, by name (its header names its run, whatever the file's name)."""
        try:
            names = os.listdir(self.location)
        except FileNotFoundError:
            return []
        return [FileRun(os.path.join(self.location, name)) for name in sorted(names) if name.endswith(".jsonl")]

    def summaries(self, *, reasons: bool = True) -> list[RunRow]:
        """One row per log of the folder, by file name (a file that is no log: a row saying why); FOLDER_NOT_FOUND
        when the folder does not exist. ``reasons=False`` leaves each row's replan reasons unread."""
        from pathlib import Path

        return _folder_rows(Path(self.location), reasons, self._memo)

    def with_reasons(self, row: RunRow) -> RunRow:
        """``row`` with its replan reasons read (a damaged or unreadable log's stay unread: none)."""
        return _with_reasons(row)


# --------------------------------------------------------------------------- a folder's rows


def _file_reasons(run: FileRun, version: int) -> tuple[str, ...]:
    """The reason codes of every replan of a JSONL log (read only when a filter asks for them)."""
    if version <= 1:
        return ()
    found = run.versions()
    return tuple(e.info.reason for e in found.entries(2, found.total) if e.info.reason is not None)


def _covered_row(path: str) -> RunRow | None:
    """The row from the log's snapshot when it checks out and covers the whole file (its last line, which the
    check reads, gives the time), else None."""
    import stat

    from plantrail.ledger.stores.jsonl.cache import load_summary
    from plantrail.ledger.stores.jsonl.current import use_cache_default
    from plantrail.projections.runs import kept_row

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
    return kept_row(
        found.run, found.goal, found.outcome, found.version, found.last_ts, found.orphans, found.position.seq, path
    )


def _file_row(path: str, with_reasons: bool) -> RunRow:
    """A log's row: from its snapshot when that covers the file, else from the log; its replan reasons when
    ``with_reasons``."""
    from plantrail.projections.runs import summarise

    covered = _covered_row(path)
    with FileRun(path) as run:
        if covered is not None:
            if not with_reasons or covered.replans == 0:
                return covered
            return covered._replace(reasons=_file_reasons(run, covered.plan_version))
        result = run.current(stop_at_damage=True)
        state = result.state
        damage = result.damage.code if result.damage is not None else None
        if damage is None and result.torn is not None:
            damage = "TORN_TAIL"
        last_activity = None
        if damage is None and state.last_seq >= 0:
            last, _ = run.tail(1, lambda _: True)
            last_activity = last[-1].ts if last else None
        reasons = _file_reasons(run, state.version) if with_reasons and damage is None else ()
    return summarise(state, last_activity, reasons, path, damage)


def _unreadable(path: str, exc: PlantrailError) -> RunRow:
    """The row of a file the folder holds that cannot be read as a log at all."""
    from plantrail.projections.runs import RunRow

    return RunRow(None, None, None, 0, None, 0, 0, -1, path, (), exc.code)


def _folder_rows(
    folder: pathlib.Path, wanted: bool, memo: dict[str, tuple[tuple[int, ...], RunRow]] | None = None
) -> list[RunRow]:
    """One row per log of ``folder`` (a file that is no log: a row saying why), by file name; each with its
    replan reasons when ``wanted``. ``memo`` (path -> the file's identity, size and times, and its row) gives
    again the row of a log whose identity, size and times did not change, and keeps the rows it reads."""
    if not folder.is_dir():
        raise error("FOLDER_NOT_FOUND", f"runs folder {folder} does not exist", path=str(folder))
    rows = []
    listed: set[str] = set()
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if not entry.name.endswith(".jsonl") or not entry.is_file(follow_symlinks=False):
            continue
        key = None
        if memo is not None:
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, int(wanted))
            kept = memo.get(entry.path)
            if key is not None and kept is not None and kept[0] == key:
                rows.append(kept[1])
                listed.add(entry.path)
                continue
        try:
            row = _file_row(entry.path, wanted)
        except PlantrailError as exc:
            row = _unreadable(entry.path, exc)
        rows.append(row)
        if memo is not None and key is not None:
            memo[entry.path] = (key, row)
            listed.add(entry.path)
    if memo is not None:
        for gone in memo.keys() - listed:
            del memo[gone]
    return rows


def _with_reasons(row: RunRow) -> RunRow:
    """A folder's row with its replan reasons read (a damaged or unreadable log's stay unread: none)."""
    if row.replans == 0 or row.damage is not None:
        return row
    with FileRun(row.location) as run:
        return row._replace(reasons=_file_reasons(run, row.plan_version))
