"""Follow a log file as it grows, and across a repair, a truncation or a replacement of the file.

A follower gives each record once it is complete and checked: a line without its newline is waited for, and a
group commit's records once its end is read (a torn tail is never given). Between reads it looks at the file
(its size and times, and which file is at the path) every ``poll`` seconds; when anything changed, it first
checks that the last record it gave is still where it gave it (the bytes before its position end with that
record's hash), and only then reads on. So a repair (the torn bytes cut off, a ``log.repaired`` appended) is
read on from where the follower stood, and the follower never reads from the middle of a line.

When a record it gave is gone (the file was cut back, or another file was put at the path), it finds the
last record it gave that the log still holds as it gave it (a binary search by seq over the last records it
gave), and gives a :class:`~plantrail.ledger.stores.values.Rewound` notice, then starts over from the log's
first record, so that a reader can rebuild what it shows; a new file that holds everything given is
followed on after a notice, without starting over.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from typing import Final, Literal

from plantrail.ledger.stores.jsonl.cache import Position
from plantrail.ledger.stores.jsonl.log import LogScan
from plantrail.ledger.stores.jsonl.seek import after_record, find_line, header_run, line_hashes
from plantrail.ledger.stores.values import Rewound
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode
from plantrail.ledger.vocabulary.errors import LogDamaged, PlantrailError
from plantrail.ledger.vocabulary.events import Record

__all__ = ["follow_log"]

#: At most this many records in one batch (a first read of a large log comes in several).
_BATCH: Final = 1024
#: How many of the last records given a follower remembers (seq and hash), to find how far a log still holds them
#: (a follower that starts after a record remembers as many lines before it: one read of them backwards).
_REMEMBERED: Final = 1024
_START: Final = Position(0, -1, GENESIS_PREV, 1)

Signature = tuple[tuple[int, int] | None, int, int, int]


def follow_log(
    path: str,
    fd: int,
    start: Position,
    *,
    run: str | None = None,
    given: int | None = None,
    poll: float = 0.2,
    sleep: Callable[[float], None],
) -> Iterator[list[Record]]:
    """Batches of the records after ``start`` (a checked position in the log open as ``fd``, which the follower
    owns and closes) as they are appended, forever; ``sleep(poll)`` between looks. ``given`` is the last seq the
    caller already has (default ``start.seq``; a read that starts at a group commit's begin skips those up to
    it). A :class:`Rewound` batch says the log changed under the follower (see the module's docstring)."""
    follower = _Follower(path, fd, start, run, start.seq if given is None else given)
    try:
        yield from follower.batches(lambda: sleep(poll))
    finally:
        os.close(follower.fd)


class _Follower:
    def __init__(self, path: str, fd: int, start: Position, run: str | None, given: int) -> None:
        self.path = path
        self.fd = fd
        self.position = start
        self.run = run
        self.shown = given  # the last seq given to the reader
        self.seen: deque[tuple[int, str]] = deque(maxlen=_REMEMBERED)  # (seq, hash) of what was given, in order
        self.signature = self._signature()
        self.moved = start.seq >= 0 and not self._ends_at(start)  # changed since the caller read up to the start
        if start.seq >= 0:  # what the caller read up to the start (the lines before it, when they are still there)
            prior = [] if self.moved else line_hashes(fd, start.offset, _REMEMBERED)
            self.seen.extend(prior or [(start.seq, start.hash)])

    def batches(self, wait: Callable[[], None]) -> Iterator[list[Record]]:
        if self.moved:
            rewound = self._check()
            if rewound is not None:
                yield rewound
        while True:
            self.signature = self._signature()  # before the read: a change during it is looked at next time
            try:
                yield from self._read()
            except LogDamaged:
                rewound = self._check() if self._signature() != self.signature else None
                if rewound is None:
                    raise
                yield rewound
                continue
            while self._signature() == self.signature:
                wait()
            rewound = self._check()
            if rewound is not None:
                yield rewound

    def _read(self) -> Iterator[list[Record]]:
        at = self.position
        scan = LogScan(self.fd, offset=at.offset, next_seq=at.seq + 1, prev=at.hash, run=self.run, line_no=at.line)
        batch: list[Record] = []
        for record in scan:
            self.seen.append((record.seq, record.h))
            if record.seq <= self.shown:
                continue  # the caller has it (a read that started at its group commit's begin)
            batch.append(record)
            self.shown = record.seq
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        self.run = scan.run
        self.position = Position(scan.end, scan.next_seq - 1, scan.prev, scan.line_no)
        if batch:
            yield batch

    def _signature(self) -> Signature:
        """Which file is at the path (None: none), and the open file's size and times of last write and change."""
        try:
            at_path = os.stat(self.path)
            named: tuple[int, int] | None = (at_path.st_dev, at_path.st_ino)
        except OSError:
            named = None  # removed (or not reachable): the open file is followed until another is there
        st = os.fstat(self.fd)
        return named, st.st_size, st.st_mtime_ns, st.st_ctime_ns

    def _check(self) -> Rewound | None:
        """After a change: None when the log still holds what was given where it was given (read on); else the
        notice, with the follower set to read on or to start over."""
        kind: Literal["cut", "replaced"] = "cut"
        named = self._signature()[0]
        st = os.fstat(self.fd)
        if named is not None and named != (st.st_dev, st.st_ino):
            from plantrail.ledger.stores.files import open_regular

            fd = open_regular(self.path)
            os.close(self.fd)
            self.fd, kind = fd, "replaced"
        if self.shown < 0 or self._still_there():
            if kind == "cut":
                return None
            return self._notice(kind, self.shown, self.shown + 1)
        kept = self._kept()
        if kept == self.shown:
            located = after_record(self.fd, kept)
            assert located is not None  # _kept found it complete and checked
            self.position = located
            if kind == "cut":
                return None  # the bytes before it changed, not what was given (verify reads every byte)
            return self._notice(kind, kept, kept + 1)
        notice = self._notice(kind, kept, 0)
        self.position, self.run, self.shown = _START, None, -1
        self.seen.clear()
        return notice

    def _still_there(self) -> bool:
        """The last record given still ends where the follower stands (one read of its last bytes)."""
        return self.position.seq == self.shown and self._ends_at(self.position)

    def _ends_at(self, at: Position) -> bool:
        """The record at ``at`` ends just before its offset, with its hash."""
        ending = b',"h":"' + at.hash.encode("ascii") + b'"}\n'
        return at.offset >= len(ending) and os.pread(self.fd, len(ending), at.offset - len(ending)) == ending

    def _holds(self, seq: int, h: str, run: str) -> bool:
        """The log holds record ``seq`` of ``run``, complete and checked, with hash ``h``."""
        try:
            found = find_line(self.fd, seq)
            return found is not None and (record := decode(found[1], seq + 1)).h == h and record.run == run
        except PlantrailError:
            return False

    def _kept(self) -> int:
        """The last seq given that the log still holds as given (-1: none of those remembered)."""
        try:
            run = header_run(self.fd)
        except PlantrailError:
            return -1  # no complete header: nothing given is there
        if self.run is not None and run != self.run:
            return -1
        seen = list(self.seen)
        lo, hi = 0, len(seen)  # seen[:lo] are held, seen[hi:] are not (a log holds a prefix of what was given)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._holds(*seen[mid], run):
                lo = mid + 1
            else:
                hi = mid
        return seen[lo - 1][0] if lo > 0 else -1

    def _notice(self, kind: Literal["cut", "replaced"], kept: int, from_seq: int) -> Rewound:
        what = "replaced by another file" if kind == "replaced" else "cut back or rewritten"
        if from_seq > 0:
            told = f"{self.path} was {what}, which holds every record shown; following it"
        elif kept < 0:
            told = f"{self.path} was {what}: the records shown are not all in it; showing it again from its start"
        else:
            gone = f"seq {kept + 1} is" if kept + 1 == self.shown else f"seqs {kept + 1} to {self.shown} are"
            told = f"{self.path} was {what}: {gone} no longer in it as shown; going on after seq {kept}"
        return Rewound(kind, self.shown, kept, from_seq, told)
