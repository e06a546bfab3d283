"""The plan state's reducer: ``initial``, ``evolve`` and ``fold`` over the model of :mod:`projections.model`.

``evolve`` is total and pure: it never mutates its inputs, does no I/O, reads no clock, and returns the
state unchanged (but for ``last_seq``/``head``) for a record it cannot apply. Rules are checked before
anything is written (:mod:`ledger.rules.decide`); ``verify`` replays those checks to catch a hand-made log.

Late results (``step.completed``/``blocked``/``failed`` for a superseded plan version, a stale attempt, or
after the run finished) never touch the plan: they land on ``orphans``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

import orjson

from plantrail.ledger.vocabulary.contract import unmet
from plantrail.ledger.vocabulary.errors import PlanInvalid
from plantrail.ledger.vocabulary.evidence import Report, Usage
from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec, steps_by_id, validate_plan
from plantrail.ledger.vocabulary.versions import needs_v2
from plantrail.projections import approvals as _authority
from plantrail.projections import effects as _effects
from plantrail.projections import lineage_digest as _digest
from plantrail.projections import repair_edges as _repair
from plantrail.projections.approvals import Approval, Authority
from plantrail.projections.effects import Effect
from plantrail.projections.leases import start_lease
from plantrail.projections.lineage import carried_state
from plantrail.projections.model import (
    Changes,
    CriterionState,
    CutOff,
    FailureStreak,
    Fork,
    Lease,
    Observed,
    Orphan,
    OrphanWhy,
    PlanState,
    StepState,
    StepStatus,
    Text,
    VersionInfo,
    step_status,
)
from plantrail.projections.reconcile import reconcile
from plantrail.projections.table import Table

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import (
        ApprovalDenied,
        ApprovalGranted,
        ApprovalRequested,
        CriterionVerified,
        EffectCommitted,
        EffectRequested,
        LogOpened,
        ObservationRecorded,
        PlanCreated,
        PlanExtended,
        PlanReplanned,
        Record,
        RunFinished,
        RunForked,
        StepAbandoned,
        StepAdopted,
        StepBlocked,
        StepCompleted,
        StepFailed,
        StepHeartbeat,
        StepStarted,
    )

__all__ = [
    "Delta",
    "StateView",
    "evolve",
    "find_orphan",
    "fold",
    "initial",
    "is_state_view",
    "orphan_reason",
    "share_unchanged",
]


def initial() -> PlanState:
    """The state of an empty log."""
    return PlanState()


# --------------------------------------------------------------------------- evolve and fold
#
# Each handler reads the state before a record and returns a Delta: the one step, criterion or orphan the
# record changes, plus the rare whole-state fields (a new plan, an outcome). When the record changes one step
# and nothing else (most events: starts, completions), the handler returns that StepState alone, which is
# cheaper to build and to apply. ``evolve`` applies a change to an immutable state, sharing every unchanged
# structure; ``fold`` applies it in place to a private builder that no caller ever sees, and freezes the
# result once. One transition logic, two ways to apply it, and a property test that they agree
# (tests/projections/test_state.py).


class Delta(NamedTuple):
    """What one record changes."""

    step: StepState | None = None
    criterion: CriterionState | None = None
    orphan: Orphan | None = None
    failures: int | None = None
    version: VersionInfo | None = None  # the version the record adopted (or extended in place)
    fields: Mapping[str, Any] | None = None
    repair: StepState | None = None  # a second step: the repair step a failure calls (projections.repair_edges)


class StateView(Protocol):
    """What a handler, :func:`ledger.rules.decide.decide` or :func:`ledger.rules.decide.check` may read: a
    :class:`PlanState`,
    or the builder that fold and a group commit advance in place."""

    @property
    def plan(self) -> PlanSpec | None: ...
    @property
    def version(self) -> int: ...
    @property
    def steps(self) -> Mapping[str, StepState]: ...
    @property
    def criteria(self) -> Mapping[str, CriterionState]: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def consecutive_failures(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    @property
    def outcome_seq(self) -> int | None: ...
    @property
    def adopted(self) -> VersionInfo | None: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def usage(self) -> Usage | None: ...
    @property
    def failure_streak(self) -> FailureStreak | None: ...
    @property
    def contract(self) -> bool: ...
    @property
    def lineage(self) -> tuple[Fork, ...]: ...

    @property
    def authority(self) -> Authority | None: ...
    @property
    def effects(self) -> tuple[Effect, ...]: ...
    @property
    def observations(self) -> tuple[Observed, ...]: ...
    @property
    def cut_off(self) -> tuple[CutOff, ...]: ...
    @property
    def adoptions(self) -> tuple[int, ...]: ...
    @property
    def orphans(self) -> Sequence[Orphan]: ...


def evolve(state: PlanState, record: Record) -> PlanState:
    """Apply one record; never mutates ``state`` or ``record``."""
    handler = _HANDLERS.get(record.type)
    change = None if handler is None else handler(state, record, record.data)
    fields = None if change is None or isinstance(change, StepState) else change.fields
    s = state if fields is None else state._replace(**fields)
    steps, criteria, orphans, adopted, failures = s.steps, s.criteria, s.orphans, s.adopted, s.consecutive_failures
    if isinstance(change, StepState):  # most events: one step changes, and nothing else
        steps = steps.set(change.id, change)
    elif change is not None:
        if change.step is not None:
            steps = steps.set(change.step.id, change.step)
        if change.repair is not None:
            steps = steps.set(change.repair.id, change.repair)
        if change.criterion is not None:
            criteria = criteria.set(change.criterion.id, change.criterion)
        if change.orphan is not None:
            orphans = (*orphans, change.orphan)
        if change.version is not None:
            adopted = change.version
        if change.failures is not None:
            failures = change.failures
    return PlanState(
        s.run,
        s.plan,
        s.version,
        steps,
        criteria,
        s.outcome,
        s.outcome_reason,
        s.outcome_seq,
        adopted,
        orphans,
        failures,
        record.seq,
        record.h,
        s.usage,
        s.failure_streak,
        s.contract,
        s.lineage,
        s.authority,
        s.effects,
        s.observations,
        s.cut_off,
        s.adoptions,
    )


class _Builder:
    """A private, mutable copy of the state, advanced in place record by record; it never reaches a caller
    (``freeze`` returns an immutable state). It reads like a :class:`PlanState` for everything in
    :class:`StateView`, so a group commit can decide each command against it (see :class:`Advancing`).

    ``in_progress`` and ``completed`` are how many of its steps are in progress and completed, kept as they
    move (the rules' focus limit and the stop policy read them: :func:`steps_in_progress`, :func:`open_steps`)."""

    __slots__ = (
        "_state",
        "authority",
        "completed",
        "consecutive_failures",
        "contract",
        "criteria",
        "failure_streak",
        "finished",
        "in_progress",
        "last_seq",
        "orphans",
        "outcome",
        "plan",
        "steps",
        "version",
    )

    def __init__(self, state: PlanState) -> None:
        self._set_state(state)
        self.steps: dict[str, StepState] = state.steps.to_dict()
        self._count(state.steps)
        self.criteria: dict[str, CriterionState] = state.criteria.to_dict()
        self.orphans = list(state.orphans)
        self.consecutive_failures = state.consecutive_failures
        self.last_seq = state.last_seq

    def _set_state(self, state: PlanState) -> None:
        """Keep ``state`` for its whole-state fields, copied to plain attributes that handlers read per event."""
        self._state = state
        self.plan: PlanSpec | None = state.plan
        self.version: int = state.version
        self.outcome: str | None = state.outcome
        self.finished: bool = state.finished
        self.contract: bool = state.contract
        self.failure_streak: FailureStreak | None = state.failure_streak
        self.authority: Authority | None = state.authority

    @property
    def outcome_seq(self) -> int | None:
        return self._state.outcome_seq

    @property
    def adopted(self) -> VersionInfo | None:
        return self._state.adopted

    @property
    def usage(self) -> Usage | None:
        return self._state.usage

    @property
    def lineage(self) -> tuple[Fork, ...]:
        return self._state.lineage

    @property
    def effects(self) -> tuple[Effect, ...]:
        return self._state.effects

    @property
    def observations(self) -> tuple[Observed, ...]:
        return self._state.observations

    @property
    def cut_off(self) -> tuple[CutOff, ...]:
        return self._state.cut_off

    @property
    def adoptions(self) -> tuple[int, ...]:
        return self._state.adoptions

    def add(self, record: Record) -> Delta | StepState | None:
        """Apply one record in place (what :func:`evolve` does to an immutable state); return its change."""
        self.last_seq = record.seq
        handler = _HANDLERS.get(record.type)
        if handler is None:
            return None
        change = handler(self, record, record.data)
        if change is None:
            return None
        if isinstance(change, StepState):  # most records land here
            self._put(change)
        else:
            self.apply(change)
        return change

    def _count(self, steps: Mapping[str, StepState]) -> None:
        """Count the steps in progress and completed of a new steps table (a replan's, a fork's)."""
        tally = steps.tally(step_status) if isinstance(steps, Table) else Counter(s.status for s in steps.values())
        self.in_progress = tally.get("in_progress", 0)
        self.completed = tally.get("completed", 0)

    def _put(self, step: StepState) -> None:
        """Set one step, keeping the counts of steps in progress and completed."""
        steps = self.steps
        old = steps.get(step.id)
        if old is None or old.status != step.status:
            status = step.status
            if status == "in_progress":
                self.in_progress += 1
            elif status == "completed":
                self.completed += 1
            if old is not None:
                if old.status == "in_progress":
                    self.in_progress -= 1
                elif old.status == "completed":
                    self.completed -= 1
        steps[step.id] = step

    def apply(self, delta: Delta) -> None:
        if delta.fields is not None:
            fields = dict(delta.fields)
            if "steps" in fields:
                steps = fields.pop("steps")
                self.steps = steps.to_dict()
                self._count(steps)
            if "criteria" in fields:
                self.criteria = fields.pop("criteria").to_dict()
            if "orphans" in fields:
                self.orphans = list(fields.pop("orphans"))
            if delta.version is not None:  # one copy of the state for both (a replan's)
                fields["adopted"] = delta.version
            self._set_state(self._state._replace(**fields))
        if delta.step is not None:
            self._put(delta.step)
        if delta.repair is not None:
            self._put(delta.repair)
        if delta.criterion is not None:
            self.criteria[delta.criterion.id] = delta.criterion
        if delta.orphan is not None:
            self.orphans.append(delta.orphan)
        if delta.version is not None and delta.fields is None:
            self._set_state(self._state._replace(adopted=delta.version))
        if delta.failures is not None:
            self.consecutive_failures = delta.failures

    def freeze(self, last_seq: int, head: str | None) -> PlanState:
        return self._state._replace(
            steps=Table(tuple(self.steps), self.steps.values()),
            criteria=Table(tuple(self.criteria), self.criteria.values()),
            orphans=tuple(self.orphans),
            consecutive_failures=self.consecutive_failures,
            last_seq=last_seq,
            head=head,
        )


def _statuses(steps: Mapping[str, StepState]) -> Mapping[Hashable, int]:
    """How many steps have each status: a table's tally (counted once, then carried through each step set), or
    a count of a plain mapping's."""
    if isinstance(steps, Table):
        return steps.tally(step_status)
    return Counter(s.status for s in steps.values())


def steps_in_progress(state: StateView) -> int:
    """How many of the state's steps are in progress, in what the last event changed rather than the plan's
    size (a start checks the focus limit against it): the fold's builder keeps the count as its steps move; a
    state's steps table carries its tally by status from event to event."""
    if type(state) is _Builder:
        return state.in_progress
    return _statuses(state.steps).get("in_progress", 0)


def open_steps(state: StateView) -> int:
    """How many of the state's steps are not completed, kept as :func:`steps_in_progress` is (the stop policy
    asks on every start whether work is left)."""
    if type(state) is _Builder:
        return len(state.steps) - state.completed
    return len(state.steps) - _statuses(state.steps).get("completed", 0)


def fold(
    records: Iterable[Record],
    state: PlanState | None = None,
    *,
    on_adopt: Callable[[PlanState], None] | None = None,
) -> PlanState:
    """The state after every record in order, from ``state`` (default: the empty state).

    Equal to applying :func:`evolve` record by record, in a fraction of the time: the transitions are the
    same; only the builder is mutable, and it never leaves this function. ``on_adopt``, when given, sees the
    state right after each record that adopts a plan version or extends the active one in place (a snapshot of
    the builder, never the builder).
    """
    start = initial() if state is None else state
    builder = _Builder(start)
    add = builder.add
    record = None
    for record in records:
        change = add(record)
        if on_adopt is not None and isinstance(change, Delta) and change.version is not None:
            on_adopt(builder.freeze(record.seq, record.h))
    if record is None:
        return builder.freeze(start.last_seq, start.head)
    return builder.freeze(record.seq, record.h)


def in_place(state: PlanState) -> _Builder:
    """The fold's in-place builder, started at ``state``, for a caller in this package that judges each record
    against the state before it applies it (``verify``; not part of the public surface): ``add(record)``
    applies one, ``freeze(last_seq, head)`` gives the immutable state, and in between it reads like a
    :class:`StateView`. Keep it only for that loop: it changes under its reader."""
    return _Builder(state)


def is_state_view(value: object) -> bool:
    """True when ``value`` is a :class:`StateView`: a :class:`PlanState`, or the builder of an :class:`Advancing`."""
    return isinstance(value, PlanState | _Builder)


class Advancing:
    """A state that records advance one at a time and that is read in between: a group commit decides each
    command against the state its predecessors reached.

    A lone record is applied with :func:`evolve` (which shares the state's structure); from the second
    record on, the records go to a private builder that is frozen once, at the end. Either way the result is
    the state :func:`evolve` reaches record by record (tests/projections/test_state.py).
    """

    __slots__ = ("_builder", "_head", "_start", "_waiting")

    def __init__(self, state: PlanState) -> None:
        self._start = state
        self._builder: _Builder | None = None
        self._waiting: Record | None = None  # the last record added, not yet applied
        self._head = state.head

    def add(self, record: Record) -> None:
        """Take the next record."""
        if self._waiting is not None:
            self._apply_waiting()
        self._waiting = record
        self._head = record.h

    def current(self) -> StateView:
        """The state after every record added so far, to read (never to keep: the builder moves on)."""
        if self._waiting is not None:
            self._apply_waiting()
        return self._start if self._builder is None else self._builder

    def result(self) -> PlanState:
        """The immutable state after every record added."""
        if self._builder is None:
            return self._start if self._waiting is None else evolve(self._start, self._waiting)
        self._apply_waiting()
        return self._builder.freeze(self._builder.last_seq, self._head)

    def _apply_waiting(self) -> None:
        """Move the waiting record (if any) onto the builder, made on first need."""
        if self._waiting is None:
            return
        if self._builder is None:
            self._builder = _Builder(self._start)
        self._builder.add(self._waiting)
        self._waiting = None


def orphan_reason(state: StateView, plan_version: int, step: str, attempt: int) -> OrphanWhy | None:
    """Why a result stamped (version, step, attempt) is late, or None when it applies to the active plan."""
    if plan_version < state.version:
        return "SUPERSEDED_VERSION"
    current = state.steps.get(step)
    if current is not None and (
        attempt != current.attempt
        or (current.abandoned and attempt in current.abandoned)
        or current.cancel is not None  # format v2: an input changed under the attempt (lineage_digest)
        or current.status == "stale"  # format v2: every attempt of a stale step is over
    ):
        return "STALE_ATTEMPT"
    if state.finished:
        return "RUN_FINISHED"
    return None


# --------------------------------------------------------------------------- transitions


def _opened(state: StateView, record: Record, data: LogOpened) -> Delta:
    return Delta(fields={"run": data.run})


def _valid_order(plan: PlanSpec, previous: tuple[PlanSpec, tuple[str, ...]] | None = None) -> tuple[str, ...] | None:
    """The plan's step order, or None for a plan that never validated (only a hand-made log holds one;
    it is not applied, and ``verify`` reports it as ILLEGAL_EVENT). ``previous``: the active plan and its
    order (the order of the state's steps), which a replan may carry over."""
    try:
        return validate_plan(plan, previous)
    except PlanInvalid:
        return None


def _step_tables(plan: PlanSpec, order: tuple[str, ...], seq: int) -> tuple[Table[StepState], Table[CriterionState]]:
    budget = {s.id: s.max_attempts for s in plan.steps}
    steps = Table(order, (StepState(id=i, max_attempts=budget[i], last_seq=seq) for i in order))
    ids = tuple(c.id for c in plan.acceptance_criteria)
    return steps, Table(ids, (CriterionState(id=i, last_seq=seq) for i in ids))


def _created(state: StateView, record: Record, data: PlanCreated) -> Delta | None:
    if state.plan is not None:
        return None
    order = _valid_order(data.plan)
    if order is None:
        return None
    steps, criteria = _step_tables(data.plan, order, record.seq)
    info = VersionInfo(version=1, seq=record.seq, ts=record.ts, actor=record.actor, plan=data.plan)
    fields = {"plan": data.plan, "version": 1, "steps": steps, "criteria": criteria, "adoptions": (record.seq,)}
    if needs_v2(data.plan):
        fields["contract"] = True
    return Delta(version=info, fields=fields)


_CONTINUE: Final[Mapping[str, Any]] = {"outcome": None, "outcome_reason": None, "outcome_seq": None}


def _started(state: StateView, record: Record, data: StepStarted) -> Delta | StepState | None:
    s = state.steps.get(data.step)
    if s is None or record.plan_version != state.version or state.finished:
        return None
    started = _moved(s, "in_progress", data.attempt, s.evidence, record.seq, (*s.started, record.seq))
    if state.contract or s.lease is not None:  # format v2: a step's timeout_s is its attempt's lease
        started = started._replace(lease=start_lease(state.plan, data.step, record.ts, record.seq))
    return Delta(step=started, fields=_CONTINUE) if state.outcome == "paused" else started


def _live(state: StateView, record: Record, data: StepHeartbeat | StepAbandoned) -> StepState | None:
    """The in-progress step a heartbeat or abandon applies to (None: it does not apply; the writer refused
    such events, and ``verify`` reports a hand-made one)."""
    s = state.steps.get(data.step)
    if s is None or record.plan_version != state.version or state.finished or s.status != "in_progress":
        return None
    return s if data.attempt == s.attempt and data.attempt not in s.abandoned else None


def _heartbeat(state: StateView, record: Record, data: StepHeartbeat) -> StepState | None:
    s = _live(state, record, data)
    return None if s is None else s._replace(lease=Lease(record.ts, data.lease_s, record.seq))


def _abandoned(state: StateView, record: Record, data: StepAbandoned) -> StepState | None:
    s = _live(state, record, data)
    if s is None:
        return None
    if s.cancel is not None:  # format v2: an attempt cancelled because an input changed ends stale
        return s._replace(
            status="stale",
            reason=f"{s.cancel.split(': abandon')[0]}; abandoned: {data.reason}",
            lease=None,
            abandoned=(*s.abandoned, data.attempt),
            last_seq=record.seq,
            reset="input_changed",
            cancel=None,
        )
    return s._replace(
        status="pending", reason=data.reason, lease=None, abandoned=(*s.abandoned, data.attempt), last_seq=record.seq
    )


def _orphaned(
    state: StateView, record: Record, data: StepCompleted | StepBlocked | StepFailed, why: OrphanWhy
) -> Delta:
    """A late result on the orphan path (with the contract it was made under when that is known: an attempt a
    replan cut off in flight, whose entry it closes, or an abandoned attempt of the active version)."""
    contract = None
    fields: dict[str, Any] = {}
    if why == "SUPERSEDED_VERSION":
        for cut in state.cut_off:
            if cut.step == data.step and cut.version == record.plan_version and cut.attempt == data.attempt:
                contract = cut.contract
                fields["cut_off"] = tuple(c for c in state.cut_off if c is not cut)
                break
    elif why == "STALE_ATTEMPT":
        contract = _abandoned_contract(state, data.step, data.attempt)
    orphan = Orphan(
        seq=record.seq,
        type=record.type,
        step=data.step,
        plan_version=record.plan_version,
        attempt=data.attempt,
        active_version=state.version,
        why=why,
        evidence=getattr(data, "evidence", ()),
        reason=getattr(data, "reason", None) or getattr(data, "error", None),
        contract=contract,
    )
    spent = _spent(state.usage, data.report)
    if spent is not state.usage:
        fields["usage"] = spent
    return Delta(orphan=orphan, fields=fields or None)


def _abandoned_contract(state: StateView, step: str, attempt: int) -> StepSpec | None:
    """The active version's contract of ``step`` when ``attempt`` is one of its attempts that was abandoned with no
    input changed under it (a stale step's attempts ran on inputs that are no longer current: None)."""
    current = state.steps.get(step)
    if current is None or attempt not in current.abandoned or current.status == "stale" or current.cancel is not None:
        return None
    return None if state.plan is None else steps_by_id(state.plan).get(step)


_new_tuple: Final = tuple.__new__


def _moved(
    s: StepState,
    status: StepStatus,
    attempt: int,
    evidence: tuple[Text, ...],
    seq: int,
    started: tuple[int, ...] | None = None,
) -> StepState:
    """``s`` in a new status (and, for a start, with its starts' seqs ``started``). Built from a tuple of every
    field, in order: starts and completions are most of all events, and NamedTuple._replace is four times slower
    (its generated ``__new__``, a Python call, a fifth slower)."""
    return _new_tuple(
        StepState,
        (
            s.id,
            status,
            attempt,
            evidence,
            s.reason,
            s.error,
            s.exhausted,
            s.max_attempts,
            seq,
            s.reset,
            s.invalidated_by,
            s.usage,
            s.lease,
            s.abandoned,
            s.artifacts,
            s.consumed,
            None,
            s.reset_at,
            s.repair,
            s.started if started is None else started,
        ),
    )


def _result_step(
    state: StateView, record: Record, data: StepCompleted | StepBlocked | StepFailed
) -> tuple[Delta | None, StepState | None]:
    """A result's orphan delta when it is late; else the in-progress step it applies to (None: nothing to do)."""
    why = "AMBIGUOUS_ATTEMPT" if data.ambiguous else orphan_reason(state, record.plan_version, data.step, data.attempt)
    if why is not None:
        return _orphaned(state, record, data, why), None
    step = state.steps.get(data.step)
    return None, step if step is not None and step.status == "in_progress" else None


def _completed(state: StateView, record: Record, data: StepCompleted) -> Delta | StepState | None:
    late, step = _result_step(state, record, data)
    if step is None:
        return late
    completed = _moved(step, "completed", step.attempt, data.evidence, record.seq)
    lineage = _digest.lineage_of(state.plan)
    if data.artifacts or lineage is not None:
        change = _completed_lineage(state, record, data, step, completed, lineage)
        return _released(change) if completed.repair is not None and completed.repair.waiting else change
    if completed.repair is not None and completed.repair.waiting:
        # The failed steps waiting for this repair may retry. A repair run is part of their retry, so it ends
        # no failure streak: the no-progress rule judges their failures across it.
        spending = _spending(state, _repair.repaired(completed), data.report)
        return Delta(step=spending.pop("step"), fields=spending or None)
    if data.report is None and state.failure_streak is None:
        # A completion resets the failure streak; with no streak there is nothing else to change.
        return completed if state.consecutive_failures == 0 else Delta(step=completed, failures=0)
    fields: dict[str, Any] = {"failure_streak": None, **_spending(state, completed, data.report)}
    return Delta(step=fields.pop("step"), failures=0, fields=fields)


def _adopted_result(state: StateView, record: Record, data: StepAdopted) -> Delta | None:
    """A late completion taken into the active version (format v2): the pending step completes as a new attempt
    with the orphan's evidence, and the orphan is marked adopted (it stays on the orphan path). None for what
    the writer refuses (:mod:`ledger.rules.adoption`; ``verify`` names a hand-made one)."""
    s = state.steps.get(data.step)
    if s is None or record.plan_version != state.version or state.finished or s.status != "pending":
        return None
    orphans = state.orphans
    found = find_orphan(orphans, data.orphan_seq)
    if found is None:
        return None
    orphan = orphans[found]
    if orphan.type != "step.completed" or orphan.step != data.step or orphan.adopted is not None:
        return None
    if data.attempt != s.attempt + 1:
        return None
    spec = steps_by_id(state.plan).get(data.step) if state.plan is not None else None
    completed = s._replace(
        status="completed",
        attempt=data.attempt,
        evidence=orphan.evidence,
        last_seq=record.seq,
        lease=None,
        started=(*s.started, record.seq),
        consumed=_digest.consumed_now(state, spec) if spec is not None and spec.inputs else s.consumed,
    )
    marked = (*orphans[:found], orphan._replace(adopted=record.seq), *orphans[found + 1 :])
    if completed.repair is not None and completed.repair.waiting:
        # as a repair step's completion: the failed steps waiting for it may retry, and no failure streak ends
        return Delta(step=_repair.repaired(completed), fields={"orphans": marked})
    return Delta(step=completed, failures=0, fields={"orphans": marked, "failure_streak": None})


def find_orphan(orphans: Sequence[Orphan], seq: int) -> int | None:
    """The index of the late result recorded at ``seq`` among ``orphans`` (in seq order), or None."""
    low, high = 0, len(orphans)
    while low < high:
        middle = (low + high) // 2
        if orphans[middle].seq < seq:
            low = middle + 1
        else:
            high = middle
    return low if low < len(orphans) and orphans[low].seq == seq else None


def _released(change: Delta | StepState | None) -> Delta | StepState | None:
    """A repair step's completion (recorded with its lineage) with the failed steps waiting for it released."""
    if isinstance(change, StepState):
        return _repair.repaired(change)
    if change is not None and change.step is not None and change.step.repair is not None:
        return change._replace(step=_repair.repaired(change.step))
    return change


def _completed_lineage(
    state: StateView,
    record: Record,
    data: StepCompleted,
    before: StepState,
    completed: StepState,
    lineage: _digest.Lineage | None,
) -> Delta:
    """A completion in a plan with artifacts (format v2): the step's artifacts and the input digests it consumed,
    and every consumer whose input digest it changed judged (:mod:`projections.lineage_digest`)."""
    assert state.plan is not None
    spec = steps_by_id(state.plan)[data.step]
    completed = completed._replace(
        artifacts=data.artifacts, consumed=_digest.consumed_now(state, spec) if spec.inputs else ()
    )
    fields: dict[str, Any] = {"failure_streak": None, **_spending(state, completed, data.report)}
    completed = fields.pop("step")
    changed = {} if lineage is None else _digest.produced_changes(lineage, before, data.step, data.artifacts)
    judged = {}
    if changed and lineage is not None:
        judged = _digest.input_changed(lineage, state.steps, changed, data.step, record.seq)
    if judged:
        fields["steps"] = _with_steps(state.steps, {**judged, data.step: completed})
        fields |= _verdicts_dropped(state, judged, record.seq)
        return Delta(failures=0, fields=fields)
    return Delta(step=completed, failures=0, fields=fields)


def _verdicts_dropped(state: StateView, judged: Mapping[str, StepState], seq: int) -> dict[str, Any]:
    """The criteria fields when judged steps include completed work gone stale: every verdict dropped."""
    if not any(state.steps[s].status == "completed" and j.status == "stale" for s, j in judged.items()):
        return {}
    changed, _ = _digest.invalidated_verdicts(state.criteria, seq)
    if not changed:
        return {}
    criteria = state.criteria
    return {"criteria": Table(tuple(criteria), (changed.get(k, v) for k, v in criteria.items()))}


def _with_steps(steps: Mapping[str, StepState], changed: Mapping[str, StepState]) -> Table[StepState]:
    """The steps table with ``changed`` steps replaced, in the same order."""
    return Table(tuple(steps), (changed.get(k, v) for k, v in steps.items()))


def _observed(state: StateView, record: Record, data: ObservationRecorded) -> Delta | None:
    """A new version of an observation (format v2): the latest per key, and the consumers of that key judged."""
    if state.plan is None or state.finished:
        return None
    changed = _digest.observed_changes(state.plan, state.observations, data.key, data.version)
    seen = Observed(data.key, data.version, data.dirty, record.seq)
    fields: dict[str, Any] = {"observations": (*(o for o in state.observations if o.key != data.key), seen)}
    lineage = _digest.lineage_of(state.plan)
    if changed and lineage is not None:
        judged = _digest.input_changed(lineage, state.steps, changed, f"observation:{data.key}", record.seq)
        if judged:
            fields["steps"] = _with_steps(state.steps, judged)
            fields |= _verdicts_dropped(state, judged, record.seq)
    return Delta(fields=fields)


def _spending(state: StateView, step: StepState, report: Report | None) -> dict[str, Any]:
    """The step and the run with a result's usage added (format v2), as Delta parts."""
    if report is None or report.usage is None:
        return {"step": step}
    return {"step": step._replace(usage=_spent(step.usage, report)), "usage": _spent(state.usage, report)}


def _spent(total: Usage | None, report: Report | None) -> Usage | None:
    """``total`` plus the usage ``report`` reports (``total`` itself when it reports none)."""
    if report is None or report.usage is None:
        return total
    if total is None:
        return report.usage
    used = report.usage
    return Usage(
        total.turns + used.turns,
        total.tool_calls + used.tool_calls,
        total.tokens + used.tokens,
        total.cost_usd + used.cost_usd,
    )


def _blocked(state: StateView, record: Record, data: StepBlocked) -> Delta | StepState | None:
    late, step = _result_step(state, record, data)
    if step is None:
        return late
    blocked = step._replace(status="blocked", reason=data.reason, last_seq=record.seq)
    if data.report is None and data.violation is None:
        return blocked
    fields = _spending(state, blocked, data.report)
    if data.violation is not None:
        held = data.violation
        fields["authority"] = _authority.violation_recorded(
            state.authority, data.step, data.attempt, held.paths, held.tools, record.seq
        )
    return Delta(step=fields.pop("step"), fields=fields or None)


def _failed(state: StateView, record: Record, data: StepFailed) -> Delta | None:
    late, step = _result_step(state, record, data)
    if step is None:
        return late
    if step.max_attempts is None or step.charged < step.max_attempts:
        failed = step._replace(status="pending", error=data.error, last_seq=record.seq)
    else:
        reason = f"attempts exhausted ({step.charged} of {step.max_attempts}); last error: {data.error}"
        failed = step._replace(status="blocked", error=data.error, reason=reason, exhausted=True, last_seq=record.seq)
    repair = None if failed.status != "pending" else _repair.called(state, failed, record.seq)
    if data.report is None and state.failure_streak is None and not state.contract:
        return Delta(step=failed, failures=state.consecutive_failures + 1, repair=repair)
    fields = _spending(state, failed, data.report)
    fields["failure_streak"] = _streak(state.failure_streak, _fingerprint(state, record, data), data.step)
    return Delta(step=fields.pop("step"), failures=state.consecutive_failures + 1, fields=fields, repair=repair)


def _streak(previous: FailureStreak | None, fp: str, step: str) -> FailureStreak:
    if previous is not None and previous.fingerprint == fp:
        return FailureStreak(fp, previous.repeats + 1, step)
    return FailureStreak(fp, 1, step)


_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")


def _fingerprint(state: StateView, record: Record, data: StepFailed) -> str:
    """A failure's fingerprint (for the no-progress rule): the step, its failing checks, the exit code, the error
    normalised (case, numbers and spacing ignored), the changed paths and the plan version."""
    report = data.report
    failing: list[str] = []
    if report is not None and state.plan is not None:
        spec = steps_by_id(state.plan).get(data.step)
        failing = [] if spec is None else [check for check, _ in unmet(spec.checks, report)]
    parts = [
        data.step,
        failing,
        None if report is None else report.exit_code,
        _SPACE.sub(" ", _DIGITS.sub("#", data.error.lower())).strip(),
        [] if report is None else sorted(report.changed_paths),
        record.plan_version,
    ]
    return orjson.dumps(parts).decode()


def _verified(state: StateView, record: Record, data: CriterionVerified) -> Delta | None:
    criterion = state.criteria.get(data.criterion)
    if criterion is None or state.finished:
        return None
    return Delta(
        criterion=criterion._replace(status=data.verdict, evidence=data.evidence, last_seq=record.seq, reset=None)
    )


def _finished(state: StateView, record: Record, data: RunFinished) -> Delta | None:
    if state.plan is None or state.finished:
        return None
    return Delta(fields={"outcome": data.outcome, "outcome_reason": data.reason, "outcome_seq": record.seq})


def _replanned(state: StateView, record: Record, data: PlanReplanned) -> Delta | None:
    if state.plan is None or state.finished or data.new_version != state.version + 1:
        return None
    order = _valid_order(data.plan, (state.plan, tuple(state.steps)))
    if order is None:
        return None
    plan = share_unchanged(state.plan, data.plan)
    steps, criteria, changes = reconcile(state.plan, state.steps, state.criteria, plan, record.seq, order=order)
    if _digest.lineage_of(plan) is not None:  # format v2: consumers judged by the digests they consumed
        judged, stale = _digest.replan_changes(
            state.plan, state.steps, plan, steps, changes, state.observations, record.seq
        )
        if judged:
            steps = _with_steps(steps, judged)
            listed = {c.step for c in changes.reset}
            changes = changes._replace(reset=(*changes.reset, *(c for c in stale if c.step not in listed)))
        if any(c.was == "completed" for c in stale):  # completed work went stale: evidence is not current
            dropped, why = _digest.invalidated_verdicts(criteria, record.seq)
            if dropped:
                criteria = Table(tuple(criteria), (dropped.get(k, v) for k, v in criteria.items()))
                changes = changes._replace(
                    criteria_kept=tuple(c for c in changes.criteria_kept if c not in dropped),
                    criteria_reset=(*changes.criteria_reset, *why),
                )
    info = VersionInfo(
        version=data.new_version,
        seq=record.seq,
        ts=record.ts,
        actor=record.actor,
        plan=plan,
        reason=data.reason,
        why=data.why,
        causes=data.causes,
        observations=data.observations,
        patched=data.patch is not None,
        changes=changes,
    )
    fields = {"plan": plan, "version": data.new_version, "steps": steps, "criteria": criteria}
    fields["adoptions"] = (*state.adoptions, record.seq)
    cut = _cut_off(state, changes)
    if cut:
        fields["cut_off"] = (*state.cut_off, *cut)
    if needs_v2(plan) != state.contract:
        fields["contract"] = not state.contract
    if state.outcome == "paused":
        fields |= _CONTINUE
    if state.failure_streak is not None:
        fields["failure_streak"] = None
    authority = _authority.replanned(state.authority, state.plan, state.version, plan, steps)
    if authority != state.authority:
        fields["authority"] = authority
    return Delta(version=info, failures=0, fields=fields)


def _cut_off(state: StateView, changes: Changes) -> tuple[CutOff, ...]:
    """The attempts a replan cut off in flight: those of the steps it reset or removed while in progress."""
    cut = []
    assert state.plan is not None
    specs = None
    for change in (*changes.reset, *changes.removed):
        if change.was != "in_progress":
            continue
        old = state.steps[change.step]
        if specs is None:
            specs = steps_by_id(state.plan)
        contract = None if old.cancel is not None else specs.get(change.step)
        started = old.started[-1] if old.started else 0  # 0: its start is not in this log (a fork carried it)
        cut.append(CutOff(change.step, state.version, old.attempt, started, contract))
    return tuple(cut)


def _extended(state: StateView, record: Record, data: PlanExtended) -> Delta | None:
    """Steps and criteria added to the active version in place (format v2, :mod:`ledger.rules.extension`): the new
    ones start pending at attempt 0, every other step and criterion is untouched, the version keeps its number
    and its adoption, now with this extension's seq and the extended plan."""
    from plantrail.ledger.vocabulary.extension import extended_plan  # only a log that extends a version needs it

    plan, adopted = state.plan, state.adopted
    if plan is None or adopted is None or state.finished or record.plan_version != state.version:
        return None
    extended = extended_plan(plan, data.steps, data.criteria)
    order = _valid_order(extended, (plan, tuple(state.steps)))
    if order is None:
        return None
    budget = {s.id: s.max_attempts for s in data.steps}
    old_steps, old_criteria = state.steps, state.criteria
    steps = Table(
        order,
        (old_steps.get(i) or StepState(id=i, max_attempts=budget[i], last_seq=record.seq) for i in order),
    )
    ids = tuple(c.id for c in extended.acceptance_criteria)
    criteria = Table(ids, (old_criteria.get(i) or CriterionState(id=i, last_seq=record.seq) for i in ids))
    fields: dict[str, Any] = {"plan": extended, "steps": steps, "criteria": criteria}
    if needs_v2(extended) and not state.contract:
        fields["contract"] = True
    return Delta(version=adopted._replace(plan=extended, extended=(*adopted.extended, record.seq)), fields=fields)


def _approval_asked(state: StateView, record: Record, data: ApprovalRequested) -> Delta | None:
    if state.plan is None or state.finished or record.plan_version != state.version:
        return None
    if state.authority is not None and any(a.id == data.request for a in state.authority.approvals):
        return None
    request = Approval(
        id=data.request,
        status="requested",
        steps=data.steps,
        plan_version=record.plan_version,
        question=data.question,
        writes=data.writes,
        tools=data.tools,
        seq=record.seq,
    )
    return Delta(fields={"authority": _authority.approval_requested(state.authority, request)})


def _approval_decided(state: StateView, record: Record, data: ApprovalGranted | ApprovalDenied) -> Delta | None:
    if state.plan is None or state.finished or state.authority is None:
        return None
    status: Any = "granted" if record.type == "approval.granted" else "denied"
    authority, released = _authority.approval_decided(
        state.authority, data.request, status, data.by, data.why, record.seq, state.plan, state.version
    )
    if authority is state.authority:
        return None
    step = None if released is None else state.steps.get(released)
    if step is not None and step.status == "blocked" and not step.exhausted:
        step = step._replace(status="pending", reason=None, last_seq=record.seq)  # the widened scope holds it
    else:
        step = None
    return Delta(step=step, fields={"authority": authority})


def _forked(state: StateView, record: Record, data: RunForked) -> Delta | None:
    """A forked run's first event: the parent's state at the fork, carried whole, and one more lineage link."""
    if state.plan is not None:
        return None
    carried = carried_state(data)
    if carried is None or carried.plan is None:
        return None
    link = Fork(data.parent, data.seq, data.head, data.state_hash, data.reason)
    fields = {name: getattr(carried, name) for name in _CARRIED} | {"lineage": (*carried.lineage, link)}
    # The parent's seqs do not locate records in the fork: its starts and adoptions are the fork's first record.
    if any(s.started for s in carried.steps.values()):
        fields["steps"] = _with_steps(
            carried.steps, {k: v._replace(started=()) for k, v in carried.steps.items() if v.started}
        )
    fields["adoptions"] = (record.seq,) * carried.version
    return Delta(version=carried.adopted, failures=carried.consecutive_failures, fields=fields)


def _effect_requested(state: StateView, record: Record, data: EffectRequested) -> Delta | None:
    """A side effect requested (:mod:`projections.effects`); a late request (a superseded version, a stale
    attempt, a finished run) is kept beside the orphans with why. None for what the writer refuses."""
    if state.plan is None:
        return None
    late = orphan_reason(state, record.plan_version, data.step, data.attempt)
    known = _effects.find_effect(state.effects, data.key)
    if known is not None and (known.committed_seq is not None or known.step != data.step or late is not None):
        return None
    if late is None:
        step = state.steps.get(data.step)
        if step is None or step.status != "in_progress":
            return None
    effect = Effect(
        key=data.key,
        step=data.step,
        plan_version=record.plan_version,
        attempt=data.attempt,
        target=data.target,
        before=data.before,
        seq=record.seq,
        late=late,
    )
    return Delta(fields={"effects": _effects.requested(state.effects, effect)})


def _effect_committed(state: StateView, record: Record, data: EffectCommitted) -> Delta | None:
    """A side effect known to have happened, closing its request (a late commit too: the effect happened)."""
    known = _effects.find_effect(state.effects, data.key)
    if known is None or known.committed_seq is not None or known.step != data.step:
        return None
    if (known.plan_version, known.attempt) != (record.plan_version, data.attempt):
        return None
    late = orphan_reason(state, record.plan_version, data.step, data.attempt)
    return Delta(fields={"effects": _effects.committed(state.effects, data.key, record.seq, data.result, late)})


#: The state fields a fork carries from its parent (the rest say where the state lives: run, seqs, head).
_CARRIED: Final = (
    "plan",
    "version",
    "steps",
    "criteria",
    "outcome",
    "outcome_reason",
    "outcome_seq",
    "orphans",
    "usage",
    "failure_streak",
    "contract",
    "authority",
    "effects",
    "observations",
)


def share_unchanged(old: PlanSpec, new: PlanSpec) -> PlanSpec:
    """``new`` with every step and criterion equal to one of ``old`` replaced by ``old``'s object.

    Sharing what a replan did not change keeps a history of versions small, and lets reconcile compare an
    unchanged step by identity.
    """
    old_steps = steps_by_id(old)
    old_criteria = {c.id: c for c in old.acceptance_criteria}
    steps = []
    for s in new.steps:
        o = old_steps.get(s.id)  # a reworded step is told by its title before every field is compared
        steps.append(o if o is not None and (o is s or (o.title == s.title and o == s)) else s)
    criteria = tuple(old_criteria[c.id] if old_criteria.get(c.id) == c else c for c in new.acceptance_criteria)
    return PlanSpec(
        goal=old.goal if old.goal == new.goal else new.goal,
        acceptance_criteria=criteria,
        steps=tuple(steps),
        policy=old.policy if old.policy == new.policy else new.policy,
        notes=new.notes,
        scope=new.scope,
        artifacts=new.artifacts,
    )


_HANDLERS: Final[Mapping[str, Callable[[Any, Record, Any], Delta | StepState | None]]] = {
    "log.opened": _opened,
    "plan.created": _created,
    "step.started": _started,
    "step.completed": _completed,
    "step.blocked": _blocked,
    "step.failed": _failed,
    "criterion.verified": _verified,
    "run.finished": _finished,
    "plan.replanned": _replanned,
    "plan.extended": _extended,
    "step.heartbeat": _heartbeat,
    "step.abandoned": _abandoned,
    "step.adopted": _adopted_result,
    "run.forked": _forked,
    "approval.requested": _approval_asked,
    "approval.granted": _approval_decided,
    "approval.denied": _approval_decided,
    "effect.requested": _effect_requested,
    "effect.committed": _effect_committed,
    "observation.recorded": _observed,
}
