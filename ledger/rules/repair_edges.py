"""The repair edges' rule on a start: a failed step waits for its repair step, and a repair step starts only
while a failed step waits for it. The edges are validated with the plan
(:mod:`plantrail.ledger.vocabulary.repair_edges`) and readiness follows them in
:mod:`plantrail.projections.repair_edges`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plantrail.ledger.vocabulary.errors import error
from plantrail.projections.repair_edges import repair_reason

if TYPE_CHECKING:
    from plantrail.projections.model import StepState
    from plantrail.projections.state import StateView

__all__ = ["check_start_repair"]


def check_start_repair(state: StateView, step: StepState) -> None:
    """Refuse a start that the repair edges forbid: a failed step whose repair step has not completed since
    (AWAITING_REPAIR), a repair step no failed step waits for (REPAIR_NOT_NEEDED)."""
    reason = repair_reason(state, step)
    if reason is None:
        return
    if reason["code"] == "awaiting_repair":
        raise error(
            "AWAITING_REPAIR",
            f"step {step.id} failed (attempt {step.attempt}) and waits until its repair step {reason['repair']} "
            f"completes (it is {reason['status']}); start {reason['repair']}",
            step=step.id,
            repair=reason["repair"],
            plan_version=state.version,
        )
    raise error(
        "REPAIR_NOT_NEEDED",
        f"step {step.id} is a repair step ({', '.join(reason['repairs'])}) and no failed step waits for it",
        step=step.id,
        repairs=reason["repairs"],
        plan_version=state.version,
    )
