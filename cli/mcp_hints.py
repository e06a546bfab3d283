"""What the plan server tells a model to do next: after a refusal, and after a result that went to the orphan
path.

A refusal reads ``error[CODE]: message. Next: what to do``, where what to do is said in the model's own terms
(the tools, their parameters, the steps that can start now, the current plan version), computed from the run's
state as it stands after the refusal; never a command line flag or an exit code. :func:`next_step` has a text
for every code :data:`HINTED` lists (a test holds it to the codes the tools can raise); any other code
gets the general advice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.errors import PlantrailError
    from plantrail.projections.model import PlanState

__all__ = ["GENERAL", "HINTED", "late_note", "next_step", "refusal_text"]

#: The advice for a code with no text of its own.
GENERAL: Final = "read plan_status and correct the call"

Hint = Callable[["PlantrailError", "PlanState | None"], str]


def refusal_text(exc: PlantrailError, state: PlanState | None) -> str:
    """The tool error's text: the code, the message, and what to do next."""
    return f"error[{exc.code}]: {exc.message.rstrip('.')}. Next: {next_step(exc, state)}."


def next_step(exc: PlantrailError, state: PlanState | None) -> str:
    """What to do after ``exc``, as the run stands in ``state`` (None: the run has no log, or it cannot be
    read)."""
    hint = _HINTS.get(exc.code)
    return GENERAL if hint is None else hint(exc, state)


def late_note(answer: Mapping[str, Any], state: PlanState) -> str | None:
    """What a model needs to know of a result the log kept on the orphan path (None for any other answer)."""
    why = answer.get("orphan")
    if not why:
        return None
    return (
        f"this result went to the orphan path ({why}): it is kept but changed nothing in the current plan "
        f"version {state.version}. {_can_start(state).capitalize()}; step_adopt takes a late completion into the "
        "current version when its step is unchanged"
    )


# --------------------------------------------------------------------------- what the state says


def _field(exc: PlantrailError, name: str, default: Any = None) -> Any:
    return exc.fields.get(name, default)


def _names(items: Any) -> str:
    listed = [str(i) for i in items or ()]
    return ", ".join(listed) if listed else "none"


def _can_start(state: PlanState | None) -> str:
    """Which steps can start now, or why none can."""
    if state is None or state.plan is None:
        return "create the plan with plan_set (goal, criteria, steps)"
    from plantrail.projections.views import in_doubt, startable_steps

    if state.finished:
        return f"the run finished {state.outcome}; nothing can start"
    can = startable_steps(state)
    if can:
        return f"steps that can start now: {_names(can)}"
    active = [s.id for s in in_doubt(state)]
    if active:
        return f"no step can start now; finish a step in progress first ({_names(active)}) with step_update"
    return "no step can start now; plan_status says why each waits (replan with plan_set if nothing can go on)"


def _version(state: PlanState | None) -> str:
    return "unknown" if state is None else str(state.version)


def _step_status(state: PlanState | None, step: Any) -> str | None:
    found = None if state is None or not isinstance(step, str) else state.steps.get(step)
    return None if found is None else found.status


# --------------------------------------------------------------------------- the texts, by code


def _not_ready(exc: PlantrailError, state: PlanState | None) -> str:
    return f"{_field(exc, 'step')} waits for {_names(_field(exc, 'waiting'))}; {_can_start(state)}"


def _focus(exc: PlantrailError, state: PlanState | None) -> str:
    return (
        f"finish a step in progress ({_names(_field(exc, 'active'))}) with step_update before starting another, "
        "or raise max_in_progress with plan_set"
    )


def _stale_version(exc: PlantrailError, state: PlanState | None) -> str:
    if "never replanned" in exc.message:
        return f"the plan has one version so far ({_version(state)}); plan_why answers once it has been replanned"
    return f"the current plan version is {_version(state)}: pass plan_version {_version(state)}, or leave it out"


