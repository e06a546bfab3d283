"""The refusals every rule shares: the run must be open, and a step it names must be in the active version.

:mod:`ledger.decide` and the rule modules beside it (leases, approvals, extensions) check these in one
wording, so a caller sees the same code and message whichever command it sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.plan import did_you_mean

if TYPE_CHECKING:
    from plantrail.projections.model import StepState
    from plantrail.projections.state import StateView

__all__ = ["require_open", "require_step"]


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
