"""A step's attempts: the commands that start one and end it with a result (complete, block, fail), and their
rules, checked before a byte is written (the attempts' history is :mod:`plantrail.projections.attempts`).

- **Start**: the step is pending (or stale) in the active version, its dependencies are completed, there is
  room under ``max_in_progress``, the repair edges allow it, its inputs are current (format v2), the run's
  authority (scopes, approvals) allows it, and the stop policy does not say to stop.
- **Result**: the step's attempt is in progress, with evidence (a completion), a reason (a block) or an error
  (a failure). A result stamped with a superseded version, or for an attempt that is over, is a fact: it is
  recorded as the worker reported it, on the orphan path, and never applied. A result whose evidence record
  left the step's scope is recorded as the blocked attempt ``scope_violation``
  (:mod:`plantrail.ledger.rules.approvals`); a completion meets its typed checks and produces its declared
  outputs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Unpack

from msgspec.structs import force_setattr

from plantrail.ledger.rules.approvals import check_result_scope, check_start_authority, recorded_result
from plantrail.ledger.rules.commands import (
    LATE_RECORDED,
    LATE_REFUSED,
    REPORT,
    Attempted,
    Envelope,
    Field,
    Help,
    Issued,
    declare,
    fields,
)
from plantrail.ledger.rules.guards import (
    checks_met,
    issued_version,
    not_stale,
    require_next_attempt,
    require_open,
    require_step,
    transition,
)
from plantrail.ledger.rules.repair_edges import check_start_repair
from plantrail.ledger.vocabulary.artifacts import Artifact, parse_artifact_option, produced_problems
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import StepBlocked, StepCompleted, StepFailed, StepStarted
from plantrail.ledger.vocabulary.evidence import Report, parse_report
from plantrail.ledger.vocabulary.items import as_items, as_text
from plantrail.ledger.vocabulary.plan import check_id, steps_by_id
from plantrail.projections.lineage_digest import require_inputs
from plantrail.projections.repair_edges import edges_of
from plantrail.projections.state import orphan_reason, steps_in_progress
from plantrail.projections.stop import STOPPING, stop_decision

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec
    from plantrail.projections.model import OrphanWhy
    from plantrail.projections.state import StateView

__all__ = [
    "BLOCK",
    "COMPLETE",
    "FAIL",
    "START",
    "TRANSITION_TARGET",
    "Block",
    "Complete",
    "Fail",
    "Start",
    "block",
    "complete",
    "fail",
    "is_ambiguous",
    "start",
]

Result = StepCompleted | StepBlocked | StepFailed


class Start(Issued, frozen=True, kw_only=True):
    """Start the next attempt of a step."""

    step: str
    plan_version: int | None = None


class Complete(Issued, frozen=True, kw_only=True):
    """Complete a step's attempt with evidence (a bare ``str`` is one item of evidence)."""

    step: str
    evidence: Sequence[str]
    plan_version: int | None = None
    attempt: int | None = None
    started_seq: int | None = None
    report: Report | None = None
    artifacts: Sequence[Artifact] = ()  # format v2: the artifacts produced (ledger.vocabulary.artifacts)

    def __post_init__(self) -> None:
        force_setattr(self, "evidence", as_items(self.evidence, str, "evidence"))
        force_setattr(self, "artifacts", tuple(self.artifacts))


class Block(Issued, frozen=True, kw_only=True):
    """Block a step's attempt with a reason."""

    step: str
    reason: str
    plan_version: int | None = None
    attempt: int | None = None
    started_seq: int | None = None
    report: Report | None = None

    def __post_init__(self) -> None:
        as_text(self.reason, "reason")


class Fail(Issued, frozen=True, kw_only=True):
    """Record that a step's attempt failed with an error."""

    step: str
    error: str
    plan_version: int | None = None
    attempt: int | None = None
    started_seq: int | None = None
    report: Report | None = None

    def __post_init__(self) -> None:
        as_text(self.error, "error")


# --------------------------------------------------------------------------- builds


