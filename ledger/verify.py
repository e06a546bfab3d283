"""``plantrail verify``: the full audit of a log.

1. Every line: framing, hash, schema, canonical form, seq continuity and the hash chain (the reader).
2. Every event legal when replayed in order: the rules of :func:`ledger.rules.decide.check` against the state
   before it; late results are allowed, as orphans.
3. No orphan ever applied: a late result changes nothing but the orphan list.
4. Determinism: the state step 2 reached through the fold's in-place builder (:class:`Advancing`, the
   group commit's) is the state the immutable, record-by-record :func:`evolve` reaches over the same
   decoded records, from a state the builder froze between :data:`WINDOW` and twice that many records
   before the end (the whole log when it is shorter). One fold, not two: the check costs a fraction of a
   replay at any size, and the records it re-applies are the latest (memory stays flat). The file is read
   and decoded once, so a log another process is appending to is verified up to the seq the read reached
   (``last_seq``, ``verified_bytes``). A large log is read (step 1) by a forked child on another core while
   this process runs steps 2 to 6 on the records it sends (:mod:`ledger.stores.jsonl.read_ahead`); the records, and the
   first damage found, are the same either way.
5. Optionally, an anchor ``SEQ:HASH`` the auditor kept: the log must still contain that record.
6. Every keyed checkpoint covers the record before it; given the key, every MAC verifies and there is at
   least one checkpoint (:mod:`ledger.checkpoint`).
7. Every signed checkpoint covers the record before it; given the public key, the RFC 6962 tree over the
   line hashes of every record before it has the root it names and its signature verifies, and there is at
   least one (:mod:`ledger.signing`). Optionally, signed notes held outside the log (a published or cosigned
   checkpoint), each signed by that key: the log must still hold the tree each names, its size and its root,
   which catches a log cut after its last signed checkpoint.
8. Optionally, for a forked run, its parent's log: the parent's chain reaches the seq the fork names with the
   hash it names, and the parent's state there hashes to the state the fork carries (:mod:`ledger.rules.lineage`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple

from plantrail.ledger.checkpoint import check_checkpoint
from plantrail.ledger.collector import paused
from plantrail.ledger.rules.decide import judge
from plantrail.ledger.rules.lineage import check_parent
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.stores.jsonl.read_ahead import reading
from plantrail.ledger.stores.jsonl.run import FileRun
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.stores.postgres_run import DatabaseRun
from plantrail.ledger.stores.values import TornTail
from plantrail.ledger.vocabulary.arguments import strict
from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.events import LogCheckpoint, LogSigned, Record
from plantrail.ledger.vocabulary.merkle import Frontier, leaf_hash
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.model import PlanState
from plantrail.projections.state import evolve, in_place, initial

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.signed_note import Checkpoint, VerifierKey

__all__ = ["WINDOW", "VerifyReport", "parse_anchor", "verify_bytes", "verify_log"]

_ANCHOR = re.compile(r"([0-9]{1,19}):([0-9a-f]{64})")
#: The determinism check re-applies the last WINDOW to 2 x WINDOW records with :func:`evolve`.
WINDOW: Final = 2048
_PROGRESS_EVERY: Final = 2 * WINDOW  # a multiple of WINDOW: the loop asks only at the windows' moves


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
    adopted: int = 0  # the late completions ``adopt`` took into the plan (each checked again as it was adopted)
    signed: int = 0  # the signed checkpoints (each checked against the tree and the public key, given one)
    signed_seq: int | None = None  # the last seq a signed checkpoint covers
    pubkey: str | None = None  # the verifier key the signatures were checked with (verify --pubkey)
    notes: tuple[int, ...] = ()  # the tree sizes of the signed notes the log was held to (verify --note)


def parse_anchor(text: str) -> tuple[int, str]:
    """Parse ``SEQ:HASH`` (the head ``verify`` prints): SEQ in ASCII digits (at most 19 of them, as any seq a
    log can hold), HASH 64 lowercase hex digits; USAGE for anything else."""
    match = _ANCHOR.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 100 else text[:100] + "…"
        raise error("USAGE", f"an anchor is SEQ:HASH (SEQ in digits 0-9, HASH 64 hex digits), not {shown!r}")
    return int(match[1]), match[2]


def _plan_part(state: PlanState) -> PlanState:
    """The state without what a late result may change (the orphan list, the run's usage, the attempts cut off
    in flight it closes) or what every record moves."""
    return state._replace(orphans=(), last_seq=0, head=None, usage=None, cut_off=())


def _illegal(exc: PlantrailError, record_type: str, seq: int) -> Exception:
    """ILLEGAL_EVENT for a record the rules refuse when replayed, naming the rule."""
    return error(
        "ILLEGAL_EVENT",
        f"line {seq + 1}: seq {seq} ({record_type}) breaks a rule when replayed: {exc.code}: {exc.message}",
        seq=seq,
        line=seq + 1,
        rule=exc.code,
    )


class _Audit:
    """The record-by-record checks of one read (steps 1 to 3, 5 and 6) and what step 4 needs.

    The state each record is judged against advances through the fold's in-place builder
    (:func:`projections.state.in_place`, what :func:`fold` and the group commit use); step 4 compares it
    with :func:`evolve` (immutable, record by record) over the latest records.
    """

    def __init__(
        self,
        anchor: tuple[int, str] | None,
        key: bytes | None,
        on_progress: Callable[[int], None] | None = None,
        where: Callable[[], int] = lambda: 0,
        pubkey: VerifierKey | None = None,
        notes: Sequence[tuple[str, Checkpoint]] = (),
    ) -> None:
        self.anchor = anchor
        self.key = key
        self.pubkey = pubkey
        # The signed notes held outside the log (where each came from, and its checkpoint), smallest tree first.
        self.notes = sorted(notes, key=lambda note: note[1].size)
        self.held = 0  # the notes whose tree the records read so far were found to hold
        self.run = ""  # the run id the records name
        # The RFC 6962 tree over the records read so far, kept only to check signed checkpoints with a key.
        self.tree = None if pubkey is None else Frontier()
        self.signed = 0
        self.signed_seq: int | None = None
        self.on_progress = on_progress
        self.where = where
        start = initial()
        self._builder = in_place(start)
        self._head = start.head
        # The determinism check's two windows (step 4): the states the builder had at their starts, frozen,
        # and their records.
        self.since: PlanState = start
        self.window: list[Record] = []
        self.middle: PlanState = start
        self.recent: list[Record] = []
        self.count = 0
        self.checkpoints = 0
        self.checkpointed: int | None = None
        self.anchored = anchor is None

    @property
    def state(self) -> PlanState:
        """The state after every record checked so far."""
        return self._builder.freeze(self._builder.last_seq, self._head)

    def evolved(self) -> PlanState:
        """The state :func:`evolve` reaches from the older window's frozen state over every record since."""
        state = self.since
        for record in self.window:
            state = evolve(state, record)
        for record in self.recent:
            state = evolve(state, record)
        return state

    def check_all(self, records: Iterable[Record]) -> None:
        """Check every record (steps 1 to 3, 5 and 6), keeping the determinism check's windows."""
        anchor_seq = -1 if self.anchor is None else self.anchor[0]
        builder = self._builder
        add = builder.add
        recent = self.recent
        count = self.count
        head = self._head
        tree = self.tree
        due = self._due()
        try:
            for record in records:
                count += 1
                if not count % WINDOW:  # the windows move up: one freeze every WINDOW records
                    self.since, self.window = self.middle, recent
                    self.middle = builder.freeze(builder.last_seq, head)
                    recent = self.recent = []
                    if self.on_progress is not None and not count % _PROGRESS_EVERY:
                        self.on_progress(self.where())
                data = record.data
                if type(data) is LogCheckpoint:
                    check_checkpoint(record, self.key)
                    self.checkpoints += 1
                    self.checkpointed = record.seq - 1
                elif type(data) is LogSigned:
                    self._signed(record)
                if record.seq == anchor_seq:
                    self._anchor(record)
                try:
                    late = judge(builder, data, record.plan_version, now=record.ts)
                except PlantrailError as exc:
                    raise _illegal(exc, record.type, record.seq) from None
                if late is None:
                    add(record)
                else:  # a late result: prove it changed nothing but the orphan list
                    before = builder.freeze(builder.last_seq, head)
                    after = evolve(before, record)
                    if _plan_part(after) != _plan_part(before) or len(after.orphans) != len(before.orphans) + 1:
                        raise error(
                            "ORPHAN_APPLIED", f"the late result at seq {record.seq} changed the plan", seq=record.seq
                        )
                    builder = self._builder = in_place(after)
                    add = builder.add
                head = record.h
                recent.append(record)
                if tree is not None:
                    tree.append(leaf_hash(bytes.fromhex(record.h)))
                    if tree.size == due:
                        self.run = record.run
                        due = self._hold(tree)
        finally:
            self.count, self._head = count, head

    def _signed(self, record: Record) -> None:
        """Check a signed checkpoint: what it covers, and with a public key its tree root and signature."""
        from plantrail.ledger.signing import check_signed

        check_signed(record, None if self.tree is None else self.tree.root(), self.pubkey)
        self.signed += 1
        self.signed_seq = record.seq - 1

    def _due(self) -> int:
        """The tree size of the next signed note to hold the log to (-1 for none)."""
        return self.notes[self.held][1].size if self.held < len(self.notes) else -1

    def _hold(self, tree: Frontier) -> int:
        """Check every note of the tree's size against it (ANCHOR_MISMATCH for another log or another root);
        return the next note's size."""
        from plantrail.ledger.signing import origin_of

        while self.held < len(self.notes) and self.notes[self.held][1].size == tree.size:
            where, note = self.notes[self.held]
            if note.origin != origin_of(self.run):
                raise error(
                    "ANCHOR_MISMATCH",
                    f"{where} is a checkpoint of {note.origin}, not of this log ({origin_of(self.run)})",
                    path=where,
                )
            if note.root != tree.root():
                raise error(
                    "ANCHOR_MISMATCH",
                    f"{where} names the tree of the first {note.size} records (seq 0..{note.size - 1}) with another "
                    "root than the log's: the records it covers were rewritten since it was signed",
                    path=where,
                    seq=note.size - 1,
                )
            self.held += 1
        return self._due()

    def unheld(self, last_seq: int) -> None:
        """ANCHOR_MISMATCH when a note names a tree larger than the log: the log was cut after it was signed."""
        if self.held < len(self.notes):
            where, note = self.notes[self.held]
            raise error(
                "ANCHOR_MISMATCH",
                f"{where} is a signed checkpoint of {note.size} records (seq 0..{note.size - 1}), but the log ends at "
                f"seq {last_seq}: the records after it were cut off",
                path=where,
                seq=note.size - 1,
                actual=last_seq,
            )

    def _anchor(self, record: Record) -> None:
        """Check the anchored record's hash."""
        assert self.anchor is not None
        if record.h != self.anchor[1]:
            raise error(
                "ANCHOR_MISMATCH", f"seq {record.seq} has hash {record.h}, not the anchored one", seq=record.seq
            )
        self.anchored = True


