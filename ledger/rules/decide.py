"""Commands -> events: one decision per command, checked against the current state before a byte is written.

Each command first *builds* its event (filling in defaults: the active plan version, the step's attempt),
then :func:`check` judges the event against the state. ``check`` is the one place the rules live, so
``plantrail verify`` can replay it over a whole log to catch events a plantrail writer would have refused.
A refusal raises a :class:`~ledger.errors.CommandRefused` or :class:`~ledger.errors.PlanInvalid` with a
stable code and structured fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

import msgspec
from msgspec.structs import force_setattr

from plantrail.ledger.rules.approvals import (
    Decide,
    RequestApproval,
    build_approval,
    check_approval,
    check_result_scope,
    check_start_authority,
    recorded_result,
)
from plantrail.ledger.rules.effects import CommitEffect, RequestEffect, build_effect, check_effect, effect_lateness
from plantrail.ledger.rules.extension import check_extension
from plantrail.ledger.rules.guards import require_open, require_step
from plantrail.ledger.rules.leases import (
    Abandon,
    Heartbeat,
    build_abandon,
    build_heartbeat,
    check_abandon,
    check_heartbeat,
)
from plantrail.ledger.rules.lineage import check_forked
from plantrail.ledger.rules.observations import Observe, build_observation, check_observation
from plantrail.ledger.rules.outcomes import check_outcome, finished_event
from plantrail.ledger.rules.repair_edges import check_start_repair
from plantrail.ledger.vocabulary.artifacts import Artifact, produced_problems
from plantrail.ledger.vocabulary.contract import CheckSpec, unmet
from plantrail.ledger.vocabulary.coverage import require_coverage
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import (
    OUTCOMES,
    REASON_CODES,
    Actor,
    ApprovalDenied,
    ApprovalGranted,
    ApprovalRequested,
    CriterionVerified,
    EffectCommitted,
    EffectRequested,
    Event,
    ObservationRecorded,
    Outcome,
    PlanCreated,
    PlanExtended,
    PlanReplanned,
    ReasonCode,
    RunFinished,
    RunForked,
    Source,
    StepAbandoned,
    StepBlocked,
    StepCompleted,
    StepFailed,
    StepHeartbeat,
    StepStarted,
)
from plantrail.ledger.vocabulary.evidence import Report
from plantrail.ledger.vocabulary.items import as_items, as_text
from plantrail.ledger.vocabulary.plan import (
    CriterionSpec,
    Draft,
    PlanPatch,
    PlanSpec,
    StepSpec,
    apply_patch,
    build_plan,
    check_id,
    did_you_mean,
    steps_by_id,
    validate_plan,
)
from plantrail.projections.lineage_digest import require_inputs
from plantrail.projections.model import OrphanWhy, StepState
from plantrail.projections.repair_edges import edges_of, idle_repairs
from plantrail.projections.state import StateView, orphan_reason, steps_in_progress
from plantrail.projections.stop import STOPPING, stop_decision

__all__ = [
    "Abandon",
    "Block",
    "Command",
    "CommitEffect",
    "Complete",
    "Create",
    "Decide",
    "Extend",
    "Fail",
    "Finish",
    "Heartbeat",
    "NewEvent",
    "Observe",
    "Replan",
    "RequestApproval",
    "RequestEffect",
    "Start",
    "VerifyCriterion",
    "check",
    "decide",
    "decide_one",
]


class NewEvent(msgspec.Struct, frozen=True):
    """An event a decision produced, with the envelope fields the caller chose."""

    data: Event
    plan_version: int
    actor: Actor
    source: Source | None = None
    key: str | None = None
    orphan: OrphanWhy | None = None


class _Command(msgspec.Struct, frozen=True, kw_only=True):
    actor: Actor = "agent"
    source: Source | None = None
    key: str | None = None


class Create(_Command, frozen=True, kw_only=True):
    """Create the plan (version 1) from a validated-on-use draft or plan; ``strict`` refuses a coverage gap
    (:mod:`ledger.coverage`)."""

    plan: Draft | PlanSpec
    actor: Actor = "planner"
    strict: bool = False


class Start(_Command, frozen=True, kw_only=True):
    """Start the next attempt of a step."""

    step: str
    plan_version: int | None = None


class Complete(_Command, frozen=True, kw_only=True):
    """Complete a step's attempt with evidence (a bare ``str`` is one item of evidence)."""

    step: str
    evidence: Sequence[str]
    plan_version: int | None = None
    attempt: int | None = None
    report: Report | None = None
    artifacts: Sequence[Artifact] = ()  # format v2: the artifacts produced (ledger.artifacts)

    def __post_init__(self) -> None:
        force_setattr(self, "evidence", as_items(self.evidence, str, "evidence"))
        force_setattr(self, "artifacts", tuple(self.artifacts))


