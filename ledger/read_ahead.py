"""A log's checked read in a forked child, while the caller works through its records on another core.

``verify`` reads a log (framing, hash chain, schema, canonical form: about two fifths of its time) and judges
and folds every record (the rest). On a machine with a second core the two run side by side: the child runs
the very read a :class:`~ledger.stores.jsonl.LogReader` runs, over the descriptor it shares with the caller,
and sends the records it yields, in order, in batches encoded as MessagePack (msgspec: a record encodes and
decodes back to an equal record, by its schema), then how the read ended (its end, a torn tail) or the
error that stopped it. The caller gets exactly the records, the end and the error a read of its own would
give, in the same order.

Only a process with one thread forks (a fork copies the caller's memory but only the thread that forks), on a
system that has ``fork``, with two cores to run on, for a log large enough to repay the fork. If the child
dies without saying how its read ended, :class:`ReadAheadLost` is raised, and the caller reads the log
itself (:func:`ledger.verify.verify_log` starts again, in one process).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import threading
import typing
from collections.abc import Iterator
from typing import Any, Final, Union

import msgspec

from plantrail.ledger import codec
from plantrail.ledger.errors import PlantrailError
from plantrail.ledger.events import Record
from plantrail.ledger.store import TornTail
from plantrail.ledger.stores.jsonl import LogReader

__all__ = ["WORTH_FORKING", "ReadAhead", "ReadAheadLost", "worth_forking"]

#: The smallest log, in bytes, read in a child: below it the fork and the transfer cost more than they save.
WORTH_FORKING: Final = 4 << 20
#: Records per batch sent: large enough that a message's overhead is small, small enough to keep memory flat.
_BATCH: Final = 512
_HEAD: Final = struct.Struct("<cI")  # a message: its kind and the length of what follows
_RECORDS, _DONE, _FAILED, _LOST = b"R", b"D", b"F", b"L"  # _LOST: the pipe closed mid-read


class ReadAheadLost(Exception):
    """The child died or failed in a way no read of the caller's own would (the caller reads the log itself)."""


class _Done(msgspec.Struct, array_like=True):
    """How the child's read ended: the bytes of whole records read, and the torn tail after them."""

    end: int
    torn: TornTail | None


def worth_forking(size: int) -> bool:
    """Whether a log of ``size`` bytes is read in a child: fork exists, this process has one thread (a child
    of a threaded process may deadlock), it may run on two cores or more, and the log is large enough."""
    if size < WORTH_FORKING or not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores >= 2


class ReadAhead:
    """The records of an open log, read by a forked child (use it as a context manager: leaving it stops and
    reaps the child)."""

    def __init__(self, reader: LogReader) -> None:
        self.end = 0
        self.torn: TornTail | None = None
        self.offset = 0  # the bytes of whole records read so far, as ``reader.position.offset`` says it
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _serve(reader, write_end)
        os.close(write_end)
        self._pid: int | None = pid
        self._pipe = os.fdopen(read_end, "rb", buffering=1 << 20)

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        """The records, in order; then the read's end and torn tail are set, or the read's error raised.
        :class:`ReadAheadLost` when the child stopped without saying how its read ended."""
        decode = _decoder()
        while True:
            kind, body = self._message()
            try:
                if kind == _RECORDS:
                    batch = decode(body)
                elif kind == _DONE:
                    done = msgspec.msgpack.decode(body, type=_Done)
                else:
                    failure = pickle.loads(body) if kind == _FAILED else None
            except Exception as exc:  # a message cut short or garbled (it cannot be, short of a broken child)
                raise ReadAheadLost(f"the child's message could not be read: {exc}") from None
            if kind == _RECORDS:
                yield from batch
            elif kind == _DONE:
                self.end = self.offset = done.end
                self.torn = done.torn
                return
            elif isinstance(failure, PlantrailError):
                raise failure
            else:
                raise ReadAheadLost("the child stopped before its read ended")

    def _message(self) -> tuple[bytes, bytes | memoryview]:
        head = self._pipe.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return _LOST, b""
        kind, length = _HEAD.unpack(head)
        body = self._pipe.read(length)
        if len(body) < length:
            return _LOST, b""
        if kind == _RECORDS:  # an offset leads each batch
            self.offset = int.from_bytes(body[:8], "little")
            return kind, memoryview(body)[8:]  # (not copied: msgspec decodes from the buffer)
        return kind, body


def _serve(reader: LogReader, fd: int) -> typing.NoReturn:
    """The child: read the log, send what the read yields and how it ended, and exit, never returning to the
    caller's code (no cleanup of the caller's runs twice). On anything but the read's own error it exits at
    once: the caller finds the pipe closed before the read's end, and reads the log itself."""
    status = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child quietly; the caller reports it
        out = os.fdopen(fd, "wb", buffering=0)  # each batch goes as soon as it is encoded
        encode = msgspec.msgpack.Encoder().encode
        batch: list[Record] = []
        try:
            for record in reader.records():
                batch.append(record)
                if len(batch) == _BATCH:
                    _send(out, _RECORDS, reader.position.offset.to_bytes(8, "little") + encode(batch))
                    batch = []
            ending = _DONE, msgspec.msgpack.encode(_Done(reader.end, reader.torn))
        except PlantrailError as exc:
            ending = _FAILED, pickle.dumps(exc)
        if batch:
            _send(out, _RECORDS, reader.position.offset.to_bytes(8, "little") + encode(batch))
        _send(out, *ending)
        status = 0
    finally:
        os._exit(status)


def _send(out: Any, kind: bytes, body: bytes) -> None:
    out.write(_HEAD.pack(kind, len(body)))
    view = memoryview(body)
    while view:
        view = view[out.write(view) :]


_DECODERS: list[Any] = []


def _decoder() -> Any:
    """msgspec's MessagePack decoder of a batch of records (made once)."""
    if not _DECODERS:
        codec._fast_decoder()  # every record class made
        union: Any = Union[tuple(codec._RECORD_CLASSES[cls.TYPE] for cls in codec.EVENT_CLASSES)]  # noqa: UP007
        _DECODERS.append(msgspec.msgpack.Decoder(list[union]).decode)
    return _DECODERS[0]