def _verify_rows(
    url: str,
    anchor: tuple[int, str] | None,
    key: bytes | None,
    on_progress: Callable[[int], None] | None,
    pubkey: VerifierKey | None = None,
    notes: Sequence[tuple[str, Checkpoint]] = (),
) -> tuple[_Audit, int]:
    """The checks over one read of a database run's rows: the audit, and the bytes of the lines read (each
    with its newline, as the run's JSONL copy holds them)."""
    from plantrail.ledger.stores.postgres import read_checked_lines

    read = 0

    def records() -> Iterator[Record]:
        nonlocal read
        for record, line in read_checked_lines(url):
            read += len(line)
            yield record

    audit = _Audit(anchor, key, on_progress, lambda: read, pubkey, notes)
    audit.check_all(records())
    return audit, read


def _verify_file(
    reader: LogReader,
    anchor: tuple[int, str] | None,
    key: bytes | None,
    on_progress: Callable[[int], None] | None,
    pubkey: VerifierKey | None = None,
    notes: Sequence[tuple[str, Checkpoint]] = (),
) -> tuple[_Audit, int, TornTail | None, bool]:
    """The checks over one read of a log file: the audit, the bytes of whole records read, the torn tail after
    them, and whether the file grew past the read. A large log is read by a child on another core while this
    process judges and folds its records (:mod:`ledger.stores.jsonl.read_ahead`): the same records in the same order."""
    with reading(reader) as read:
        audit = _Audit(anchor, key, on_progress, lambda: read.offset, pubkey, notes)
        audit.check_all(read.records())
        end = read.end if read.torn is None else read.torn.offset + read.torn.length
        return audit, read.end, read.torn, os.fstat(reader.fd).st_size > end


