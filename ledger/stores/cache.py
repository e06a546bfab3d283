"""The JSONL store's cache beside a log (snapshots and the version index): never a source of truth.

Every cache file is sealed and opened through :mod:`plantrail.ledger.stores.seal`: a file this user's
plantrail did not write (another user, a planted symlink, FIFO or directory, an edit) reads as absent, and
a folder that is not a real directory owned by this user is never used.

``<log>.plantrail-cache/head.snap`` holds the folded state (and the idempotency index) as of one record,
with where that record ends and the CRC-32 of every byte of the log before that point. It is keyed by the
seq and hash of the last record it covers: before use, the record ending at its offset must be intact (its
framing and SHA-256) and be that seq, the log's header hash must match, and so must the snapshot's own digest
and the reducer version. Any mismatch (another log, a repaired or rewritten log, another plantrail) and the
snapshot is ignored: the log is read from its first line. Only writers write snapshots.

Writers check more before they append: the CRC of every byte the snapshot covers (about 20 ms per 50 MB), so
a damaged line anywhere sends them back to a full read that refuses it with its line number; plantrail never
extends a damaged log, and a claimed idempotency duplicate is confirmed against the log's own bytes.
Readers (status, resume, next, replay) take the cheaper check the snapshot is keyed by and say that they did
(:class:`plantrail.ledger.stores.reads.ReadResult`); ``verify`` and ``resume --verify`` never read the cache
and check every line. Deleting the directory changes no answer.

The version index's three files are sealed each, and its meta holds the SHA-256 of the other two, so files
of different builds are never read together.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Mapping
from typing import Final, NamedTuple

import orjson

from plantrail.ledger.store import KeyEntry
from plantrail.ledger.stores.seal import CacheFolder
from plantrail.projections.model import PlanState
from plantrail.projections.snapshot import REDUCER_VERSION, decode_orphans, decode_state, encode_state

__all__ = [
    "Position",
    "Snapshot",
    "VersionStart",
    "cache_dir",
    "first_hash",
    "index_entry",
    "load_snapshot",
    "prefix_crc",
    "save_snapshot",
    "version_start",
    "write_version_index",
]

FORMAT: Final = "plantrail-snapshot/2"
_SNAPSHOT_KIND: Final = "snapshot"
_INDEX_KINDS: Final = ("versions.meta", "versions.idx", "versions.bin")
SUFFIX: Final = ".plantrail-cache"
_SCAN_BACK: Final = 64 * 1024


class Position(NamedTuple):
    """Just after one record of a log: the byte offset, the record's seq and hash, and the next line number."""

    offset: int
    seq: int
    hash: str
    line: int


class Snapshot(NamedTuple):
    """The state folded up to ``position``, the idempotency keys seen so far, and the CRC-32 of the log's
    bytes before ``position.offset``."""

    position: Position
    state: PlanState
    keys: Mapping[str, KeyEntry]
    crc: int


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
    line = _line_ending_at(fd, position.offset)
    if line is None or line[-72:-66] != b',"h":"':
        return False
    if hashlib.sha256(line[:-72] + b"}").hexdigest() != position.hash or line[-66:-2] != position.hash.encode():
        return False
    try:
        return bool(orjson.loads(line).get("seq") == position.seq)
    except (orjson.JSONDecodeError, AttributeError):
        return False


def _folder(log_path: str, *, create: bool = False) -> CacheFolder | None:
    return CacheFolder.open(cache_dir(log_path), create=create)