class Block(_Command, frozen=True, kw_only=True):
    """Block a step's attempt with a reason."""

    step: str
    reason: str
    plan_version: int | None = None
    attempt: int | None = None
    report: Report | None = None

    def __post_init__(self) -> None:
        as_text(self.reason, "reason")


class Fail(_Command, frozen=True, kw_only=True):
    """Record that a step's attempt failed with an error."""

    step: str
    error: str
    plan_version: int | None = None
    attempt: int | None = None
    report: Report | None = None

    def __post_init__(self) -> None:
        as_text(self.error, "error")


class VerifyCriterion(_Command, frozen=True, kw_only=True):
    """Record an acceptance criterion's verdict with evidence."""

    criterion: str
    passed: bool
    evidence: str
    plan_version: int | None = None
    report: Report | None = None

    def __post_init__(self) -> None:
        as_text(self.evidence, "a criterion's evidence")


class Finish(_Command, frozen=True, kw_only=True):
    """End (or pause) the run with an outcome and a reason."""

    outcome: Outcome
    reason: str
    plan_version: int | None = None

    def __post_init__(self) -> None:
        as_text(self.reason, "reason")


class Replan(_Command, frozen=True, kw_only=True):
    """Adopt a new plan version from a whole draft or a patch, with a reason code, why and causes (a bare
    ``int`` is one cause, a bare ``str`` one observation)."""

    reason: ReasonCode
    why: str
    plan: Draft | PlanSpec | None = None
    patch: PlanPatch | None = None
    causes: Sequence[int] = ()
    observations: Sequence[str] = ()
    plan_version: int | None = None
    actor: Actor = "planner"
    strict: bool = False  # refuse a coverage gap in the new plan (ledger.coverage)

    def __post_init__(self) -> None:
        as_text(self.why, "why")
        force_setattr(self, "causes", as_items(self.causes, int, "causes"))
        force_setattr(self, "observations", as_items(self.observations, str, "observations"))


class Extend(_Command, frozen=True, kw_only=True):
    """Add steps and criteria to the active plan version in place, while no work has touched it (format v2,
    :mod:`ledger.extension`); a bare StepSpec is one step."""

    steps: Sequence[StepSpec]
    criteria: Sequence[CriterionSpec] = ()
    observations: Sequence[str] = ()
    plan_version: int | None = None
    actor: Actor = "planner"

    def __post_init__(self) -> None:
        force_setattr(self, "steps", _specs(self.steps, StepSpec, "steps"))
        force_setattr(self, "criteria", _specs(self.criteria, CriterionSpec, "criteria"))
        force_setattr(self, "observations", as_items(self.observations, str, "observations"))


def _specs(value: Any, kind: type[Any], what: str) -> tuple[Any, ...]:
    """``value`` as a tuple of ``kind`` (a bare one is a tuple of one); USAGE for anything else."""
    items = (value,) if isinstance(value, kind) else tuple(value) if isinstance(value, (tuple, list)) else None
    if items is None or not all(isinstance(item, kind) for item in items):
        raise error("USAGE", f"{what} must be a {kind.__name__} or a list of them")
    return items


Command = (
    Create
    | Start
    | Complete
    | Block
    | Fail
    | VerifyCriterion
    | Finish
    | Replan
    | Extend
    | Heartbeat
    | Abandon
    | Observe
    | RequestApproval
    | Decide
    | RequestEffect
    | CommitEffect
)


# --------------------------------------------------------------------------- decide


def decide(state: StateView, command: Command) -> list[NewEvent]:
    """The events ``command`` produces against ``state``, or a refusal with a stable code."""
    data, plan_version, orphan = decide_one(state, command)
    return [NewEvent(data, plan_version, command.actor, command.source, command.key, orphan)]


