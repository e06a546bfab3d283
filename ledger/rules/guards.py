"""The refusals every rule shares: the log must have a plan, the run must be open, a step it names must be in
the active version, a command must not be issued against a superseded version, and a typed check must be met.

The feature modules beside this one (attempts, criteria, outcomes, reconcile, leases, approvals, effects,
extensions, observations) check these in one wording, so a caller sees the same code and message whichever
command it sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plantrail.ledger.vocabulary.contract import unmet
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.plan import did_you_mean

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.contract import CheckSpec
    from plantrail.ledger.vocabulary.evidence import Report
    from plantrail.projections.model import StepState
    from plantrail.projections.state import StateView

__all__ = [
    "checks_met",
    "issued_version",
    "not_stale",
    "require_next_attempt",
    "require_open",
    "require_plan",
    "require_step",
    "transition",
    "unknown_version",
]


def require_plan(state: StateView) -> None:
    """PLAN_NOT_CREATED until the log has a plan."""
    if state.plan is None:
        raise error("PLAN_NOT_CREATED", "the log has no plan yet")


def issued_version(state: StateView, plan_version: int | None) -> int:
    """The plan version a command is issued against: the one it names, else the active one (PLAN_NOT_CREATED
    before the log has a plan)."""
    if state.plan is None:
        require_plan(state)
    return state.version if plan_version is None else plan_version


def require_open(state: StateView) -> None:
    """RUN_FINISHED once the run has a final outcome."""
    if state.finished:
        raise error("RUN_FINISHED", f"the run finished {state.outcome}", seq=state.outcome_seq)


def require_step(state: StateView, step_id: str) -> StepState:
    """The step ``step_id`` of the active version; STEP_NOT_FOUND (with a did-you-mean) when it has none."""
    step = state.steps.get(step_id)
    if step is None:
        raise error(
            "STEP_NOT_FOUND",
            f"no step {step_id} in plan version {state.version}{did_you_mean(step_id, state.steps)}",
            step=step_id,
            plan_version=state.version,
        )
    return step


def not_stale(state: StateView, plan_version: int, what: str) -> None:
    """STALE_PLAN_VERSION for ``what`` issued against a version a replan superseded."""
    if plan_version < state.version:
        raise error(
            "STALE_PLAN_VERSION",
            f"{what} was issued against plan version {plan_version}; version {state.version} superseded it",
            plan_version=plan_version,
            expected=state.version,
            actual=plan_version,
        )


def require_next_attempt(step: StepState, attempt: int, how: str) -> None:
    """INVALID_TRANSITION unless ``attempt`` is the step's next attempt (``how``: what the record does with it,
    "starts" or "completes, by adoption,")."""
    if attempt != step.attempt + 1:
        raise error(
            "INVALID_TRANSITION",
            f"step {step.id} {how} attempt {step.attempt + 1}, not {attempt}",
            step=step.id,
            expected=step.attempt + 1,
            actual=attempt,
        )


def unknown_version(state: StateView, plan_version: int) -> Exception:
    """UNKNOWN_PLAN_VERSION for a version the log does not have."""
    return error(
        "UNKNOWN_PLAN_VERSION",
        f"plan version {plan_version} does not exist; the active version is {state.version}",
        plan_version=plan_version,
        expected=state.version,
    )


def transition(step: StepState, expected: str, target: str, version: int) -> Exception:
    """INVALID_TRANSITION: ``step`` is not ``expected``, so it cannot become ``target``."""
    return error(
        "INVALID_TRANSITION",
        f"step {step.id} is {step.status}; it must be {expected} to become {target}",
        step=step.id,
        plan_version=version,
        current=step.status,
        expected=expected,
        target=target,
    )


def checks_met(checks: tuple[CheckSpec, ...], report: Report | None, owner: str, **fields: str) -> None:
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
