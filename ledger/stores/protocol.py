"""The store boundary: what any event store (the JSONL file, later PostgreSQL) must provide.

A store appends records for one run under an exclusive writer lock, assigns gapless seqs, chains hashes and
guards its invariants before a byte is written. The ledger (:mod:`plantrail.ledger.api`) talks to a store
only through :class:`Store` and :class:`Session`, so every store runs the same contract tests. This module
depends on no store: the stores live beside each other in :mod:`plantrail.ledger.stores`, each with its own
caches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from plantrail.ledger.vocabulary.keys import KeyEntry

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Actor, Event, Record, Source
    from plantrail.projections.model import PlanState

__all__ = ["Ack", "FsyncPolicy", "KeyEntry", "PendingRecord", "Resumed", "Session", "Store", "TornTail"]

FsyncPolicy = Literal["always", "batch", "none"]


class PendingRecord(NamedTuple):
    """A record the ledger wants appended; the store assigns ``seq``, ``prev`` and ``h``."""

    ts: str
    plan_version: int
    actor: Actor
    data: Event
    source: Source | None = None
    key: str | None = None


class Ack(NamedTuple):
    """What an append returns: the record's seq and hash; ``durable`` once an fsync covers it."""

    seq: int
    hash: str
    durable: bool = True
    duplicate: bool = False
    orphan: str | None = None


class Resumed(NamedTuple):
    """Where a store lets a ledger start instead of folding the whole log: the state as of the store's head,
    and the idempotency keys of the records up to it."""

    state: PlanState
    keys: Mapping[str, KeyEntry]


class TornTail(NamedTuple):
    """Bytes after the last valid record that a crash left behind (no newline, or a zero-filled block)."""

    offset: int
    length: int
    line: int
    zero_fill: bool = False


class Session(Protocol):
    """One exclusive turn at the log: catch up with what others wrote, then append."""

    @property
    def head_seq(self) -> int:
        """The seq of the last record in the log."""
        ...

    @property
    def head_hash(self) -> str:
        """The hash of the last record in the log."""
        ...

    @property
    def rewound(self) -> bool:
        """True when the log no longer extends what this store saw before (a repair cut it back)."""
        ...

    def new_records(self) -> Iterator[Record]:
        """Records appended since this store last looked (all of them on the first session)."""
        ...

    def record(self, seq: int, hash: str) -> Record | None:
        """The record with this seq and hash, read from the log's own bytes (None when the log holds none):
        how a claimed idempotency duplicate is confirmed, whatever a cache says."""
        ...

    def durable(self, seq: int) -> bool:
        """True unless record ``seq`` is one this store wrote and no fsync has covered yet."""
        ...

    def stage(self, record: PendingRecord) -> Record:
        """Assign the next seq and chain hash to ``record``; nothing is written until :meth:`commit`."""
        ...

    def commit(self) -> bool:
        """Write every staged record as one unit; return True when they are durable (fsynced)."""
        ...


class Store(Protocol):
    """One run's log."""

    @property
    def run(self) -> str:
        """The run id from the log's header."""
        ...

    def session(self) -> AbstractContextManager[Session]:
        """Take the writer lock for one read-decide-append turn."""
        ...

    def sync(self) -> None:
        """Make every acknowledged record durable (group commit)."""
        ...

    def resume(self) -> Resumed | None:
        """A checked state to start from instead of reading the whole log, if the store keeps one."""
        ...

    def checkpoint(self, state: PlanState, keys: Mapping[str, KeyEntry]) -> None:
        """Keep a snapshot of ``state`` (the fold up to the store's head); a store without a cache ignores it."""
        ...

    def close(self) -> None:
        """Sync what the policy owes and release the store."""
        ...
