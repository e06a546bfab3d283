"""The run's end: the ``finish`` command and its rules (what a ``partial`` or ``budget_exhausted`` finish
records is derived in :mod:`plantrail.projections.outcomes`).

A finish names one of the outcomes with a reason, issued against the active version of an open run;
``complete`` needs every step completed (a repair step nothing waits for aside) and every criterion passed.
Beyond v1's outcomes, ``partial`` and ``budget_exhausted``, and the rule that ``finish complete`` never
contradicts the stop policy:

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

from typing import TYPE_CHECKING, Any, Unpack

from plantrail.ledger.rules.commands import LATE_REFUSED, Envelope, Field, Help, Issued, declare, fields
from plantrail.ledger.rules.guards import issued_version, not_stale, require_open
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import OUTCOMES, Outcome, RunFinished
from plantrail.ledger.vocabulary.items import as_text
from plantrail.projections.outcomes import OutcomeLists, outcome_lists
from plantrail.projections.repair_edges import idle_repairs

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = ["FINISH", "Finish", "check_outcome", "finish", "finished_event"]


class Finish(Issued, frozen=True, kw_only=True):
    """End (or pause) the run with an outcome and a reason."""

    outcome: Outcome
    reason: str
    plan_version: int | None = None

    def __post_init__(self) -> None:
        as_text(self.reason, "reason")


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


def _build(state: StateView, command: Finish) -> tuple[RunFinished, int]:
    version = issued_version(state, command.plan_version)
    return finished_event(state, command.outcome, command.reason.strip()), version


def _check_finish(state: StateView, data: RunFinished, plan_version: int) -> None:
    not_stale(state, plan_version, "finish")
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


def _finish_rules(state: StateView, data: RunFinished, plan_version: int, now: str | None) -> None:
    _check_finish(state, data, plan_version)
    check_outcome(state, data, now)


FINISH = declare(
    Finish,
    build=_build,
    rules={RunFinished: _finish_rules},
    fields={
        "outcome": Field(
            help="complete needs every step completed and every criterion passed; paused is not final; partial "
            "(the plan must set allowed_partial) lists done, not done and where to resume; budget_exhausted lists "
            "what is unmet."
        ),
        "reason": Field(help="Why the run ends or pauses.", metavar="TEXT"),
    },
    superseded=f"{LATE_REFUSED}.",
    refusals=(
        "PLAN_NOT_CREATED",
        "UNKNOWN_PLAN_VERSION",
        "STALE_PLAN_VERSION",
        "RUN_FINISHED",
        "REASON_REQUIRED",
        "CRITERIA_UNVERIFIED",
        "PARTIAL_NOT_ALLOWED",
        "OUTCOME_CONTRADICTS_STOP",
        "USAGE",
    ),
    cli={
        "finish": Help(
            "Finish the run (complete, failed, cancelled; format v2: partial, budget_exhausted) or pause it.",
            examples=(
                'plantrail finish run.jsonl --outcome complete --reason "all criteria passed"',
                'plantrail finish run.jsonl --outcome budget_exhausted --reason "turn budget spent; lint still fails"',
            ),
        )
    },
    tools={
        "run_finish": "Finish the run (complete only when every step and criterion passed) or pause it (not final)."
    },
)


@FINISH.method
def finish(outcome: Outcome, reason: str, **envelope: Unpack[Envelope]) -> Finish:
    """Finish the run (``complete``, ``failed``, ``cancelled``; format v2: ``partial`` when the plan allows it,
    ``budget_exhausted``) or pause it (``plantrail finish``)."""
    return Finish(outcome=outcome, reason=reason, **fields(envelope))
