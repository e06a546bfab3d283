"""The record chain every store keeps, whatever holds its bytes.

A store turns a pending record into its canonical line at a given ``(seq, prev)`` with :func:`encode_pending`
(checked against the schema, so nothing unreadable is ever written), and checks each record it reads back
with :func:`check_link`: the next seq, linked to the previous record's hash, of the same run, with the
``log.opened`` header at seq 0 and nowhere else. The JSONL file and the PostgreSQL table store the same line
bytes, so a run copied between them verifies with the same head hash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plantrail.ledger.vocabulary.codec import encode_checked
from plantrail.ledger.vocabulary.errors import error

if TYPE_CHECKING:
    from plantrail.ledger.stores.values import PendingRecord
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["check_link", "encode_pending"]


def encode_pending(p: PendingRecord, *, run: str, seq: int, prev: str) -> tuple[bytes, Record]:
    """Encode one record as its line (newline included) and the record exactly as a reader will see it.

    (The hash and the canonical form are ours by construction; the schema check catches a value of the wrong
    type handed to the library, which would otherwise make every later read of the log fail.)
    """
    return encode_checked(
        seq=seq,
        ts=p.ts,
        run=run,
        plan_version=p.plan_version,
        actor=p.actor,
        data=p.data,
        prev=prev,
        source=p.source,
        key=p.key,
        trace=p.trace,
    )


def check_link(record: Record, *, next_seq: int, prev: str, run: str | None, line: int) -> None:
    """Raise the LogDamaged error that says how ``record`` fails to follow ``(next_seq - 1, prev)`` of ``run``."""
    if record.seq != next_seq:
        raise error(
            "SEQ_GAP",
            f"line {line}: expected seq {next_seq}, found {record.seq}",
            line=line,
            expected=next_seq,
            actual=record.seq,
            seq=record.seq,
        )
    if record.prev != prev:
        raise error(
            "HASH_MISMATCH",
            f"line {line}: seq {record.seq} does not link to the previous line's hash",
            line=line,
            seq=record.seq,
        )
    if (record.seq == 0) != (record.type == "log.opened"):
        raise error("CORRUPT_LINE", f"line {line}: only the first line is the log.opened header", line=line)
    if run is not None and record.run != run:
        raise error("CORRUPT_LINE", f"line {line}: run {record.run} in a log of run {run}", line=line)
