"""The embedded store: one JSONL file per run, as measured and recommended in research/reliability.md.

* **Create** is atomic: the header (and the first events) go to a temporary file that is fsynced, linked into
  place (``link`` fails if the log exists), then the directory is fsynced. A headless log never exists.
* **Append** takes ``flock(LOCK_EX)`` on the log, catches up with what other writers appended (checking
  every line), writes the whole batch with **one** ``os.write`` on an ``O_APPEND`` descriptor, and fsyncs
  per policy before the lock is released. A short or failed write is cut back (``ftruncate``) so the file
  is as it was; a failed fsync *poisons* the writer: it acknowledges nothing more (PostgreSQL's lesson).
* **Read** streams the file in chunks and checks each line's framing, hash, schema, seq and chain. A final
  fragment without a newline is either a write in progress or a torn tail: the reader takes a shared lock
  briefly to tell which. Damage followed by a valid record is corruption, never a torn tail.
* **Repair** happens only under the writer lock: the torn bytes go to ``<log>.quarantine.<offset>.<time>``
  (fsynced, never deleted), the log is cut back to its last valid record, and a ``log.repaired`` record
  says so in the history.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, NamedTuple

from ledger import __version__
from ledger.clock import utc_now
from ledger.cache import Position, Snapshot, load_snapshot, save_snapshot
from ledger.codec import GENESIS_PREV, MAX_LINE_BYTES, decode, encode
from ledger.errors import LogDamaged, PlantrailError, error
from ledger.events import FORMAT, FORMAT_VERSION, LogOpened, LogRepaired, Record
from ledger.store import FsyncPolicy, PendingRecord, TornTail

if TYPE_CHECKING:
    from ledger.store import KeyEntry
    from projections.model import PlanState

__all__ = ["JsonlStore", "LogReader", "LogScan", "RepairResult", "fsync_dir", "os_error", "repair"]

_CHUNK: Final = 1 << 20
_POLICIES: Final = ("always", "batch", "none")


def os_error(exc: OSError, path: str, what: str = "log") -> PlantrailError:
    """Map an OSError to the storage error with the right stable code."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOENT:
        code = "LOG_NOT_FOUND" if what == "log" else "FILE_NOT_FOUND"
        return error(code, f"{what} {path} does not exist", path=path)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return error("PERMISSION_DENIED", f"cannot open {what} {path}: {reason}", path=path)
    if exc.errno in (errno.EISDIR, errno.ENOTDIR):
        return error("NOT_A_FILE", f"{what} {path} is not a regular file", path=path)
    return error("IO_ERROR", f"{what} {path}: {reason}", path=path, errno=exc.errno)


def _open(path: str, flags: int) -> int:
    try:
        fd = os.open(path, flags | os.O_CLOEXEC)
    except OSError as exc:
        raise os_error(exc, path) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error("NOT_A_FILE", f"log {path} is not a regular file", path=path)
    return fd


def fsync_dir(path: str) -> None:
    """Make a directory entry durable (after create, link, rename or unlink)."""
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- reading