def _build_start(state: StateView, command: Start) -> tuple[StepStarted, int]:
    version = issued_version(state, command.plan_version)
    current = state.steps.get(command.step)
    attempt = 1 if current is None else current.attempt + 1
    return StepStarted(step=command.step, attempt=attempt), version


def _build_complete(state: StateView, command: Complete) -> tuple[Result, int]:
    version, attempt, ambiguous = _belongs_to(state, command)
    evidence = tuple([e.strip() for e in command.evidence])
    completed = StepCompleted(
        step=command.step,
        attempt=attempt,
        evidence=evidence,
        report=command.report,
        artifacts=tuple(command.artifacts),
        ambiguous=ambiguous,
    )
    return _as_recorded(state, completed, version), version


def _build_block(state: StateView, command: Block) -> tuple[Result, int]:
    version, attempt, ambiguous = _belongs_to(state, command)
    reason = command.reason.strip()
    blocked = StepBlocked(step=command.step, attempt=attempt, reason=reason, report=command.report, ambiguous=ambiguous)
    return _as_recorded(state, blocked, version), version


def _build_fail(state: StateView, command: Fail) -> tuple[Result, int]:
    version, attempt, ambiguous = _belongs_to(state, command)
    error_text = command.error.strip()
    failed = StepFailed(
        step=command.step, attempt=attempt, error=error_text, report=command.report, ambiguous=ambiguous
    )
    return _as_recorded(state, failed, version), version


# --------------------------------------------------------------------------- which attempt a result belongs to
#
# Attempt numbers restart when a replan resets a step, so a number alone may fit an attempt of the active
# version and one a replan cut off in flight. A result names its attempt exactly by the seq of its start
# (``started_seq``, which every start's acknowledgement gives); one that names nothing (or only a number) is
# taken as the one attempt it can belong to, and kept on the orphan path as AMBIGUOUS_ATTEMPT when it could
# belong to more than one. It is never refused for not saying which version it worked on.


def _belongs_to(state: StateView, command: Complete | Block | Fail) -> tuple[int, int, bool]:
    """The plan version and attempt a result belongs to, and whether that is ambiguous (attempt 0)."""
    step, attempt, started_seq = command.step, command.attempt, command.started_seq
    if started_seq is not None:
        return (*_named_start(state, step, started_seq, command.plan_version, attempt), False)
    version = issued_version(state, command.plan_version)
    if command.plan_version is not None:
        return version, _attempt(state, step, version, attempt), False
    candidates = _candidates(state, step, attempt)
    if candidates is None:  # no attempt of an earlier version awaits a result: the active version's
        current = state.steps.get(step)
        return version, attempt if attempt is not None else (0 if current is None else current.attempt), False
    if len(candidates) == 1:
        return candidates[0]
    return version, 0, True


def _candidates(state: StateView, step: str, attempt: int | None) -> list[tuple[int, int, bool]] | None:
    """The attempts an unnamed result for ``step`` (with attempt number ``attempt`` when given) can belong to,
    when one of them is an attempt a replan cut off in flight; None when none is (the active version's)."""
    cut = [c for c in state.cut_off if c.step == step and (attempt is None or c.attempt == attempt)]
    if not cut:
        return None
    found = [(c.version, c.attempt, False) for c in cut]
    current = state.steps.get(step)
    if current is not None and current.attempt > 0 and (attempt is None or attempt <= current.attempt):
        found.append((state.version, current.attempt if attempt is None else attempt, False))
    return found


def is_ambiguous(state: StateView, step: str) -> bool:
    """True when a result for ``step`` that names no attempt could belong to more than one."""
    candidates = _candidates(state, step, None)
    return candidates is not None and len(candidates) > 1


