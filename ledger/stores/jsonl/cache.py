"""The JSONL store's cache beside a log (snapshots and the version index): never a source of truth.

Every cache file is sealed and opened through :mod:`plantrail.ledger.stores.jsonl.seal`: a file this user's
plantrail did not write (another user, a planted symlink, FIFO or directory, an edit) reads as absent, and
a folder that is not a real directory owned by this user is never used.

``<log>.plantrail-cache/head.snap`` holds the folded state as of one record (and names by its SHA-256 the
idempotency index, in its own sealed file ``keys.snap``, which only writers read),
without copying its large texts: every string longer than
:data:`plantrail.projections.state_json.INLINE_MAX` that the log holds (step and criterion evidence, late
results' evidence and reasons, errors: whatever workers report) is a :class:`TextRef`, where the record that
carries it lies (offset, length, the record's hash) and where the text lies inside it. Loading reads each such
record at its offset and checks its framing and SHA-256 (a record that does not check out means the snapshot
is not used), so a snapshot stays small whatever the evidence and a read with it reads no more than one
without it. A large text the log does not hold verbatim (one the reducer derives) stays inline.
with where that record ends and the CRC-32 of every byte of the log before that point. It is keyed by the
seq and hash of the last record it covers: before use, the record ending at its offset must be intact (its
framing and SHA-256) and be that seq, the log's header hash must match, and so must the snapshot's own digest
and the reducer version. Any mismatch (another log, a repaired or rewritten log, another plantrail) and the
snapshot is ignored: the log is read from its first line. Only writers write snapshots.

Writers check more before they append: that every byte the snapshot covers is the byte a writer checked, so
a damaged line anywhere sends them back to a full read that refuses it with its line number; plantrail never
extends a damaged log, and a claimed idempotency duplicate is confirmed against the log's own bytes. Without
reading them when the snapshot recorded the log's :class:`Identity` (device, inode, size, write and change
times) with a file-system timestamp taken just before, the log still has that identity and the record is not
racy (the log's change time is before the timestamp: see :func:`_unchanged_since`); else by the CRC of every
byte the snapshot covers (about 20 ms per 50 MB). A writer records the identity only while its custody holds
(no change to the file but its own appends since it checked it: :class:`~plantrail.ledger.stores.jsonl.log.JsonlStore`).
Readers (status, resume, next, replay) take the cheaper check the snapshot is keyed by and say that they did
(:class:`plantrail.ledger.stores.jsonl.reads.ReadResult`); ``verify`` and ``resume --verify`` never read the cache
and check every line. Deleting the directory changes no answer.

The version index's three files are sealed each; its meta names its build by a random nonce, every entry
of versions.idx carries its own MAC over that nonce and itself, and every entry vouches for its blob in
versions.bin by a SHA-256 prefix, so files of different builds are never read together and a rebuild reads
one entry and one blob, not the files whole.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import hmac
import os
import secrets
import struct
import time
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, NamedTuple

import orjson

from plantrail.ledger.stores.jsonl.seal import CacheFolder, FileId, seal
from plantrail.ledger.vocabulary.keys import KeyEntry
from plantrail.ledger.vocabulary.payloads import Payload
from plantrail.projections.model import PlanState
from plantrail.projections.state_json import (
    INLINE_MAX,
    KEPT_FIELDS,
    REDUCER_VERSION,
    decode_orphans,
    decode_state,
    encode_kept,
    encode_state,
    without_kept,
)

__all__ = [
    "HISTORY_FORMAT",
    "SETTLE_FROM_BYTES",
    "HistoryEntry",
    "HistoryIndex",
    "HistoryWriter",
    "Identity",
    "KeptFile",
    "Position",
    "Saved",
    "Snapshot",
    "SnapshotSummary",
    "TextRef",
    "VersionStart",
    "cache_dir",
    "first_hash",
    "history_lock",
    "identity_of",
    "index_entry",
    "load_history",
    "load_snapshot",
    "load_summary",
    "prefix_crc",
    "read_history_entries",
    "read_version_start",
    "save_snapshot",
    "superseded_state",
    "texts_between",
    "version_start",
    "write_version_index",
]

FORMAT: Final = "plantrail-versions/5"  # the version index's format: each entry carries its own MAC and its end
SNAPSHOT_FORMAT: Final = "plantrail-snapshot/4"  # a snapshot's: large texts are references, kept members apart
_SNAPSHOT_KIND: Final = "snapshot"
_KEYS_KIND: Final = "keys"
_KEPT_KIND: Final = "snapshot.kept"
#: The file of a snapshot's kept members (:data:`~plantrail.projections.state_json.KEPT_FIELDS`), named in the
#: snapshot by its seal's tag (an HMAC-SHA256 under this user's key over its bytes).
KEPT_FILE: Final = "kept.snap"
_INDEX_KINDS: Final = ("versions.meta", "versions.idx", "versions.bin")
SUFFIX: Final = ".plantrail-cache"
_SCAN_BACK: Final = 64 * 1024


class Position(NamedTuple):
    """Just after one record of a log: the byte offset, the record's seq and hash, and the next line number."""

    offset: int
    seq: int
    hash: str
    line: int


class Identity(NamedTuple):
    """The log file as a writer saw it (``fstat``): its device, inode, size, and times of last write and change.
    Any write through the file system changes the change time (``utime`` too), which nobody can set."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


def identity_of(fd: int) -> Identity:
    """The open log's :class:`Identity` now."""
    st = os.fstat(fd)
    return Identity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class TextRef(NamedTuple):
    """Where a large text lies in the log: the line of the record carrying it (its offset, its length without
    the newline, the record's hash) and the path to the string in that line's JSON."""

    offset: int
    length: int
    hash: str
    path: tuple[str | int, ...]


