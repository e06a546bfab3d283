"""The rules of scope and approval on commands: the
approval commands and their events, the checks :mod:`ledger.rules.decide` runs before a start and a result, and the
rewriting of a result that left its scope into the blocked attempt it is recorded as.

- A result (complete, fail or block) whose evidence record reports changed paths outside the step's writes
  (else the task's, widened by the approvals granted for it in this plan version), or tools outside its
  ``allowed_tools``, is **recorded** as ``step.blocked`` with reason ``scope_violation: ...`` and the
  violation listed: the step does not complete and the run is paused (stop rule 2). A hand-made log holding
  that result as anything else is ``SCOPE_VIOLATION`` in ``verify``.
- A start is refused while the run is paused by a scope violation (PAUSED_SCOPE_VIOLATION) or a denied
  approval (PAUSED_APPROVAL_DENIED), while the step is waiting_approval (APPROVAL_REQUIRED), and while a step
  in progress has a write scope that overlaps the step's (WRITE_SCOPE_CONFLICT), whatever ``max_in_progress``
  allows.
- ``approval.requested`` needs a bounded question and known steps of the active version; a grant or denial
  needs a pending request bound to the active version.

Pure: judged against a :class:`~projections.state.StateView`, nothing read from a clock or a file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import msgspec
from msgspec.structs import force_setattr

from plantrail.ledger.rules.commands import LATE_REFUSED, Envelope, Field, Help, declare, fields, timeless
from plantrail.ledger.rules.guards import issued_version, require_open, require_step
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import (
    Actor,
    ApprovalDenied,
    ApprovalGranted,
    ApprovalRequested,
    Source,
    StepBlocked,
    StepCompleted,
    StepFailed,
)
from plantrail.ledger.vocabulary.items import as_items, as_text
from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec, check_id, did_you_mean
from plantrail.ledger.vocabulary.scope import ScopeViolation, as_written_violation, check_glob, violation
from plantrail.projections.approvals import (
    Approval,
    authority_reasons,
    conflict,
    effective_tools,
    effective_writes,
    needs_approval,
    pending_for,
)

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = [
    "DECIDE",
    "REQUEST_APPROVAL",
    "ApprovalEvent",
    "Decide",
    "RequestApproval",
    "approve",
    "authority_reasons",
    "build_approval",
    "check_approval",
    "check_result_scope",
    "check_start_authority",
    "deny",
    "recorded_result",
    "request_approval",
    "result_violation",
]

ApprovalEvent = ApprovalRequested | ApprovalGranted | ApprovalDenied


class RequestApproval(msgspec.Struct, frozen=True, kw_only=True):
    """Ask for an approval: its id, one bounded question, the steps it covers, the scope change it asks for
    (extra write globs and tools; empty: none, only the go-ahead)."""

    request: str
    question: str
    steps: Sequence[str]
    writes: Sequence[str] = ()
    tools: Sequence[str] = ()
    plan_version: int | None = None
    actor: Actor = "agent"
    source: Source | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        as_text(self.question, "question")
        force_setattr(self, "steps", as_items(self.steps, str, "steps"))
        force_setattr(self, "writes", as_items(self.writes, str, "writes"))
        force_setattr(self, "tools", as_items(self.tools, str, "tools"))


class Decide(msgspec.Struct, frozen=True, kw_only=True):
    """Grant (``granted`` True) or deny an approval request, saying who and why."""

    request: str
    granted: bool
    by: str = "user"
    why: str = ""
    plan_version: int | None = None
    actor: Actor = "user"
    source: Source | None = None
    key: str | None = None


def build_approval(command: RequestApproval | Decide) -> ApprovalEvent:
    """The event an approval command produces (no rule judged here: :func:`check_approval` does)."""
    if isinstance(command, RequestApproval):
        return ApprovalRequested(
            request=command.request,
            question=command.question.strip(),
            steps=tuple(dict.fromkeys(command.steps)),
            writes=tuple(dict.fromkeys(w.strip() for w in command.writes)),
            tools=tuple(dict.fromkeys(t.strip() for t in command.tools)),
        )
    cls = ApprovalGranted if command.granted else ApprovalDenied
    return cls(request=command.request, by=command.by.strip(), why=command.why.strip())


# --------------------------------------------------------------------------- approval events


def _spec(plan: PlanSpec, step: str) -> StepSpec | None:
    for spec in plan.steps:
        if spec.id == step:
            return spec
    return None


def _approval(state: StateView, request: str) -> Approval | None:
    authority = state.authority
    if authority is None:
        return None
    return next((a for a in authority.approvals if a.id == request), None)


def check_approval(state: StateView, data: ApprovalEvent, plan_version: int) -> None:
    """Judge an approval event against the state before it (the caller checked the plan and the version)."""
    assert state.plan is not None
    require_open(state)
    if plan_version != state.version:
        raise error(
            "STALE_PLAN_VERSION",
            f"{data.TYPE} was issued against plan version {plan_version}; the active version is {state.version}",
            plan_version=plan_version,
            expected=state.version,
            actual=plan_version,
        )
    check_id(data.request, "approval request id")
    known = _approval(state, data.request)
    if isinstance(data, ApprovalRequested):
        _check_request(state, data, known)
        return
    if not data.by.strip():
        raise error("REASON_REQUIRED", f"{data.TYPE} needs who decided")
    if known is None:
        ids = [] if state.authority is None else [a.id for a in state.authority.approvals]
        raise error(
            "APPROVAL_NOT_FOUND",
            f"no approval request {data.request}{did_you_mean(data.request, ids)}",
            request=data.request,
        )
    if known.status != "requested":
        raise error(
            "APPROVAL_DECIDED",
            f"approval request {data.request} was already {known.status} (seq {known.decided_seq})",
            request=data.request,
            current=known.status,
        )
    if known.plan_version != state.version:
        raise error(
            "APPROVAL_STALE",
            f"approval request {data.request} was asked for plan version {known.plan_version}; version "
            f"{state.version} superseded it (ask again)",
            request=data.request,
            plan_version=known.plan_version,
            expected=state.version,
        )


def _check_request(state: StateView, data: ApprovalRequested, known: Approval | None) -> None:
    assert state.plan is not None
    if known is not None:
        raise error(
            "DUPLICATE_APPROVAL_ID",
            f"approval request {data.request} already exists (seq {known.seq})",
            request=data.request,
        )
    if not data.question.strip():
        raise error("REASON_REQUIRED", "an approval request needs one bounded question")
    if not data.steps:
        raise error("USAGE", "an approval request covers at least one step")
    for step in data.steps:
        require_step(state, step)
    for i, glob in enumerate(data.writes):
        check_glob(glob, f"writes[{i}]")
    if not all(t.strip() for t in data.tools):
        raise error("USAGE", "a tool name in an approval request is blank")


# --------------------------------------------------------------------------- starts


def _paused(state: StateView, step: str) -> None:
    authority = state.authority
    assert authority is not None
    held = authority.violation
    if held is not None:
        raise error(
            "PAUSED_SCOPE_VIOLATION",
            f"the run is paused: step {held.step}'s attempt {held.attempt} left its scope ({_shown(held)}); only an "
            "approval that widens the scope, or a replan, ends the pause",
            step=step,
            plan_version=state.version,
            seq=held.seq,
        )
    if authority.denied:
        raise error(
            "PAUSED_APPROVAL_DENIED",
            f"the run is paused: an approval for {', '.join(authority.denied)} was denied; a replan that removes "
            "or changes those steps ends the pause",
            step=step,
            plan_version=state.version,
            denied=list(authority.denied),
        )


def _shown(held: Any) -> str:
    parts = []
    if held.paths:
        parts.append(f"paths {', '.join(held.paths)}")
    if held.tools:
        parts.append(f"tools {', '.join(held.tools)}")
    return "; ".join(parts)


def check_start_authority(state: StateView, spec: StepSpec) -> None:
    """Refuse a start the run's authority forbids (see the module's docstring); nothing to judge, and no cost,
    for a plan that declares no scope and has no approvals."""
    plan = state.plan
    assert plan is not None
    if state.authority is None and spec.scope is None and plan.scope is None:
        return
    if state.authority is not None:
        _paused(state, spec.id)
    why = needs_approval(spec, state.authority, state.version)
    if why is not None:
        raise error(
            "APPROVAL_REQUIRED",
            f"step {spec.id} is waiting_approval ({why.replace('_', ' ')}): no granted approval for plan version "
            f"{state.version} covers it",
            step=spec.id,
            plan_version=state.version,
            because=why,
            requests=pending_for(state, spec.id),
        )
    found = conflict(state, plan, spec)
    if found is not None:
        other, theirs, mine = found
        raise error(
            "WRITE_SCOPE_CONFLICT",
            f"step {spec.id} writes {mine}, which overlaps {theirs} of step {other} (in progress); two steps whose "
            "write scopes overlap never run at once",
            step=spec.id,
            plan_version=state.version,
            other=other,
        )


# --------------------------------------------------------------------------- results

Result = StepCompleted | StepBlocked | StepFailed
#: A judgement of reported paths and tools against writes and tools (:func:`violation`).
Judge = Callable[[Sequence[str] | None, Sequence[str] | None, Sequence[str], Sequence[str]], ScopeViolation | None]


def result_violation(state: StateView, data: Result, judge: Judge = violation) -> ScopeViolation | None:
    """The scope violation a result's evidence record reports against the step's scope in the active version
    (None: it stayed inside, reported nothing, or the step declares no scope), as ``judge`` finds it."""
    report = data.report
    plan = state.plan
    if report is None or plan is None or not (report.changed_paths or report.tools):
        return None
    spec = _spec(plan, data.step)
    if spec is None or (spec.scope is None and plan.scope is None):
        return None
    writes = effective_writes(plan, spec, state.authority, state.version)
    tools = effective_tools(spec, state.authority, state.version)
    return judge(writes, tools, report.changed_paths, report.tools)


def _describe(found: ScopeViolation) -> str:
    parts = []
    if found.paths:
        parts.append(f"changed paths outside the step's writes: {', '.join(found.paths)}")
    if found.tools:
        parts.append(f"tools outside allowed_tools: {', '.join(found.tools)}")
    return "scope_violation: " + "; ".join(parts)


def recorded_result(state: StateView, data: Result) -> Result:
    """The event a result is recorded as: itself, or (when its report left the step's scope) the blocked
    attempt ``scope_violation`` with what it reported kept in the reason. The caller checked that the result
    applies to the active version and attempt (a late result is recorded as reported)."""
    found = result_violation(state, data)
    if found is None:
        return data
    if isinstance(data, StepCompleted):
        said = "reported complete: " + "; ".join(data.evidence)
    elif isinstance(data, StepFailed):
        said = f"reported fail: {data.error}"
    else:
        said = f"reported block: {data.reason}"
    reason = f"{_describe(found)} ({said})"
    return StepBlocked(step=data.step, attempt=data.attempt, reason=reason, report=data.report, violation=found)


def check_result_scope(state: StateView, data: Result) -> None:
    """Refuse (SCOPE_VIOLATION) a result that applies but is not recorded as the scope violation its report
    shows, or that claims a violation the rules do not find (``verify`` replays this on hand-made logs)."""
    found = result_violation(state, data)
    claimed = data.violation if isinstance(data, StepBlocked) else None
    if claimed is not None and data.report is None:
        found = None  # a claimed violation needs the report it comes from
    if found == claimed:
        return
    if claimed is not None and claimed == result_violation(state, data, as_written_violation):
        return  # recorded by an earlier plantrail, which compared the paths as written
    shown = _describe(found) if found is not None else "no scope violation"
    raise error(
        "SCOPE_VIOLATION",
        f"{data.TYPE} for {data.step}: the rules find {shown}; a result outside its scope is recorded as "
        "step.blocked with the violation",
        step=data.step,
        plan_version=state.version,
    )


# --------------------------------------------------------------------------- declarations


def _build(state: StateView, command: RequestApproval | Decide) -> tuple[ApprovalEvent, int]:
    version = issued_version(state, command.plan_version)
    return build_approval(command), version


#: What every approval command refuses with.
_REFUSALS = ("PLAN_NOT_CREATED", "UNKNOWN_PLAN_VERSION", "STALE_PLAN_VERSION", "RUN_FINISHED", "INVALID_ID")

REQUEST_APPROVAL = declare(
    RequestApproval,
    build=_build,
    rules={ApprovalRequested: timeless(check_approval)},
    fields={
        "question": Field(help="The one bounded question the approver answers.", metavar="TEXT"),
        "steps": Field(help="The steps the approval covers, comma-separated.", metavar="IDS"),
        "writes": Field(help="A write glob the approval adds to their scope (repeatable).", metavar="GLOB"),
        "tools": Field(help="A tool the approval allows them (repeatable).", metavar="NAME"),
    },
    superseded=f"{LATE_REFUSED}.",
    refusals=(*_REFUSALS, "DUPLICATE_APPROVAL_ID", "REASON_REQUIRED", "STEP_NOT_FOUND", "USAGE"),
    cli={
        "request-approval": Help(
            "Ask for approval REQUEST (an id): a bounded question about some steps, with the scope change asked for.",
            "The request is bound to the active plan version: a replan makes it stale (ask again). A step with\n"
            "requires_approval, or whose scope a replan widened, waits until a granted approval covers it; a "
            "grant's\n--writes and --tool widen the steps' scope for that version (ending a scope violation's pause "
            "they cover).",
            examples=(
                "plantrail request-approval run.jsonl lockfile --steps implement --writes package-lock.json \\\n"
                '    --question "May implement update package-lock.json?"',
            ),
        )
    },
    tools={
        "approval_request": "Ask a person one bounded question about some steps (and extra writes or tools); "
        "answers at once with the request id: approval_wait for the decision."
    },
)

DECIDE = declare(
    Decide,
    build=_build,
    rules={ApprovalGranted: timeless(check_approval), ApprovalDenied: timeless(check_approval)},
    fields={"by": Field(help="Who decided.", metavar="WHO"), "why": Field(help="Why.", metavar="TEXT")},
    superseded=f"{LATE_REFUSED}.",
    refusals=(*_REFUSALS, "REASON_REQUIRED", "APPROVAL_NOT_FOUND", "APPROVAL_DECIDED", "APPROVAL_STALE"),
    cli={
        "approve": Help(
            "Grant approval REQUEST: the steps it covers may start in the plan version it was asked for, with the "
            "scope change it asked for.",
            examples=("plantrail approve run.jsonl lockfile --by ana --why ok",),
        ),
        "deny": Help(
            "Deny approval REQUEST: the run pauses until a replan removes or changes the steps it covers.",
            examples=('plantrail deny run.jsonl lockfile --by ana --why "no new dependencies"',),
        ),
    },
)


@REQUEST_APPROVAL.method
def request_approval(
    request: str,
    question: str,
    steps: str | Sequence[str],
    *,
    writes: str | Sequence[str] = (),
    tools: str | Sequence[str] = (),
    **envelope: Unpack[Envelope],
) -> RequestApproval:
    """Ask for approval ``request``: one bounded ``question`` about ``steps`` (one ``str`` is one step), with
    the scope change asked for (extra ``writes`` globs and ``tools``), bound to the active plan version
    (``plantrail request-approval``)."""
    return RequestApproval(
        request=request,
        question=question,
        steps=as_items(steps, str, "steps"),
        writes=as_items(writes, str, "writes"),
        tools=as_items(tools, str, "tools"),
        **fields(envelope),
    )


@DECIDE.method
def approve(request: str, *, by: str = "user", why: str = "", **envelope: Unpack[Envelope]) -> Decide:
    """Grant approval ``request`` (``plantrail approve``): the steps it covers may start, with its scope
    change, in the plan version it was asked for."""
    return Decide(request=request, granted=True, by=by, why=why, **fields(envelope))


@DECIDE.method
def deny(request: str, *, by: str = "user", why: str = "", **envelope: Unpack[Envelope]) -> Decide:
    """Deny approval ``request`` (``plantrail deny``): the run pauses until a replan removes or changes the
    steps it covers."""
    return Decide(request=request, granted=False, by=by, why=why, **fields(envelope))
