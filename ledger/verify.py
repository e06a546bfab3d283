"""``plantrail verify``: the full audit of a log.

1. Every line: framing, hash, schema, canonical form, seq continuity and the hash chain (the reader).
2. Every event legal when replayed in order: the rules of :func:`ledger.decide.check` against the state
   before it; late results are allowed, as orphans.
3. No orphan ever applied: a late result changes nothing but the orphan list.
4. Determinism: an independent second read and fold gives the same canonical bytes.
5. Optionally, an anchor ``SEQ:HASH`` the auditor kept: the log must still contain that record.
6. Every keyed checkpoint covers the record before it; given the key, every MAC verifies and there is at
   least one checkpoint (:mod:`ledger.checkpoint`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from plantrail.ledger.checkpoint import check_checkpoint
from plantrail.ledger.decide import check
from plantrail.ledger.errors import PlantrailError, error
from plantrail.ledger.events import Record
from plantrail.ledger.store import TornTail
from plantrail.ledger.stores.jsonl import LogReader
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.model import PlanState
from plantrail.projections.state import evolve, fold, initial

__all__ = ["VerifyReport", "parse_anchor", "verify_log"]

_PROGRESS_EVERY = 4096


class VerifyReport(NamedTuple):
    """What verify checked and the figures it found."""

    records: int
    last_seq: int
    head_hash: str | None
    versions: int
    orphans: int
    outcome: str | None
    state_hash: str
    anchor: tuple[int, str] | None
    torn: TornTail | None
    checkpoints: int = 0
    checkpointed_seq: int | None = None
    keyed: bool = False


def parse_anchor(text: str) -> tuple[int, str]:
    """Parse ``SEQ:HASH`` (the head ``verify`` prints)."""
    seq, _, h = text.partition(":")
    if not seq.isdigit() or len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
        raise error("USAGE", f"an anchor is SEQ:HASH with a 64-hex hash, not {text!r}")
    return int(seq), h


def _plan_part(state: PlanState) -> PlanState:
    """The state without what a late result may change (the orphan list, the run's usage) or what every record
    moves."""
    return state._replace(orphans=(), last_seq=0, head=None, usage=None)


def _judge(state: PlanState, record: Record) -> str | None:
    record_type, seq = record.type, record.seq
    try:
        return check(state, record.data, record.plan_version, now=record.ts)
    except PlantrailError as exc:
        raise error(
            "ILLEGAL_EVENT",
            f"line {seq + 1}: seq {seq} ({record_type}) breaks a rule when replayed: {exc.code}: {exc.message}",
            seq=seq,
            line=seq + 1,
            rule=exc.code,
        ) from None


def verify_log(
    path: str | os.PathLike[str],
    *,
    anchor: tuple[int, str] | None = None,
    key: bytes | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> VerifyReport:
    """Run every check; raise the first damage found (a LogDamaged error), else report.

    ``key`` checks the MAC of every keyed checkpoint; ``checkpointed_seq`` is the last seq a checkpoint
    covers (records after it are protected by the chain alone). ``on_progress``, when given, is told the
    bytes checked so far every few thousand records (a progress bar).
    """
    state = initial()
    count = 0
    checkpoints = 0
    checkpointed: int | None = None
    anchored = anchor is None
    with LogReader(path) as reader:
        for record in reader.records():
            count += 1
            if on_progress is not None and count % _PROGRESS_EVERY == 0:
                on_progress(reader.position.offset)
            if record.type == "log.checkpoint":
                check_checkpoint(record, key)
                checkpoints += 1
                checkpointed = record.seq - 1
            if anchor is not None and record.seq == anchor[0]:
                if record.h != anchor[1]:
                    raise error(
                        "ANCHOR_MISMATCH", f"seq {anchor[0]} has hash {record.h}, not the anchored one", seq=anchor[0]
                    )
                anchored = True
            late = _judge(state, record)
            after = evolve(state, record)
            if late is not None and (
                _plan_part(after) != _plan_part(state) or len(after.orphans) != len(state.orphans) + 1
            ):
                raise error("ORPHAN_APPLIED", f"the late result at seq {record.seq} changed the plan", seq=record.seq)
            state = after
        torn = reader.torn
    if not anchored:
        assert anchor is not None
        raise error(
            "ANCHOR_MISMATCH",
            f"the log ends at seq {state.last_seq}; it no longer contains the anchored seq {anchor[0]} "
            "(cut off or rewritten)",
            seq=anchor[0],
            actual=state.last_seq,
        )
    if key is not None and checkpoints == 0:
        raise error(
            "CHECKPOINT_MISSING",
            "a checkpoint key was given but the log holds no checkpoint: nothing in it "
            "is protected by the key (were the checkpoints stripped?)",
        )
    with LogReader(path) as second:
        again = fold(second.records())
    if canonical_bytes(again) != canonical_bytes(state):
        raise error("NONDETERMINISTIC_FOLD", "two folds of the same log gave different states")
    return VerifyReport(
        records=count,
        last_seq=state.last_seq,
        head_hash=state.head,
        versions=state.version,
        orphans=len(state.orphans),
        outcome=state.outcome,
        state_hash=state_hash(state),
        anchor=anchor,
        torn=torn,
        checkpoints=checkpoints,
        checkpointed_seq=checkpointed,
        keyed=key is not None,
    )
