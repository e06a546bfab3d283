"""Writer processes for the crash trials, and the parent's side of their acknowledgement pipe.

A writer opens the log (repairing a torn tail it finds), then appends criterion verdicts with random-size
evidence in a loop. After each append *returns*, it writes the record's seq and hash to a pipe as one
72-byte message (under PIPE_BUF, so each message is one atomic write even with three writers). "Acked"
therefore means exactly what the library returned to its caller. The parent kills the writers at a random
moment and then checks that every acked record survived.
"""

from __future__ import annotations

import os
import random
import select
import struct
import time
from typing import Final, NamedTuple

from plantrail.ledger.api import Ledger

__all__ = ["ACK", "CRITERION", "Acked", "crash_writer", "drain", "evidence", "parse_acks"]

ACK: Final = struct.Struct(">Q64s")
CRITERION: Final = "login-test-passes"
_SMALL: Final = (100, 20 * 1024)
_BIG: Final = (1 << 20, 8 << 20)


class Acked(NamedTuple):
    """One acknowledged record, as the writer reported it."""

    seq: int
    hash: str


def evidence(rng: random.Random, big: bool) -> str:
    """Evidence text of a log-uniform random size: 100 B to 20 KiB, or 1 to 8 MiB for the big class."""
    low, high = _BIG if big else _SMALL
    size = int(low * (high / low) ** rng.random())
    return rng.randbytes(size // 2 + 1).hex()[:size]


def crash_writer(path: str, ack_fd: int, seed: int, writer: int, big: bool) -> None:
    """Append verdicts forever, reporting each acknowledged (seq, hash); only SIGKILL stops it."""
    rng = random.Random(seed * 16 + writer)
    with Ledger.open(path, repair=True) as ledger:
        n = 0
        while True:
            ack = ledger.verify_criterion(CRITERION, True, evidence(rng, big), idempotency_key=f"w{writer}-{n}")
            os.write(ack_fd, ACK.pack(ack.seq, ack.hash.encode()))
            n += 1


def drain(fd: int, until: float | None) -> bytes:
    """Read the pipe until the monotonic deadline ``until``, or to EOF (every writer gone) when it is None."""
    parts: list[bytes] = []
    while True:
        timeout = None if until is None else until - time.monotonic()
        if timeout is not None and timeout <= 0:
            return b"".join(parts)
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)


def parse_acks(data: bytes) -> list[Acked]:
    """The acks in everything read from the pipe (whole messages only: pipe writes under PIPE_BUF are atomic)."""
    assert len(data) % ACK.size == 0, f"{len(data)} bytes of acks is not a whole number of messages"
    return [Acked(seq, h.decode()) for seq, h in ACK.iter_unpack(data)]
