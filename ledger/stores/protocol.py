"""The store boundary: what any store (the JSONL file store, the PostgreSQL store) provides, in three protocols.

- A :class:`Store` holds many runs: it lists them and opens one by id.
- A :class:`Run` is one run of a store, read through its reader methods (:class:`RunReader`): its records, one
  record, the last ones, the records as they are appended, the current state, the plan versions and the state
  at a version, a payload by its name. A run object keeps what it read: opened for one question, it opens its
  log once.
- A :class:`RunWriter` appends records for one run under an exclusive writer lock, a :class:`Session` at a
  time: it assigns gapless seqs, chains hashes and guards its invariants before a byte is written, knowing
  nothing of the plan state, and keeps payloads beside the records, each stored before a record names it.
  The ledger (:mod:`plantrail.ledger.api`) talks to a writer only through these, so every store runs the same
  contract tests.

This module depends on no store: the stores live beside each other in :mod:`plantrail.ledger.stores`, each with
its own caches, and :func:`plantrail.ledger.stores.opener.open_run` turns what names a run into a :class:`Run`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from plantrail.ledger.stores.values import (
    Ack,
    FsyncPolicy,
    KeyEntry,
    PendingRecord,
    ReadResult,
    Resumed,
    TornTail,
    until_damage,
)

if TYPE_CHECKING:
    from plantrail.ledger.stores.payloads import StoredPayload
    from plantrail.ledger.stores.values import Quarantined
    from plantrail.ledger.stores.versions import Versions
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.ledger.vocabulary.fragments import TornRecord
    from plantrail.projections.model import PlanState
    from plantrail.projections.runs import RunRow

__all__ = [
    "Ack",
    "FollowsAll",
    "FsyncPolicy",
    "KeyEntry",
    "PendingRecord",
    "ReadResult",
    "Resumed",
    "Run",
    "RunReader",
    "RunWriter",
    "Session",
    "StateCache",
    "Store",
    "TornTail",
    "until_damage",
]


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


class RunWriter(Protocol):
    """One run's log, opened for appending. It knows records, not the plan state: what the records mean is the
    ledger's business (a store that keeps a cache of the state offers :class:`StateCache` too)."""

    @property
    def run(self) -> str:
        """The run id from the log's header."""
        ...

    @property
    def target(self) -> str:
        """What names the run: the log's path, or the database run's URL (its password left out)."""
        ...

    def session(self) -> AbstractContextManager[Session]:
        """Take the writer lock for one read-decide-append turn."""
        ...

    def store_payload(self, data: bytes, *, salt: bytes | None = None) -> StoredPayload:
        """Keep ``data`` beside the run's records, durable when this returns, and return its name (``sha256:``
        over a fresh 32-byte salt, or ``salt``, and the bytes) and size: a record appended after it may name it
        (see :mod:`plantrail.ledger.stores.payloads`). Appends nothing to the log."""
        ...

    def sync(self) -> None:
        """Make every acknowledged record durable (group commit)."""
        ...

    def close(self) -> None:
        """Sync what the policy owes and release the store."""
        ...


@runtime_checkable
class FollowsAll(Protocol):
    """An optional capability of a store: every record of every run, in the order the store committed them,
    after a position, waiting for new ones (a database orders its rows across runs; a runs folder keeps no
    order across its files, and offers none)."""

    def follow(
        self, *, after: Any = None, poll: float = 1.0, stop: Callable[[], bool] | None = None
    ) -> Iterator[tuple[Any, Record]]:
        """``(position, record)`` pairs in store order after ``after`` (a position an earlier pair gave; None:
        from the first), until ``stop()`` is true (asked before each wait)."""
        ...


@runtime_checkable
class StateCache(Protocol):
    """An optional capability of a run's writer: a cache of the state the ledger folds (a snapshot beside a file,
    a summary row in a database). A cache is a hint: it may make a read faster, never change an answer."""

    def resume(self) -> Resumed | None:
        """A checked state to start from instead of reading the whole log, if the store keeps one."""
        ...

    def checkpoint(self, state: PlanState, keys: Mapping[str, KeyEntry]) -> None:
        """Keep what the cache keeps of ``state`` (the fold up to the store's head)."""
        ...