class LogScan:
    """Streams and checks the records of an open log from a known position; notes a torn tail at the end."""

    def __init__(
        self,
        fd: int,
        *,
        offset: int = 0,
        next_seq: int = 0,
        prev: str = GENESIS_PREV,
        run: str | None = None,
        line_no: int = 1,
    ) -> None:
        self._fd = fd
        self.end = offset
        self.next_seq = next_seq
        self.prev = prev
        self.run = run
        self.line_no = line_no
        self.tail: TornTail | None = None

    def __iter__(self) -> Iterator[Record]:
        carry = b""
        read_at = self.end
        while True:
            chunk = os.pread(self._fd, _CHUNK, read_at)
            if not chunk:
                break
            read_at += len(chunk)
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            if len(carry) > MAX_LINE_BYTES:
                raise error(
                    "CORRUPT_LINE", f"line {self.line_no} is longer than {MAX_LINE_BYTES} bytes", line=self.line_no
                )
            for line in lines:
                # The replay hot path: the common case (next seq, linked to the previous hash) is inlined;
                # _check_chain names whatever else is wrong.
                try:
                    record = decode(line, line_no=self.line_no)
                    if (record.seq != self.next_seq or record.prev != self.prev or record.run != self.run
                            or record.type == "log.opened"):
                        self._check_chain(record)
                except LogDamaged:
                    if not self._zero_filled_tail():
                        raise
                    return
                self.end += len(line) + 1
                self.line_no += 1
                self.next_seq += 1
                self.prev = record.h
                yield record
        if carry:
            self.tail = TornTail(offset=self.end, length=len(carry), line=self.line_no, zero_fill=b"\0" in carry)

    def _check_chain(self, record: Record) -> None:
        line = self.line_no
        if record.seq != self.next_seq:
            raise error(
                "SEQ_GAP", f"line {line}: expected seq {self.next_seq}, found {record.seq}", line=line,
                expected=self.next_seq, actual=record.seq, seq=record.seq,
            )
        if record.prev != self.prev:
            raise error(
                "HASH_MISMATCH", f"line {line}: seq {record.seq} does not link to the previous line's hash",
                line=line, seq=record.seq,
            )
        if (record.seq == 0) != (record.type == "log.opened"):
            raise error("CORRUPT_LINE", f"line {line}: only the first line is the log.opened header", line=line)
        if self.run is None and record.seq == 0:
            self.run = record.run
        elif record.run != self.run:
            raise error("CORRUPT_LINE", f"line {line}: run {record.run} in a log of run {self.run}", line=line)

    def _zero_filled_tail(self) -> bool:
        """True when everything from the current line on is damage holding NUL bytes (power loss) and no record."""
        rest = _read_from(self._fd, self.end)
        if b"\0" not in rest:
            return False
        for candidate in rest.split(b"\n"):
            try:
                decode(candidate, line_no=0)
            except LogDamaged:
                continue
            return False
        self.tail = TornTail(offset=self.end, length=len(rest), line=self.line_no, zero_fill=True)
        return True


def _read_from(fd: int, offset: int) -> bytes:
    parts = []
    while True:
        chunk = os.pread(fd, _CHUNK, offset)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        offset += len(chunk)