def decide_one(state: StateView, command: Command, *, now: str | None = None) -> tuple[Event, int, OrphanWhy | None]:
    """The one event ``command`` produces (its data and plan version; the envelope's actor, source and key are
    the command's), and why it is a late result (None when it applies); or a refusal, as :func:`decide`.
    ``now`` is the timestamp the event will carry: the stop policy judges a deadline against it."""
    data, plan_version = _build(state, command)
    if isinstance(data, StepCompleted | StepBlocked | StepFailed) and data.report is not None:
        data = _as_recorded(state, data, plan_version)
    late = check(state, data, plan_version, now=now)
    if isinstance(data, EffectRequested | EffectCommitted):  # a late effect is kept beside the orphans
        late = effect_lateness(state, data, plan_version)
    return data, plan_version, late


def _as_recorded(
    state: StateView, data: StepCompleted | StepBlocked | StepFailed, plan_version: int
) -> StepCompleted | StepBlocked | StepFailed:
    """A result that applies, as it is recorded: a report outside the step's scope makes it the blocked attempt
    ``scope_violation`` (:mod:`ledger.approvals`); a late result is recorded as reported."""
    step = state.steps.get(data.step)
    if step is None or step.status != "in_progress" or orphan_reason(state, plan_version, data.step, data.attempt):
        return data
    _result_text(data)  # a result without its evidence or reason is refused as such, never rewritten
    return recorded_result(state, data)


def _build(state: StateView, command: Command) -> tuple[Event, int]:
    """Turn a command into its event and the plan version it is issued against, filling in defaults; no rule
    is judged here."""
    if isinstance(command, Create):
        if state.plan is not None:
            raise error("PLAN_ALREADY_CREATED", "the log already has a plan", plan_version=state.version)
        created = _as_plan(command.plan)
        if command.strict:
            require_coverage(created)
        return PlanCreated(plan=created), 1
    _require_plan(state)
    version = state.version if command.plan_version is None else command.plan_version
    match command:
        case Start():
            current = state.steps.get(command.step)
            attempt = 1 if current is None else current.attempt + 1
            return StepStarted(step=command.step, attempt=attempt), version
        case Complete():
            attempt = _attempt(state, command.step, version, command.attempt)
            evidence = tuple([e.strip() for e in command.evidence])
            completed = StepCompleted(
                step=command.step,
                attempt=attempt,
                evidence=evidence,
                report=command.report,
                artifacts=tuple(command.artifacts),
            )
            return completed, version
        case Block():
            attempt = _attempt(state, command.step, version, command.attempt)
            blocked = StepBlocked(
                step=command.step, attempt=attempt, reason=command.reason.strip(), report=command.report
            )
            return blocked, version
        case Fail():
            attempt = _attempt(state, command.step, version, command.attempt)
            failed = StepFailed(step=command.step, attempt=attempt, error=command.error.strip(), report=command.report)
            return failed, version
        case VerifyCriterion():
            verdict: Literal["passed", "failed"] = "passed" if command.passed else "failed"
            data = CriterionVerified(
                criterion=command.criterion, verdict=verdict, evidence=command.evidence.strip(), report=command.report
            )
            return data, version
        case Finish():
            return finished_event(state, command.outcome, command.reason.strip()), version
        case Replan():
            return _replanned(state, command, version), version
        case RequestApproval() | Decide():
            return build_approval(command), version
        case Extend():
            observations = tuple(o.strip() for o in command.observations if o.strip())
            extended = PlanExtended(
                steps=tuple(command.steps), criteria=tuple(command.criteria), observations=observations
            )
            return extended, version
        case Heartbeat():
            return build_heartbeat(state, command), version
        case Abandon():
            return build_abandon(state, command), version
        case RequestEffect() | CommitEffect():
            return build_effect(state, command)
        case Observe():
            return build_observation(command), version


def _as_plan(plan: Draft | PlanSpec, *, goal: str | None = None, base: PlanSpec | None = None) -> PlanSpec:
    if isinstance(plan, PlanSpec):
        validate_plan(plan)
        return plan
    if base is None:
        return build_plan(plan, goal=goal)
    return build_plan(plan, goal=goal, policy=base.policy, scope=base.scope, artifacts=base.artifacts)