def _named_start(
    state: StateView, step: str, started_seq: int, plan_version: int | None, attempt: int | None
) -> tuple[int, int]:
    """The plan version and attempt of the attempt of ``step`` started at ``started_seq`` (UNKNOWN_ATTEMPT when no
    attempt a result can still belong to started there, or when the version or attempt the caller also gave
    say otherwise)."""
    issued_version(state, None)  # PLAN_NOT_CREATED first
    found = _started_at(state, step, started_seq)
    if found is None:
        raise error(
            "UNKNOWN_ATTEMPT",
            f"no attempt of step {step} that a result can still belong to started at seq {started_seq} (its result "
            f"is recorded already, or seq {started_seq} is not a start of {step}; plantrail log shows the starts)",
            step=step,
            started_seq=started_seq,
        )
    version, number = found
    if (plan_version is not None and plan_version != version) or (attempt is not None and attempt != number):
        said = f"attempt {attempt}" if attempt is not None and attempt != number else f"plan version {plan_version}"
        raise error(
            "UNKNOWN_ATTEMPT",
            f"seq {started_seq} started attempt {number} of step {step} in plan version {version}, not {said}",
            step=step,
            started_seq=started_seq,
            plan_version=version,
            attempt=number,
        )
    return version, number


def _started_at(state: StateView, step: str, seq: int) -> tuple[int, int] | None:
    """(plan version, attempt) of the attempt of ``step`` whose start is at ``seq``, among the attempts a result may
    still belong to: one a replan cut off in flight, or one since the step last restarted."""
    for cut in state.cut_off:
        if cut.step == step and cut.started_seq == seq:
            return cut.version, cut.attempt
    current = state.steps.get(step)
    if current is None or seq not in current.started:
        return None
    number = current.attempt - (len(current.started) - 1 - current.started.index(seq))
    return bisect_right(state.adoptions, seq) or state.version, number


def _attempt(state: StateView, step: str, version: int, attempt: int | None) -> int:
    """The attempt a result stamped with ``version`` refers to: the caller's, else the step's attempt in that
    version (for an earlier version: the attempt the replan cut off in flight)."""
    if attempt is not None:
        return attempt
    if version >= state.version:
        current = state.steps.get(step)
        return 0 if current is None else current.attempt
    for cut in state.cut_off:
        if cut.step == step and cut.version == version:
            return cut.attempt
    adopted = state.adopted  # the replan that superseded the previous version recorded the attempts it reset
    if version == state.version - 1 and adopted is not None and adopted.changes is not None:
        for change in (*adopted.changes.reset, *adopted.changes.removed):
            if change.step == step and change.attempt:
                return change.attempt
    return 1


def _as_recorded(state: StateView, data: Result, plan_version: int) -> Result:
    """A result that applies, as it is recorded: a report outside the step's scope makes it the blocked attempt
    ``scope_violation`` (:mod:`ledger.rules.approvals`); a late result is recorded as reported."""
    if data.report is None or data.ambiguous:
        return data
    step = state.steps.get(data.step)
    if step is None or step.status != "in_progress" or orphan_reason(state, plan_version, data.step, data.attempt):
        return data
    _result_text(data)  # a result without its evidence or reason is refused as such, never rewritten
    return recorded_result(state, data)


# --------------------------------------------------------------------------- start rules


def _start_rules(state: StateView, data: StepStarted, plan_version: int, now: str | None) -> None:
    _check_start(state, data, plan_version)
    if state.contract:  # only a v2 plan declares what the stop policy's rules 5-7 need
        _stop_allows(state, data.step, now)


def _check_start(state: StateView, data: StepStarted, plan_version: int) -> None:
    if plan_version < state.version:  # (the message is written only for a refusal)
        not_stale(state, plan_version, f"start {data.step}")
    if state.finished:
        require_open(state)
    step = state.steps.get(data.step)
    if step is None:
        step = require_step(state, data.step)
    if step.status != "pending" and step.status != "stale":
        raise transition(step, "pending", "in_progress", state.version)
    require_next_attempt(step, data.attempt, "starts")
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


# --------------------------------------------------------------------------- result rules

#: The step status each step transition leads to.
TRANSITION_TARGET: Final = {
    "step.started": "in_progress",
    "step.completed": "completed",
    "step.blocked": "blocked",
    "step.failed": "pending",
}


def _result_text(data: Result) -> None:
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