class LogReader:
    """A read-only view of a log: stream its checked records, then learn whether it ends in a torn tail."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._fd = _open(self.path, os.O_RDONLY)
        self.torn: TornTail | None = None
        self.end = 0
        self._scan = LogScan(self._fd)
        if os.fstat(self._fd).st_size == 0:
            os.close(self._fd)
            raise error("EMPTY_LOG", f"log {self.path} is empty: a log starts with its header line", path=self.path)

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def fd(self) -> int:
        """The open file descriptor (read-only)."""
        return self._fd

    @property
    def position(self) -> Position:
        """Just after the last record :meth:`records` yielded."""
        scan = self._scan
        return Position(scan.end, scan.next_seq - 1, scan.prev, scan.line_no)

    def records(self, start: Position | None = None, run: str | None = None) -> Iterator[Record]:
        """Every valid record in order (after ``start``, a checked position of run ``run``, when given);
        afterwards ``torn`` says whether a torn tail follows them."""
        if start is None:
            scan = LogScan(self._fd)
        else:
            scan = LogScan(self._fd, offset=start.offset, next_seq=start.seq + 1, prev=start.hash, run=run,
                           line_no=start.line)
        self._scan = scan
        yield from scan
        if scan.tail is not None:
            # A writer may be mid-write: wait for its lock, then look again.
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            try:
                rest = LogScan(
                    self._fd, offset=scan.end, next_seq=scan.next_seq, prev=scan.prev, run=scan.run,
                    line_no=scan.line_no,
                )
                self._scan = rest
                yield from rest
                scan = rest
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.torn = scan.tail
        self.end = scan.end


# --------------------------------------------------------------------------- writing


class _Head(NamedTuple):
    end: int
    next_seq: int
    prev: str
    line_no: int


class JsonlStore:
    """One run's JSONL log, opened for appending."""

    def __init__(self, path: str, fd: int, header: LogOpened, *, fsync: FsyncPolicy, batch_size: int, repair: bool,
                 clock: Callable[[], str]) -> None:
        self.path = path
        self._fd = fd
        self._header = header
        self.fsync: FsyncPolicy = fsync
        self._batch_size = batch_size
        self._repair = repair
        self._clock = clock
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)
        self._head = _Head(end=0, next_seq=0, prev=GENESIS_PREV, line_no=1)
        self._unsynced = 0
        self._poisoned: str | None = None
        self._thread_lock = threading.Lock()

    # ----------------------------------------------------------- opening

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncPolicy | None = None,
        batch_size: int = 100,
        repair: bool = False,
        clock: Callable[[], str] = utc_now,
    ) -> JsonlStore:
        """Open an existing log for appending; the fsync policy defaults to the one in its header."""
        name = os.fspath(path)
        fd = _open(name, os.O_RDWR | os.O_APPEND)
        try:
            header = _read_header(fd, name)
        except BaseException:
            os.close(fd)
            raise
        return cls(name, fd, header, fsync=fsync or header.fsync, batch_size=batch_size, repair=repair, clock=clock)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        run: str,
        first: Sequence[PendingRecord],
        fsync: FsyncPolicy = "always",
        nonce: str | None = None,
        ts: str | None = None,
        actor: str = "runtime",
        clock: Callable[[], str] = utc_now,
    ) -> tuple[JsonlStore, list[Record]]:
        """Create a log atomically with its header and ``first`` records; fails if the path exists."""
        name = os.fspath(path)
        if fsync not in _POLICIES:
            raise error("USAGE", f"fsync policy must be one of {', '.join(_POLICIES)}")
        if os.path.lexists(name):
            raise error("LOG_EXISTS", f"{name} already exists; create never overwrites a log", path=name)
        header = LogOpened(
            format=FORMAT,
            run=run,
            nonce=nonce or secrets.token_hex(16),
            fsync=fsync,
            created_by=f"plantrail {__version__}",
        )
        opened = PendingRecord(ts=ts or clock(), plan_version=0, actor=actor, data=header)  # type: ignore[arg-type]
        lines: list[bytes] = []
        records: list[Record] = []
        prev = GENESIS_PREV
        for seq, pending in enumerate([opened, *first]):
            line, record = _encode(pending, run=run, seq=seq, prev=prev)
            lines.append(line)
            records.append(record)
            prev = record.h
        blob = b"".join(lines)
        tmp = f"{name}.tmp.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise os_error(exc, name) from None
        try:
            try:
                _write_all(fd, blob)
                if fsync != "none":
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.link(tmp, name)
        except FileExistsError:
            raise error("LOG_EXISTS", f"{name} already exists; create never overwrites a log", path=name) from None
        except OSError as exc:
            raise os_error(exc, name) from None
        finally:
            _unlink_quietly(tmp)
        if fsync != "none":
            fsync_dir(name)
        return cls.open(name, fsync=fsync, clock=clock), records

    @property
    def run(self) -> str:
        """The run id from the header."""
        return self._header.run

    def resume(self) -> Snapshot | None:
        """Start from the log's snapshot when it checks out (see :mod:`ledger.cache`); None to read it all."""
        snapshot = load_snapshot(self.path, self._fd)
        if snapshot is not None:
            p = snapshot.position
            self._head = _Head(end=p.offset, next_seq=p.seq + 1, prev=p.hash, line_no=p.line)
        return snapshot

    def checkpoint(self, state: PlanState, keys: Mapping[str, KeyEntry]) -> None:
        """Save a snapshot of ``state`` (the fold of everything up to this store's head) beside the log."""
        head = self._head
        if self._fd < 0 or self._poisoned:
            return
        if state.last_seq == head.next_seq - 1 and state.head == head.prev:
            position = Position(head.end, state.last_seq, head.prev, head.line_no)
            save_snapshot(self.path, self._fd, Snapshot(position, state, keys))

    # ----------------------------------------------------------- the writer turn

    @contextmanager
    def session(self) -> Iterator[_Session]:
        """Hold the writer lock for one catch-up, decide and append turn."""
        with self._thread_lock:
            if self._poisoned:
                raise error(
                    "WRITER_POISONED", f"this writer is poisoned: {self._poisoned}; reopen the log", path=self.path
                )
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield _Session(self, rewound=self._check_file())
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _check_file(self) -> bool:
        """Detect a replaced or cut-back file; True when this store must re-read from the start."""
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise os_error(exc, self.path) from None
        if (st.st_dev, st.st_ino) != self._identity:
            raise error("IO_ERROR", f"log {self.path} was replaced while open; reopen it", path=self.path)
        if os.fstat(self._fd).st_size < self._head.end:
            self._head = _Head(end=0, next_seq=0, prev=GENESIS_PREV, line_no=1)
            return True
        return False

    def sync(self) -> None:
        """Make every appended record durable now (the group commit of the ``batch`` policy)."""
        if self._unsynced and not self._poisoned:
            self._fdatasync()

    def close(self) -> None:
        """Sync what the policy owes, then close the file."""
        if self._fd < 0:
            return
        try:
            if self.fsync == "batch":
                self.sync()
        finally:
            os.close(self._fd)
            self._fd = -1

    def _fdatasync(self) -> None:
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            self._poisoned = f"fsync failed ({exc.strerror})"
            raise error("IO_ERROR", f"fsync of {self.path} failed: {exc.strerror}; the writer is poisoned",
                        path=self.path) from None
        self._unsynced = 0

    def _scan(self) -> LogScan:
        head = self._head
        return LogScan(self._fd, offset=head.end, next_seq=head.next_seq, prev=head.prev, run=self.run,
                       line_no=head.line_no)

    def _advance(self, scan: LogScan) -> None:
        self._head = _Head(end=scan.end, next_seq=scan.next_seq, prev=scan.prev, line_no=scan.line_no)

    def _write(self, lines: Sequence[bytes], last: Record) -> bool:
        """Append encoded lines with one write after the head; fsync per policy; True when durable."""
        head = self._head
        size = os.fstat(self._fd).st_size
        if size != head.end:
            raise error("IO_ERROR", f"log {self.path} changed outside the writer lock", path=self.path)
        blob = b"".join(lines)
        try:
            written = os.write(self._fd, blob)
        except OSError as exc:
            self._cut_back(size)
            raise os_error(exc, self.path) from None
        if written != len(blob):
            self._cut_back(size)
            raise error("IO_ERROR", f"short write to {self.path} ({written} of {len(blob)} bytes); nothing was added",
                        path=self.path)
        self._head = _Head(end=size + len(blob), next_seq=last.seq + 1, prev=last.h, line_no=head.line_no + len(lines))
        self._unsynced += len(lines)
        if self.fsync == "always" or (self.fsync == "batch" and self._unsynced >= self._batch_size):
            self._fdatasync()
        return self._unsynced == 0

    def _cut_back(self, size: int) -> None:
        """Undo a failed write; if even that fails, poison the writer."""
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:
            self._poisoned = f"could not undo a failed write ({exc.strerror})"

    def _repair_tail(self, tail: TornTail, acked: tuple[int, str] | None = None) -> Record:
        """Quarantine a torn tail and cut the log back to its last valid record (writer lock held)."""
        head = self._head
        if acked is not None:
            _check_watermark(head, acked)
        damaged = _read_from(self._fd, tail.offset)
        quarantine = f"{self.path}.quarantine.{tail.offset}.{self._clock().replace(':', '')}"
        try:
            qfd = os.open(quarantine, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
            try:
                _write_all(qfd, damaged)
                os.fsync(qfd)
            finally:
                os.close(qfd)
            fsync_dir(quarantine)
            os.ftruncate(self._fd, tail.offset)
            os.fsync(self._fd)
        except OSError as exc:
            raise os_error(exc, quarantine, "quarantine file") from None
        data = LogRepaired(
            truncated_at=tail.offset,
            bytes=len(damaged),
            sha256=hashlib.sha256(damaged).hexdigest(),
            kind="torn_tail",
            quarantine=os.path.basename(quarantine),
        )
        head = self._head
        line, record = _encode(PendingRecord(ts=self._clock(), plan_version=0, actor="runtime", data=data),
                               run=self.run, seq=head.next_seq, prev=head.prev)
        if not self._write([line], record):
            self._fdatasync()
        return record


class _Session:
    """One turn under the writer lock (see :class:`ledger.store.Session`)."""

    def __init__(self, store: JsonlStore, *, rewound: bool) -> None:
        self._store = store
        self.rewound = rewound
        self._lines: list[bytes] = []
        self._staged: list[Record] = []

    @property
    def head_seq(self) -> int:
        return self._store._head.next_seq - 1

    @property
    def head_hash(self) -> str:
        return self._store._head.prev

    def new_records(self) -> Iterator[Record]:
        store = self._store
        scan = store._scan()
        for record in scan:
            store._advance(scan)
            yield record
        store._advance(scan)
        if scan.tail is not None:
            if not store._repair:
                raise error(
                    "TORN_TAIL",
                    f"{store.path} ends with {scan.tail.length} bytes of an incomplete record after line "
                    f"{scan.tail.line - 1} (a crash mid-write); run `plantrail repair {store.path}`",
                    line=scan.tail.line, offset=scan.tail.offset, path=store.path,
                )
            yield store._repair_tail(scan.tail)

    def stage(self, record: PendingRecord) -> Record:
        if self._staged:
            seq, prev = self._staged[-1].seq + 1, self._staged[-1].h
        else:
            seq, prev = self._store._head.next_seq, self._store._head.prev
        line, stored = _encode(record, run=self._store.run, seq=seq, prev=prev)
        self._lines.append(line)
        self._staged.append(stored)
        return stored

    def commit(self) -> bool:
        if not self._staged:
            return True
        lines, last = self._lines, self._staged[-1]
        self._lines, self._staged = [], []
        return self._store._write(lines, last)


def _encode(p: PendingRecord, *, run: str, seq: int, prev: str) -> tuple[bytes, Record]:
    """Encode one record, checked by decoding it back: nothing unreadable is ever written."""
    line, h = encode(seq=seq, ts=p.ts, run=run, plan_version=p.plan_version, actor=p.actor, data=p.data,
                     prev=prev, source=p.source, key=p.key)
    decode(line[:-1], line_no=seq + 1)
    record = Record(v=FORMAT_VERSION, seq=seq, ts=p.ts, run=run, type=p.data.TYPE, plan_version=p.plan_version,
                    actor=p.actor, data=p.data, prev=prev, h=h, source=p.source, key=p.key)
    return line, record


def _write_all(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _read_header(fd: int, path: str) -> LogOpened:
    first = os.pread(fd, 64 * 1024, 0)
    if not first:
        raise error("EMPTY_LOG", f"log {path} is empty: a log starts with its header line", path=path)
    line = first.split(b"\n", 1)[0]
    if b"\n" not in first:
        raise error("TORN_TAIL", f"log {path} has no complete header line", line=1, offset=0, path=path)
    record = decode(line, line_no=1)
    if not isinstance(record.data, LogOpened) or record.seq != 0:
        raise error("CORRUPT_LINE", f"line 1 of {path} is not the log.opened header", line=1, path=path)
    return record.data


# --------------------------------------------------------------------------- repair


class RepairResult(NamedTuple):
    """What ``repair`` did: nothing (``record`` None), or the ``log.repaired`` record it appended."""

    record: Record | None
    last_seq: int


def _check_watermark(head: _Head, acked: tuple[int, str]) -> None:
    """Refuse to repair when the caller's last acknowledged record is not in the valid part."""
    seq, h = acked
    if seq > head.next_seq - 1:
        raise error(
            "DATA_LOSS",
            f"acknowledged seq {seq} is not in the log (its valid part ends at seq {head.next_seq - 1}); "
            "repair refuses to cut it",
            seq=seq,
            expected=seq,
            actual=head.next_seq - 1,
        )
    if seq == head.next_seq - 1 and h != head.prev:
        raise error("DATA_LOSS", f"acknowledged seq {seq} has a different hash in the log", seq=seq)


def repair(
    path: str | os.PathLike[str], *, acked: tuple[int, str] | None = None, clock: Callable[[], str] = utc_now
) -> RepairResult:
    """Repair a torn tail under the writer lock; refuse anything that is not a torn tail."""
    store = JsonlStore.open(path, clock=clock)
    try:
        with store.session():
            scan = store._scan()
            for record in scan:
                if acked is not None and record.seq == acked[0] and record.h != acked[1]:
                    raise error("DATA_LOSS", f"acknowledged seq {acked[0]} has a different hash in the log",
                                seq=acked[0], line=scan.line_no - 1)
            store._advance(scan)
            if scan.tail is None:
                if acked is not None:
                    _check_watermark(store._head, acked)
                return RepairResult(record=None, last_seq=scan.next_seq - 1)
            record = store._repair_tail(scan.tail, acked)
            return RepairResult(record=record, last_seq=record.seq)
    finally:
        store.close()
