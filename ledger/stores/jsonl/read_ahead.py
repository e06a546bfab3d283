"""A log's checked read in a forked child, while the caller works through its records on another core.

A full read of a log spends about two fifths of its time reading (framing, hash chain, schema, canonical
form) and the rest on what the caller does with each record (``verify`` judges and folds it, a replay folds
it). On a machine with a second core the two run side by side: the child runs the very read a
:class:`~ledger.stores.jsonl.LogReader` runs, over the descriptor it shares with the caller, and sends the
records it yields, in order, in batches encoded as MessagePack (msgspec: a record decodes back to an equal
record, by its schema), then how the read ended (its end, a torn tail) or the error that stopped it. The
caller gets exactly the records, the end and the error a read of its own would give, in the same order.

Only a process with one thread forks (a fork copies the caller's memory but only the thread that forks), on
a system that has ``fork``, with two cores to run on, for a read large enough to repay the fork
(:func:`reading` decides). A child that dies, or sends what cannot be read, costs time, not the answer: the
caller's reader carries on from the last batch whose end is a record's end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import threading
import typing
from collections.abc import Iterator
from typing import Any, Final, Protocol, Union

import msgspec

from plantrail.ledger.stores.jsonl.cache import Position
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.stores.values import TornTail
from plantrail.ledger.vocabulary import codec
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Record

__all__ = ["WORTH_FORKING", "ReadAhead", "Reading", "reading", "worth_forking"]

#: The smallest read, in bytes, done in a child: below it the fork and the transfer cost more than they save.
WORTH_FORKING: Final = 4 << 20
#: Records per batch sent: large enough that a message's overhead is small, small enough to keep memory flat.
_BATCH: Final = 512
#: The pipe's capacity asked for (Linux): room for a few batches, so that the child reads on through a run of
#: batches the caller takes longer over (a replan's records) instead of waiting for each to be taken.
_PIPE_BYTES: Final = 1 << 20
_HEAD: Final = struct.Struct("<cI")  # a message: its kind and the length of what follows
_RECORDS, _DONE, _FAILED = b"R", b"D", b"F"


class _Done(msgspec.Struct, array_like=True):
    """How the child's read ended: the bytes of whole records read, and the torn tail after them."""

    end: int
    torn: TornTail | None


class Reading(Protocol):
    """A read of a log's records: ``records()`` once, then ``end`` and ``torn`` as the reader's are;
    ``offset`` is the bytes of whole records read so far (a progress bar's)."""

    end: int
    torn: TornTail | None

    @property
    def offset(self) -> int: ...

    def records(self) -> Iterator[Record]: ...


def worth_forking(size: int) -> bool:
    """Whether a read of ``size`` bytes is done in a child: fork exists, this process has one thread (a child
    of a threaded process may deadlock), it may run on two cores or more, and the read is large enough."""
    if size < WORTH_FORKING or not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores >= 2


@contextlib.contextmanager
def reading(reader: LogReader, start: Position | None = None, run: str | None = None) -> Iterator[Reading]:
    """The records of ``reader`` (after ``start``, a checked position of run ``run``, when given), read in a
    child when :func:`worth_forking` says so, else by the reader itself; the same records either way."""
    size = os.fstat(reader.fd).st_size - (0 if start is None else start.offset)
    ahead = None
    if worth_forking(size):
        with contextlib.suppress(OSError):  # no pipe or no fork now (out of processes or memory): read here
            ahead = ReadAhead(reader, start, run)
    if ahead is None:
        yield _Here(reader, start, run)
        return
    with ahead:
        yield ahead


class _Here:
    """:class:`Reading` by the reader itself."""

    def __init__(self, reader: LogReader, start: Position | None, run: str | None) -> None:
        self._reader, self._start, self._run = reader, start, run
        self.end = 0
        self.torn: TornTail | None = None

    @property
    def offset(self) -> int:
        return self._reader.position.offset

    def records(self) -> Iterator[Record]:
        yield from self._reader.records(start=self._start, run=self._run)
        self.end, self.torn = self._reader.end, self._reader.torn