def _replanned(state: StateView, command: Replan, version: int) -> PlanReplanned:
    assert state.plan is not None  # guarded by _require_plan
    require_open(state)  # before the draft is judged: no draft can continue a finished run
    if (command.plan is None) == (command.patch is None):
        raise error("USAGE", "a replan takes either a whole plan or a patch, not both or neither")
    if command.patch is not None:
        if command.patch.base_version > state.version:
            raise error(
                "UNKNOWN_PLAN_VERSION",
                f"the patch is based on version {command.patch.base_version}, which does not exist; "
                f"the active version is {state.version}",
                plan_version=command.patch.base_version,
                expected=state.version,
            )
        if command.patch.base_version != state.version:
            raise error(
                "STALE_PLAN_VERSION",
                f"the patch is based on version {command.patch.base_version}; the active version is {state.version}",
                expected=state.version,
                actual=command.patch.base_version,
                plan_version=command.patch.base_version,
            )
        plan = apply_patch(state.plan, command.patch)
    else:
        assert command.plan is not None
        if isinstance(command.plan, Draft) and command.plan.goal not in (None, state.plan.goal):
            raise _goal_changed(state.plan.goal, command.plan.goal)
        plan = _as_plan(command.plan, goal=state.plan.goal, base=state.plan)
    if command.strict:
        require_coverage(plan)
    return PlanReplanned(
        new_version=state.version + 1,
        reason=command.reason,
        why=command.why.strip(),
        causes=tuple(command.causes),
        observations=tuple(o.strip() for o in command.observations if o.strip()),
        plan=plan,
        patch=command.patch,
    )


def _attempt(state: StateView, step: str, version: int, attempt: int | None) -> int:
    """The attempt a result refers to: the caller's, else the step's attempt in that version."""
    if attempt is not None:
        return attempt
    if version >= state.version:
        current = state.steps.get(step)
        return 0 if current is None else current.attempt
    adopted = state.adopted  # the replan that superseded the previous version recorded the attempts it cut off
    if version == state.version - 1 and adopted is not None and adopted.changes is not None:
        for change in (*adopted.changes.reset, *adopted.changes.removed):
            if change.step == step and change.attempt:
                return change.attempt
    return 1


# --------------------------------------------------------------------------- rules

_TRANSITION_TARGET: Final = {
    "step.started": "in_progress",
    "step.completed": "completed",
    "step.blocked": "blocked",
    "step.failed": "pending",
}


def _require_plan(state: StateView) -> None:
    if state.plan is None:
        raise error("PLAN_NOT_CREATED", "the log has no plan yet")


def _goal_changed(old: str, new: str | None) -> Exception:
    return error("GOAL_CHANGED", f"a replan cannot change the goal (was {old!r}, draft says {new!r})")


#: The rules of one kind of event: (state, event, its plan version, its timestamp) -> why it is late, or None.
_Rules = Callable[[StateView, Any, int, str | None], OrphanWhy | None]


def check(state: StateView, data: Event, plan_version: int, *, now: str | None = None) -> OrphanWhy | None:
    """Judge one event against the state before it; return why it is a late result, or None if it applies.

    ``now`` is the event's timestamp (``verify`` passes each record's): rules on time, such as a deadline,
    compare it with the plan; the clock itself is never read here."""
    rules = _RULES.get(type(data))  # every event judged against a plan (the rest: _check_unplanned)
    if rules is None:
        return _check_unplanned(state, data, plan_version, now)
    if state.plan is None:
        _require_plan(state)
    if not 1 <= plan_version <= state.version:
        raise _unknown_version(state, plan_version)
    return rules(state, data, plan_version, now)


def _check_unplanned(state: StateView, data: Event, plan_version: int, now: str | None) -> OrphanWhy | None:
    """:func:`check` for the events no plan is needed for (the plan's creation, the log's own records, a fork),
    and for an event of a class derived from one of :data:`_RULES` (judged by its base class's rules)."""
    if isinstance(data, PlanCreated):
        if state.plan is not None:
            raise error("PLAN_ALREADY_CREATED", "the log already has a plan", plan_version=state.version)
        validate_plan(data.plan)
        return None
    if data.TYPE.startswith("log."):
        return None
    if isinstance(data, RunForked):
        check_forked(state, data, plan_version)
        return None
    _require_plan(state)
    if not 1 <= plan_version <= state.version:
        raise _unknown_version(state, plan_version)
    for kind, rules in _RULES.items():
        if isinstance(data, kind):
            return rules(state, data, plan_version, now)
    return None


