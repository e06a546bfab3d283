"""The outcomes ``finish`` records beyond v1's: ``partial`` and ``budget_exhausted``, and the rule that
``finish complete`` never contradicts the stop policy.

- ``partial`` is allowed only when the plan's policy sets ``allowed_partial``; the event lists what is done,
  what is not, and where a continuation resumes, all derived from the state by the decision.
- ``budget_exhausted`` lists the steps and criteria still unmet (a spent budget is not completion
  evidence), derived the same way.
- ``complete``, for a plan that uses the v2 contract, is refused unless the stop policy's decision at the
  command's time is ``complete`` (``OUTCOME_CONTRADICTS_STOP``).

The lists are ``step:ID`` / ``criterion:ID`` (as the stop policy's ``unmet``), ``resume_from`` plain step ids.
v1's outcome words (complete, paused, failed, cancelled) carry no lists and keep their v1 bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import RunFinished
from plantrail.projections.outcomes import OutcomeLists, outcome_lists

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = ["check_outcome", "finished_event"]


def finished_event(state: StateView, outcome: str, reason: str) -> RunFinished:
    """The ``run.finished`` event of a finish, with the lists its outcome records."""
    lists = outcome_lists(state, outcome)
    return RunFinished(outcome=outcome, reason=reason, **lists._asdict())  # type: ignore[arg-type]


def _contradicts(outcome: str, why: str, **fields: Any) -> Exception:
    return error("OUTCOME_CONTRADICTS_STOP", f"the run cannot finish {outcome}: {why}", outcome=outcome, **fields)


def check_outcome(state: StateView, data: RunFinished, now: str | None) -> None:
    """Refuse a finish whose outcome the state contradicts (the caller checked version, reason and the v1
    rule that ``complete`` needs every step completed and every criterion passed)."""
    assert state.plan is not None
    lists = outcome_lists(state, data.outcome)
    recorded = OutcomeLists(data.done, data.not_done, data.resume_from, data.unmet)
    if data.outcome == "partial":
        if not state.plan.policy.allowed_partial:
            raise error(
                "PARTIAL_NOT_ALLOWED",
                "the plan does not allow a partial outcome (its policy does not set allowed_partial)",
                outcome="partial",
            )
        if not lists.not_done:
            raise _contradicts("partial", "every step is completed and every criterion passed: finish complete")
    elif data.outcome == "budget_exhausted" and not lists.unmet:
        raise _contradicts("budget_exhausted", "every step is completed and every criterion passed: finish complete")
    elif data.outcome == "complete" and state.contract:
        from plantrail.projections.stop import stop_decision

        decision = stop_decision(state, now)
        if decision.outcome != "complete":
            raise _contradicts(
                "complete",
                f"the stop policy says {decision.outcome} ({decision.rule}): {decision.reason}",
                rule=decision.rule,
                unmet=list(decision.unmet),
            )
    if recorded != lists:
        raise _contradicts(
            data.outcome,
            f"the event's lists ({recorded._asdict()}) are not the state's ({lists._asdict()})",
        )