class KeptFile(NamedTuple):
    """A snapshot's kept members (the state's parts that grow with its log, in their own sealed file) as the
    writer last read or wrote them: the members themselves (compared by identity: a state that did not change
    them still holds these very objects), the file's seal tag (hex), which file it was (:class:`FileId`: None when not
    known), and where the large texts of the members lie in the log."""

    members: tuple[object, ...]
    digest: str
    file: FileId | None
    texts: Mapping[str, TextRef]


class Snapshot(NamedTuple):
    """The state folded up to ``position``, the idempotency keys seen so far, the CRC-32 of the log's bytes
    before ``position.offset``, and where the state's large texts lie in the log (by the text itself)."""

    position: Position
    state: PlanState
    keys: Mapping[str, KeyEntry]
    crc: int
    texts: Mapping[str, TextRef] = {}
    keys_digest: str | None = None  # the SHA-256 of the keys.snap these keys were read from or written as
    #: The log as it stood when every byte before ``position.offset`` was known to match ``crc`` (saving: the
    #: writer's custody, recorded with a file-system timestamp; loading with ``check_prefix``: the custody the
    #: check established); None when there is no such moment (then the next writer reads every byte).
    identity: Identity | None = None
    kept: KeptFile | None = None  # the kept members' file this snapshot was read with or written as


def _strings(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str, tuple[str | int, ...]]]:
    """Every string longer than INLINE_MAX in decoded JSON, with its path."""
    if isinstance(value, str):
        if len(value) > INLINE_MAX:
            yield value, path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*path, i))


def _lines_between(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """The complete lines of the log's bytes [start, end) (``start`` at a line's start), with their offsets."""
    carry, at, read_at = b"", start, start
    while read_at < end:
        chunk = os.pread(fd, min(end - read_at, 8 << 20), read_at)
        if not chunk:
            return
        read_at += len(chunk)
        lines = (carry + chunk).split(b"\n")
        carry = lines.pop()
        for line in lines:
            yield at, line
            at += len(line) + 1


def texts_between(fd: int, start: int, end: int) -> dict[str, TextRef]:
    """Where each large text of the records in the log's bytes [start, end) lies (bytes a writer has checked).

    Only lines longer than INLINE_MAX can hold one, so the others are not decoded."""
    found: dict[str, TextRef] = {}
    for offset, line in _lines_between(fd, start, end):
        if len(line) <= INLINE_MAX:
            continue
        try:
            decoded = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        h = line[-66:-2].decode("ascii", "replace")
        for text, path in _strings(decoded, ()):
            found.setdefault(text, TextRef(offset, len(line), h, path))
    return found


def _record_at(fd: int, offset: int, length: int, h: str, before: int, *, rehash: bool = True) -> Any:
    """The decoded record whose line is [offset, offset + length) when it lies before ``before`` and is intact
    with hash ``h`` (its framing and SHA-256; without ``rehash`` its framing and recorded hash only, for bytes
    proven unchanged since a writer checked them); ValueError otherwise."""
    if offset < 0 or length < 73 or offset + length >= before:
        raise ValueError("a snapshot reference outside the part of the log it covers")
    start = max(offset - 1, 0)
    raw = os.pread(fd, length + 1 + (offset - start), start)
    line = raw[offset - start : -1]
    if raw[-1:] != b"\n" or (offset > 0 and raw[:1] != b"\n") or len(line) != length:
        raise ValueError("a snapshot reference not at a line of the log")
    if line[-72:-66] != b',"h":"' or line[-66:-2] != h.encode():
        raise ValueError("a snapshot reference to a record that changed")
    if rehash and hashlib.sha256(line[:-72] + b"}").hexdigest() != h:
        raise ValueError("a snapshot reference to a record that changed")
    return orjson.loads(line)


class _Reread:
    """Reads, when a :class:`Payload` of evidence is first needed, the record it comes from: through its own
    duplicate of the log's descriptor (the file the snapshot was checked against, whatever its path names
    now; closed once no text needs it), the record's framing and SHA-256 checked (the bytes are no longer
    under a writer's custody then), each record read once. A record that does not check out (the log was
    rewritten or cut under the snapshot) is a ValueError naming its offset."""

    def __init__(self, fd: int, before: int) -> None:
        self._fd = os.dup(fd)
        weakref.finalize(self, os.close, self._fd)
        self._before = before
        self._records: dict[int, Any] = {}

    def lazy(self, raw: Any) -> Payload:
        """The unread payload a snapshot's reference in evidence stands for (checked only for its shape now)."""
        offset, length, h, path = raw
        return Payload((int(offset), int(length), str(h), tuple(path)), self)

    def __call__(self, raw: tuple[Any, ...]) -> str:
        ref = TextRef(*raw)
        record = self._records.get(ref.offset)
        if record is None:
            try:
                record = _record_at(self._fd, ref.offset, ref.length, ref.hash, self._before)
            except ValueError as exc:
                raise ValueError(f"{exc} (evidence at byte offset {ref.offset})") from None
            self._records[ref.offset] = record
        value = record
        for step in ref.path:
            value = value[step]
        if not isinstance(value, str) or len(value) <= INLINE_MAX:
            raise ValueError(f"a snapshot reference to something other than a large text (byte offset {ref.offset})")
        return value


class _Filler:
    """Fills a snapshot's references from the log, each record read and checked once; notes what it filled."""

    def __init__(self, fd: int, before: int, *, rehash: bool = True) -> None:
        self._fd = fd
        self._before = before
        self._rehash = rehash
        self._records: dict[int, Any] = {}
        self.texts: dict[str, TextRef] = {}

    def __call__(self, raw: Any) -> str:
        offset, length, h, path = raw
        ref = TextRef(int(offset), int(length), str(h), tuple(path))
        record = self._records.get(ref.offset)
        if record is None:
            record = self._records[ref.offset] = _record_at(
                self._fd, ref.offset, ref.length, ref.hash, self._before, rehash=self._rehash
            )
        value = record
        for step in ref.path:
            value = value[step]
        if not isinstance(value, str) or len(value) <= INLINE_MAX:
            raise ValueError("a snapshot reference to something other than a large text")
        self.texts[value] = ref
        return value


def prefix_crc(fd: int, end: int, start: int = 0, crc: int = 0) -> int:
    """CRC-32 of the log's bytes [start, end), continuing ``crc`` (the CRC of the bytes before ``start``)."""
    while start < end:
        chunk = os.pread(fd, min(end - start, 8 << 20), start)
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        start += len(chunk)
    return crc


def cache_dir(log_path: str) -> str:
    """The sidecar directory of a log."""
    return log_path + SUFFIX


def first_hash(fd: int) -> str | None:
    """The header line's hash, read from its fixed-width suffix (None when the file has no complete line)."""
    head = os.pread(fd, 64 * 1024, 0)
    end = head.find(b"\n")
    return None if end < 72 else head[end - 66 : end - 2].decode("ascii", "replace")


def _line_ending_at(fd: int, offset: int) -> bytes | None:
    """The line whose newline is the byte before ``offset``, without it; None when there is none."""
    back = min(offset, _SCAN_BACK)
    while True:
        chunk = os.pread(fd, back, offset - back)
        if len(chunk) != back or not chunk.endswith(b"\n"):
            return None
        start = chunk.rfind(b"\n", 0, len(chunk) - 1)
        if start >= 0:
            return chunk[start + 1 : -1]
        if back == offset:
            return chunk[:-1]
        back = min(offset, back * 4)


def _holds(fd: int, position: Position) -> bool:
    """True when the log's line ending at ``position.offset`` is intact and is record ``position.seq``."""
    return _held(fd, position) is not None


def _held(fd: int, position: Position) -> dict[str, Any] | None:
    """The log's line ending at ``position.offset``, parsed, when it is intact and is record ``position.seq``."""
    line = _line_ending_at(fd, position.offset)
    if line is None or line[-72:-66] != b',"h":"':
        return None
    if hashlib.sha256(line[:-72] + b"}").hexdigest() != position.hash or line[-66:-2] != position.hash.encode():
        return None
    try:
        parsed = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) and parsed.get("seq") == position.seq else None