def _transition(exc: PlantrailError, state: PlanState | None) -> str:
    step = _field(exc, "step")
    status = _step_status(state, step)
    if status == "pending":
        return f"step {step} is pending: step_start it first; {_can_start(state)}"
    if status == "in_progress":
        return f"step {step} is in progress: report it with step_update (complete, fail, block)"
    if status == "completed":
        return f"step {step} is already completed; {_can_start(state)}"
    if status == "blocked":
        return f"step {step} is blocked: replan with plan_set (reason, why) to go on"
    return _can_start(state)


def _missing(name: str, what: str) -> Hint:
    def hint(exc: PlantrailError, state: PlanState | None) -> str:
        return f"pass {name}: {what}"

    return hint


def _invalid_argument(exc: PlantrailError, state: PlanState | None) -> str:
    name = _field(exc, "parameter", "the argument")
    takes = _field(exc, "takes")
    if takes is not None:
        return f"leave out {name}; the arguments taken are {_names(takes)}"
    expected = _field(exc, "expected")
    return f"pass {name} as {expected}" if expected else f"pass {name}"


def _draft(exc: PlantrailError, state: PlanState | None) -> str:
    path = _field(exc, "path")
    where = f"fix {path}" if path else "fix the plan"
    return f"{where} and call again (each step needs id, title, completion_evidence; plan_brief gives the terms shape)"


def _blank(exc: PlantrailError, state: PlanState | None) -> str:
    path = _field(exc, "path", "the field")
    return f"give {path} a non-blank text"


def _finished(exc: PlantrailError, state: PlanState | None) -> str:
    outcome = "" if state is None or state.outcome is None else f" {state.outcome}"
    return f"the run finished{outcome} and records nothing more: start a new run (plan_set with a new run id)"


def _goal(exc: PlantrailError, state: PlanState | None) -> str:
    goal = "unchanged" if state is None else repr(state.goal)
    return f"a replan keeps the goal: pass goal {goal}"


def _usage(exc: PlantrailError, state: PlanState | None) -> str:
    message = exc.message
    if "replan needs reason" in message:
        return f"the run has a plan (version {_version(state)}): to replan pass reason (a reason code) and why"
    if "needs its target" in message:
        return "pass target: what the side effect acts on"
    if "no run" in message:
        return "pass run: any id you choose (letters, digits, ._:-), the same on every call"
    return "correct the call as the message says (the tool's schema lists what each argument takes)"


def _not_found(kind: str) -> Hint:
    def hint(exc: PlantrailError, state: PlanState | None) -> str:
        if state is None or state.plan is None:
            return _can_start(state)
        items = state.plan.steps if kind == "step" else state.plan.acceptance_criteria
        return f"the {kind}s of version {state.version} are: {_names(i.id for i in items)}"

    return hint


def _log_not_found(exc: PlantrailError, state: PlanState | None) -> str:
    return "the run has no plan yet: create it with plan_set (goal, criteria, steps)"


def _plan_exists(exc: PlantrailError, state: PlanState | None) -> str:
    return "the run has a plan already: plan_set with reason and why replans it"


def _stale_seq(exc: PlantrailError, state: PlanState | None) -> str:
    last = "its last seq" if state is None else str(state.last_seq)
    return f"the run changed: the log now ends at {last}; read plan_status, then call again with expected_seq {last}"


def _stale_attempt(exc: PlantrailError, state: PlanState | None) -> str:
    step = _field(exc, "step")
    found = None if state is None or not isinstance(step, str) else state.steps.get(step)
    now = "" if found is None else f" (its attempt now is {found.attempt}, {found.status})"
    return f"that attempt of {step} is over{now}; leave attempt and started_seq out to name its open attempt"


def _approval_required(exc: PlantrailError, state: PlanState | None) -> str:
    return f"ask with approval_request for step {_field(exc, 'step')}, then approval_wait for the answer"


def _lease(exc: PlantrailError, state: PlanState | None) -> str:
    return "pass lease_s: how many seconds the lease runs"


def _artifacts(exc: PlantrailError, state: PlanState | None) -> str:
    return "pass artifacts, one NAME=ALGO:HEX for each output the step declares, each once"


