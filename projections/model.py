"""The plan state model: immutable values that :mod:`projections.state` folds the log into."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Final, Literal, NamedTuple

from plantrail.ledger.vocabulary.artifacts import Artifact
from plantrail.ledger.vocabulary.evidence import Usage
from plantrail.ledger.vocabulary.payloads import Payload
from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec
from plantrail.projections.approvals import Authority
from plantrail.projections.effects import Effect
from plantrail.projections.table import Table

__all__ = [
    "EMPTY_TABLE",
    "FINAL_OUTCOMES",
    "STEP_STATUSES",
    "Changes",
    "Consumed",
    "CriterionState",
    "CriterionStatus",
    "CutOff",
    "FailureStreak",
    "Fork",
    "LazyText",
    "Lease",
    "Observed",
    "Orphan",
    "OrphanWhy",
    "PlanState",
    "RepairRun",
    "StepChange",
    "StepState",
    "StepStatus",
    "Text",
    "VersionInfo",
    "holds_lazy",
    "optional_text",
    "resolved",
    "step_status",
    "text",
    "texts",
]

StepStatus = Literal["pending", "in_progress", "completed", "blocked", "stale"]
#: Every step status, in the order views list them (``stale``: format v2, a step whose inputs changed).
STEP_STATUSES: Final = ("pending", "in_progress", "completed", "blocked", "stale")
CriterionStatus = Literal["unverified", "passed", "failed"]
#: Why a result is late: stamped with a superseded version, for an attempt that is over, sent after the run finished,
#: or (format v2) naming no attempt while more than one could be the one it belongs to.
OrphanWhy = Literal["SUPERSEDED_VERSION", "STALE_ATTEMPT", "RUN_FINISHED", "AMBIGUOUS_ATTEMPT"]
FINAL_OUTCOMES: Final = frozenset({"complete", "failed", "cancelled", "partial", "budget_exhausted"})


#: The name the unread payload had before it joined the vocabulary (the same class).
LazyText = Payload


#: A text of the state that may still be an unread :class:`~plantrail.ledger.vocabulary.payloads.Payload`
#: (evidence in a writer's state started from a snapshot); every view that reads one goes through :func:`text`.
Text = str | Payload


def text(value: Text) -> str:
    """The text itself (an unread payload is read)."""
    return value if isinstance(value, str) else value.resolve()


def optional_text(value: Text | None) -> str | None:
    """:func:`text` of a text that may be absent."""
    return None if value is None else text(value)


def texts(values: tuple[Text, ...]) -> list[str]:
    """Each :func:`text` of ``values``, in order."""
    return [text(v) for v in values]


class Lease(NamedTuple):
    """(Format v2) an attempt's lease: it runs ``seconds`` from ``since``, the timestamp of the attempt's start
    (its step's ``timeout_s``) or of its last heartbeat (seq ``seq``). Whether it has expired is judged at a
    command's time (:mod:`projections.leases`), never here."""

    since: str
    seconds: float
    seq: int


class RepairRun(NamedTuple):
    """(Format v2) a repair step's run (:mod:`projections.repair_edges`): ``waiting`` holds the failed steps that wait
    for it to complete, each with the attempt that failed; ``spent`` the attempts of its earlier runs, which are
    not charged to this one (each repair run has the step's ``max_attempts``)."""

    waiting: tuple[tuple[str, int], ...] = ()
    spent: int = 0


class Consumed(NamedTuple):
    """(Format v2) the digest of one input a step consumed when it completed (``input``: the input's key,
    :func:`ledger.vocabulary.artifacts.input_key`; ``digest`` None: an initial input or observation without one)."""

    input: str
    digest: str | None


class Observed(NamedTuple):
    """(Format v2) the latest recorded version of one observation key (``observation.recorded``)."""

    key: str
    version: str
    dirty: tuple[str, ...]
    seq: int


class StepState(NamedTuple):
    """One step of the active version.

    ``reset`` says why the step (re)started in this version (``added``, ``contract_changed``,
    ``upstream_invalidated``, ``superseded``, ``unblocked``); ``invalidated_by`` names the upstream step
    whose change invalidated it. ``exhausted`` marks a step blocked because its attempts ran out.
    """

    id: str
    status: StepStatus = "pending"
    attempt: int = 0
    evidence: tuple[Text, ...] = ()
    reason: str | None = None
    error: str | None = None
    exhausted: bool = False
    max_attempts: int | None = 3  # None: no limit (format v2)
    last_seq: int = 0
    reset: str | None = None
    invalidated_by: str | None = None
    usage: Usage | None = None  # format v2: what this step's reported results spent, summed
    lease: Lease | None = None  # format v2: the lease of the step's attempt (timeout_s or heartbeats)
    abandoned: tuple[int, ...] = ()  # format v2: attempts ended by abandon (not charged to max_attempts)
    artifacts: tuple[Artifact, ...] = ()  # format v2: what the step's completion produced (ledger.vocabulary.artifacts)
    consumed: tuple[Consumed, ...] = ()  # format v2: the input digests current at the step's completion
    #: Format v2: why the attempt in progress is to be cancelled (an input changed under it): ``abandon`` ends
    #: it (the step becomes stale), and a result it still sends lands on the orphan path.
    cancel: str | None = None
    #: Format v2: the attempt the step had when it last went stale (lineage_digest): attempts up to it are not
    #: charged, while their numbers stay taken, so a late result of one is never taken for a new attempt's.
    reset_at: int = 0
    repair: RepairRun | None = None  # format v2: a repair step's run (what waits for it, what earlier runs spent)
    #: The seq of the ``step.started`` of each attempt since the step last restarted at attempt 0, the current
    #: attempt's last (a result may name its attempt by it). Not part of the state hash: it locates records.
    started: tuple[int, ...] = ()

    @property
    def charged(self) -> int:
        """The attempts charged to ``max_attempts``: every attempt started since the step last went stale (for a
        repair step: since its current run began), but those abandoned."""
        if self.repair is None or not self.repair.spent:
            return self.attempt - self.reset_at - len(self.abandoned)
        spent = max(self.repair.spent, self.reset_at)
        return self.attempt - spent - sum(1 for a in self.abandoned if a > spent)


#: What a steps table is tallied by (:meth:`~projections.table.Table.tally`): one function, so that every
#: reader of the count of steps by status shares the one tally a table carries.
step_status: Final[Callable[[StepState], str]] = operator.attrgetter("status")


class CriterionState(NamedTuple):
    """One acceptance criterion of the active version; ``reset`` says why a verdict was dropped."""

    id: str
    status: CriterionStatus = "unverified"
    evidence: Text | None = None
    last_seq: int = 0
    reset: str | None = None


class Orphan(NamedTuple):
    """A late result, kept for the audit and never applied to the plan."""

    seq: int
    type: str
    step: str
    plan_version: int
    attempt: int
    active_version: int
    why: OrphanWhy
    evidence: tuple[Text, ...] = ()
    reason: str | None = None
    #: The step's contract in the version the result belongs to, when it is known to be the very attempt's
    #: (a replan cut it off in flight, or its attempt was abandoned): what ``adopt`` compares with the active
    #: version's. Not part of the state hash.
    contract: StepSpec | None = None
    adopted: int | None = None  # format v2: the seq of the ``step.adopted`` that took this result into the plan


class CutOff(NamedTuple):
    """An attempt a replan cut off in flight (its step was reset or removed while in progress), whose result
    has not come yet: the step, the version and attempt it belonged to, the seq of its start (0 when the start
    is not in this log: an attempt a fork carried from its parent), and the step's contract in that version
    (None when an input had changed under it). Kept until its result lands, so that a
    result naming no attempt can tell whether it is this one's; not part of the state hash."""

    step: str
    version: int
    attempt: int
    started_seq: int
    contract: StepSpec | None = None


class StepChange(NamedTuple):
    """What a replan did to one step or criterion that existed before: ``cause``, its status then (``was``),
    the attempt it was on, the upstream step whose change invalidated it, and the contract fields that changed."""

    step: str
    cause: str
    was: str | None = None
    attempt: int = 0
    upstream: str | None = None
    fields: tuple[str, ...] = ()


class Changes(NamedTuple):
    """What a replan did to the previous version: kept, reset (with causes), added and removed work."""

    kept: tuple[str, ...] = ()
    reset: tuple[StepChange, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[StepChange, ...] = ()
    criteria_kept: tuple[str, ...] = ()
    criteria_reset: tuple[StepChange, ...] = ()
    criteria_added: tuple[str, ...] = ()
    criteria_removed: tuple[str, ...] = ()
    policy_changed: bool = False


class VersionInfo(NamedTuple):
    """One plan version: when and why it was adopted, its causes, the whole plan, and what changed."""

    version: int
    seq: int
    ts: str
    actor: str
    plan: PlanSpec
    reason: str | None = None
    why: str | None = None
    causes: tuple[int, ...] = ()
    observations: tuple[str, ...] = ()
    patched: bool = False
    changes: Changes | None = None
    #: Format v2: the seqs of the ``plan.extended`` records that added to this version in place (``plan`` is the
    #: version with them); empty for a version never extended.
    extended: tuple[int, ...] = ()


EMPTY_TABLE: Final[Table[object]] = Table((), ())


class FailureStreak(NamedTuple):
    """The fingerprint of the last failed attempt (step, failing checks, exit code, normalised error, changed
    paths, plan version) and how many failures in a row had it (the same failure again is no progress)."""

    fingerprint: str
    repeats: int
    step: str


class Fork(NamedTuple):
    """One link of a run's lineage (format v2): the parent run, the seq it was forked at, the parent's hash
    there, the hash of the parent's state at that seq (which the fork carries), and why it was forked."""

    run: str
    seq: int
    head: str
    state_hash: str
    reason: str


class PlanState(NamedTuple):
    """What the log says about the run now; compare two states by :func:`projections.canonical.state_hash`.

    Its size follows the active plan, not the length of the log: ``adopted`` describes only the active
    version (when, why, and what its replan changed); the history of every version is its own projection
    (:func:`projections.history.history`). Late results (``orphans``) are kept in full.
    """

    run: str | None = None
    plan: PlanSpec | None = None
    version: int = 0
    steps: Table[StepState] = EMPTY_TABLE  # type: ignore[assignment]
    criteria: Table[CriterionState] = EMPTY_TABLE  # type: ignore[assignment]
    outcome: str | None = None
    outcome_reason: str | None = None
    outcome_seq: int | None = None
    adopted: VersionInfo | None = None
    orphans: tuple[Orphan, ...] = ()
    consecutive_failures: int = 0
    last_seq: int = -1
    head: str | None = None
    usage: Usage | None = None  # format v2: what every reported result spent (late ones too), summed
    failure_streak: FailureStreak | None = None  # format v2: the last failure's fingerprint and repeats
    contract: bool = False  # format v2: the active plan uses the v2 contract (its stop policy applies in full)
    lineage: tuple[Fork, ...] = ()  # format v2: the runs this one was forked from, the oldest first
    authority: Authority | None = None  # format v2: approvals, a scope violation's pause (projections.approvals)
    effects: tuple[Effect, ...] = ()  # format v2: side effects by idempotency key (projections.effects)
    observations: tuple[Observed, ...] = ()  # format v2: the latest version of each observation key recorded
    #: The attempts replans cut off in flight whose results have not come yet (not part of the state hash).
    cut_off: tuple[CutOff, ...] = ()
    #: The seq of the record that adopted each plan version, version 1's first (not part of the state hash).
    adoptions: tuple[int, ...] = ()

    @property
    def goal(self) -> str | None:
        """The run's goal (it never changes across versions)."""
        return None if self.plan is None else self.plan.goal

    @property
    def finished(self) -> bool:
        """True once the run ended complete, failed or cancelled (``paused`` is not final)."""
        return self.outcome in FINAL_OUTCOMES


def initial() -> PlanState:
    """The state of an empty log."""
    return PlanState()


def _has_lazy(items: tuple[Text, ...]) -> bool:
    return any(not isinstance(e, str) for e in items)


def holds_lazy(state: PlanState) -> bool:
    """True when some evidence of ``state`` is an unread payload (none is read)."""
    return (
        any(_has_lazy(s.evidence) for s in state.steps.values())
        or any(c.evidence is not None and not isinstance(c.evidence, str) for c in state.criteria.values())
        or any(_has_lazy(o.evidence) for o in state.orphans)
    )


def resolved(state: PlanState) -> PlanState:
    """``state`` with every unread payload read (the same object when it holds none); ValueError when one
    no longer checks out against the log."""
    steps = state.steps
    for s in state.steps.values():
        if _has_lazy(s.evidence):
            steps = steps.set(s.id, s._replace(evidence=tuple(text(e) for e in s.evidence)))
    criteria = state.criteria
    for c in state.criteria.values():
        if c.evidence is not None and not isinstance(c.evidence, str):
            criteria = criteria.set(c.id, c._replace(evidence=c.evidence.resolve()))
    orphans = state.orphans
    if any(_has_lazy(o.evidence) for o in orphans):
        orphans = tuple(o._replace(evidence=tuple(text(e) for e in o.evidence)) for o in orphans)
    if steps is state.steps and criteria is state.criteria and orphans is state.orphans:
        return state
    return state._replace(steps=steps, criteria=criteria, orphans=orphans)