class ReadAhead:
    """:class:`Reading` by a forked child (a context manager: leaving it stops and reaps the child)."""

    def __init__(self, reader: LogReader, start: Position | None = None, run: str | None = None) -> None:
        self.end = 0
        self.torn: TornTail | None = None
        self._reader, self._run = reader, run
        self._resume = start  # where the reader would carry on, should the child fail
        self._offset = 0 if start is None else start.offset
        read_end, write_end = os.pipe()
        _widen(write_end)
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _serve(reader, start, run, write_end)
        os.close(write_end)
        self._pid: int | None = pid
        self._pipe = os.fdopen(read_end, "rb", buffering=1 << 20)

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def offset(self) -> int:
        return self._offset

    def close(self) -> None:
        """Stop the child if it still runs, and reap it."""
        self._pipe.close()
        pid, self._pid = self._pid, None
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):  # (it cannot be gone before it is reaped)
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)

    def records(self) -> Iterator[Record]:
        """The records, in order; then the read's end and torn tail are set, or the read's error raised."""
        decode = _decoder()
        last = -1 if self._resume is None else self._resume.seq  # the seq of the last record handed out
        while True:
            kind, body = self._message()
            try:
                if kind == _RECORDS:
                    message = decode(body)
                elif kind == _DONE:
                    done = msgspec.msgpack.decode(body, type=_Done)
                elif kind == _FAILED:
                    import pickle  # (an error of the read: pickled by the child)

                    failure = pickle.loads(body)
                    if not isinstance(failure, PlantrailError):
                        raise TypeError("not an error of the read")
                else:
                    raise ValueError("the pipe closed before the read ended")
            except Exception:  # the child died, or sent what cannot be read: read the rest here
                yield from self._carry_on(last)
                return
            if kind == _RECORDS:
                batch = message.records
                yield from batch
                last = batch[-1].seq
                self._run = self._run or batch[0].run
                if message.at is not None:
                    self._resume = message.at
                    self._offset = message.at.offset
            elif kind == _DONE:
                self.end = self._offset = done.end
                self.torn = done.torn
                return
            else:
                raise failure

    def _carry_on(self, last: int) -> Iterator[Record]:
        """The records after seq ``last``, read by the caller's own reader from the last place the child said."""
        self.close()
        for record in self._reader.records(start=self._resume, run=None if self._resume is None else self._run):
            if record.seq > last:
                yield record
        self.end, self.torn = self._reader.end, self._reader.torn

    def _message(self) -> tuple[bytes, memoryview]:
        head = self._pipe.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return b"", memoryview(b"")
        kind, length = _HEAD.unpack(head)
        body = self._pipe.read(length)
        if len(body) < length:
            return b"", memoryview(b"")
        return kind, memoryview(body)  # (not copied: msgspec decodes from the buffer)


def _widen(fd: int) -> None:
    """Ask for a pipe of :data:`_PIPE_BYTES` where the system lets a process size its pipes (Linux, within
    ``/proc/sys/fs/pipe-max-size``); elsewhere, or when refused, the pipe keeps the size it has."""
    try:
        import fcntl
    except ImportError:  # (not a POSIX system)
        return
    resize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if resize is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, resize, _PIPE_BYTES)


def _serve(reader: LogReader, start: Position | None, run: str | None, fd: int) -> typing.NoReturn:
    """The child: read the log, send what the read yields and how it ended, and exit, never returning to the
    caller's code (no cleanup of the caller's runs twice). On anything but the read's own error it exits at
    once: the caller finds the pipe closed before the read's end, and reads the rest itself."""
    status = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child quietly; the caller reports it
        out = os.fdopen(fd, "wb", buffering=0)  # each batch goes as soon as it is encoded
        encode = msgspec.msgpack.Encoder().encode
        batch_of = _message_types()[0]
        batch: list[Record] = []
        try:
            for record in reader.records(start=start, run=run):
                batch.append(record)
                if len(batch) == _BATCH:
                    _send(out, _RECORDS, encode(_batch(reader, batch, batch_of)))
                    batch = []
            ending = _DONE, msgspec.msgpack.encode(_Done(reader.end, reader.torn))
        except PlantrailError as exc:
            import pickle

            ending = _FAILED, pickle.dumps(exc)
        if batch:
            _send(out, _RECORDS, encode(_batch(reader, batch, batch_of)))
        _send(out, *ending)
        status = 0
    finally:
        os._exit(status)


def _batch(reader: LogReader, batch: list[Record], batch_of: Any) -> Any:
    """A batch's message: its records, and the place after the last one when the reader stands there (not
    inside a group commit read to its end)."""
    at = reader.position
    return batch_of(at if at.seq == batch[-1].seq else None, batch)


def _send(out: Any, kind: bytes, body: bytes) -> None:
    out.write(_HEAD.pack(kind, len(body)))
    view = memoryview(body)
    while view:
        view = view[out.write(view) :]


_MADE: list[tuple[Any, Any]] = []


def _message_types() -> tuple[Any, Any]:
    """The struct of a batch message (the place after its last record, or None; its records) and msgspec's
    MessagePack decoder of it (made once: the records' union names every record class)."""
    if not _MADE:
        codec._fast_decoder()  # every record class made
        union: Any = Union[tuple(codec._RECORD_CLASSES[cls.TYPE] for cls in codec.EVENT_CLASSES)]  # noqa: UP007
        batch_of = msgspec.defstruct(
            "_BatchMessage", [("at", Position | None), ("records", list[union])], array_like=True, module=__name__
        )
        _MADE.append((batch_of, msgspec.msgpack.Decoder(batch_of).decode))
    return _MADE[0]


def _decoder() -> Any:
    """msgspec's MessagePack decoder of a batch message."""
    return _message_types()[1]
