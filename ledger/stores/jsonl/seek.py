"""Random access into a JSONL log: find a record by seq, read the last records, follow a growing file.

The log is its own index: seqs grow by one per line, so a binary search over byte offsets finds any record
in about 20 reads, and lines read backwards from the end give the last ones. Every record this module
returns is decoded and checked like any other (framing, SHA-256, schema); records returned together are
checked against each other (consecutive seqs, each linked to the one before, one run). What these reads
do not check is the chain of the records they skip: ``verify`` reads every line.

A line that is still being written (no newline yet) is never returned (:mod:`.follow` waits for it).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable, Iterator
from typing import Final

import orjson

from plantrail.ledger.stores.jsonl.cache import Position
from plantrail.ledger.stores.jsonl.log import LogReader, opened
from plantrail.ledger.stores.values import TornTail
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Record

__all__ = [
    "after_record",
    "find_line",
    "header_run",
    "line_hashes",
    "read_start",
    "record_at",
    "tail_records",
]

_BLOCK: Final = 64 * 1024
_LINEAR: Final = 256 * 1024  # below this span the search reads lines in order
_SEQ: Final = re.compile(rb'^\{"v":\d+,"seq":(\d+),')


def _seq_of(line: bytes) -> int | None:
    """The seq a line claims (from its fixed prefix, else its JSON), None when it names none."""
    match = _SEQ.match(line)
    if match is not None:
        return int(match[1])
    try:
        seq = orjson.loads(line).get("seq")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return seq if isinstance(seq, int) else None


def _line_from(fd: int, start: int) -> bytes | None:
    """The complete line starting at byte ``start`` (without its newline), None when it has no newline yet."""
    parts: list[bytes] = []
    at = start
    while True:
        chunk = os.pread(fd, _BLOCK, at)
        if not chunk:
            return None
        cut = chunk.find(b"\n")
        if cut >= 0:
            parts.append(chunk[:cut])
            return b"".join(parts)
        parts.append(chunk)
        at += len(chunk)


def _next_start(fd: int, offset: int, end: int) -> int | None:
    """The start of the first line beginning after byte ``offset - 1`` (None when no line starts before ``end``)."""
    if offset == 0:
        return 0
    at = offset - 1
    while at < end:
        chunk = os.pread(fd, min(_BLOCK, end - at), at)
        if not chunk:
            return None
        cut = chunk.find(b"\n")
        if cut >= 0:
            start = at + cut + 1
            return start if start < end else None
        at += len(chunk)
    return None


def _complete_end(fd: int) -> int:
    """Where the log's last complete line ends (a torn or unfinished final fragment is left out)."""
    size = os.fstat(fd).st_size
    at = size
    while at > 0:
        start = max(0, at - _BLOCK)
        chunk = os.pread(fd, at - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        at = start
    return 0


def find_line(fd: int, seq: int) -> tuple[int, bytes] | None:
    """Where the line claiming ``seq`` starts, and the line; None when no complete line claims it.

    A binary search over byte offsets (seqs grow with the offset), then a read in order of the last span.
    A line that names no seq ends the search: the caller falls back to reading the log in order.
    """
    end = _complete_end(fd)
    lo, hi = 0, end
    while hi - lo > _LINEAR:
        start = _next_start(fd, (lo + hi) // 2, hi)
        if start is None:
            break
        line = _line_from(fd, start)
        found = None if line is None else _seq_of(line)
        if found is None:
            return None
        if found == seq:
            return start, line  # type: ignore[return-value]  # found is not None, so line is not
        if found < seq:
            lo = start
        else:
            hi = start
    at = lo
    while at < end:
        line = _line_from(fd, at)
        if line is None:
            return None
        found = _seq_of(line)
        if found == seq:
            return at, line
        if found is None or found > seq:
            return None
        at += len(line) + 1
    return None


def header_run(fd: int) -> str:
    """The run id of the log's checked header line."""
    line = _line_from(fd, 0)
    if line is None:
        raise error("TORN_TAIL", "the log has no complete header line", line=1, offset=0)
    return decode(line, 1).run


def _checked_at(fd: int, seq: int, run: str) -> tuple[int, Record] | None:
    """The record at ``seq`` and where its line starts, decoded and checked (None when no line claims it)."""
    found = find_line(fd, seq)
    if found is None:
        return None
    start, line = found
    record = decode(line, seq + 1)
    if record.seq != seq or record.run != run:
        raise error("CORRUPT_LINE", f"line {seq + 1}: expected seq {seq} of run {run}", line=seq + 1, seq=seq)
    return start, record


def _in_order(reader: LogReader, seq: int) -> Record | None:
    """Record ``seq`` read from the first line on (when the search cannot name it, the read names the damage)."""
    for record in reader.records():
        if record.seq == seq:
            return record
    return None


def record_at(path: str, seq: int, *, reader: LogReader | None = None) -> Record:
    """Record ``seq`` of the log at ``path`` (read through ``reader`` when the caller holds the log open), checked;
    UNKNOWN_SEQ when the log does not reach it."""
    with opened(path, reader) as log:
        located = _checked_at(log.fd, seq, header_run(log.fd))
        record = located[1] if located is not None else _in_order(log, seq)
    if record is None:
        raise error("UNKNOWN_SEQ", f"seq {seq} is not in the log", seq=seq)
    return record


def after_record(fd: int, seq: int) -> Position | None:
    """The position just after record ``seq`` (None when no complete line holds it); -1 is the file's start."""
    if seq < 0:
        return Position(0, -1, GENESIS_PREV, 1)
    located = _checked_at(fd, seq, header_run(fd))
    if located is None:
        return None
    start, record = located
    line = _line_from(fd, start)
    assert line is not None  # _checked_at just read it
    return Position(start + len(line) + 1, seq, record.h, seq + 2)


_BATCH: Final = b'"type":"log.batch"'


def _batch_part(line: bytes) -> str | None:
    """``begin`` or ``end`` for a group commit's bound, None for any other line."""
    if _BATCH not in line:
        return None
    try:
        part = orjson.loads(line).get("data", {}).get("part")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return part if part in ("begin", "end") else None


def _next_bound(fd: int, offset: int) -> str | None:
    """The part of the first group commit bound from byte ``offset`` on (None: no bound follows)."""
    carry = b""
    at = offset
    while chunk := os.pread(fd, _BLOCK, at):
        at += len(chunk)
        lines = (carry + chunk).split(b"\n")
        carry = lines.pop()
        for line in lines:
            part = _batch_part(line)
            if part is not None:
                return part
    return None


def read_start(fd: int, after: int) -> Position | None:
    """Where a read of the records after seq ``after`` starts (None when no complete line holds it): just after
    it, or, when it lies inside a group commit, at the group's begin: a group's records are read, and checked,
    together (the caller skips those up to ``after``)."""
    start = after_record(fd, after)
    if start is None or after < 0 or _next_bound(fd, start.offset) != "end":
        return start
    for line in _lines_backward(fd, start.offset):
        if _batch_part(line) == "begin":
            begin = _seq_of(line)
            return start if begin is None else after_record(fd, begin - 1)
    return start


def _lines_backward(fd: int, end: int) -> Iterator[bytes]:
    """The complete lines before byte ``end`` (which ends a line), last first."""
    rest = b""
    at = end
    while at > 0:
        start = max(0, at - _BLOCK)
        block = os.pread(fd, at - start, start) + rest
        at = start
        lines = block.split(b"\n")
        lines.pop()  # block ends with a newline: the last piece is empty
        rest = lines.pop(0) + b"\n" if at > 0 else b""
        yield from reversed(lines)


_HASH_END: Final = re.compile(rb',"h":"([0-9a-f]{64})"\}$')


def line_hashes(fd: int, end: int, count: int) -> list[tuple[int, str]]:
    """The seq and hash that each of the last ``count`` complete lines before byte ``end`` (which ends a line)
    claims, in log order; a line that claims neither is left out. Nothing is decoded: a follower remembers
    them for records it was given checked."""
    found: list[tuple[int, str]] = []
    for line in _lines_backward(fd, end):
        if len(found) >= count:
            break
        seq, h = _seq_of(line), _HASH_END.search(line)
        if seq is not None and h is not None:
            found.append((seq, h[1].decode()))
    found.reverse()
    return found


def _link(later: Record, earlier: Record) -> None:
    """Two records read side by side must be consecutive and chained."""
    line = later.seq + 1
    if later.seq != earlier.seq + 1:
        raise error("SEQ_GAP", f"line {line}: expected seq {earlier.seq + 1}, found {later.seq}", line=line)
    if later.prev != earlier.h:
        raise error(
            "HASH_MISMATCH", f"line {line}: seq {later.seq} does not link to the previous line's hash", line=line
        )


def _torn_after(fd: int, end: int, last_seq: int) -> TornTail | None:
    """The fragment after the last complete line, if a writer (checked under a shared lock) is not finishing it."""
    if os.fstat(fd).st_size == end:
        return None
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        size = os.fstat(fd).st_size
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
    if size == end or _complete_end(fd) != end:
        return None  # finished meanwhile: the next read sees a complete line
    return TornTail(offset=end, length=size - end, line=last_seq + 2, zero_fill=b"\0" in os.pread(fd, size - end, end))


def tail_records(
    path: str, count: int, keep: Callable[[Record], bool], *, stop_below: int = 0, reader: LogReader | None = None
) -> tuple[list[Record], TornTail | None]:
    """The last ``count`` records that ``keep`` accepts (in log order), read backwards from the end of the log,
    never below seq ``stop_below``; and the torn tail after them, if any. Only those records and the lines
    between them are read and checked (each against the next)."""
    kept: list[Record] = []
    with opened(path, reader) as log:
        fd = log.fd
        run = header_run(fd)
        end = _complete_end(fd)
        later: Record | None = None
        last_seq = -1
        for line in _lines_backward(fd, end):
            if len(kept) >= count:
                break
            claimed = _seq_of(line)
            record = decode(line, later.seq if later is not None else (claimed or 0) + 1)
            if record.run != run:
                raise error("CORRUPT_LINE", f"line {record.seq + 1}: run {record.run} in a log of run {run}")
            if later is None:
                last_seq = record.seq
            else:
                _link(later, record)
            later = record
            if record.seq < stop_below:
                break
            if keep(record):
                kept.append(record)
        torn = _torn_after(fd, end, last_seq)
    kept.reverse()
    return kept, torn