def _ends_with(fd: int, position: Position) -> bool:
    """True when the log's bytes just before ``position.offset`` end a record line with hash ``position.hash``
    (its suffix and newline only: for bytes proven unchanged since a writer checked that record)."""
    if position.offset < 74:
        return False
    tail = os.pread(fd, 73, position.offset - 73)
    return tail == b',"h":"' + position.hash.encode() + b'"}\n'


def _folder(log_path: str, *, create: bool = False) -> CacheFolder | None:
    return CacheFolder.open(cache_dir(log_path), create=create)


def _read_keys(folder: CacheFolder, digest: str | None) -> dict[str, KeyEntry] | None:
    """The idempotency index the snapshot names by ``digest`` (empty for None); None when it is not there."""
    if digest is None:
        return {}
    blob = folder.read("keys.snap", _KEYS_KIND)
    if blob is None or hashlib.sha256(blob).hexdigest() != digest:
        return None
    return {k: KeyEntry(*v) for k, v in orjson.loads(blob).items()}


class _Sealed(NamedTuple):
    """A snapshot's checked parts: where it ends, its encoded state, its meta (with the record it ends at as
    ``held``), its keys, the filler of its references, and the custody its check established (see
    :func:`load_snapshot`)."""

    position: Position
    state_line: bytes
    meta: dict[str, Any]
    keys: dict[str, KeyEntry]
    filler: _Filler
    custody: Identity | None
    kept_line: bytes
    kept_file: FileId | None


def _unchanged_since(meta: dict[str, Any], now: Identity, position: Position) -> bool:
    """True when the log is the file the snapshot's writer recorded, untouched since: the same device, inode,
    size (where the snapshot ends), write and change times, and the record not "racy" (the racy-git rule: the
    log's change time is strictly before the file-system timestamp the writer took just before recording it,
    so any write after the recording, in place or not, would have moved the change time)."""
    file = meta.get("file")
    if not isinstance(file, list) or len(file) != len(Identity._fields) + 1:
        return False
    return Identity(*file[:-1]) == now and now.size == position.offset and now.ctime_ns < file[-1]


def _prefix_checked(fd: int, position: Position, crc: object, stamp: tuple[int, int] | None) -> Identity | None:
    """Check the CRC of every byte before ``position.offset`` (ValueError when it differs) and return the
    custody that establishes: the log's identity taken before the read, when the read saw no write (the
    identity after it is the same) and that identity is not racy against ``stamp`` (a file-system timestamp
    taken before it, on the log's device: a write after the stamp gets a change time at or past it); else
    None."""
    before = identity_of(fd)
    if prefix_crc(fd, position.offset) != crc:
        raise ValueError("the log's bytes before the snapshot changed")
    settled = stamp is not None and stamp[1] == before.dev and before.ctime_ns < stamp[0]
    return before if settled and identity_of(fd) == before else None