@strict
def verify_log(
    path: str | os.PathLike[str],
    *,
    anchor: tuple[int, str] | None = None,
    key: bytes | None = None,
    on_progress: Callable[[int], None] | None = None,
    parent: str | os.PathLike[str] | None = None,
    pubkey: VerifierKey | None = None,
    notes: Sequence[str | os.PathLike[str]] = (),
) -> VerifyReport:
    """Run every check over one read of the log; raise the first damage found (a LogDamaged error), else report.

    ``key`` checks the MAC of every keyed checkpoint; ``checkpointed_seq`` is the last seq a checkpoint
    covers (records after it are protected by the chain alone). Records appended while the read ran past
    ``verified_bytes`` are not covered; ``grew`` says whether there were any. ``on_progress``, when given,
    is told the bytes checked so far every few thousand records (a progress bar). ``parent``, for a forked
    run, is the log it was forked from: FORK_MISMATCH unless the parent holds, at the seq the fork names, the
    hash and the state the fork carries (USAGE when the log is no fork). ``pubkey`` checks every signed
    checkpoint's tree root (CHECKPOINT_MISMATCH) and signature (SIGNATURE_INVALID); ``signed_seq`` is the last
    seq one covers: the records up to it are proven by the key, those after it are not signed. ``notes`` are
    files holding signed notes kept outside the log (a checkpoint published or cosigned by a witness), each
    signed by ``pubkey`` (SIGNATURE_INVALID; USAGE without a key): the log must hold the tree each names, its
    size and its root (ANCHOR_MISMATCH), so a log cut after its last signed checkpoint is caught.
    """
    held = _read_notes(notes, pubkey)
    # The read makes no cycles (ledger.collector); a forked child reads without the collector too.
    with paused(), as_run(path) as run:
        if isinstance(run, FileRun):  # every byte of the file, read ahead by a child for a large log
            audit, verified, torn, grew = _verify_file(run.reader, anchor, key, on_progress, pubkey, held)
        elif isinstance(run, DatabaseRun):  # every row, each line as stored
            audit, verified = _verify_rows(run.location, anchor, key, on_progress, pubkey, held)
            torn, grew = None, False
        else:
            raise error("USAGE", f"verify reads a log file or a database run, not {run!r}")
    return _report(audit, anchor=anchor, key=key, pubkey=pubkey, torn=torn, verified=verified, grew=grew, parent=parent)


