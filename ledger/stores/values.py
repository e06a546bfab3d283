"""The values every store and the ledger pass each other: a record to append, an append's acknowledgement, a
state to resume from, a torn tail, a read's result (the store protocols are in
:mod:`plantrail.ledger.stores.protocol`, which names these too; code that only passes values imports them from
here, without the protocols' classes)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

from plantrail.ledger.vocabulary.keys import KeyEntry

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.errors import LogDamaged
    from plantrail.ledger.vocabulary.events import Actor, Event, Record, Source, Trace
    from plantrail.ledger.vocabulary.fragments import TornRecord
    from plantrail.projections.model import PlanState

__all__ = [
    "Ack",
    "FsyncPolicy",
    "KeyEntry",
    "PendingRecord",
    "Quarantined",
    "ReadResult",
    "Resumed",
    "Rewound",
    "TornTail",
    "until_damage",
]

FsyncPolicy = Literal["always", "batch", "none"]


class PendingRecord(NamedTuple):
    """A record the ledger wants appended; the store assigns ``seq``, ``prev`` and ``h``."""

    ts: str
    plan_version: int
    actor: Actor
    data: Event
    source: Source | None = None
    key: str | None = None
    trace: Trace | None = None


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


class Quarantined(NamedTuple):
    """A quarantine file beside a log (a repair moved a torn tail into it): its path, the log's offset the bytes
    were cut at, its size, and what its bytes read as (:func:`plantrail.ledger.vocabulary.fragments.read_fragment`)."""

    name: str
    offset: int
    size: int
    records: tuple[TornRecord, ...]


class ReadResult(NamedTuple):
    """A log's current state; ``torn`` or ``damage`` say why the read stopped early (the state is the valid
    part's). ``snapshot_seq`` is the seq up to which the answer came from the snapshot: the records up to it
    were not re-read (their framing and chain are checked where the snapshot ends; ``verify`` reads every
    byte). None when every record was read."""

    state: PlanState
    torn: TornTail | None
    damage: LogDamaged | None = None
    snapshot_seq: int | None = None


class Rewound(list["Record"]):
    """What a follower of a file gives, as an empty batch, when the log changed under it so that a record it
    gave is not in the log any more (the file was cut back, or replaced by a file holding another history), or
    the file at the path was replaced by another one.

    ``kind`` is ``cut`` (the same file, shorter than what was given, or holding other records) or ``replaced``
    (another file at the path); ``shown`` is the last seq the follower gave; ``kept`` the last seq it gave that
    the log still holds as it gave it (-1: none); ``from_seq`` is where the batches after this one start:
    ``shown + 1`` when everything given is still there (the follower goes on), else 0 (it starts over from the
    log's first record, so that a reader can rebuild its state: the records up to ``kept`` are the ones it had).
    ``message`` says it in words. A batch, so that a reader that only reads records sees none in it."""

    def __init__(self, kind: Literal["cut", "replaced"], shown: int, kept: int, from_seq: int, message: str) -> None:
        super().__init__()
        self.kind = kind
        self.shown = shown
        self.kept = kept
        self.from_seq = from_seq
        self.message = message

    def __repr__(self) -> str:
        return f"Rewound({self.kind!r}, shown={self.shown}, kept={self.kept}, from_seq={self.from_seq})"

    def as_dict(self) -> dict[str, object]:
        """The notice as JSON members."""
        return {
            "kind": self.kind,
            "shown": self.shown,
            "kept": self.kept,
            "from_seq": self.from_seq,
            "message": self.message,
        }


def until_damage(records: Iterable[Record], found: list[LogDamaged]) -> Iterator[Record]:
    """``records`` until one is damaged: the damage is put in ``found`` instead of raised (a read that answers
    from the valid part, and says what stopped it)."""
    from plantrail.ledger.vocabulary.errors import LogDamaged

    try:
        yield from records
    except LogDamaged as exc:
        found.append(exc)