def _result_rules(state: StateView, data: Result, plan_version: int, now: str | None = None) -> OrphanWhy | None:
    _result_text(data)
    if data.ambiguous:  # kept on the orphan path, applied to no attempt: only when it could be more than one's
        check_id(data.step, "step")
        if data.attempt != 0 or plan_version != state.version or not is_ambiguous(state, data.step):
            raise error(
                "INVALID_TRANSITION",
                f"{data.TYPE} for {data.step} is marked ambiguous, but it could belong to one attempt only",
                step=data.step,
                plan_version=state.version,
            )
        return "AMBIGUOUS_ATTEMPT"
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
                target=TRANSITION_TARGET[data.TYPE],
            )
        return why
    if step.status != "in_progress":
        if why == "RUN_FINISHED":
            require_open(state)
        raise transition(step, "in_progress", TRANSITION_TARGET[data.TYPE], state.version)
    if why is None and (data.report is not None or (isinstance(data, StepBlocked) and data.violation is not None)):
        check_result_scope(state, data)
    if why is None and isinstance(data, StepCompleted):
        assert state.plan is not None
        spec = _contract(state.plan, data.step)
        terms = spec.terms
        if terms is not None and terms.checks:  # (the owner's name is written only for a step with checks)
            checks_met(terms.checks, data.report, f"step {data.step}", step=data.step)
        if data.artifacts or (terms is not None and terms.outputs):
            problem = produced_problems(spec, data.artifacts)
            if problem is not None:
                raise problem
    return why


# --------------------------------------------------------------------------- declarations

#: What every result refuses with (the result rules are one function).
_RESULT_REFUSALS: Final = (
    "PLAN_NOT_CREATED",
    "UNKNOWN_PLAN_VERSION",
    "RUN_FINISHED",
    "STEP_NOT_FOUND",
    "INVALID_ID",
    "INVALID_TRANSITION",
    "SCOPE_VIOLATION",
    "UNKNOWN_ATTEMPT",
    "USAGE",
)

START = declare(
    Start,
    build=_build_start,
    rules={StepStarted: _start_rules},
    superseded=f"{LATE_REFUSED}: start the step in the active version.",
    refusals=(
        "PLAN_NOT_CREATED",
        "UNKNOWN_PLAN_VERSION",
        "STALE_PLAN_VERSION",
        "RUN_FINISHED",
        "STEP_NOT_FOUND",
        "INVALID_TRANSITION",
        "STEP_ALREADY_ACTIVE",
        "STEP_NOT_READY",
        "AWAITING_REPAIR",
        "REPAIR_NOT_NEEDED",
        "PAUSED_SCOPE_VIOLATION",
        "PAUSED_APPROVAL_DENIED",
        "APPROVAL_REQUIRED",
        "WRITE_SCOPE_CONFLICT",
        "STOP_POLICY",
    ),
    cli={
        "start": Help(
            "Start STEP's next attempt (it must be pending, ready, and within max_in_progress).",
            examples=("plantrail start run.jsonl inspect",),
        )
    },
    tools={"step_start": "Start the next attempt of a step that can start now (ready, and within the focus limit)."},
)

COMPLETE = declare(
    Complete,
    build=_build_complete,
    rules={StepCompleted: _result_rules},
    fields={
        "evidence": Field(
            help="What shows the step is done (repeatable; - reads standard input; must not be blank).",
            metavar="TEXT",
            json=list[str] | str,
        ),
        "artifacts": Field(
            help="An artifact the step produced: a declared output's name, its digest (ALGO:HEX, e.g. sha256:...) "
            "and optionally where it is (repeatable; format v2).",
            metavar="NAME=DIGEST[@URI]",
            json=list[str],
        ),
        "report": REPORT,
    },
    trailing=("report", "artifacts"),
    superseded=LATE_RECORDED,
    refusals=(
        *_RESULT_REFUSALS,
        "EVIDENCE_REQUIRED",
        "CHECK_NOT_MET",
        "ARTIFACT_MISSING",
        "ARTIFACT_UNDECLARED",
        "DUPLICATE_ARTIFACT",
    ),
    cli={
        "complete": Help(
            "Complete STEP's attempt with evidence (text, a file, or standard input: real tool output of any size\n"
            "up to the event limit is recorded whole). Items from --evidence come first, then those from files.",
            "A step with typed checks completes only when the --report's observations satisfy every one of them\n"
            "(CHECK_NOT_MET otherwise: report the attempt as fail with the same record). A step that declares "
            "outputs\ncompletes only with an --artifact for each (ARTIFACT_MISSING).",
            examples=(
                'plantrail complete run.jsonl inspect --evidence "read src/cli.py, tests/test_cli.py, package.json"',
                "pytest -q 2>&1 | plantrail complete run.jsonl validate -e -",
                'plantrail complete run.jsonl reproduce -e "the new test fails with 200" --report observed.json',
                'plantrail complete run.jsonl edit -e "patched" --artifact patch=sha256:<64 hex>@out/fix.diff',
            ),
        )
    },
)