def load_snapshot(log_path: str, fd: int, *, check_prefix: bool = False) -> Snapshot | None:
    """The log's snapshot if it is sealed by this user's plantrail and checks out against the log (and, with
    ``check_prefix``, against the CRC of every byte it covers), else None."""
    folder = _folder(log_path)
    if folder is None:
        return None
    try:
        with folder:
            blob = folder.read("head.snap", _SNAPSHOT_KIND)
        if blob is None:
            return None
        meta_line, state_line, keys_line = blob.split(b"\n", 2)
        meta = orjson.loads(meta_line)
        if meta.get("format") != FORMAT or meta.get("reducer") != REDUCER_VERSION:
            return None
        if hashlib.sha256(state_line + b"\n" + keys_line).hexdigest() != meta.get("digest"):
            return None
        position = Position(*meta["position"])
        if meta.get("header") != first_hash(fd) or not _holds(fd, position):
            return None
        if check_prefix and prefix_crc(fd, position.offset) != meta.get("crc"):
            return None
        state = decode_state(state_line)
        keys = {k: KeyEntry(*v) for k, v in orjson.loads(keys_line).items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if state.last_seq != position.seq or state.head != position.hash:
        return None
    return Snapshot(position, state, keys, meta["crc"])


def save_snapshot(log_path: str, fd: int, snapshot: Snapshot) -> None:
    """Seal and write the snapshot atomically; a cache that cannot be written (or must not be: see
    :mod:`plantrail.ledger.stores.seal`) is simply skipped. Only writers call this."""
    header = first_hash(fd)
    if header is None:
        return
    state_line = encode_state(snapshot.state)
    keys_line = orjson.dumps({k: list(v) for k, v in snapshot.keys.items()})
    meta = {
        "format": FORMAT,
        "reducer": REDUCER_VERSION,
        "header": header,
        "position": list(snapshot.position),
        "crc": snapshot.crc,
        "digest": hashlib.sha256(state_line + b"\n" + keys_line).hexdigest(),
    }
    folder = _folder(log_path, create=True)
    if folder is None:
        return
    with folder:
        folder.write("head.snap", _SNAPSHOT_KIND, orjson.dumps(meta) + b"\n" + state_line + b"\n" + keys_line)


# --------------------------------------------------------------------------- the version index
#
# versions.meta (JSON: format, reducer, the log's header hash, the orphans known when it was built),
# versions.idx (one fixed-width entry per plan version: where its adopting record ends in the log, that
# record's seq and hash, and where its state lies in versions.bin) and versions.bin (each version's state
# right after its adopting record, zlib-compressed, without the orphans: those come from the meta, by seq).
# Rebuilding version V is then one seek, one small decode, and a fold of V's own records.

_ENTRY = struct.Struct("<QQQQ32sQI")  # version, seq, log offset, next line, hash, blob offset, blob length


class VersionStart(NamedTuple):
    """Where plan version ``version`` begins: just after its adopting record, and the state there."""

    version: int
    position: Position
    state: PlanState


def _read_index(folder: CacheFolder) -> tuple[dict[str, object], bytes, bytes] | None:
    """The three index files when each is sealed and all three come from one build (the meta holds the
    SHA-256 of the other two), else None."""
    meta_blob, idx, blob = (folder.read(name, name) for name in _INDEX_KINDS)
    if meta_blob is None or idx is None or blob is None:
        return None
    meta = orjson.loads(meta_blob)
    if meta.get("idx") != hashlib.sha256(idx).hexdigest() or meta.get("bin") != hashlib.sha256(blob).hexdigest():
        return None
    return meta, idx, blob


def version_start(log_path: str, fd: int, version: int) -> VersionStart | None:
    """Version ``version``'s start from the index, checked against the log; None when there is no usable one."""
    folder = _folder(log_path)
    if folder is None:
        return None
    try:
        with folder:
            found = _read_index(folder)
        if found is None:
            return None
        meta, idx, blobs = found
        if (
            meta.get("format") != FORMAT
            or meta.get("reducer") != REDUCER_VERSION
            or meta.get("header") != first_hash(fd)
        ):
            return None
        entry = idx[(version - 1) * _ENTRY.size : version * _ENTRY.size]
        if version < 1 or len(entry) != _ENTRY.size:
            return None
        number, seq, offset, line, raw_hash, blob_at, blob_len = _ENTRY.unpack(entry)
        position = Position(offset, seq, raw_hash.hex(), line)
        if number != version or not _holds(fd, position):
            return None
        state = decode_state(zlib.decompress(blobs[blob_at : blob_at + blob_len]))
        orphans = decode_orphans(meta["orphans"], up_to=seq)  # type: ignore[arg-type]
    except (OSError, ValueError, KeyError, TypeError, zlib.error, struct.error):
        return None
    return VersionStart(version, position, state._replace(orphans=orphans))


def write_version_index(log_path: str, header: str, entries: list[bytes], blobs: list[bytes], state: PlanState) -> None:
    """Write the version index of a log whose fold gave ``state`` (best effort: the cache is optional)."""
    idx, blob = b"".join(entries), b"".join(blobs)
    meta = {
        "format": FORMAT,
        "reducer": REDUCER_VERSION,
        "header": header,
        "orphans": orjson.loads(encode_state(state))["orphans"],
        "idx": hashlib.sha256(idx).hexdigest(),
        "bin": hashlib.sha256(blob).hexdigest(),
    }
    folder = _folder(log_path, create=True)
    if folder is None:
        return
    with folder:
        # the meta last: until it names them, a new idx and bin are not believed together with an old meta
        for name, data in zip(_INDEX_KINDS[::-1], (blob, idx, orjson.dumps(meta)), strict=True):
            if not folder.write(name, name, data):
                return


def index_entry(state: PlanState, where: Position, at: int) -> tuple[bytes, bytes]:
    """The index entry and state blob of the version ``state`` adopted, by the record ending at ``where``;
    ``at`` is where the blob will lie in versions.bin."""
    blob = zlib.compress(encode_state(state._replace(orphans=())), 1)
    entry = _ENTRY.pack(state.version, where.seq, where.offset, where.line, bytes.fromhex(where.hash), at, len(blob))
    return entry, blob
