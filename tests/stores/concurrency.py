"""Worker processes for the concurrent-writer tests; each sends one report back over a pipe when done."""

from __future__ import annotations

import asyncio
import random
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import NamedTuple

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import VerifyCriterion
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.errors import PlantrailError

__all__ = [
    "AppendReport",
    "KeyResult",
    "append_worker",
    "async_keyed_appends",
    "keyed_appends",
    "keyed_appends_worker",
    "keyed_worker",
    "reader_worker",
]

_CRITERION = "login-test-passes"


class AppendReport(NamedTuple):
    """What one appending worker saw."""

    accepted: list[tuple[int, str, str]]  # seq, hash, key of every acknowledged event
    batches: int
    stale_refused: int  # deliberately stale expected seqs, refused as they must be
    stale_accepted: int  # deliberately stale expected seqs that went through (a bug)
    races_lost: int  # an optimistic expected seq overtaken by another writer, refused, then retried


def _batch(worker: int, first: int, size: int) -> list[VerifyCriterion]:
    return [
        VerifyCriterion(criterion=_CRITERION, passed=True, evidence=f"worker {worker} event {n}", key=f"w{worker}-{n}")
        for n in range(first, first + size)
    ]


def append_worker(path: str, worker: int, count: int, seed: int, conn: Connection) -> None:
    """Append ``count`` events in batches of 1-8: 10% of tries with a deliberately stale expected seq,
    20% with the seq this worker last saw (optimistic concurrency), the rest unconditionally."""
    rng = random.Random(seed)
    accepted: list[tuple[int, str, str]] = []
    batches = stale_refused = stale_accepted = races_lost = 0
    with Ledger.open(path) as ledger:
        while len(accepted) < count:
            commands = _batch(worker, len(accepted), min(rng.randint(1, 8), count - len(accepted)))
            roll, last = rng.random(), ledger.state.last_seq
            stale = roll < 0.1 and last >= 1
            if stale:
                expected: int | None = rng.randint(0, last - 1)
            else:
                expected = last if roll < 0.3 else None
            try:
                acks = ledger.execute_many(commands, expected_seq=expected)
            except PlantrailError as exc:
                if exc.code != "STALE_EXPECTED_SEQ" or expected is None:
                    raise
                stale_refused += stale
                races_lost += not stale
                continue
            stale_accepted += stale
            batches += 1
            accepted += [(a.seq, a.hash, c.key or "") for a, c in zip(acks, commands, strict=True)]
    conn.send(AppendReport(accepted, batches, stale_refused, stale_accepted, races_lost))
    conn.close()


class KeyResult(NamedTuple):
    """One keyed append: acknowledged (seq, hash, duplicate) or refused with IDEMPOTENCY_CONFLICT."""

    key: str
    seq: int
    hash: str
    duplicate: bool
    conflict: bool


def keyed_worker(path: str, keys: int, variant: int, conn: Connection) -> None:
    """Append one verdict per key k0..k{keys-1}; variant 1 writes other content for every tenth key."""
    results = []
    with Ledger.open(path) as ledger:
        for n in range(keys):
            evidence = f"other content {n}" if variant == 1 and n % 10 == 0 else f"evidence {n}"
            command = VerifyCriterion(criterion=_CRITERION, passed=True, evidence=evidence, key=f"k{n}")
            try:
                ack = ledger.execute(command)
            except PlantrailError as exc:
                if exc.code != "IDEMPOTENCY_CONFLICT":
                    raise
                results.append(KeyResult(f"k{n}", int(exc.fields["seq"]), "", duplicate=False, conflict=True))
                continue
            results.append(KeyResult(f"k{n}", ack.seq, ack.hash, ack.duplicate, conflict=False))
    conn.send(results)
    conn.close()


def reader_worker(path: str, stop: Event, conn: Connection) -> None:
    """Read the whole log again and again while writers append; report the last record of every read.

    A reader never repairs: when it meets a final line without its newline it waits for the writer's lock
    and reads on, so with live writers it must never report a torn tail.
    """
    heads: list[tuple[int, str]] = []
    while not stop.is_set():
        with LogReader(path) as reader:
            last = None
            for record in reader.records():
                last = record
            assert reader.torn is None, f"a reader saw a torn tail while writers were alive: {reader.torn}"
        assert last is not None
        heads.append((last.seq, last.h))
    conn.send(heads)
    conn.close()


def _verdict(worker: int, n: int) -> VerifyCriterion:
    return VerifyCriterion(criterion=_CRITERION, passed=True, evidence=f"w{worker} n{n}", key=f"w{worker}-{n}")


def keyed_appends(target: str | Ledger, worker: int, count: int) -> list[tuple[int, str, str]]:
    """Append ``count`` keyed verdicts to ``target`` (a run's name, opened here, or an open ledger, used and
    closed here) and return each acknowledgement's (seq, hash, key). A writer of a database run that runs out of
    re-decides under contention (WRITE_CONFLICT, nothing written) retries with the same key, as a runtime would."""
    ledger = Ledger.open(target) if isinstance(target, str) else target
    acks: list[tuple[int, str, str]] = []
    with ledger:
        for n in range(count):
            command = _verdict(worker, n)
            while True:
                try:
                    ack = ledger.execute(command)
                    break
                except PlantrailError as exc:
                    if exc.code != "WRITE_CONFLICT":
                        raise
            acks.append((ack.seq, ack.hash, f"w{worker}-{n}"))
    return acks


def keyed_appends_worker(target: str | Ledger, worker: int, count: int, conn: Connection) -> None:
    """:func:`keyed_appends` in a worker process, its acks (or the error's code and message) sent back."""
    try:
        report: object = keyed_appends(target, worker, count)
    except PlantrailError as exc:
        report = f"{exc.code}: {exc.message}"
    conn.send(report)
    conn.close()


async def async_keyed_appends(location: str, worker: int, count: int) -> list[tuple[int, str, str]]:
    """:func:`keyed_appends` from an asyncio task: the ledger opened, each command executed and the ledger closed
    through ``asyncio.to_thread`` (the synchronous library on the event loop's worker threads)."""
    ledger = await asyncio.to_thread(Ledger.open, location)
    acks: list[tuple[int, str, str]] = []
    try:
        for n in range(count):
            command = _verdict(worker, n)
            while True:
                try:
                    ack = await asyncio.to_thread(ledger.execute, command)
                    break
                except PlantrailError as exc:
                    if exc.code != "WRITE_CONFLICT":
                        raise
            acks.append((ack.seq, ack.hash, f"w{worker}-{n}"))
    finally:
        await asyncio.to_thread(ledger.close)
    return acks