class RunReader(Protocol):
    """The reads every store answers for one run, each record checked as it is read. A damaged log raises
    :class:`~plantrail.ledger.vocabulary.errors.LogDamaged`; a torn tail (a crash mid-write, only a file has one)
    ends a read, and the read says so."""

    @property
    def location(self) -> str:
        """What names the run: a JSONL log's path, or a database run's URL (``postgresql://…/db#RUN``)."""
        ...

    def exists(self) -> bool:
        """True when the run exists (anything at a file's path counts: reading it says what it is)."""
        ...

    def header(self) -> Record:
        """The run's header record (seq 0)."""
        ...

    def records(self, *, after: int = -1, upto: int | None = None) -> Iterator[Record]:
        """The run's records after seq ``after`` up to seq ``upto`` (to the end without it), in order; once they
        are exhausted, :attr:`torn` says whether a torn tail followed them."""
        ...

    @property
    def torn(self) -> TornTail | None:
        """The torn tail the last read of :meth:`records` ended on (None: none, or not read to the end)."""
        ...

    def record_at(self, seq: int) -> Record:
        """Record ``seq``; UNKNOWN_SEQ when the run does not reach it."""
        ...

    def payload(self, digest: str) -> bytes:
        """The bytes of the run's payload named ``digest``, checked against the name: PAYLOAD_MISSING when the
        store holds none, PAYLOAD_ALTERED when they do not hash to it."""
        ...

    def salted_payload(self, digest: str) -> tuple[bytes, bytes]:
        """The salt and the bytes of the run's payload named ``digest``, checked as :meth:`payload` checks them:
        what a copy of the payload needs for its name to be checked again elsewhere."""
        ...

    def payload_names(self) -> list[str]:
        """The names of every payload the store keeps for the run, sorted (whether or not a record names it)."""
        ...

    def tail(
        self, count: int, keep: Callable[[Record], bool], *, stop_below: int = 0
    ) -> tuple[list[Record], TornTail | None]:
        """The last ``count`` records ``keep`` accepts (in log order), read backwards, never below seq
        ``stop_below``; and the torn tail after them."""
        ...

    def follow(
        self,
        *,
        after: int = -1,
        poll: float = 0.2,
        stop: Callable[[], bool] | None = None,
        head: str | None = None,
    ) -> Iterator[list[Record]]:
        """The records after seq ``after`` as they are appended, a batch at a time, until ``stop()`` is true
        (asked before each wait). UNKNOWN_SEQ when the run does not reach ``after``. A file's follower may give
        a :class:`~plantrail.ledger.stores.values.Rewound` batch (no records) when the file changed under it
        (and when it does not hold record ``after`` with hash ``head``, the hash the caller read it with): the
        batches after it start at its ``from_seq``."""
        ...

    def torn_records(self, torn: TornTail) -> tuple[TornRecord, ...]:
        """What the torn tail ``torn`` (a read of the run ended on it) reads as, as far as its bytes go: the
        records a crash cut short, described for a person, never read as records (none for a store that is
        never torn)."""
        ...

    def quarantined(self) -> tuple[Quarantined, ...]:
        """The torn tails the run's repairs moved aside, each with what its bytes read as (none for a store that
        is never repaired)."""
        ...

    def current(self, *, use_cache: bool | None = None, stop_at_damage: bool = False) -> ReadResult:
        """Where the run stands now: its state, and what ended the read early."""
        ...

    def versions(self) -> Versions:
        """The run's plan versions."""
        ...

    def version_state(self, version: int) -> tuple[PlanState, int | None, TornTail | None]:
        """Version ``version`` as it stood when superseded (or now, for the active one), the seq that superseded
        it, and the torn tail the read ended on."""
        ...

    def close(self) -> None:
        """Release what the reads hold open (a run object can be used as a context manager)."""
        ...

    def __enter__(self) -> Self:
        """The run itself."""
        ...

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        ...


class Run(RunReader, Protocol):
    """One run of a store: its reads, and its writer."""

    #: True when what names the run names its id too (a database URL's ``#RUN``): a run created there gets that
    #: id and no other; False when a run's id is chosen at its creation and written in its header (a file).
    names_its_id: bool

    @property
    def store(self) -> Store:
        """The store the run lives in."""
        ...

    def new_run_id(self, given: str | None = None, *, what: str = "the run") -> str:
        """The id a run created here gets (a file's name, a database URL's ``#RUN``), ``given`` checked against it;
        ``what`` names the run in the USAGE error of a name that names none."""
        ...

    def prepare(self) -> None:
        """Make what the run needs before it is created (a file's folder)."""
        ...

    def create(
        self, *, run: str | None, first: Sequence[PendingRecord], **options: Any
    ) -> tuple[RunWriter, list[Record]]:
        """Create the run with its header and ``first`` records, atomically; LOG_EXISTS when it exists."""
        ...

    def open_writer(self, **options: Any) -> RunWriter:
        """The run's log opened for appending (each store takes its own options)."""
        ...


@runtime_checkable
class Store(Protocol):
    """Where runs live: a runs folder of JSONL files, or a database."""

    @property
    def location(self) -> str:
        """What names the store: the folder's path, or the database's URL."""
        ...

    def run_ids(self) -> list[str]:
        """The ids of the runs the store holds, in order."""
        ...

    def head_position(self) -> Any:
        """Where the store's changes stand now, for :func:`plantrail.ledger.run_changes.run_changes`: what is
        appended to a run after it is a change. A database's position in the order it committed its records
        (None when it holds none, the ``after`` of :meth:`FollowsAll.follow`); a folder's logs with their sizes
        and times."""
        ...

    def run(self, run_id: str) -> Run:
        """Run ``run_id`` of this store (it need not exist yet: :meth:`Run.exists` says)."""
        ...

    def runs(self) -> Sequence[Run]:
        """Every run the store holds, in order (a folder's: each ``*.jsonl`` file in it, whatever its name)."""
        ...

    def summaries(self, *, reasons: bool = True) -> list[RunRow]:
        """One row per run (:class:`~plantrail.projections.runs.RunRow`): where each stands now. ``reasons=False``
        lets a store leave the rows' replan reasons unread where reading them costs a read of each run."""
        ...

    def with_reasons(self, row: RunRow) -> RunRow:
        """``row`` with its replan reasons (read now where :meth:`summaries` left them unread)."""
        ...
