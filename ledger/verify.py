"""``plantrail verify``: the full audit of a log.

1. Every line: framing, hash, schema, canonical form, seq continuity and the hash chain (the reader).
2. Every event legal when replayed in order: the rules of :func:`ledger.decide.check` against the state
   before it; late results are allowed, as orphans.
3. No orphan ever applied: a late result changes nothing but the orphan list.
4. Determinism: :func:`fold` (with its fast paths) over the same decoded records gives the canonical bytes
   that step 2's record-by-record advance (:class:`Advancing`, the group commit's builder) reached. The
   file is read and decoded once, so a log another process is appending to is verified up to the seq the
   read reached (``last_seq``, ``verified_bytes``).
5. Optionally, an anchor ``SEQ:HASH`` the auditor kept: the log must still contain that record.
6. Every keyed checkpoint covers the record before it; given the key, every MAC verifies and there is at
   least one checkpoint (:mod:`ledger.checkpoint`).
7. Optionally, for a forked run, its parent's log: the parent's chain reaches the seq the fork names with the
   hash it names, and the parent's state there hashes to the state the fork carries (:mod:`ledger.lineage`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from plantrail.ledger.checkpoint import check_checkpoint
from plantrail.ledger.decide import check
from plantrail.ledger.errors import PlantrailError, error
from plantrail.ledger.events import Record
from plantrail.ledger.lineage import check_parent
from plantrail.ledger.store import TornTail
from plantrail.ledger.stores import is_database_url
from plantrail.ledger.stores.jsonl import LogReader
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.model import PlanState
from plantrail.projections.state import Advancing, StateView, evolve, fold, initial

__all__ = ["VerifyReport", "parse_anchor", "verify_log"]

_ANCHOR = re.compile(r"([0-9]{1,19}):([0-9a-f]{64})")
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
    verified_bytes: int = 0
    grew: bool = False
    parent: tuple[str, int] | None = None  # the parent run and seq checked (verify --parent)


def parse_anchor(text: str) -> tuple[int, str]:
    """Parse ``SEQ:HASH`` (the head ``verify`` prints): SEQ in ASCII digits (at most 19 of them, as any seq a
    log can hold), HASH 64 lowercase hex digits; USAGE for anything else."""
    match = _ANCHOR.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 100 else text[:100] + "…"
        raise error("USAGE", f"an anchor is SEQ:HASH (SEQ in digits 0-9, HASH 64 hex digits), not {shown!r}")
    return int(match[1]), match[2]


def _plan_part(state: PlanState) -> PlanState:
    """The state without what a late result may change (the orphan list, the run's usage) or what every record
    moves."""
    return state._replace(orphans=(), last_seq=0, head=None, usage=None)


def _judge(
    state: StateView, record_type: str, seq: int, data: object, plan_version: int, now: str | None = None
) -> str | None:
    try:
        return check(state, data, plan_version, now=now)  # type: ignore[arg-type]
    except PlantrailError as exc:
        raise error(
            "ILLEGAL_EVENT",
            f"line {seq + 1}: seq {seq} ({record_type}) breaks a rule when replayed: {exc.code}: {exc.message}",
            seq=seq,
            line=seq + 1,
            rule=exc.code,
        ) from None


class _Audit:
    """The record-by-record checks of one read (steps 1 to 3, 5 and 6), passing each checked record on.

    The state each record is judged against advances through :class:`Advancing` (the group commit's
    builder), an implementation independent of :func:`fold`'s fast paths: step 4 compares the two.
    """

    def __init__(
        self,
        anchor: tuple[int, str] | None,
        key: bytes | None,
        on_progress: Callable[[int], None] | None = None,
        where: Callable[[], int] = lambda: 0,
    ) -> None:
        self.anchor = anchor
        self.key = key
        self.on_progress = on_progress
        self.where = where
        self._state = Advancing(initial())
        self.count = 0
        self.checkpoints = 0
        self.checkpointed: int | None = None
        self.anchored = anchor is None

    @property
    def state(self) -> PlanState:
        """The state after every record checked so far."""
        return self._state.result()

    def checked(self, records: Iterable[Record]) -> Iterator[Record]:
        anchor = self.anchor
        state = self._state
        for record in records:
            self.count += 1
            if self.on_progress is not None and self.count % _PROGRESS_EVERY == 0:
                self.on_progress(self.where())
            if record.type == "log.checkpoint":
                check_checkpoint(record, self.key)
                self.checkpoints += 1
                self.checkpointed = record.seq - 1
            if anchor is not None and record.seq == anchor[0]:
                if record.h != anchor[1]:
                    raise error(
                        "ANCHOR_MISMATCH", f"seq {anchor[0]} has hash {record.h}, not the anchored one", seq=anchor[0]
                    )
                self.anchored = True
            late = _judge(state.current(), record.type, record.seq, record.data, record.plan_version, record.ts)
            if late is None:
                state.add(record)
            else:  # a late result: prove it changed nothing but the orphan list
                before = state.result()
                after = evolve(before, record)
                if _plan_part(after) != _plan_part(before) or len(after.orphans) != len(before.orphans) + 1:
                    raise error(
                        "ORPHAN_APPLIED", f"the late result at seq {record.seq} changed the plan", seq=record.seq
                    )
                state = self._state = Advancing(after)
            yield record


def _verify_rows(
    url: str, anchor: tuple[int, str] | None, key: bytes | None, on_progress: Callable[[int], None] | None
) -> tuple[_Audit, PlanState, int]:
    """The checks over one read of a database run's rows: the audit, the fold, and the bytes of the lines read
    (each with its newline, as the run's JSONL copy holds them)."""
    from plantrail.ledger.stores.postgres import read_checked_lines

    read = 0

    def records() -> Iterator[Record]:
        nonlocal read
        for record, line in read_checked_lines(url):
            read += len(line)
            yield record

    audit = _Audit(anchor, key, on_progress, lambda: read)
    folded = fold(audit.checked(records()))
    return audit, folded, read


def verify_log(
    path: str | os.PathLike[str],
    *,
    anchor: tuple[int, str] | None = None,
    key: bytes | None = None,
    on_progress: Callable[[int], None] | None = None,
    parent: str | os.PathLike[str] | None = None,
) -> VerifyReport:
    """Run every check over one read of the log; raise the first damage found (a LogDamaged error), else report.

    ``key`` checks the MAC of every keyed checkpoint; ``checkpointed_seq`` is the last seq a checkpoint
    covers (records after it are protected by the chain alone). Records appended while the read ran past
    ``verified_bytes`` are not covered; ``grew`` says whether there were any. ``on_progress``, when given,
    is told the bytes checked so far every few thousand records (a progress bar). ``parent``, for a forked
    run, is the log it was forked from: FORK_MISMATCH unless the parent holds, at the seq the fork names, the
    hash and the state the fork carries (USAGE when the log is no fork).
    """
    if is_database_url(name := os.fspath(path)):
        audit, folded, verified = _verify_rows(name, anchor, key, on_progress)
        torn, grew = None, False
    else:
        with LogReader(name) as reader:
            audit = _Audit(anchor, key, on_progress, lambda: reader.position.offset)
            folded = fold(audit.checked(reader.records()))
            torn = reader.torn
            end = reader.end if torn is None else torn.offset + torn.length
            grew = os.fstat(reader.fd).st_size > end
            verified = reader.end
    state = audit.state
    if not audit.anchored:
        assert anchor is not None
        raise error(
            "ANCHOR_MISMATCH",
            f"the log ends at seq {state.last_seq}; it no longer contains the anchored seq {anchor[0]} "
            "(cut off or rewritten)",
            seq=anchor[0],
            actual=state.last_seq,
        )
    if key is not None and audit.checkpoints == 0:
        raise error(
            "CHECKPOINT_MISSING",
            "a checkpoint key was given but the log holds no checkpoint: nothing in it "
            "is protected by the key (were the checkpoints stripped?)",
        )
    if canonical_bytes(folded) != canonical_bytes(state):
        raise error(
            "NONDETERMINISTIC_FOLD", "fold and the record-by-record advance of the same log gave different states"
        )
    checked_parent = None if parent is None else _check_parent(state, parent)
    return VerifyReport(
        records=audit.count,
        last_seq=state.last_seq,
        head_hash=state.head,
        versions=state.version,
        orphans=len(state.orphans),
        outcome=state.outcome,
        state_hash=state_hash(state),
        anchor=anchor,
        torn=torn,
        checkpoints=audit.checkpoints,
        checkpointed_seq=audit.checkpointed,
        keyed=key is not None,
        verified_bytes=verified,
        grew=grew,
        parent=checked_parent,
    )


def _check_parent(state: PlanState, parent: str | os.PathLike[str]) -> tuple[str, int]:
    """Check a fork's nearest lineage link against its parent's log (read up to the fork's seq, every line of
    it checked); return the parent run and seq checked."""
    from plantrail.projections.history import replay_at_seq

    if not state.lineage:
        raise error("USAGE", "the log is not a forked run (it has no run.forked record): it has no parent to check")
    from plantrail.ledger.reading import open_records

    link = state.lineage[-1]
    with open_records(parent) as (_, records):
        try:
            at = replay_at_seq(records, link.seq)
        except PlantrailError as exc:
            if exc.code != "UNKNOWN_SEQ":
                raise
            raise error(
                "FORK_MISMATCH",
                f"the fork starts at seq {link.seq} of its parent; the log given ends before it ({exc.message})",
                seq=link.seq,
            ) from None
    check_parent(link, at)
    return link.run, link.seq