def _sealed(log_path: str, fd: int, *, check_prefix: bool, with_keys: bool) -> _Sealed | None:
    """The snapshot's checked parts when it is sealed by this user's plantrail and checks out against the log,
    else None (see :func:`load_snapshot`)."""
    folder = _folder(log_path)
    if folder is None:
        return None
    stamp: tuple[int, int] | None = None
    with folder:
        blob = folder.read("head.snap", _SNAPSHOT_KIND)
        if blob is None:
            return None
        meta_line, state_line = blob.split(b"\n", 1)
        meta = orjson.loads(meta_line)
        if meta.get("format") != SNAPSHOT_FORMAT or meta.get("reducer") != REDUCER_VERSION:
            return None
        if hashlib.sha256(state_line).hexdigest() != meta.get("digest"):
            return None
        keys = _read_keys(folder, meta["keys"]) if with_keys else {}
        if keys is None:
            return None
        kept_file = folder.file_id(KEPT_FILE)  # before the read: a file replaced meanwhile is written again
        kept = folder.read_tagged(KEPT_FILE, _KEPT_KIND)
        if kept is None or kept[1].hex() != meta.get("kept"):  # named by its seal's tag: no second hash of it
            return None
        kept_line = kept[0]
        position = Position(*meta["position"])
        now = identity_of(fd) if check_prefix else None
        trusted = now is not None and _unchanged_since(meta, now, position)
        if check_prefix and not trusted:
            stamp = folder.stamp()  # before the identity the read starts from: says whether it could miss a write
    if meta.get("header") != first_hash(fd):
        return None
    # A trusted log holds the bytes the snapshot's writer checked: its last record need not be read and hashed
    # again (with large evidence that is a 1 MiB line), only found where the snapshot ends.
    held = ({} if _ends_with(fd, position) else None) if trusted else _held(fd, position)
    if held is None:
        return None
    custody = now if trusted else None
    if check_prefix and not trusted:
        custody = _prefix_checked(fd, position, meta.get("crc"), stamp)
    filler = _Filler(fd, position.offset, rehash=not trusted)
    return _Sealed(position, state_line, meta | {"held": held}, keys, filler, custody, kept_line, kept_file)


def load_snapshot(
    log_path: str, fd: int, *, check_prefix: bool = False, with_keys: bool = False, lazy: bool = False
) -> Snapshot | None:
    """The log's snapshot if it is sealed by this user's plantrail and checks out against the log (and, with
    ``check_prefix``, against every byte it covers), else None. Its idempotency index is read only
    ``with_keys`` (writers need it, readers do not); without, ``keys`` is empty. With ``lazy`` (writers, whose
    rules never read evidence) the references in evidence are not read: each is a
    :class:`~plantrail.ledger.vocabulary.payloads.Payload`, read and checked by hash from the log when first needed.

    ``check_prefix`` (writers) proves that the bytes the snapshot covers are the ones its writer checked:
    without reading them when the log is the very file the snapshot recorded, unchanged and not racy (see
    :func:`_unchanged_since`; its references are then not re-hashed either), else by the CRC of every byte.
    The snapshot's ``identity`` is then the custody established (None when there is none to hand on)."""
    try:
        sealed = _sealed(log_path, fd, check_prefix=check_prefix, with_keys=with_keys)
        if sealed is None:
            return None
        later = _Reread(fd, sealed.position.offset) if lazy else None
        state = decode_state(sealed.state_line, sealed.filler, None if later is None else later.lazy, sealed.kept_line)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    position, meta = sealed.position, sealed.meta
    if state.last_seq != position.seq or state.head != position.hash:
        return None
    return Snapshot(
        position,
        state,
        sealed.keys,
        meta["crc"],
        sealed.filler.texts,
        meta["keys"] if with_keys else None,
        sealed.custody,
        KeptFile(_kept_members(state), meta["kept"], sealed.kept_file, sealed.filler.texts),
    )


class SnapshotSummary(NamedTuple):
    """What a listing of many runs needs from a snapshot, read without decoding the whole state: the run, goal,
    version, outcome and number of late results of its state, and the time of the record it ends at."""

    position: Position
    run: str | None
    goal: str | None
    version: int
    outcome: str | None
    orphans: int
    last_ts: str


@functools.cache
def _listed() -> Callable[[bytes], Any]:
    """A decoder of the top-level fields of an encoded state a listing reads (every other field is skipped,
    not decoded); msgspec is imported on first use (``status`` never needs it)."""
    import msgspec

    goal = msgspec.defstruct("Goal", [("goal", str | dict[str, Any])])
    listed = msgspec.defstruct(
        "Listed",
        [
            ("run", str | None),
            ("plan", goal | None),
            ("version", int),
            ("outcome", str | None),
            ("last_seq", int),
            ("head", str | None),
        ],
    )
    decode: Callable[[bytes], Any] = msgspec.json.Decoder(listed).decode
    return decode