def _unknown_version(state: StateView, plan_version: int) -> Exception:
    return error(
        "UNKNOWN_PLAN_VERSION",
        f"plan version {plan_version} does not exist; the active version is {state.version}",
        plan_version=plan_version,
        expected=state.version,
    )


def _start_rules(state: StateView, data: StepStarted, plan_version: int, now: str | None) -> None:
    _check_start(state, data, plan_version)
    if state.contract:  # only a v2 plan declares what the stop policy's rules 5-7 need
        _stop_allows(state, data.step, now)


def _finish_rules(state: StateView, data: RunFinished, plan_version: int, now: str | None) -> None:
    _check_finish(state, data, plan_version)
    check_outcome(state, data, now)


def _timeless(rules: Callable[[Any, Any, int], OrphanWhy | None]) -> _Rules:
    """Rules that do not read the event's timestamp, as :data:`_RULES` calls them."""

    def judge(state: StateView, data: Any, plan_version: int, now: str | None) -> OrphanWhy | None:
        return rules(state, data, plan_version)

    return judge


def _not_stale(state: StateView, plan_version: int, what: str) -> None:
    if plan_version < state.version:
        raise error(
            "STALE_PLAN_VERSION",
            f"{what} was issued against plan version {plan_version}; version {state.version} superseded it",
            plan_version=plan_version,
            expected=state.version,
            actual=plan_version,
        )


def _transition(step: StepState, expected: str, target: str, version: int) -> Exception:
    return error(
        "INVALID_TRANSITION",
        f"step {step.id} is {step.status}; it must be {expected} to become {target}",
        step=step.id,
        plan_version=version,
        current=step.status,
        expected=expected,
        target=target,
    )


def _check_start(state: StateView, data: StepStarted, plan_version: int) -> None:
    if plan_version < state.version:  # (the message is written only for a refusal)
        _not_stale(state, plan_version, f"start {data.step}")
    if state.finished:
        require_open(state)
    step = state.steps.get(data.step)
    if step is None:
        step = require_step(state, data.step)
    if step.status != "pending" and step.status != "stale":
        raise _transition(step, "pending", "in_progress", state.version)
    if data.attempt != step.attempt + 1:
        raise error(
            "INVALID_TRANSITION",
            f"step {step.id} starts attempt {step.attempt + 1}, not {data.attempt}",
            step=step.id,
            expected=step.attempt + 1,
            actual=data.attempt,
        )
    plan = state.plan
    assert plan is not None
    limit = plan.policy.max_in_progress
    if limit is not None and steps_in_progress(state) >= limit:
        _room_to_start(state, data.step, limit)
    _dependencies_done(state, plan, data.step)
    contract = state.contract
    if contract and edges_of(plan):  # repair edges: v2 plans only
        check_start_repair(state, step)
    if step.status == "stale" or contract:  # format v2: a consumer starts only on current inputs
        require_inputs(state, _contract(plan, data.step))
    if contract or state.authority is not None:  # scopes and approvals live in v2 plans only
        check_start_authority(state, _contract(plan, data.step))


def _stop_allows(state: StateView, step: str, now: str | None) -> None:
    """Refuse a start the stop policy forbids (no progress, a budget or the deadline spent): STOP_POLICY."""
    decision = stop_decision(state, now)
    if decision.outcome in STOPPING:
        raise error(
            "STOP_POLICY",
            f"the stop policy says {decision.outcome} ({decision.rule}): {decision.reason}; replan or finish",
            step=step,
            plan_version=state.version,
            outcome=decision.outcome,
            rule=decision.rule,
        )


def _room_to_start(state: StateView, step: str, limit: int) -> None:
    """Refuse a start when ``limit`` steps are already in progress."""
    if steps_in_progress(state) < limit:
        return
    active = [s.id for s in state.steps.values() if s.status == "in_progress"]
    if len(active) >= limit:
        raise error(
            "STEP_ALREADY_ACTIVE",
            f"{len(active)} step(s) already in progress ({', '.join(active)}); the plan allows {limit}",
            step=step,
            plan_version=state.version,
            active=active,
        )