BLOCK = declare(
    Block,
    build=_build_block,
    rules={StepBlocked: _result_rules},
    fields={
        "reason": Field(help="Why the step cannot continue (- reads standard input).", metavar="TEXT"),
        "report": REPORT,
    },
    trailing=("report",),
    superseded=LATE_RECORDED,
    refusals=(*_RESULT_REFUSALS, "REASON_REQUIRED"),
    cli={
        "block": Help(
            "Block STEP's attempt with a reason (a replan is needed to go on).",
            examples=('plantrail block run.jsonl implement --reason "needs write access to src/auth"',),
        )
    },
)

FAIL = declare(
    Fail,
    build=_build_fail,
    rules={StepFailed: _result_rules},
    fields={"error": Field(help="What went wrong (- reads standard input).", metavar="TEXT"), "report": REPORT},
    trailing=("report",),
    superseded=LATE_RECORDED,
    refusals=(*_RESULT_REFUSALS, "REASON_REQUIRED"),
    cli={
        "fail": Help(
            "Record a failed attempt of STEP: back to pending while attempts remain, else blocked.",
            examples=(
                'plantrail fail run.jsonl validate --error "pytest exited 1: test_name_flag failed"',
                "plantrail fail run.jsonl validate --error-file pytest.log",
            ),
        )
    },
)


def _report(report: Report | Mapping[str, Any] | None) -> Report | None:
    """An evidence record, parsed from a JSON-like mapping if need be."""
    return parse_report(report) if isinstance(report, Mapping) else report


@START.method
def start(step: str, **envelope: Unpack[Envelope]) -> Start:
    """Start the next attempt of ``step`` (``plantrail start``)."""
    return Start(step=step, **fields(envelope))


@COMPLETE.method
def complete(
    step: str,
    evidence: str | Sequence[str],
    *,
    report: Report | Mapping[str, Any] | None = None,
    artifacts: Sequence[Artifact | str] = (),
    **envelope: Unpack[Attempted],
) -> Complete:
    """Complete ``step``'s attempt with evidence: one ``str`` is one item (``plantrail complete -e``).

    ``report`` is the attempt's evidence record (format v2; a mapping is parsed): a step with typed checks
    completes only when its observations satisfy every one (CHECK_NOT_MET). ``artifacts`` are the outputs
    it produced (format v2), each an :class:`~ledger.vocabulary.artifacts.Artifact` or ``NAME=DIGEST[@URI]``: a step
    that declares outputs completes only with every one of them (ARTIFACT_MISSING)."""
    return Complete(
        artifacts=tuple(a if isinstance(a, Artifact) else parse_artifact_option(a) for a in artifacts),
        step=step,
        evidence=evidence,
        report=_report(report),
        **fields(envelope),
    )


@BLOCK.method
def block(
    step: str, reason: str, *, report: Report | Mapping[str, Any] | None = None, **envelope: Unpack[Attempted]
) -> Block:
    """Block ``step``'s attempt with a reason (``plantrail block``)."""
    return Block(step=step, reason=reason, report=_report(report), **fields(envelope))


@FAIL.method
def fail(
    step: str, error: str, *, report: Report | Mapping[str, Any] | None = None, **envelope: Unpack[Attempted]
) -> Fail:
    """Record a failed attempt of ``step`` (``plantrail fail``)."""
    return Fail(step=step, error=error, report=_report(report), **fields(envelope))