def _criteria_unverified(exc: PlantrailError, state: PlanState | None) -> str:
    steps, criteria = _field(exc, "steps"), _field(exc, "criteria")
    todo = [f"complete the steps {_names(steps)}"] if steps else []
    todo += [f"pass the criteria {_names(criteria)} with criterion_verdict"] if criteria else []
    first = " and ".join(todo) or "add acceptance criteria with plan_set"
    return f"{first} first, or finish with another outcome (paused, partial, failed, budget_exhausted, cancelled)"


def _reason_code(exc: PlantrailError, state: PlanState | None) -> str:
    from typing import get_args

    from plantrail.ledger.vocabulary.events import ReasonCode

    return f"reason is one of {', '.join(get_args(ReasonCode))}"


def _cause(exc: PlantrailError, state: PlanState | None) -> str:
    last = "the last seq" if state is None else str(state.last_seq)
    return f"causes are seqs of events in this run (1 to {last}), as the acknowledgements gave them"


def _ids(kind: str) -> Hint:
    def hint(exc: PlantrailError, state: PlanState | None) -> str:
        return f"choose another {kind} id"

    return hint


def _touched(exc: PlantrailError, state: PlanState | None) -> str:
    return f"work has started on version {_version(state)}: add steps with plan_set (reason, why) instead"


def _approvals(state: PlanState | None) -> str:
    authority = None if state is None else state.authority
    return _names(a.id for a in (() if authority is None else authority.approvals))


def _approval_not_found(exc: PlantrailError, state: PlanState | None) -> str:
    return f"the approval requests of this run are: {_approvals(state)}"


def _approval_decided(exc: PlantrailError, state: PlanState | None) -> str:
    return "it is decided already: approval_wait gives its answer"


def _approval_stale(exc: PlantrailError, state: PlanState | None) -> str:
    return f"it belongs to an older plan version: ask again with approval_request (version {_version(state)})"


def _paused_denied(exc: PlantrailError, state: PlanState | None) -> str:
    return "an approval was denied: replan with plan_set to remove or change the steps it covers"


def _paused_scope(exc: PlantrailError, state: PlanState | None) -> str:
    return "a result left its step's scope: ask with approval_request for that scope, or replan with plan_set"


def _write_conflict(exc: PlantrailError, state: PlanState | None) -> str:
    return f"a step in progress writes the same paths: finish it first; {_can_start(state)}"


def _repair(exc: PlantrailError, state: PlanState | None) -> str:
    return _can_start(state)


def _stop(exc: PlantrailError, state: PlanState | None) -> str:
    return "the stop policy forbids new work: finish the run with run_finish, or replan with a new budget"


def _check_not_met(exc: PlantrailError, state: PlanState | None) -> str:
    return "the report does not meet the checks: report the attempt with action fail and the same report"


def _scope_violation(exc: PlantrailError, state: PlanState | None) -> str:
    return "keep the report within the step's writes and allowed_tools, or ask with approval_request"


def _unknown_attempt(exc: PlantrailError, state: PlanState | None) -> str:
    return "started_seq is the seq step_start answered; leave it out to name the step's open attempt"


def _partial(exc: PlantrailError, state: PlanState | None) -> str:
    return (
        "the plan does not allow partial: finish failed or budget_exhausted, or replan (plan_set) with "
        "terms.policy.allowed_partial true"
    )


def _contradicts(exc: PlantrailError, state: PlanState | None) -> str:
    said = _field(exc, "expected")
    return f"finish with the outcome the stop policy says{f' ({said})' if said else ''}"


def _coverage(exc: PlantrailError, state: PlanState | None) -> str:
    return "cover each criterion with some step's covers, then call again"


def _effect(what: str) -> Hint:
    def hint(exc: PlantrailError, state: PlanState | None) -> str:
        return what

    return hint


def _adopt(exc: PlantrailError, state: PlanState | None) -> str:
    if state is None:
        return "plan_status lists the late results and whether each was adopted"
    open_ = [o.seq for o in state.orphans if not getattr(o, "adopted", None)]
    return f"late results not adopted yet (orphan_seq): {_names(open_)}; plan_status lists them"


def _conflict(exc: PlantrailError, state: PlanState | None) -> str:
    return "that idempotency_key was used for another call: use a new key for a new call"