def _contract(plan: PlanSpec, step: str) -> StepSpec:
    """The step's contract in ``plan`` (whose steps are the state's steps: the caller checked it is there)."""
    return steps_by_id(plan)[step]


def _dependencies_done(state: StateView, plan: PlanSpec, step: str) -> None:
    """Refuse a start while any of the step's dependencies is not completed."""
    steps = state.steps
    spec = _contract(plan, step)
    for dependency in spec.depends_on:
        if steps[dependency].status != "completed":
            break
    else:
        return  # every dependency is completed (the common case: no set, no sort)
    waiting = sorted(d for d in set(spec.depends_on) if steps[d].status != "completed")
    raise error(
        "STEP_NOT_READY",
        f"step {step} waits for unfinished dependencies: {', '.join(waiting)}",
        step=step,
        plan_version=state.version,
        waiting=waiting,
    )


def _result_text(data: StepCompleted | StepBlocked | StepFailed) -> None:
    if isinstance(data, StepCompleted):
        evidence = data.evidence
        if not evidence:
            raise _no_evidence(data)
        for item in evidence:
            if not item.strip():
                raise _no_evidence(data)
    elif not (data.reason if isinstance(data, StepBlocked) else data.error).strip():
        what = "a reason" if isinstance(data, StepBlocked) else "an error"
        raise error("REASON_REQUIRED", f"{data.TYPE} for {data.step} needs {what}", step=data.step)


def _no_evidence(data: StepCompleted) -> Exception:
    return error("EVIDENCE_REQUIRED", f"completing {data.step} needs non-empty evidence", step=data.step)


def _check_result(
    state: StateView, data: StepCompleted | StepBlocked | StepFailed, plan_version: int, now: str | None = None
) -> OrphanWhy | None:
    _result_text(data)
    if plan_version < state.version:
        # A late result is a fact: it is recorded as the worker reported it, never refused.
        check_id(data.step, "step")
        return "SUPERSEDED_VERSION"
    step = state.steps.get(data.step)
    if step is None:
        step = require_step(state, data.step)
    why = orphan_reason(state, plan_version, data.step, data.attempt)
    if why == "STALE_ATTEMPT":
        # an input changed under it, or it went stale since: its last attempt is over too (lineage_digest)
        ended = (step.cancel is not None or step.status == "stale") and data.attempt == step.attempt
        if not (1 <= data.attempt < step.attempt or data.attempt in step.abandoned or ended):
            raise error(
                "INVALID_TRANSITION",
                f"step {step.id} never started attempt {data.attempt} (its attempt is {step.attempt})",
                step=step.id,
                plan_version=state.version,
                current=step.status,
                expected="in_progress",
                target=_TRANSITION_TARGET[data.TYPE],
            )
        return why
    if step.status != "in_progress":
        if why == "RUN_FINISHED":
            require_open(state)
        raise _transition(step, "in_progress", _TRANSITION_TARGET[data.TYPE], state.version)
    if why is None and (data.report is not None or (isinstance(data, StepBlocked) and data.violation is not None)):
        check_result_scope(state, data)
    if why is None and isinstance(data, StepCompleted):
        assert state.plan is not None
        spec = _contract(state.plan, data.step)
        terms = spec.terms
        if terms is not None and terms.checks:  # (the owner's name is written only for a step with checks)
            _checks_met(terms.checks, data.report, f"step {data.step}", step=data.step)
        if data.artifacts or (terms is not None and terms.outputs):
            problem = produced_problems(spec, data.artifacts)
            if problem is not None:
                raise problem
    return why


def _checks_met(checks: tuple[CheckSpec, ...], report: Report | None, owner: str, **fields: str) -> None:
    """Refuse CHECK_NOT_MET unless the report's observations satisfy every check (a typed checkpoint:
    an expected failure is a pass, a truncated or unstarted command never is)."""
    if not checks:
        return
    missing = unmet(checks, report)
    if missing:
        shown = "; ".join(f"{check}: {why}" for check, why in missing)
        raise error(
            "CHECK_NOT_MET",
            f"{owner} cannot pass: {shown} (report the attempt as fail with the same record)",
            checks=[check for check, _ in missing],
            **fields,
        )


