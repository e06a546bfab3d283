"""Read-only salvage: every record that still verifies, and every damaged byte range, of a damaged log.

``verify`` stops at the first damage; salvage goes on to the end of the file. Each line is checked on its
own (framing, hash, schema, canonical form); records that chain to each other form a *segment*, and a
segment that does not chain onto the one before says why (a seq gap, a broken link, another run). Lines
that do not verify are gathered into damaged ranges with their byte offsets and the error code of their
first line. Salvage never writes, not even to cut a torn tail: it holds a shared lock while it reads, so
no writer is mid-append, and it lists the quarantine files and temporary files beside the log.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from typing import Final, NamedTuple

from plantrail.ledger.stores.files import shared_lock_within
from plantrail.ledger.stores.jsonl.log import (
    _TEMP_NAME,  # a create's temporary name after the log's, matched in full
    _open,  # the one way to open a log: NUL-free path, regular file, mapped errors
)
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, MAX_LINE_BYTES, decode
from plantrail.ledger.vocabulary.errors import LogDamaged, error
from plantrail.ledger.vocabulary.events import LogRepaired, Record
from plantrail.ledger.vocabulary.fragments import TornRecord, read_fragment

__all__ = ["Damage", "QuarantineFile", "SalvageReport", "SalvagedRecord", "Segment", "salvage"]

_CHUNK: Final = 1 << 20
_DESCRIBED: Final = 20  # the most lines of one damaged range described
_QUARANTINE = re.compile(r"\.quarantine\.(\d+)\..+")


class SalvagedRecord(NamedTuple):
    """A line that verifies on its own: where it is and what it holds."""

    seq: int
    line: int
    offset: int
    length: int
    type: str
    hash: str


class Segment(NamedTuple):
    """Consecutive records that chain to each other; ``break_code`` says why it does not chain onto the one before."""

    first_seq: int
    last_seq: int
    first_line: int
    last_line: int
    start: int
    end: int
    break_code: str | None


class Damage(NamedTuple):
    """Bytes that hold no verifiable record, with the error of their first line, and what they read as (each
    line as far as it goes; the first lines of a long range)."""

    start: int
    end: int
    first_line: int
    last_line: int
    code: str
    message: str
    reads_as: tuple[TornRecord, ...] = ()


class QuarantineFile(NamedTuple):
    """Bytes an earlier repair cut off; ``recorded`` when a ``log.repaired`` record names its offset; what they
    read as (read only from a regular file of this user's)."""

    name: str
    offset: int
    size: int
    recorded: bool
    reads_as: tuple[TornRecord, ...] = ()


class SalvageReport(NamedTuple):
    """What salvage found."""

    path: str
    size: int
    records: tuple[SalvagedRecord, ...]
    segments: tuple[Segment, ...]
    damaged: tuple[Damage, ...]
    quarantine: tuple[QuarantineFile, ...]
    temp_files: tuple[str, ...]

    @property
    def clean(self) -> bool:
        """True when the log is one unbroken chain from its header with no damaged byte."""
        return not self.damaged and all(s.break_code is None for s in self.segments)


class _Line(NamedTuple):
    offset: int
    number: int
    data: bytes | None  # None when over the line limit
    length: int  # without the newline
    terminated: bool

    @property
    def end(self) -> int:
        return self.offset + self.length + self.terminated


def salvage(path: str | os.PathLike[str]) -> SalvageReport:
    """Inventory a log without writing to it (a shared lock keeps writers out while it reads); a database run
    has no bytes to salvage (FILE_STORE_ONLY)."""
    from plantrail.ledger.stores.targets import require_file

    name = require_file(os.fspath(path), "salvage")
    fd = _open(name, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise error("EMPTY_LOG", f"log {name} is empty: there is nothing to salvage", path=name, offset=0)
        shared_lock_within(fd, name, "so that no writer is mid-append while it reads")
        inventory = _Inventory()
        for line in _lines(fd):
            inventory.add(line)
    finally:
        os.close(fd)
    return SalvageReport(
        path=name,
        size=size,
        records=tuple(inventory.records),
        segments=tuple(inventory.segments),
        damaged=tuple(inventory.damaged),
        quarantine=_quarantine_files(name, inventory.repaired),
        temp_files=tuple(
            sorted(t for t in glob.glob(glob.escape(name) + ".tmp.*") if _TEMP_NAME.fullmatch(t[len(name) :]))
        ),
    )


class _Inventory:
    """Sorts lines into records, chained segments and damaged ranges, in file order."""

    def __init__(self) -> None:
        self.records: list[SalvagedRecord] = []
        self.segments: list[Segment] = []
        self.damaged: list[Damage] = []
        self.repaired: set[int] = set()
        self._last: Record | None = None

    def add(self, line: _Line) -> None:
        try:
            record = _decode(line)
        except LogDamaged as exc:
            self._add_damage(line, exc)
            return
        entry = SalvagedRecord(
            seq=record.seq,
            line=line.number,
            offset=line.offset,
            length=line.end - line.offset,
            type=record.type,
            hash=record.h,
        )
        self.records.append(entry)
        if isinstance(record.data, LogRepaired):
            self.repaired.add(record.data.truncated_at)
        self._add_record(entry, _link_break(record, self._last))
        self._last = record

    def _add_record(self, entry: SalvagedRecord, break_code: str | None) -> None:
        current = self.segments[-1] if self.segments else None
        if current is not None and break_code is None and current.end == entry.offset:
            self.segments[-1] = current._replace(
                last_seq=entry.seq, last_line=entry.line, end=entry.offset + entry.length
            )
            return
        self.segments.append(
            Segment(
                first_seq=entry.seq,
                last_seq=entry.seq,
                first_line=entry.line,
                last_line=entry.line,
                start=entry.offset,
                end=entry.offset + entry.length,
                break_code=break_code,
            )
        )

    def _add_damage(self, line: _Line, problem: LogDamaged) -> None:
        reads_as = read_fragment(line.data + b"\n" * line.terminated) if line.data is not None else ()
        if self.damaged and self.damaged[-1].end == line.offset:
            last = self.damaged[-1]
            kept = last.reads_as + reads_as if len(last.reads_as) < _DESCRIBED else last.reads_as
            self.damaged[-1] = last._replace(end=line.end, last_line=line.number, reads_as=kept)
            return
        self.damaged.append(
            Damage(
                start=line.offset,
                end=line.end,
                first_line=line.number,
                last_line=line.number,
                code=problem.code,
                message=problem.message,
                reads_as=reads_as,
            )
        )


def _decode(line: _Line) -> Record:
    """The record a line holds; a LogDamaged error naming the line when it holds none."""
    if not line.terminated:
        raise error(
            "TORN_TAIL",
            f"line {line.number}: {line.length} bytes without a newline at the end (a crash mid-write)",
            line=line.number,
        )
    if line.data is None:
        raise error("CORRUPT_LINE", f"line {line.number} is {line.length} bytes, over the limit", line=line.number)
    return decode(line.data, line_no=line.number)


def _link_break(record: Record, last: Record | None) -> str | None:
    """Why ``record`` does not continue the chain from the last verifiable record (None when it does)."""
    expected_seq, expected_prev = (0, GENESIS_PREV) if last is None else (last.seq + 1, last.h)
    if record.seq != expected_seq:
        return "SEQ_GAP"
    if record.prev != expected_prev:
        return "HASH_MISMATCH"
    if last is not None and record.run != last.run:
        return "CORRUPT_LINE"
    return None


def _lines(fd: int) -> Iterator[_Line]:
    """Every line with its offset; a line over the limit is measured but not kept; the last may lack its newline."""
    kept = bytearray()
    start = length = 0
    number = 1
    read_at = 0
    while chunk := os.pread(fd, _CHUNK, read_at):
        read_at += len(chunk)
        pos = 0
        while True:
            newline = chunk.find(b"\n", pos)
            stop = len(chunk) if newline < 0 else newline
            length += stop - pos
            if length <= MAX_LINE_BYTES:
                kept += chunk[pos:stop]
            else:
                kept.clear()
            if newline < 0:
                break
            yield _Line(start, number, bytes(kept) if length <= MAX_LINE_BYTES else None, length, True)
            start += length + 1
            number += 1
            kept.clear()
            length = 0
            pos = newline + 1
    if length:
        yield _Line(start, number, bytes(kept) if length <= MAX_LINE_BYTES else None, length, False)


def _quarantine_files(path: str, repaired: set[int]) -> tuple[QuarantineFile, ...]:
    from plantrail.ledger.stores.jsonl.torn import quarantine_records

    found = []
    for name in glob.glob(glob.escape(path) + ".quarantine.*"):
        match = _QUARANTINE.fullmatch(name[len(path) :])
        if match is None or name.endswith(".jsonl"):
            continue  # not a quarantine name, or another run's log (a run id may look like one)
        offset = int(match.group(1))
        try:
            size = os.stat(name).st_size
        except OSError:
            continue
        reads_as = quarantine_records(name)
        found.append(
            QuarantineFile(name=name, offset=offset, size=size, recorded=offset in repaired, reads_as=reads_as)
        )
    return tuple(sorted(found, key=lambda q: (q.offset, q.name)))
