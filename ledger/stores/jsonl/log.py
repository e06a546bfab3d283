"""The embedded store: one JSONL file per run (what it promises, and the figures behind it: docs/reliability.md).

* **Create** is atomic: the header (and the first events) go to a temporary file that is fsynced, linked into
  place (``link`` fails if the log exists), then the directory is fsynced. A headless log never exists.
* **Append** takes ``flock(LOCK_EX)`` on the log, refuses a log whose path now names another file, catches
  up with what other writers appended (checking every line; one ``stat`` says whether there is anything to
  read), writes the whole batch with **one** ``os.write`` on an ``O_APPEND`` descriptor, and fsyncs per
  policy before the lock is released. A short or failed write is cut back (``ftruncate``) so the file
  is as it was; a failed fsync *poisons* the writer: it acknowledges nothing more (PostgreSQL's lesson).
* **Read** streams the file in chunks and checks each line's framing, hash, schema, seq and chain. A final
  fragment without a newline is either a write in progress or a torn tail: the reader takes a shared lock
  briefly to tell which. Damage followed by a valid record is corruption, never a torn tail.
* **Repair** happens only under the writer lock: the torn bytes go to
  ``<log>.quarantine.<offset>.<time>.<tag>`` (fsynced, never deleted; the tag is an HMAC under this user's
  key, :func:`quarantine_tag`), the log is cut back to its last valid record, and a ``log.repaired`` record
  says so in the history. A crash between the cut and that record is finished on the next repairing open
  (the log then ends exactly where a quarantine file starts whose tag proves a repair of ours wrote it). A
  caller's last acknowledged ``(seq, hash)`` turns a repair that would cut it off into DATA_LOSS.
* **A forked child** that uses a writer its parent opened reopens the log first (checking that the path still
  names the same file, else IO_ERROR): the inherited descriptor shares the parent's open file description,
  and with it the parent's ``flock``.
* **Writers refuse NFS and SMB** (found from ``/proc/self/mountinfo``), where ``O_APPEND`` and ``flock``
  do not hold across machines, unless ``allow_network_fs`` or ``PLANTRAIL_ALLOW_NETWORK_FS=1`` says otherwise.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import hashlib
import hmac
import mmap
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple, Self

from plantrail._version import __version__
from plantrail.ledger.stores.chain import check_link
from plantrail.ledger.stores.chain import encode_pending as _encode
from plantrail.ledger.stores.files import (
    check_path,
    folder_of,
    fsync_dir,
    open_regular,
    os_error,
    read_regular,
    shared_lock_within,
)
from plantrail.ledger.stores.jsonl.cache import (
    Identity,
    KeptFile,
    Position,
    Snapshot,
    TextRef,
    identity_of,
    load_snapshot,
    prefix_crc,
    save_snapshot,
    texts_between,
)
from plantrail.ledger.stores.processes import ForkSafeLock, current_pid, owning_lock
from plantrail.ledger.stores.values import FsyncPolicy, PendingRecord, Resumed, TornTail
from plantrail.ledger.vocabulary.arguments import strict
from plantrail.ledger.vocabulary.clock import utc_now
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, MAX_LINE_BYTES, decode, holds_record_end, log_format
from plantrail.ledger.vocabulary.errors import LogDamaged, PlantrailError, error
from plantrail.ledger.vocabulary.events import LogBatch, LogOpened, LogRepaired, Record

if TYPE_CHECKING:
    from plantrail.ledger.stores.payloads import StoredPayload
    from plantrail.ledger.vocabulary.fragments import TornRecord
    from plantrail.ledger.vocabulary.keys import KeyEntry
    from plantrail.projections.model import PlanState

__all__ = [
    "JsonlStore",
    "LogReader",
    "LogScan",
    "RepairResult",
    "clean_stale_temps",
    "create_from_lines",
    "filesystem_type",
    "opened",
    "quarantine_tag",
    "repair",
]

_CHUNK: Final = 1 << 20
_HEADER_READ: Final = 64 * 1024
_RECORD_END_OVERLAP: Final = 128  # bytes looked at on each side of a chunk boundary: more than a record end (72)
_POLICIES: Final = ("always", "batch", "none")
_NETWORK_FS: Final = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs"})
_ALLOW_NETWORK_FS_ENV: Final = "PLANTRAIL_ALLOW_NETWORK_FS"
#: A torn tail is at most one line, or a zero-filled block a power loss left; no quarantine file is larger.
_MAX_QUARANTINE: Final = 1 << 30
#: Event classes a reader checks off the hot path: the header, and the bounds of a group commit (by class: a
#: record's ``type`` is a class attribute, slower to read than its ``data``'s class).
_FRAMING_CLASSES: Final = frozenset({LogOpened, LogBatch})
_TEMP_NAME = re.compile(r"\.tmp\.(\d+)\.[0-9a-f]{8}")
#: What follows ``<log>.quarantine.<offset>.`` in a quarantine file's name: the repair's time and its tag.
_QUARANTINE_TAIL = re.compile(r"[^/]+\.([0-9a-f]{32})")


def quarantine_tag(key: bytes, run: str, offset: int, sha256: str) -> str:
    """The tag that ends the name of a quarantine file a repair of run ``run`` wrote at ``offset`` holding bytes
    of digest ``sha256``: an HMAC under this user's key (:mod:`plantrail.ledger.stores.jsonl.seal`), so no file
    plantrail did not write as a quarantine file (a planted one, another run's log) passes for one."""
    from plantrail.ledger.stores.jsonl.seal import mac

    return mac(key, "quarantine", f"{run}\n{offset}\n{sha256}".encode()).hex()[:32]


def _open(path: str, flags: int) -> int:
    return open_regular(path, flags)  # never blocks: a FIFO planted as the log is refused, not waited on


def filesystem_type(dev: int, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The type of the mounted filesystem with device number ``dev`` (``st_dev``); None when unknown."""
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 2 and fields[2] == wanted and " - " in line:
            return line.split(" - ", 1)[1].split(" ", 1)[0]
    return None


def _refuse_network_fs(dev: int, path: str, allowed: bool) -> None:
    """Writers refuse NFS and SMB: O_APPEND and flock do not hold between machines there."""
    if allowed or os.environ.get(_ALLOW_NETWORK_FS_ENV) == "1":
        return
    kind = filesystem_type(dev)
    if kind in _NETWORK_FS:
        raise error(
            "NETWORK_FILESYSTEM",
            f"{path} is on {kind}, where appends from several machines can interleave and locks may not hold; "
            f"keep logs on a local disk (or set {_ALLOW_NETWORK_FS_ENV}=1 if one machine writes it)",
            path=path,
            filesystem=kind,
        )


def clean_stale_temps(path: str | os.PathLike[str]) -> list[str]:
    """Remove the ``<log>.tmp.<pid>.<hex>`` files a crashed create left beside ``path``; return their names.

    Such a file is removed when it is another name of the log itself (the crash came after the link) or
    when its creator ``pid`` is gone (the crash came before the link: it never became a log). The file of a
    create still running is left alone.
    """
    name = os.fspath(path)
    try:
        st = os.stat(name)
        log_identity: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except OSError:
        log_identity = None
    removed = []
    for temp in sorted(glob.glob(glob.escape(name) + ".tmp.*")):
        match = _TEMP_NAME.fullmatch(temp[len(name) :])
        if match is None:
            continue
        try:
            tst = os.lstat(temp)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(tst.st_mode) or tst.st_uid != os.geteuid():
            continue  # not a file a create of ours left (a planted link, FIFO or directory, or another user's)
        if (tst.st_dev, tst.st_ino) == log_identity or not _process_alive(int(match.group(1))):
            _unlink_quietly(temp)
            removed.append(temp)
    if removed:
        fsync_dir(name)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
        batch: list[Record] | None = None  # the records of a group commit whose end is not read yet
        mark = self.end, self.next_seq, self.prev, self.line_no  # where that group commit begins
        while True:
            chunk = os.pread(self._fd, _CHUNK, read_at)
            if not chunk:
                break
            read_at += len(chunk)
            lines = chunk.split(b"\n")
            lines[0] = carry + lines[0]  # (the line the last chunk cut, joined: the chunk itself is not copied)
            carry = lines.pop()
            if len(carry) > MAX_LINE_BYTES:
                raise error(
                    "CORRUPT_LINE", f"line {self.line_no} is longer than {MAX_LINE_BYTES} bytes", line=self.line_no
                )
            for line in lines:
                # The replay hot path: the common case (next seq, linked to the previous hash, outside a
                # group commit) is inlined; _check_chain names whatever else is wrong.
                try:
                    record = decode(line, self.line_no)
                    if (
                        record.seq != self.next_seq
                        or record.prev != self.prev
                        or record.run != self.run
                        or type(record.data) in _FRAMING_CLASSES
                    ):
                        self._check_chain(record, in_batch=batch is not None)
                except LogDamaged:
                    damaged_at = self.end  # the damage is checked from here; a cut-short batch is torn from its begin
                    if batch is not None:
                        self.end, self.next_seq, self.prev, self.line_no = mark
                    if not self._zero_filled_tail(damaged_at):
                        raise
                    return
                if batch is None and type(record.data) is not LogBatch:
                    self.end += len(line) + 1
                    self.line_no += 1
                    self.next_seq += 1
                    self.prev = record.h
                    yield record
                    continue
                if batch is None:
                    mark = self.end, self.next_seq, self.prev, self.line_no
                    batch = []
                self.end += len(line) + 1
                self.line_no += 1
                self.next_seq += 1
                self.prev = record.h
                batch.append(record)
                if type(record.data) is LogBatch and record.data.part == "end":
                    yield from batch
                    batch = None
        if batch is not None:  # a group commit cut short: nothing of it counts, it is a torn tail
            self.end, self.next_seq, self.prev, self.line_no = mark
            self.tail = TornTail(
                offset=self.end, length=read_at - self.end, line=self.line_no, zero_fill=b"\0" in carry
            )
        elif carry:
            self.tail = TornTail(offset=self.end, length=len(carry), line=self.line_no, zero_fill=b"\0" in carry)

    def _check_chain(self, record: Record, *, in_batch: bool = False) -> None:
        """Raise what is wrong with a record off the hot path: the chain every store checks, then the framing
        only a file has (a group commit's begin and end)."""
        line = self.line_no
        run = record.run if self.run is None and record.seq == 0 else self.run
        check_link(record, next_seq=self.next_seq, prev=self.prev, run=run, line=line)
        if isinstance(record.data, LogBatch) and (record.data.part == "begin") == in_batch:
            raise error(
                "CORRUPT_LINE",
                f"line {line}: a group commit's {record.data.part} without its "
                + ("end" if record.data.part == "begin" else "begin"),
                line=line,
            )
        if self.run is None:
            self.run = record.run

    def _zero_filled_tail(self, damaged_at: int | None = None) -> bool:
        """True when everything from the damaged line on (``damaged_at``, default the current line) holds NUL
        bytes (power loss) and no record's end; the torn tail then starts at the current line (the begin of a
        group commit cut short, whose complete records before the damage count for nothing).

        A crash leaves zeros or a prefix of a write; a framed line (whatever its hash) or a record after the
        damage cannot come from one, so those stay corruption. The rest of the file is streamed, never held:
        it may be gigabytes.
        """
        zeros, overlap = False, b""
        offset = self.end if damaged_at is None else damaged_at
        while chunk := os.pread(self._fd, _CHUNK, offset):
            if holds_record_end(overlap + chunk[:_RECORD_END_OVERLAP]) or (
                b"}" in chunk and holds_record_end(chunk)  # memchr first: zeros hold no brace
            ):
                return False
            zeros = zeros or b"\0" in chunk
            offset += len(chunk)
            overlap = chunk[-_RECORD_END_OVERLAP:]
        if not zeros:
            return False
        self.tail = TornTail(offset=self.end, length=offset - self.end, line=self.line_no, zero_fill=True)
        return True


class LogReader:
    """A read-only view of a log: stream its checked records, then learn whether it ends in a torn tail."""

    def __init__(self, path: str | os.PathLike[str], *, fd: int | None = None) -> None:
        """Open the log at ``path``; or, with ``fd``, read that descriptor of it (opened as a regular file,
        read-only: the reader owns it from now on and closes it)."""
        self.path = os.fspath(path)
        self._fd = _open(self.path, os.O_RDONLY) if fd is None else fd
        self.torn: TornTail | None = None
        self.end = 0
        self._scan = LogScan(self._fd)
        if os.fstat(self._fd).st_size == 0:
            os.close(self._fd)
            raise error(
                "EMPTY_LOG", f"log {self.path} is empty: a log starts with its header line", path=self.path, offset=0
            )

    def __enter__(self) -> Self:
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
            scan = LogScan(
                self._fd, offset=start.offset, next_seq=start.seq + 1, prev=start.hash, run=run, line_no=start.line
            )
        self._scan = scan
        yield from scan
        if scan.tail is not None:
            # A writer may be mid-write: wait (a bounded time) for its lock, then look again.
            shared_lock_within(self._fd, self.path, "to tell a write in progress from a torn tail")
            try:
                rest = LogScan(
                    self._fd,
                    offset=scan.end,
                    next_seq=scan.next_seq,
                    prev=scan.prev,
                    run=scan.run,
                    line_no=scan.line_no,
                )
                self._scan = rest
                yield from rest
                scan = rest
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        if scan.next_seq == 0 and scan.tail is not None:
            raise error("TORN_TAIL", f"log {self.path} has no complete header line", line=1, offset=0, path=self.path)
        self.torn = scan.tail
        self.end = scan.end


@contextlib.contextmanager
def opened(path: str, reader: LogReader | None = None) -> Iterator[LogReader]:
    """``reader`` when one is given (a run's own, left open for its next read), else the log at ``path`` opened
    for this read and closed after it."""
    if reader is not None:
        yield reader
        return
    with LogReader(path) as own:
        yield own


# --------------------------------------------------------------------------- writing


class _Head(NamedTuple):
    end: int
    next_seq: int
    prev: str
    line_no: int


class JsonlStore:
    """One run's JSONL log, opened for appending."""

    def __init__(
        self,
        path: str,
        fd: int,
        header: LogOpened,
        *,
        fsync: FsyncPolicy,
        batch_size: int,
        repair: bool,
        clock: Callable[[], str],
        acked: tuple[int, str] | None = None,
    ) -> None:
        self.path = path
        self._fd = fd
        self._header = header
        self.fsync: FsyncPolicy = fsync
        self._batch_size = batch_size
        self._repair = repair
        self._clock = clock
        self._acked = acked
        self._first_turn = True
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)
        self._head = _Head(end=0, next_seq=0, prev=GENESIS_PREV, line_no=1)
        self._unsynced = 0
        self._unsynced_from: int | None = None  # the first seq this writer wrote that no fsync covers yet
        self._poisoned: str | None = None
        self._crc = (0, 0)  # (offset, CRC-32 of the log's bytes before it), carried between snapshots
        self._texts: tuple[int, dict[str, TextRef]] = (0, {})  # where the large texts before an offset lie
        self._keys_digest: str | None = None  # the idempotency index file the cache holds (see save_snapshot)
        self._kept: KeptFile | None = None  # the snapshot's kept members' file as last read or written
        # The log's identity when every byte before the head was known to be what this writer checked (the
        # carried CRC's bytes and the lines it read since), kept only while nobody else changes the file: the
        # custody a snapshot hands on so that the next writer need not re-read those bytes (see cache.py).
        self._custody: Identity | None = None
        self._thread_lock = ForkSafeLock()  # free in a forked child, whichever thread of the parent held it
        self._pid = os.getpid()  # the process whose descriptor ``_fd`` is (see :meth:`_own`)

    # ----------------------------------------------------------- opening

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncPolicy | None = None,
        batch_size: int = 100,
        repair: bool = False,
        acked: tuple[int, str] | None = None,
        allow_network_fs: bool = False,
        clock: Callable[[], str] = utc_now,
        no_follow: int = 0,
    ) -> JsonlStore:
        """Open an existing log for appending; the fsync policy defaults to the one in its header.

        ``repair`` cuts a torn tail off (quarantined and recorded) instead of refusing with TORN_TAIL.
        ``acked`` is the ``(seq, hash)`` of the last record the caller was acknowledged: the first turn
        raises DATA_LOSS, and repairs nothing, unless the valid part of the log holds exactly that record.
        ``no_follow`` is ``os.O_NOFOLLOW`` for a run opened by id from its folder (no link is followed).
        """
        name = os.fspath(path)
        fd = _open(name, os.O_RDWR | os.O_APPEND | no_follow)
        try:
            _refuse_network_fs(os.fstat(fd).st_dev, name, allow_network_fs)
            header = _read_header(fd, name)
        except BaseException:
            os.close(fd)
            raise
        return cls(
            name,
            fd,
            header,
            fsync=fsync or header.fsync,
            batch_size=batch_size,
            repair=repair,
            clock=clock,
            acked=acked,
        )

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
        allow_network_fs: bool = False,
        clock: Callable[[], str] = utc_now,
    ) -> tuple[JsonlStore, list[Record]]:
        """Create a log atomically with its header and ``first`` records; fails if the path exists.

        Leftover temporary files of an earlier, crashed create of the same path are removed first.
        """
        name = os.fspath(path)
        if fsync not in _POLICIES:
            raise error("USAGE", f"fsync policy must be one of {', '.join(_POLICIES)}")
        _may_create(name, allow_network_fs)
        header = LogOpened(
            format=log_format([p.data for p in first]),
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
        _publish(name, b"".join(lines), durable=fsync != "none")
        return cls.open(name, fsync=fsync, allow_network_fs=True, clock=clock), records

    @property
    def run(self) -> str:
        """The run id from the header."""
        return self._header.run

    @property
    def target(self) -> str:
        """The log's path."""
        return self.path

    def _own(self) -> None:
        """Give a forked child its own descriptor of the log on its first use of this writer.

        The descriptor the child inherited shares the parent's open file description, and with it the parent's
        ``flock``: parent and child would both hold the writer lock at once, and the child's unlock would free
        the parent's. So the child opens the log again by its path, refusing (IO_ERROR) a path that no longer
        names the file this writer opened, and closes its copy of the parent's descriptor (which leaves the
        parent's descriptor and lock as they were).
        """
        if self._pid == current_pid() or self._fd < 0:
            return
        with owning_lock:
            if self._pid == current_pid():
                return
            fd = _open(self.path, os.O_RDWR | os.O_APPEND)
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._identity:
                os.close(fd)
                raise error(
                    "IO_ERROR",
                    f"log {self.path} was replaced since this writer opened it in the parent process; reopen it",
                    path=self.path,
                )
            os.close(self._fd)
            self._fd = fd
            self._pid = os.getpid()

    def resume(self) -> Resumed | None:
        """Start from the log's snapshot when it checks out (see :mod:`plantrail.ledger.stores.jsonl.cache`); None to
        read it all."""
        self._own()
        snapshot = load_snapshot(self.path, self._fd, check_prefix=True, with_keys=True, lazy=True)
        if snapshot is None:
            return None
        p = snapshot.position
        self._head = _Head(end=p.offset, next_seq=p.seq + 1, prev=p.hash, line_no=p.line)
        self._crc = (p.offset, snapshot.crc)
        self._texts = (p.offset, dict(snapshot.texts))
        self._keys_digest = snapshot.keys_digest
        self._custody = snapshot.identity
        self._kept = snapshot.kept
        return Resumed(snapshot.state, snapshot.keys)

    def checkpoint(self, state: PlanState, keys: Mapping[str, KeyEntry]) -> None:
        """Save a snapshot of ``state`` (the fold of everything up to this store's head) beside the log."""
        head = self._head
        if self._fd < 0 or self._poisoned:
            return
        try:
            self._own()
        except PlantrailError:  # a forked child whose log was replaced: a snapshot is never required
            return
        if state.last_seq == head.next_seq - 1 and state.head == head.prev:
            position = Position(head.end, state.last_seq, head.prev, head.line_no)
            offset, crc = self._crc if self._crc[0] <= head.end else (0, 0)
            crc = prefix_crc(self._fd, head.end, offset, crc)
            self._crc = (head.end, crc)
            texts = self._texts_until(head.end)
            snapshot = Snapshot(position, state, keys, crc, texts, self._keys_digest, self._custody, self._kept)
            saved = save_snapshot(self.path, self._fd, snapshot)
            self._texts = (head.end, saved.texts)  # the texts the state still holds: the rest need not be kept
            self._keys_digest = saved.keys_digest
            self._kept = saved.kept

    def _texts_until(self, end: int) -> dict[str, TextRef]:
        """Where the large texts of the log's first ``end`` bytes lie: those the last snapshot referenced plus
        those of the records after it (so a checkpoint reads only what was appended since the last one)."""
        known_to, known = self._texts if self._texts[0] <= end else (0, {})
        return {**known, **texts_between(self._fd, known_to, end)} if known_to < end else known

    # ----------------------------------------------------------- the writer turn

    def session(self) -> _Session:
        """One catch-up, decide and append turn: entering it takes the writer lock, leaving it releases it."""
        return _Session(self)

    def reading(self) -> _Reading:
        """A catch-up without the writer lock, as a reader reads (what a ledger opening the log does, so that
        an append takes the lock once): it reads and checks what follows the head; a final fragment is waited
        for under a shared lock, as a reader waits, and refused TORN_TAIL when it is torn. Entered, it holds
        this writer's thread lock. Not for a writer that repairs or checks a caller's acknowledged record:
        those are judged under the writer lock, on the first :meth:`session`."""
        return _Reading(self)

    def _lock_thread(self) -> None:
        """Take the thread lock (refusing a poisoned writer); a forked child first opens its own descriptor."""
        self._own()
        self._thread_lock.acquire()
        if self._poisoned:
            self._thread_lock.release()
            raise error("WRITER_POISONED", f"this writer is poisoned: {self._poisoned}; reopen the log", path=self.path)

    def _lock(self) -> tuple[int, bool]:
        """Take the thread lock and the file lock (refusing a poisoned writer), then check the file (see
        :meth:`_check_file`); whatever fails releases what was taken. A forked child first opens its own
        descriptor (:meth:`_own`)."""
        self._lock_thread()
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                return self._check_file()
            except BaseException:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                raise
        except BaseException:
            self._thread_lock.release()
            raise

    def _unlock(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def _check_file(self) -> tuple[int, bool]:
        """Refuse a replaced log; return its size, and True when it was cut back (re-read from the start).

        One ``stat`` of the path does both: once its identity is ours, its size is our descriptor's.
        """
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise os_error(exc, self.path) from None
        if (st.st_dev, st.st_ino) != self._identity:
            raise error("IO_ERROR", f"log {self.path} was replaced while open; reopen it", path=self.path)
        self._keep_custody(Identity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        if st.st_size < self._head.end:
            self._head = _Head(end=0, next_seq=0, prev=GENESIS_PREV, line_no=1)
            self._crc = (0, 0)
            return st.st_size, True
        return st.st_size, False

    def _keep_custody(self, now: Identity) -> None:
        """Drop the custody when the log is no longer as this writer last knew it (another writer's append, an
        edit, a cut): the next writer will then read every byte again."""
        if self._custody is not None and now != self._custody:
            self._custody = None

    def store_payload(self, data: bytes, *, salt: bytes | None = None) -> StoredPayload:
        """Keep ``data`` in the log's payload folder, durable before this returns (unless the fsync policy is
        ``none``), for a record appended after it to name (see :mod:`plantrail.ledger.stores.jsonl.blobs`)."""
        from plantrail.ledger.stores.jsonl.blobs import store_payload

        if self._fd < 0 or self._poisoned:
            raise error(
                "WRITER_POISONED",
                f"this writer is {'closed' if self._fd < 0 else 'poisoned: ' + str(self._poisoned)}; reopen the log",
                path=self.path,
            )
        return store_payload(self.path, data, durable=self.fsync != "none", salt=salt)

    def sync(self) -> None:
        """Make every appended record durable now (the group commit of the ``batch`` policy)."""
        if self._unsynced and not self._poisoned:
            self._own()
            self._fdatasync()

    def close(self) -> None:
        """Sync what the policy owes, then close the file."""
        if self._fd < 0:
            return
        if self._pid != current_pid():  # a forked child that never wrote through it: drop its copy, sync nothing
            os.close(self._fd)
            self._fd = -1
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
            raise error(
                "IO_ERROR", f"fsync of {self.path} failed: {exc.strerror}; the writer is poisoned", path=self.path
            ) from None
        self._unsynced = 0
        self._unsynced_from = None

    def _scan(self) -> LogScan:
        head = self._head
        return LogScan(
            self._fd, offset=head.end, next_seq=head.next_seq, prev=head.prev, run=self.run, line_no=head.line_no
        )

    def _advance(self, scan: LogScan) -> None:
        self._head = _Head(end=scan.end, next_seq=scan.next_seq, prev=scan.prev, line_no=scan.line_no)

    def _write(self, lines: Sequence[bytes], last: Record) -> bool:
        """Append encoded lines with one write after the head; fsync per policy; True when durable."""
        head = self._head
        # One fstat: the size (the descriptor appends wherever it points) and the identity, so that no write
        # between the turn's check and ours goes unnoticed.
        now = identity_of(self._fd)
        size = now.size
        if size != head.end:
            raise error("IO_ERROR", f"log {self.path} changed outside the writer lock", path=self.path)
        blob = b"".join(lines)
        self._keep_custody(now)
        try:
            written = os.write(self._fd, blob)
        except OSError as exc:
            self._cut_back(size)
            raise os_error(exc, self.path) from None
        if written != len(blob):
            self._cut_back(size)
            raise error(
                "IO_ERROR",
                f"short write to {self.path} ({written} of {len(blob)} bytes); nothing was added",
                path=self.path,
            )
        self._head = _Head(end=size + len(blob), next_seq=last.seq + 1, prev=last.h, line_no=head.line_no + len(lines))
        if self._custody is not None:
            self._custody = identity_of(self._fd)  # the change is this write
        if self._unsynced_from is None:
            self._unsynced_from = head.next_seq
        self._unsynced += len(lines)
        if self.fsync == "always" or (self.fsync == "batch" and self._unsynced >= self._batch_size):
            self._fdatasync()
        return self._unsynced == 0

    def _find(self, seq: int, h: str) -> Record | None:
        """Record ``seq`` with hash ``h`` from the bytes this writer has checked (writer lock held): the line
        ending in that hash, decoded and checked again (its own hash, schema and seq)."""
        end = self._head.end
        if end == 0 or not 0 <= seq < self._head.next_seq:
            return None
        needle = b',"h":"' + h.encode("ascii", "replace") + b'"}\n'
        with mmap.mmap(self._fd, end, access=mmap.ACCESS_READ) as view:
            at = view.find(needle)
            if at < 0:
                return None
            start = view.rfind(b"\n", 0, at) + 1
            line = view[start : at + len(needle) - 1]
        try:
            record = decode(line, seq + 1)
        except LogDamaged:
            return None
        return record if record.seq == seq and record.h == h else None

    def _cut_back(self, size: int) -> None:
        """Undo a failed write; if even that fails, poison the writer."""
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:
            self._poisoned = f"could not undo a failed write ({exc.strerror})"

    def _repair_tail(self, tail: TornTail) -> Record:
        """Quarantine a torn tail, cut the log back to its last valid record, record it (writer lock held).

        The quarantine file is durable before the cut; the cut and the ``log.repaired`` record are made
        durable by one fsync, so a crash between them is finished by :meth:`_finish_repair`.
        """
        from plantrail.ledger.stores.jsonl.seal import cache_key

        untagged = f"{self.path}.quarantine.{tail.offset}.{self._clock().replace(':', '')}"
        quarantine = untagged
        digest, length = hashlib.sha256(), 0
        try:
            qfd = os.open(untagged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
            try:
                while chunk := os.pread(self._fd, _CHUNK, tail.offset + length):  # streamed: a tail may be large
                    _write_all(qfd, chunk)
                    digest.update(chunk)
                    length += len(chunk)
                os.fsync(qfd)
            finally:
                os.close(qfd)
            key = cache_key()
            if key is not None:  # without a key the file is kept untagged: an interrupted repair is not finished
                quarantine = f"{untagged}.{quarantine_tag(key, self.run, tail.offset, digest.hexdigest())}"
                if os.path.lexists(quarantine):
                    raise FileExistsError(errno.EEXIST, "exists", quarantine)
                os.rename(untagged, quarantine)
            fsync_dir(quarantine)
        except OSError as exc:
            raise os_error(exc, quarantine, "quarantine file") from None
        try:
            os.ftruncate(self._fd, tail.offset)
        except OSError as exc:
            raise os_error(exc, self.path) from None
        return self._record_repair(tail.offset, length, digest.hexdigest(), quarantine)

    def _finish_repair(self) -> Record | None:
        """Record a repair that a crash interrupted after its cut: the log ends where a quarantine file starts.

        Only a quarantine file a repair of ours left is believed: a regular file owned by this user, opened
        without following a link or blocking on a FIFO, not empty, no larger than any torn tail can be, and
        whose name ends with the tag of this run, this offset and its bytes under this user's key
        (:func:`quarantine_tag`). Anything else at such a name (a planted file, another run's log whose id
        looks like a quarantine name, another user's file, a link, a FIFO, a directory, a device) is ignored.
        """
        from plantrail.ledger.stores.jsonl.seal import cache_key

        end = self._head.end
        prefix = f"{self.path}.quarantine.{end}."
        key = cache_key(create=False)
        if key is None:
            return None
        for name in sorted(glob.glob(glob.escape(prefix) + "*"), reverse=True):
            named = _QUARANTINE_TAIL.fullmatch(name[len(prefix) :])
            if named is None:
                continue
            damaged = read_regular(name, _MAX_QUARANTINE)
            if not damaged:
                continue
            sha256 = hashlib.sha256(damaged).hexdigest()
            if hmac.compare_digest(named.group(1), quarantine_tag(key, self.run, end, sha256)):
                return self._record_repair(end, len(damaged), sha256, name)
        return None

    def _record_repair(self, offset: int, length: int, sha256: str, quarantine: str) -> Record:
        data = LogRepaired(
            truncated_at=offset,
            bytes=length,
            sha256=sha256,
            kind="torn_tail",
            quarantine=os.path.basename(quarantine),
        )
        head = self._head
        line, record = _encode(
            PendingRecord(ts=self._clock(), plan_version=0, actor="runtime", data=data),
            run=self.run,
            seq=head.next_seq,
            prev=head.prev,
        )
        if not self._write([line], record):
            self._fdatasync()
        return record


def _may_create(name: str, allow_network_fs: bool) -> None:
    """Refuse a new log at ``name`` that exists, whose folder does not, or that is on a network filesystem;
    remove what an earlier create that crashed left beside it."""
    check_path(name)
    if os.path.lexists(name):
        raise error("LOG_EXISTS", f"{name} already exists; plantrail never overwrites a log", path=name)
    _refuse_network_fs(folder_of(name).st_dev, name, allow_network_fs)
    clean_stale_temps(name)


def _publish(name: str, blob: bytes, *, durable: bool) -> None:
    """Put a new log's bytes at ``name`` atomically: a fresh temporary name (created exclusive, no-follow),
    fsynced when ``durable``, linked into place (``link`` fails if the name exists), the folder fsynced."""
    tmp = f"{name}.tmp.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise os_error(exc, name) from None
    try:
        try:
            _write_all(fd, blob)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, name)
    except FileExistsError:
        raise error("LOG_EXISTS", f"{name} already exists; plantrail never overwrites a log", path=name) from None
    except OSError as exc:
        raise os_error(exc, name) from None
    finally:
        _unlink_quietly(tmp)
    if durable:
        fsync_dir(name)


def create_from_lines(path: str | os.PathLike[str], blob: bytes, *, allow_network_fs: bool = False) -> None:
    """Create a log holding exactly ``blob`` (checked lines, as ``plantrail copy`` writes them), atomically and
    durably, with the checks :meth:`JsonlStore.create` makes."""
    name = os.fspath(path)
    _may_create(name, allow_network_fs)
    _publish(name, blob, durable=True)


class _Session:
    """One turn under the writer lock (see :class:`ledger.stores.protocol.Session`), held while the session is
    entered."""

    def __init__(self, store: JsonlStore) -> None:
        self._store = store
        self._size = 0  # the log's size when the turn began
        self.rewound = False
        self.repaired: Record | None = None
        self._lines: list[bytes] = []
        self._last: Record | None = None  # the last staged record

    def __enter__(self) -> Self:
        self._size, self.rewound = self._store._lock()
        return self

    def __exit__(self, *exc: object) -> None:
        self._store._unlock()

    @property
    def head_seq(self) -> int:
        return self._store._head.next_seq - 1

    @property
    def head_hash(self) -> str:
        return self._store._head.prev

    def new_records(self) -> Iterator[Record]:
        store = self._store
        if self._size == store._head.end and not store._first_turn:
            return iter(())  # nothing was appended since our last turn: no need to read
        return self._read_new()

    def _read_new(self, locked: bool = True) -> Iterator[Record]:
        """Read and check what follows the head; repair or refuse a torn tail; check a watermark on the first turn.
        Without the writer lock (``locked`` False: a :class:`_Reading`), a final fragment is read again under a
        shared lock, as a reader does, before it is called torn."""
        store = self._store
        scan = store._scan()
        acked = store._acked if store._first_turn else None
        for record in scan if acked is None else _watch_acked(scan, acked):
            store._advance(scan)
            yield record
        store._advance(scan)
        if scan.tail is not None and not locked:  # a writer may be mid-write: wait for its lock, look again
            shared_lock_within(store._fd, store.path, "to tell a write in progress from a torn tail")
            try:
                scan = store._scan()
                for record in scan:
                    store._advance(scan)
                    yield record
                store._advance(scan)
            finally:
                fcntl.flock(store._fd, fcntl.LOCK_UN)
        if acked is not None:
            _check_watermark(store._head, acked, scan.tail)
        if scan.tail is not None:
            if not store._repair:
                raise error(
                    "TORN_TAIL",
                    f"{store.path} ends with {scan.tail.length} bytes of an incomplete record after line "
                    f"{scan.tail.line - 1} (a crash mid-write)",
                    line=scan.tail.line,
                    offset=scan.tail.offset,
                    path=store.path,
                )
            self.repaired = store._repair_tail(scan.tail)
        elif store._repair and store._first_turn:
            self.repaired = store._finish_repair()
        store._first_turn = False
        if self.repaired is not None:
            yield self.repaired

    def record(self, seq: int, hash: str) -> Record | None:
        return self._store._find(seq, hash)

    def durable(self, seq: int) -> bool:
        first = self._store._unsynced_from
        return first is None or seq < first

    def stage(self, record: PendingRecord) -> Record:
        last = self._last
        if last is None:
            head = self._store._head
            if head.next_seq == 0:  # cut back below its header while open: never write a headless log
                raise error(
                    "IO_ERROR",
                    f"log {self._store.path} lost its header line while open (cut back to {self._size} bytes); "
                    "reopen it",
                    path=self._store.path,
                )
            seq, prev = head.next_seq, head.prev
        else:
            seq, prev = last.seq + 1, last.h
        line, stored = _encode(record, run=self._store.run, seq=seq, prev=prev)
        self._lines.append(line)
        self._last = stored
        return stored

    def commit(self) -> bool:
        last = self._last
        if last is None:
            return True
        lines = self._lines
        self._lines, self._last = [], None
        return self._store._write(lines, last)


class _Reading(_Session):
    """A catch-up without the writer lock (see :meth:`JsonlStore.reading`): it reads, and stages nothing."""

    def __enter__(self) -> Self:
        store = self._store
        if store._repair or (store._first_turn and store._acked is not None):
            raise error("USAGE", "a writer that repairs or checks an acknowledged record catches up in a session")
        store._lock_thread()
        try:
            self._size, self.rewound = store._check_file()
        except BaseException:
            store._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._store._thread_lock.release()

    def new_records(self) -> Iterator[Record]:
        store = self._store
        if self._size == store._head.end and not store._first_turn:
            return iter(())
        return self._read_new(locked=False)

    def stage(self, record: PendingRecord) -> Record:
        raise error("USAGE", "a catch-up without the writer lock appends nothing: stage in a session")

    def commit(self) -> bool:
        raise error("USAGE", "a catch-up without the writer lock appends nothing: commit in a session")


def _write_all(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _read_header(fd: int, path: str) -> LogOpened:
    first = os.pread(fd, _HEADER_READ, 0)
    if not first:
        raise error("EMPTY_LOG", f"log {path} is empty: a log starts with its header line", path=path, offset=0)
    end = first.find(b"\n")
    if end < 0 and len(first) == _HEADER_READ:
        raise error("CORRUPT_LINE", f"line 1 of {path} is longer than any header line", line=1, offset=0, path=path)
    if end < 0:
        raise error("TORN_TAIL", f"log {path} has no complete header line", line=1, offset=0, path=path)
    record = decode(first[:end], line_no=1)
    if not isinstance(record.data, LogOpened) or record.seq != 0:
        raise error("CORRUPT_LINE", f"line 1 of {path} is not the log.opened header", line=1, path=path)
    return record.data


# --------------------------------------------------------------------------- repair


class RepairResult(NamedTuple):
    """What ``repair`` did: nothing (``record`` None), or the ``log.repaired`` record it appended, and what the
    bytes it moved to the quarantine file read as (each record as far as it goes)."""

    record: Record | None
    last_seq: int
    removed_temps: tuple[str, ...] = ()
    reads_as: tuple[TornRecord, ...] = ()


def _watch_acked(records: Iterable[Record], acked: tuple[int, str]) -> Iterator[Record]:
    """Pass records through; DATA_LOSS when the acknowledged seq is there with another hash."""
    seq, h = acked
    for record in records:
        if record.seq == seq and record.h != h:
            raise error(
                "DATA_LOSS",
                f"acknowledged seq {seq} has a different hash in the log (line {seq + 1})",
                seq=seq,
                line=seq + 1,
            )
        yield record


def _check_watermark(head: _Head, acked: tuple[int, str], tail: TornTail | None) -> None:
    """Refuse (DATA_LOSS) when the caller's last acknowledged record is not in the valid part of the log."""
    seq, h = acked
    last = head.next_seq - 1
    if seq > last:
        where = f"; {tail.length} torn bytes follow at offset {tail.offset}, not cut" if tail is not None else ""
        raise error(
            "DATA_LOSS",
            f"acknowledged seq {seq} is not in the log: its valid part ends at seq {last}{where}",
            seq=seq,
            expected=seq,
            actual=last,
            line=head.line_no,
            offset=head.end,
        )
    if seq == last and h != head.prev:
        raise error(
            "DATA_LOSS",
            f"acknowledged seq {seq} has a different hash in the log (line {seq + 1})",
            seq=seq,
            line=seq + 1,
        )


@strict
def repair(
    path: str | os.PathLike[str], *, acked: tuple[int, str] | None = None, clock: Callable[[], str] = utc_now
) -> RepairResult:
    """Repair a torn tail under the writer lock and remove a crashed create's temporary files.

    Anything that is not a torn tail is refused with NOT_REPAIRABLE (naming the damage); an acknowledged
    record that the repair would cut off is refused with DATA_LOSS; a database run, FILE_STORE_ONLY.
    """
    from plantrail.ledger.stores.targets import require_file

    require_file(os.fspath(path), "repair")
    store = JsonlStore.open(path, repair=True, acked=acked, clock=clock)
    try:
        with store.session() as session:
            try:
                for _ in session.new_records():
                    pass
            except LogDamaged as exc:
                if exc.code == "DATA_LOSS":
                    raise
                raise error(
                    "NOT_REPAIRABLE",
                    f"{exc.message} ({exc.code}); repair only cuts off a torn tail",
                    **{**exc.fields, "cause": exc.code},
                ) from None
            result = RepairResult(record=session.repaired, last_seq=session.head_seq)
    finally:
        store.close()
    if result.record is not None and isinstance(result.record.data, LogRepaired):
        from plantrail.ledger.stores.jsonl.torn import quarantine_records

        moved = os.path.join(os.path.dirname(os.fspath(path)), result.record.data.quarantine)
        result = result._replace(reads_as=quarantine_records(moved))
    return result._replace(removed_temps=tuple(clean_stale_temps(path)))