def _check_criterion(state: StateView, data: CriterionVerified, plan_version: int) -> None:
    _not_stale(state, plan_version, f"criterion {data.criterion}")
    require_open(state)
    if data.criterion not in state.criteria:
        raise error(
            "CRITERION_NOT_FOUND",
            f"no acceptance criterion {data.criterion} in plan version {state.version}"
            f"{did_you_mean(data.criterion, state.criteria)}",
            criterion=data.criterion,
            plan_version=state.version,
        )
    if not data.evidence.strip():
        raise error("EVIDENCE_REQUIRED", f"a verdict on {data.criterion} needs evidence", criterion=data.criterion)
    if data.verdict == "passed":
        assert state.plan is not None
        spec = next(c for c in state.plan.acceptance_criteria if c.id == data.criterion)
        _checks_met(spec.checks, data.report, f"criterion {data.criterion}", criterion=data.criterion)


def _check_finish(state: StateView, data: RunFinished, plan_version: int) -> None:
    _not_stale(state, plan_version, "finish")
    require_open(state)
    if data.outcome not in OUTCOMES:
        raise error("USAGE", f"outcome must be one of {', '.join(OUTCOMES)}")
    if not data.reason.strip():
        raise error("REASON_REQUIRED", "finishing the run needs a reason")
    if data.outcome != "complete":
        return
    idle = idle_repairs(state)
    open_steps = [s.id for s in state.steps.values() if s.status != "completed" and s.id not in idle]
    open_criteria = [c.id for c in state.criteria.values() if c.status != "passed"]
    if open_steps or open_criteria or not state.criteria:
        parts = []
        if open_steps:
            parts.append(f"steps not completed: {', '.join(open_steps)}")
        if open_criteria:
            parts.append(f"criteria not passed: {', '.join(open_criteria)}")
        raise error(
            "CRITERIA_UNVERIFIED",
            "the run cannot finish complete; " + "; ".join(parts or ["the plan has no criteria"]),
            steps=open_steps,
            criteria=open_criteria,
        )


def _check_replan(state: StateView, data: PlanReplanned, plan_version: int) -> None:
    assert state.plan is not None
    _not_stale(state, plan_version, "the replan")
    require_open(state)
    if data.reason not in REASON_CODES:
        raise error("UNKNOWN_REASON_CODE", f"reason must be one of {', '.join(REASON_CODES)}", actual=data.reason)
    if not data.why.strip():
        raise error("REASON_REQUIRED", "a replan needs a why: what was observed and why the plan changes")
    unknown = sorted(c for c in set(data.causes) if not 1 <= c <= state.last_seq)
    if unknown:
        raise error(
            "UNKNOWN_CAUSE",
            f"causes must be seqs of events in the log (1..{state.last_seq}); unknown: {', '.join(map(str, unknown))}",
            causes=unknown,
        )
    if data.new_version != state.version + 1:
        raise error(
            "INVALID_TRANSITION",
            f"a replan of version {state.version} creates version {state.version + 1}, not {data.new_version}",
            expected=state.version + 1,
            actual=data.new_version,
        )
    if data.plan.goal != state.plan.goal:
        raise _goal_changed(state.plan.goal, data.plan.goal)
    validate_plan(data.plan, (state.plan, tuple(state.steps)))  # the order the fold adopting it carries over
    if data.patch is not None and apply_patch(state.plan, data.patch) != data.plan:
        raise error("PATCH_INVALID", "the recorded plan is not the patch applied to its base version")


#: The rules of each event judged against a plan, by the event's class (a derived class: the first of these
#: it derives from). A result returns why it is late (None: it applies); the rest return None.
_RULES: Final[dict[type[Any], _Rules]] = {
    StepCompleted: _check_result,  # (the result rules take the timestamp they do not read: no wrapper per call)
    StepBlocked: _check_result,
    StepFailed: _check_result,
    StepStarted: _start_rules,
    CriterionVerified: _timeless(_check_criterion),
    RunFinished: _finish_rules,
    PlanReplanned: _timeless(_check_replan),
    ApprovalRequested: _timeless(check_approval),
    ApprovalGranted: _timeless(check_approval),
    ApprovalDenied: _timeless(check_approval),
    PlanExtended: _timeless(check_extension),
    StepHeartbeat: _timeless(check_heartbeat),
    StepAbandoned: _timeless(check_abandon),
    EffectRequested: _timeless(check_effect),
    EffectCommitted: _timeless(check_effect),
    ObservationRecorded: _timeless(check_observation),
}