def load_summary(log_path: str, fd: int) -> SnapshotSummary | None:
    """:func:`load_snapshot`'s checks, then only what :class:`SnapshotSummary` holds (the rest of the state is
    not decoded); None whenever :func:`load_snapshot` would give None."""
    try:
        sealed = _sealed(log_path, fd, check_prefix=False, with_keys=False)
        if sealed is None:
            return None
        position, state_line, meta, filler = sealed.position, sealed.state_line, sealed.meta, sealed.filler
        d = _listed()(state_line)
        late = meta.get("orphans")
        if d.last_seq != position.seq or d.head != position.hash or not isinstance(meta["held"].get("ts"), str):
            return None
        if type(late) is not int:
            return None
        goal = None if d.plan is None else d.plan.goal
        if isinstance(goal, dict):  # a long goal is a reference into the log
            goal = decode_state(state_line, filler).goal
        return SnapshotSummary(position, d.run, goal, d.version, d.outcome, late, meta["held"]["ts"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):  # msgspec's DecodeError is a ValueError
        return None


#: From this many covered bytes a writer's checkpoint waits (at most :data:`_SETTLE_WAIT` seconds) for the
#: file-system clock to tick past the log's last change, so that its snapshot is not racy: the next writer's
#: CRC of 8 MiB costs more than the wait (a tick is 1-10 ms on Linux); below, a racy snapshot costs little.
SETTLE_FROM_BYTES: Final = 8 << 20
_SETTLE_WAIT: Final = 0.012


def _custody_record(folder: CacheFolder, fd: int, snapshot: Snapshot) -> list[int] | None:
    """What the snapshot records of the log for the next writer (see :func:`_unchanged_since`): the log's
    identity and a file-system timestamp taken just before it, when the writer's custody still holds (the log
    is as the writer last knew it, and ends where the snapshot does); None otherwise. A racy record is written
    like any other (the next writer does not trust it); a writer that covers :data:`SETTLE_FROM_BYTES` or
    more first waits up to :data:`_SETTLE_WAIT` for the clock to tick past the log's last change."""
    custody = snapshot.identity
    if custody is None or custody.size != snapshot.position.offset:
        return None
    deadline = time.monotonic() + (_SETTLE_WAIT if custody.size >= SETTLE_FROM_BYTES else 0.0)
    while True:
        stamp = folder.stamp()
        if stamp is None:
            return None
        now = identity_of(fd)
        if now != custody or stamp[1] != now.dev:
            return None
        if now.ctime_ns < stamp[0] or time.monotonic() >= deadline:
            return [*now, stamp[0]]  # racy or not: the reader says
        time.sleep(0.0005)


class Saved(NamedTuple):
    """What a written snapshot leaves for the next one: the references its state's large texts got (keyed by
    the state's own strings), the digest of the idempotency index file it names, and its kept members' file."""

    texts: dict[str, TextRef]
    keys_digest: str | None
    kept: KeptFile | None = None


def _kept_members(state: PlanState) -> tuple[object, ...]:
    return tuple(getattr(state, name) for name in KEPT_FIELDS)


def _unchanged_kept(folder: CacheFolder, state: PlanState, kept: KeptFile | None) -> bool:
    """True when the state still holds the very kept members ``kept`` was read or written with, and the file
    under :data:`KEPT_FILE` is still the one that held them (nobody replaced it since): then it need not be
    encoded or written again."""
    if kept is None or kept.file is None:
        return False
    if any(now is not then for now, then in zip(_kept_members(state), kept.members, strict=True)):
        return False
    return folder.file_id(KEPT_FILE) == kept.file


def save_snapshot(log_path: str, fd: int, snapshot: Snapshot) -> Saved:
    """Seal and write the snapshot atomically; a cache that cannot be written (or must not be: see
    :mod:`plantrail.ledger.stores.jsonl.seal`) is simply skipped. Only writers call this.

    The idempotency index goes to its own file, ``keys.snap``, written only when it differs from the one
    ``snapshot.keys_digest`` names (so an append without a key does not rewrite it), and before the
    snapshot that names it by its SHA-256. So do the state's kept members (the late results, the cut-off
    attempts and the adoption seqs, which grow with the log), to :data:`KEPT_FILE`, named by its seal's tag:
    encoded and written only when the state no longer holds the members ``snapshot.kept`` was read or written
    with, or the file is no longer that one."""
    used: dict[str, TextRef] = {}
    header = first_hash(fd)
    if header is None:
        return Saved(used, None)
    texts = snapshot.texts

    def referring(into: dict[str, TextRef]) -> Callable[[str], list[object] | None]:
        def refer(text: str) -> list[object] | None:
            ref = texts.get(text)
            if ref is None:
                return None
            into[text] = ref
            return list(ref)

        return refer

    state = snapshot.state
    state_line = encode_state(without_kept(state), referring(used))
    keys_blob = orjson.dumps({k: list(v) for k, v in snapshot.keys.items()}) if snapshot.keys else None
    keys_digest = None if keys_blob is None else hashlib.sha256(keys_blob).hexdigest()
    meta = {
        "format": SNAPSHOT_FORMAT,
        "reducer": REDUCER_VERSION,
        "header": header,
        "position": list(snapshot.position),
        "crc": snapshot.crc,
        "digest": hashlib.sha256(state_line).hexdigest(),
        "keys": keys_digest,
        "orphans": len(state.orphans),
    }
    folder = _folder(log_path, create=True)
    if folder is None:
        return Saved(used, None)
    with folder:
        kept = snapshot.kept
        if kept is None or not _unchanged_kept(folder, state, kept):
            kept_texts: dict[str, TextRef] = {}
            written = folder.write_tagged(KEPT_FILE, _KEPT_KIND, encode_kept(state, referring(kept_texts)))
            if written is None:
                return Saved(used, None)
            kept = KeptFile(_kept_members(state), written[1].hex(), written[0], kept_texts)
        used.update(kept.texts)  # the references the kept file holds: a later one may need them again
        meta["kept"] = kept.digest
        file = _custody_record(folder, fd, snapshot)
        if file is not None:
            meta["file"] = file
        changed = keys_blob is not None and keys_digest != snapshot.keys_digest
        if changed and keys_blob is not None and not folder.write("keys.snap", _KEYS_KIND, keys_blob):
            return Saved(used, None)
        if not folder.write("head.snap", _SNAPSHOT_KIND, orjson.dumps(meta) + b"\n" + state_line):
            return Saved(used, None, kept)
    return Saved(used, keys_digest, kept)


# --------------------------------------------------------------------------- the version index
#
# versions.meta (JSON: format, reducer, the log's header hash, the orphans known when it was built, and the
# build's random nonce), versions.idx (one fixed-width entry per plan version: where its adopting record ends
# in the log, that record's seq and hash, where its state lies in versions.bin with a SHA-256 prefix of it,
# and the entry's own MAC under this user's key over the build's nonce and the entry) and versions.bin (each
# version's state right after its adopting record, zlib-compressed, without the orphans: those come from the
# meta, by seq), and each superseded version's state as it stood when superseded (its end). Rebuilding a
# superseded version V is then the sealed meta, V's and V+1's entries (V+1's names the superseding record,
# which must still be in the log) and V's end blob, with no record read at all; the active version is one
# small sealed read, one entry and one blob read and
# checked, one small decode, and a fold of V's own records: neither versions.idx (1.2 MB at 10^6 events) nor
# versions.bin (50 MB) is read whole. An entry of another build (another nonce), moved (its version is in
# it) or edited fails its MAC.

# version, seq, log offset, next line, hash, start blob (offset, length, SHA-256 prefix), end blob (the same;
# length 0 while the version is active)
_ENTRY = struct.Struct("<QQQQ32sQI16sQI16s")
_ENTRY_MAC: Final = 16  # bytes of HMAC-SHA256 kept per entry
_SIGNED_ENTRY: Final = _ENTRY.size + _ENTRY_MAC
_ENTRY_KIND: Final = "versions.entry"


class VersionStart(NamedTuple):
    """Where plan version ``version`` begins: just after its adopting record, and the state there."""

    version: int
    position: Position
    state: PlanState


#: Where a sealed file's payload begins (its magic and its tag come first).
_SEALED_AT: Final = len(seal(bytes(32), "", b""))


def _entry_mac(folder: CacheFolder, nonce: bytes, entry: bytes) -> bytes:
    return folder.mac(_ENTRY_KIND, nonce + entry)[:_ENTRY_MAC]


def _read_entry(folder: CacheFolder, nonce: bytes, version: int) -> bytes:
    """Version ``version``'s entry of versions.idx when its MAC is this build's (ValueError otherwise); the
    rest of the file is not read."""
    idx = folder.open_file(_INDEX_KINDS[1], create=False)
    if idx is None:
        raise ValueError("no versions.idx")
    try:
        signed = _read_at(idx, _SEALED_AT + (version - 1) * _SIGNED_ENTRY, _SIGNED_ENTRY)
    finally:
        os.close(idx)
    entry, mac = signed[: _ENTRY.size], signed[_ENTRY.size :]
    if len(signed) != _SIGNED_ENTRY or not hmac.compare_digest(mac, _entry_mac(folder, nonce, entry)):
        raise ValueError("a version entry that is not this build's")
    return entry


def _version_blob(folder: CacheFolder, at: int, length: int, digest: bytes) -> bytes:
    """The blob of versions.bin's payload at [at, at + length) when it matches its entry's ``digest``."""
    data = folder.open_file(_INDEX_KINDS[2], create=False)
    if data is None:
        raise ValueError("no versions.bin")
    try:
        raw = _read_at(data, _SEALED_AT + at, length)
    finally:
        os.close(data)
    if len(raw) != length or hashlib.sha256(raw).digest()[: len(digest)] != digest:
        raise ValueError("a version blob does not match its entry")
    return raw


def _index_meta(folder: CacheFolder, fd: int) -> dict[str, Any] | None:
    """The version index's sealed meta when it is of this format and reducer and of this very log (its header's
    hash); None otherwise."""
    blob = folder.read(_INDEX_KINDS[0], _INDEX_KINDS[0])
    if blob is None:
        return None
    meta = orjson.loads(blob)
    if (
        not isinstance(meta, dict)
        or meta.get("format") != FORMAT
        or meta.get("reducer") != REDUCER_VERSION
        or meta.get("header") != first_hash(fd)
    ):
        return None
    return meta


def version_start(log_path: str, fd: int, version: int) -> VersionStart | None:
    """Version ``version``'s start from the index, checked against the log; None when there is no usable one."""
    folder = _folder(log_path)
    if folder is None or version < 1:
        return None
    try:
        with folder:
            meta = _index_meta(folder, fd)
            if meta is None or not 1 <= version <= meta["versions"]:
                return None
            entry = _read_entry(folder, bytes.fromhex(meta["build"]), version)
            number, seq, offset, line, raw_hash, blob_at, blob_len, digest = _ENTRY.unpack(entry)[:8]
            blob = _version_blob(folder, blob_at, blob_len, digest)
        position = Position(offset, seq, raw_hash.hex(), line)
        if number != version or not _holds(fd, position):
            return None
        state = decode_state(zlib.decompress(blob))
        orphans = decode_orphans(meta["orphans"], up_to=seq)
    except (OSError, ValueError, KeyError, TypeError, zlib.error, struct.error):
        return None
    return VersionStart(version, position, state._replace(orphans=orphans))


def superseded_state(log_path: str, fd: int, version: int) -> tuple[PlanState, int] | None:
    """Version ``version`` as it stood when superseded and the seq of the record that superseded it, from the
    index alone (no record of the version is read: like a snapshot, it is keyed by the superseding record,
    which must still be intact in the log); None for the active version or without a usable index."""
    folder = _folder(log_path)
    if folder is None or version < 1:
        return None
    try:
        with folder:
            meta = _index_meta(folder, fd)
            if meta is None or not 1 <= version < meta["versions"]:
                return None
            nonce = bytes.fromhex(meta["build"])
            ours, nxt = (_ENTRY.unpack(_read_entry(folder, nonce, v)) for v in (version, version + 1))
            if ours[0] != version or nxt[0] != version + 1 or ours[9] == 0:
                return None
            blob = _version_blob(folder, ours[8], ours[9], ours[10])
        superseding = Position(nxt[2], nxt[1], nxt[4].hex(), nxt[3])
        if not _holds(fd, superseding):
            return None
        state = decode_state(zlib.decompress(blob))
        orphans = decode_orphans(meta["orphans"], up_to=superseding.seq)
    except (OSError, ValueError, KeyError, TypeError, zlib.error, struct.error):
        return None
    return state._replace(orphans=orphans), superseding.seq


def write_version_index(log_path: str, header: str, entries: list[bytes], blobs: list[bytes], state: PlanState) -> None:
    """Write the version index of a log whose fold gave ``state`` (best effort: the cache is optional)."""
    folder = _folder(log_path, create=True)
    if folder is None:
        return
    nonce = secrets.token_bytes(16)
    meta = {
        "format": FORMAT,
        "reducer": REDUCER_VERSION,
        "header": header,
        "orphans": orjson.loads(encode_state(state))["orphans"],
        "versions": len(entries),
        "build": nonce.hex(),
    }
    with folder:
        idx = b"".join(entry + _entry_mac(folder, nonce, entry) for entry in entries)
        # the meta last: until it names their build, a new idx and bin are not believed with an old meta
        for name, data in zip(_INDEX_KINDS[::-1], (b"".join(blobs), idx, orjson.dumps(meta)), strict=True):
            if not folder.write(name, name, data):
                return


def _state_blob(state: PlanState) -> bytes:
    return zlib.compress(encode_state(state._replace(orphans=())), 1)


def index_entry(state: PlanState, where: Position, at: int, end: PlanState | None = None) -> tuple[bytes, bytes]:
    """The index entry and blobs of the version ``state`` adopted, by the record ending at ``where``, with its
    state as it stood when superseded (``end``; None while it is active); ``at`` is where the blobs will lie
    in versions.bin (the start blob, then the end blob)."""
    start = _state_blob(state)
    last = b"" if end is None else _state_blob(end)
    start_digest = hashlib.sha256(start).digest()[:16]
    end_digest = hashlib.sha256(last).digest()[:16] if last else bytes(16)
    entry = _ENTRY.pack(
        state.version,
        where.seq,
        where.offset,
        where.line,
        bytes.fromhex(where.hash),
        at,
        len(start),
        start_digest,
        at + len(start),
        len(last),
        end_digest,
    )
    return entry, start + last


# --------------------------------------------------------------------------- the history index
#
# history.meta (sealed, like every cache file: format, reducer, the log's header hash, the run, how many
# versions and bytes of the two other files count, the SHA-256 of history.idx's counted bytes, and the
# position the index covers), history.idx (one fixed-width entry per plan version: its number, the seq of
# its adopting record, where that record ends in the log and its hash, and where two blobs lie in
# history.bin with a SHA-256 prefix of each) and history.bin (per version, zlib-compressed: its adoption
# record with the verdict seqs of the criteria at the end of the version before it; and the state just after
# its adopting record, without the late results). The sealed meta vouches for the idx (its hash), and the idx
# for every blob (their hashes), so nothing in the three files is believed unless this user's plantrail
# wrote it. The two data files only grow: an update writes past what the meta counts, then replaces the
# meta, so a reader never sees a half-written entry. ``versions``, ``why`` and ``diff`` read one entry per
# version they show, and fold at most one version's own records, instead of folding the log; an update
# folds only the active version's records and what was appended since. Every file is opened through
# :class:`~plantrail.ledger.stores.jsonl.seal.CacheFolder` (no link followed, no FIFO waited on, only files of ours).

HISTORY_FORMAT: Final = "plantrail-history/2"
_HISTORY_KIND: Final = "history-meta"
_HISTORY_NAMES: Final = ("history.meta", "history.idx", "history.bin", "history.lock")
_BLOB_DIGEST: Final = 16  # bytes of SHA-256 kept per blob
# version, adopting seq, summary blob (offset, length, digest), start-state blob (offset, length, digest),
# where the adopting record ends in the log, the next line number, the adopting record's hash
_HISTORY_ENTRY = struct.Struct(f"<QQQI{_BLOB_DIGEST}sQI{_BLOB_DIGEST}sQQ32s")
#: No history index is read past this size (a 10^6-event log with ~14,000 versions has ~1.3 MB of entries).
_MAX_HISTORY_IDX: Final = 256 << 20


class HistoryIndex(NamedTuple):
    """A checked history index: ``versions`` entries (their bytes, vouched for by the sealed meta), covering the
    log up to ``covered``."""

    run: str
    versions: int
    covered: Position
    sizes: tuple[int, int]  # bytes of history.idx and history.bin that count
    entries: bytes  # history.idx's counted bytes, as checked against the meta


class HistoryEntry(NamedTuple):
    """One version's entry: where it starts in the log (just after its adopting record), its summary blob
    (JSON) and where its start state lies (offset, length, digest)."""

    start: Position
    summary: bytes
    state_blob: tuple[int, int, bytes]


def _read_at(fd: int, at: int, length: int) -> bytes:
    parts: list[bytes] = []
    while length > 0:
        chunk = os.pread(fd, length, at)
        if not chunk:
            break
        parts.append(chunk)
        at += len(chunk)
        length -= len(chunk)
    return b"".join(parts)


def load_history(log_path: str, fd: int) -> HistoryIndex | None:
    """The log's history index when its sealed meta checks out against the log (the record it covers up to is
    intact and is that seq, the header hash matches) and history.idx is the one the meta vouches for; else
    None."""
    folder = _folder(log_path)
    if folder is None:
        return None
    with folder:
        payload = folder.read(_HISTORY_NAMES[0], _HISTORY_KIND, 1 << 20)
        if payload is None:
            return None
        try:
            meta = orjson.loads(payload)
            if meta.get("format") != HISTORY_FORMAT or meta.get("reducer") != REDUCER_VERSION:
                return None
            if meta.get("header") != first_hash(fd):
                return None
            versions, sizes = meta["versions"], (int(meta["sizes"][0]), int(meta["sizes"][1]))
            if sizes[0] != versions * _HISTORY_ENTRY.size or sizes[0] > _MAX_HISTORY_IDX:
                return None
            idx = folder.open_file(_HISTORY_NAMES[1], create=False)
            if idx is None:
                return None
            try:
                entries = _read_at(idx, 0, sizes[0])
            finally:
                os.close(idx)
            if len(entries) != sizes[0] or hashlib.sha256(entries).hexdigest() != meta["idx_sha256"]:
                return None
            index = HistoryIndex(meta["run"], versions, Position(*meta["covered"]), sizes, entries)
            if not _holds(fd, index.covered):
                return None
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
    return index


def _blob(data: int, at: int, length: int, digest: bytes) -> bytes:
    raw = _read_at(data, at, length)
    if len(raw) != length or hashlib.sha256(raw).digest()[:_BLOB_DIGEST] != digest:
        raise ValueError("a history blob does not match its digest")
    return zlib.decompress(raw)


def read_history_entries(log_path: str, index: HistoryIndex, first: int, last: int) -> list[HistoryEntry] | None:
    """The entries of versions ``first`` to ``last`` (inclusive), None when the files do not hold what the meta
    vouches for (a blob that fails its digest, an entry out of place)."""
    folder = _folder(log_path)
    if folder is None or not 1 <= first <= last <= index.versions:
        return None
    found: list[HistoryEntry] = []
    with folder:
        data = folder.open_file(_HISTORY_NAMES[2], create=False)
        if data is None:
            return None
        try:
            raw = index.entries[(first - 1) * _HISTORY_ENTRY.size : last * _HISTORY_ENTRY.size]
            for i, fields in enumerate(_HISTORY_ENTRY.iter_unpack(raw)):
                number, seq, at, length, digest, state_at, state_len, state_digest, offset, line, h = fields
                if number != first + i or max(at + length, state_at + state_len) > index.sizes[1]:
                    return None
                start = Position(offset, seq, h.hex(), line)
                found.append(HistoryEntry(start, _blob(data, at, length, digest), (state_at, state_len, state_digest)))
        except (OSError, ValueError, struct.error, zlib.error):
            return None
        finally:
            os.close(data)
    return found if len(found) == last - first + 1 else None


def read_version_start(log_path: str, fd: int, entry: HistoryEntry) -> bytes | None:
    """The encoded state at the start of ``entry``'s version when the log's record there is still the one the
    entry names (else, or when the blob cannot be read back, None)."""
    if not _holds(fd, entry.start):
        return None
    folder = _folder(log_path)
    if folder is None:
        return None
    with folder:
        data = folder.open_file(_HISTORY_NAMES[2], create=False)
        if data is None:
            return None
        try:
            return _blob(data, *entry.state_blob)
        except (OSError, ValueError, zlib.error):
            return None
        finally:
            os.close(data)


class HistoryWriter:
    """Extends (or starts) a log's history index (under :func:`history_lock`): entries are written past what
    the meta counts, and :meth:`commit` replaces the sealed meta. Best effort: a cache that cannot be written
    (or must not be: see :class:`~plantrail.ledger.stores.jsonl.seal.CacheFolder`) is skipped."""

    def __init__(self, log_path: str, base: HistoryIndex | None) -> None:
        self._folder = _folder(log_path, create=True)
        self._ok = self._folder is not None
        self._fds: list[int] = []
        sizes = base.sizes if base is not None else (0, 0)
        self._ends = list(sizes)
        self._idx_hash = hashlib.sha256(base.entries if base is not None else b"")
        self.versions = base.versions if base is not None else 0
        if self._folder is None:
            return
        for name, size in zip(_HISTORY_NAMES[1:3], sizes, strict=True):
            fd = self._folder.open_file(name, create=True)
            if fd is None:
                self._ok = False
                return
            self._fds.append(fd)
            try:
                os.ftruncate(fd, size)
            except OSError:
                self._ok = False

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _append(self, which: int, blob: bytes) -> int:
        at = self._ends[which]
        view = memoryview(blob)
        while view:
            view = view[os.pwrite(self._fds[which], view, at + len(blob) - len(view)) :]
        self._ends[which] += len(blob)
        return at

    def _put(self, blob: bytes) -> tuple[int, int, bytes]:
        packed = zlib.compress(blob, 1)
        at = self._append(1, packed)
        return at, len(packed), hashlib.sha256(packed).digest()[:_BLOB_DIGEST]

    def add(self, version: int, start: Position, summary: bytes, state: bytes) -> None:
        """Append version ``version``'s entry: it starts at ``start`` (just after its adopting record) with the
        encoded ``state``; ``summary`` is its adoption record (JSON)."""
        if not self._ok:
            return
        try:
            if version != self.versions + 1:
                raise OSError("history entries go in version order")
            blobs = (*self._put(summary), *self._put(state))
            digest = bytes.fromhex(start.hash)
            entry = _HISTORY_ENTRY.pack(version, start.seq, *blobs, start.offset, start.line, digest)
            self._append(0, entry)
            self._idx_hash.update(entry)
            self.versions = version
        except (OSError, ValueError, struct.error):
            self._ok = False

    def commit(self, header: str, run: str, covered: Position) -> None:
        """Replace the sealed meta: the new entries now count, and the index covers the log up to ``covered``."""
        if not self._ok or self._folder is None:
            return
        meta = {
            "format": HISTORY_FORMAT,
            "reducer": REDUCER_VERSION,
            "header": header,
            "run": run,
            "versions": self.versions,
            "covered": list(covered),
            "sizes": self._ends,
            "idx_sha256": self._idx_hash.hexdigest(),
        }
        self._folder.write(_HISTORY_NAMES[0], _HISTORY_KIND, orjson.dumps(meta))

    def close(self) -> None:
        """Release the files."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        if self._folder is not None:
            self._folder.close()


@contextlib.contextmanager
def history_lock(log_path: str) -> Iterator[None]:
    """Hold the lock that one updater of a log's history index takes (nothing when it cannot be taken safely:
    the update then races harmlessly with another, each writing past what the sealed meta counts)."""
    folder = _folder(log_path, create=True)
    opened = None if folder is None else folder.open_file(_HISTORY_NAMES[3], create=True)
    lock = -1 if opened is None else opened
    if folder is not None:
        folder.close()
    try:
        if lock >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        if lock >= 0:
            os.close(lock)
