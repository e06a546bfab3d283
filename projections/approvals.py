"""What a run is authorised to do beyond its plan: approvals, a scope violation's pause, the steps a replan
widened and the steps a denial covers. Pure: the values the
reducer keeps in ``PlanState.authority`` (None until a plan uses any of it), the transitions
:mod:`projections.state` applies, and the queries :mod:`plantrail.ledger.rules.approvals` and the views ask.

- A step with ``requires_approval``, or whose scope a replan widened, is *waiting_approval* until a granted
  approval bound to the active plan version covers it (lists it in its ``steps``).
- A granted approval also widens the scope of the steps it covers by its ``writes`` and ``tools`` for that
  version: a step blocked by a scope violation that the widened scope now holds returns to pending, and the
  run's pause ends.
- A denied approval pauses the run until a replan removes or changes the denied steps.
- A replan ends a scope violation's pause; it never widens a scope by itself: each step of the new version
  whose writes or tools are not inside what the previous version authorised (its scope and its grants) is
  widened, and waits for an approval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec, steps_by_id
from plantrail.ledger.vocabulary.scope import covered, overlaps, violation

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = [
    "Approval",
    "ApprovalStatus",
    "Authority",
    "Violation",
    "approval_decided",
    "approval_requested",
    "authority_reasons",
    "conflict",
    "effective_tools",
    "effective_writes",
    "needs_approval",
    "pending_for",
    "replanned",
    "violation_recorded",
]

ApprovalStatus = Literal["requested", "granted", "denied"]


class Approval(NamedTuple):
    """One approval request and its decision: the bounded question, the steps it covers, the scope change it
    asks for (extra write globs and tools), the plan version it is bound to, who decided and why."""

    id: str
    status: ApprovalStatus
    steps: tuple[str, ...]
    plan_version: int
    question: str
    writes: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    seq: int = 0
    by: str | None = None
    why: str | None = None
    decided_seq: int | None = None


class Violation(NamedTuple):
    """The scope violation that paused the run: the step and attempt, the paths and tools outside its scope."""

    step: str
    attempt: int
    paths: tuple[str, ...]
    tools: tuple[str, ...]
    seq: int


class Authority(NamedTuple):
    """Approvals (every request, oldest first), the violation pausing the run, and the active version's
    widened and denied steps."""

    approvals: tuple[Approval, ...] = ()
    violation: Violation | None = None
    widened: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()


NO_AUTHORITY: Final = Authority()


def _grants(authority: Authority | None, version: int, step: str) -> list[Approval]:
    if authority is None:
        return []
    return [a for a in authority.approvals if a.status == "granted" and a.plan_version == version and step in a.steps]


def effective_writes(
    plan: PlanSpec, spec: StepSpec, authority: Authority | None, version: int
) -> tuple[str, ...] | None:
    """The globs ``spec`` may write in ``version``: its ``writes`` (else the task's), widened by its grants;
    None when neither the step nor the task declares any (unrestricted)."""
    scope = spec.scope
    writes = scope.writes if scope is not None and scope.writes is not None else None
    if writes is None and plan.scope is not None:
        writes = plan.scope.writes
    if writes is None:
        return None
    extra = [g for a in _grants(authority, version, spec.id) for g in a.writes]
    return tuple(dict.fromkeys((*writes, *extra))) if extra else writes


def effective_tools(spec: StepSpec, authority: Authority | None, version: int) -> tuple[str, ...] | None:
    """The tools ``spec`` may use in ``version`` (its ``allowed_tools`` and its grants'); None: any."""
    scope = spec.scope
    if scope is None or scope.allowed_tools is None:
        return None
    extra = [t for a in _grants(authority, version, spec.id) for t in a.tools]
    return tuple(dict.fromkeys((*scope.allowed_tools, *extra))) if extra else scope.allowed_tools


def needs_approval(spec: StepSpec, authority: Authority | None, version: int, *, effect: bool = False) -> str | None:
    """Why ``spec`` is waiting_approval in ``version`` (``requires_approval`` or ``widened``); None: it is not.
    With ``effect``: why a side effect it requests needs an approval first (``effects_require_approval``; the
    same gate: a granted approval for ``version`` that covers the step, :mod:`ledger.rules.effects`)."""
    if effect:
        if spec.scope is None or not spec.scope.effects_require_approval or _grants(authority, version, spec.id):
            return None
        return "effects_require_approval"
    required = spec.scope is not None and spec.scope.requires_approval
    widened = authority is not None and spec.id in authority.widened
    if not (required or widened) or _grants(authority, version, spec.id):
        return None
    return "requires_approval" if required else "widened"


# --------------------------------------------------------------------------- transitions


def approval_requested(authority: Authority | None, request: Approval) -> Authority:
    """The authority with a new request."""
    base = authority or NO_AUTHORITY
    return base._replace(approvals=(*base.approvals, request))


def approval_decided(
    authority: Authority,
    request: str,
    status: ApprovalStatus,
    by: str,
    why: str,
    seq: int,
    plan: PlanSpec,
    version: int,
) -> tuple[Authority, str | None]:
    """The authority after a grant or a denial of ``request``, and the step a grant releases from a scope
    violation's block (None: none)."""
    decided = None
    approvals = []
    for a in authority.approvals:
        if a.id == request and a.status == "requested":
            a = decided = a._replace(status=status, by=by, why=why, decided_seq=seq)
        approvals.append(a)
    after = authority._replace(approvals=tuple(approvals))
    if decided is None:
        return authority, None
    if status == "denied":
        denied = tuple(dict.fromkeys((*after.denied, *decided.steps)))
        return after._replace(denied=denied), None
    held = after.violation
    if held is None or held.step not in decided.steps:
        return after, None
    spec = steps_by_id(plan).get(held.step)
    if spec is None:
        return after, None
    writes = effective_writes(plan, spec, after, version)
    still = violation(writes, effective_tools(spec, after, version), held.paths, held.tools)
    if still is not None:
        return after, None
    return after._replace(violation=None), held.step


def violation_recorded(
    authority: Authority | None, step: str, attempt: int, paths: Sequence[str], tools: Sequence[str], seq: int
) -> Authority:
    """The authority with the run paused by a scope violation of ``step``."""
    base = authority or NO_AUTHORITY
    return base._replace(violation=Violation(step, attempt, tuple(paths), tuple(tools), seq))


def _widened(old_plan: PlanSpec, authority: Authority | None, version: int, new_plan: PlanSpec) -> list[str]:
    """The steps of ``new_plan`` whose writes or tools are not inside what ``version`` of ``old_plan``
    authorised (an added step: the old task scope)."""
    old_specs = {s.id: s for s in old_plan.steps}
    result = []
    for spec in new_plan.steps:
        old = old_specs.get(spec.id)
        if old is None:
            was_writes = None if old_plan.scope is None else old_plan.scope.writes
            was_tools: tuple[str, ...] | None = None
        else:
            was_writes = effective_writes(old_plan, old, authority, version)
            was_tools = effective_tools(old, authority, version)
        writes = effective_writes(new_plan, spec, None, version + 1)
        tools = effective_tools(spec, None, version + 1)
        wider_writes = was_writes is not None and (writes is None or bool(covered(writes, was_writes)))
        wider_tools = was_tools is not None and (tools is None or any(t not in was_tools for t in tools))
        if wider_writes or wider_tools:
            result.append(spec.id)
    return result


def _scoped(plan: PlanSpec) -> bool:
    """Whether a plan declares a task scope or any step scope."""
    return plan.scope is not None or any(s.terms is not None and s.terms.scope is not None for s in plan.steps)


def replanned(
    authority: Authority | None,
    old_plan: PlanSpec,
    version: int,
    new_plan: PlanSpec,
    completed: Mapping[str, Any],
) -> Authority | None:
    """The authority of the version a replan adopts: no violation pause; the denied steps the new version keeps
    unchanged; the steps it widens (and those still waiting since an earlier widening), unless completed."""
    if authority is None and not _scoped(old_plan) and not _scoped(new_plan):
        return None  # no scope before or after: nothing to authorise (the common case costs nothing)
    new_specs = {s.id: s for s in new_plan.steps}
    old_specs = {s.id: s for s in old_plan.steps}
    base = authority or NO_AUTHORITY
    denied = tuple(s for s in base.denied if s in new_specs and new_specs[s] == old_specs.get(s))
    still = [s for s in base.widened if s in new_specs and not _grants(authority, version, s)]
    widened = [s for s in dict.fromkeys((*still, *_widened(old_plan, authority, version, new_plan)))]
    widened = [s for s in widened if getattr(completed.get(s), "status", None) != "completed"]
    after = Authority(base.approvals, None, tuple(widened), denied)
    return None if after == NO_AUTHORITY else after


# --------------------------------------------------------------------------- queries


def conflict(state: StateView, plan: PlanSpec, spec: StepSpec) -> tuple[str, str, str] | None:
    """The first step in progress whose write scope overlaps ``spec``'s: (step, its glob, this glob)."""
    mine = effective_writes(plan, spec, state.authority, state.version)
    if not mine:
        return None
    for other in state.steps.values():
        if other.status != "in_progress" or other.id == spec.id:
            continue
        other_spec = steps_by_id(plan).get(other.id)
        theirs = None if other_spec is None else effective_writes(plan, other_spec, state.authority, state.version)
        for a in mine:
            for b in theirs or ():
                if overlaps(a, b):
                    return other.id, b, a
    return None


def pending_for(state: StateView, step: str) -> list[str]:
    authority = state.authority
    if authority is None:
        return []
    return [
        a.id
        for a in authority.approvals
        if a.status == "requested" and a.plan_version == state.version and step in a.steps
    ]


def authority_reasons(state: StateView, spec: StepSpec) -> list[dict[str, Any]]:
    """The wait reasons of the run's authority for a pending step (see :mod:`projections.views`): the pause
    (``scope_violation`` / ``approval_denied``), ``waiting_approval`` and ``write_conflict``."""
    plan = state.plan
    if plan is None or (state.authority is None and spec.scope is None and plan.scope is None):
        return []
    reasons: list[dict[str, Any]] = []
    authority = state.authority
    if authority is not None and authority.violation is not None:
        held = authority.violation
        reasons.append(
            {"code": "scope_violation", "step": held.step, "paths": list(held.paths), "tools": list(held.tools)}
        )
    if authority is not None and authority.denied:
        reasons.append({"code": "approval_denied", "steps": list(authority.denied)})
    why = needs_approval(spec, authority, state.version)
    if why is not None:
        reasons.append({"code": "waiting_approval", "because": why, "requests": pending_for(state, spec.id)})
    found = conflict(state, plan, spec)
    if found is not None:
        reasons.append({"code": "write_conflict", "step": found[0], "glob": found[1]})
    return reasons