def verify_bytes(blob: bytes, name: str, *, pubkey: VerifierKey | None = None) -> VerifyReport:
    """Every check of :func:`verify_log` over a JSONL log held in memory (an evidence pack's member), read by
    the same reader a log file is (an anonymous in-memory file: nothing is written to disk); ``name`` is how
    messages name it. A torn tail is reported in the answer, as for a file."""
    if not hasattr(os, "memfd_create"):
        raise error(
            "USAGE", "a log held in memory is read through memfd_create, which this system lacks (Linux has it)"
        )
    if not blob:
        raise error("EMPTY_LOG", f"log {name} is empty: a log starts with its header line", path=name, offset=0)
    fd = os.memfd_create("plantrail-log", os.MFD_CLOEXEC)
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view) :]
        reader = LogReader(name, fd=fd)
    except BaseException:
        os.close(fd)
        raise
    with paused(), reader:
        audit, verified, torn, grew = _verify_file(reader, None, None, None, pubkey)
    return _report(audit, anchor=None, key=None, pubkey=pubkey, torn=torn, verified=verified, grew=grew, parent=None)


def _report(
    audit: _Audit,
    *,
    anchor: tuple[int, str] | None,
    key: bytes | None,
    pubkey: VerifierKey | None,
    torn: TornTail | None,
    verified: int,
    grew: bool,
    parent: str | os.PathLike[str] | None,
) -> VerifyReport:
    """The checks made once every record is read (the anchor found, keys used, determinism, the parent) and
    the report."""
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
    audit.unheld(state.last_seq)
    if key is not None and audit.checkpoints == 0:
        raise error(
            "CHECKPOINT_MISSING",
            "a checkpoint key was given but the log holds no checkpoint: nothing in it "
            "is protected by the key (were the checkpoints stripped?)",
        )
    if pubkey is not None and audit.signed == 0:
        raise error(
            "CHECKPOINT_MISSING",
            "a public key was given but the log holds no signed checkpoint: nothing in it is proven by the key "
            "(were the checkpoints stripped?)",
        )
    if canonical_bytes(audit.evolved()) != canonical_bytes(state):
        raise error(
            "NONDETERMINISTIC_FOLD",
            "the fold and the record-by-record evolve of the same records gave different states",
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
        adopted=sum(1 for o in state.orphans if o.adopted is not None),
        signed=audit.signed,
        signed_seq=audit.signed_seq,
        pubkey=None if pubkey is None else str(pubkey),
        notes=tuple(note.size for _, note in audit.notes),
    )


def _read_notes(paths: Sequence[str | os.PathLike[str]], pubkey: VerifierKey | None) -> list[tuple[str, Checkpoint]]:
    """The signed notes in ``paths``, each signed by ``pubkey`` (USAGE when notes come without a key)."""
    if not paths:
        return []
    if pubkey is None:
        raise error("USAGE", "a signed note is held to the log only with the public key that signed it; none was given")
    from plantrail.ledger.signing import read_note

    notes = [(os.fspath(path), read_note(os.fspath(path), pubkey)) for path in paths]
    for where, note in notes:
        if note.size == 0:
            raise error("USAGE", f"{where} is a checkpoint of no records: it holds the log to nothing")
    return notes


def _check_parent(state: PlanState, parent: str | os.PathLike[str]) -> tuple[str, int]:
    """Check a fork's nearest lineage link against its parent's log (read up to the fork's seq, every line of
    it checked); return the parent run and seq checked."""
    from plantrail.projections.history import replay_at_seq

    if not state.lineage:
        raise error("USAGE", "the log is not a forked run (it has no run.forked record): it has no parent to check")
    link = state.lineage[-1]
    with as_run(parent) as run:
        try:
            at = replay_at_seq(run.records(), link.seq)
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