def _damaged(exc: PlantrailError, state: PlanState | None) -> str:
    return "the run's log cannot be used as it is: stop, and tell the user (nothing was recorded)"


_HINTS: Final[Mapping[str, Hint]] = {
    "STEP_NOT_READY": _not_ready,
    "STEP_ALREADY_ACTIVE": _focus,
    "STALE_PLAN_VERSION": _stale_version,
    "UNKNOWN_PLAN_VERSION": _stale_version,
    "INVALID_TRANSITION": _transition,
    "INVALID_ARGUMENT": _invalid_argument,
    "EVIDENCE_REQUIRED": _missing("evidence", "what shows the step is done (not blank)"),
    "REASON_REQUIRED": _missing("reason", "why, in words (not blank)"),
    "BLANK_FIELD": _blank,
    "DRAFT_INVALID": _draft,
    "PATCH_INVALID": _draft,
    "INVALID_ID": _effect("an id is letters, digits and ._:- (at most 128, no spaces)"),
    "RUN_FINISHED": _finished,
    "GOAL_CHANGED": _goal,
    "USAGE": _usage,
    "STEP_NOT_FOUND": _not_found("step"),
    "CRITERION_NOT_FOUND": _not_found("criterion"),
    "PLAN_NOT_CREATED": _log_not_found,
    "LOG_NOT_FOUND": _log_not_found,
    "PLAN_ALREADY_CREATED": _plan_exists,
    "LOG_EXISTS": _plan_exists,
    "STALE_EXPECTED_SEQ": _stale_seq,
    "STALE_ATTEMPT": _stale_attempt,
    "UNKNOWN_ATTEMPT": _unknown_attempt,
    "APPROVAL_REQUIRED": _approval_required,
    "LEASE_REQUIRED": _lease,
    "ARTIFACT_MISSING": _artifacts,
    "ARTIFACT_UNDECLARED": _artifacts,
    "DUPLICATE_ARTIFACT": _artifacts,
    "CRITERIA_UNVERIFIED": _criteria_unverified,
    "UNKNOWN_REASON_CODE": _reason_code,
    "UNKNOWN_CAUSE": _cause,
    "STEP_EXISTS": _ids("step"),
    "CRITERION_EXISTS": _ids("criterion"),
    "DUPLICATE_APPROVAL_ID": _ids("request"),
    "VERSION_TOUCHED": _touched,
    "APPROVAL_NOT_FOUND": _approval_not_found,
    "APPROVAL_DECIDED": _approval_decided,
    "APPROVAL_STALE": _approval_stale,
    "PAUSED_APPROVAL_DENIED": _paused_denied,
    "PAUSED_SCOPE_VIOLATION": _paused_scope,
    "WRITE_SCOPE_CONFLICT": _write_conflict,
    "AWAITING_REPAIR": _repair,
    "REPAIR_NOT_NEEDED": _repair,
    "STOP_POLICY": _stop,
    "CHECK_NOT_MET": _check_not_met,
    "SCOPE_VIOLATION": _scope_violation,
    "PARTIAL_NOT_ALLOWED": _partial,
    "OUTCOME_CONTRADICTS_STOP": _contradicts,
    "COVERAGE_GAP": _coverage,
    "EFFECT_DUPLICATE": _effect("that effect is recorded already: plan_status shows it"),
    "EFFECT_KEY_CONFLICT": _effect("that key names another effect: choose another key"),
    "EFFECT_MISMATCH": _effect("commit the effect with the step and attempt that requested it"),
    "EFFECT_NOT_REQUESTED": _effect("record the effect with phase requested (and its target) before committing it"),
    "ADOPT_REFUSED": _adopt,
    "IDEMPOTENCY_CONFLICT": _conflict,
    "NOT_A_FILE": _damaged,
    "FORMAT_TOO_NEW": _effect("the run was written by a newer version of this server: stop, and tell the user"),
    **{code: _damaged for code in ("CORRUPT_LINE", "TORN_TAIL", "HASH_MISMATCH", "SEQ_GAP", "DATA_LOSS")},
}

#: The codes with a text of their own.
HINTED: Final = frozenset(_HINTS)
