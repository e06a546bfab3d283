"""The stop policy and the budgets: derived state, never an event.

:func:`stop_decision` evaluates the rules in the documented order and returns the first that holds:

1. ``cancelled`` (or another final outcome the log records: complete, partial, failed, budget_exhausted):
   the run ended;
2. scope violation -> ``paused`` (a result left its step's scope: only an approval that widens the scope, or a
   replan, ends the pause; :mod:`ledger.rules.approvals`);
3. every step completed and every criterion passed (their checks met: :mod:`ledger.vocabulary.contract`) ->
``complete``;
4. approval denied -> ``paused`` until a replan removes or changes the denied steps (they cannot start);
5. the hard ``deadline`` passed -> ``budget_exhausted``;
6. the same failure fingerprint repeated ``max_repeated_failures`` times (default 2 for a plan that uses the
   v2 contract; off for a v1 plan, which keeps v1's answers) -> ``failed`` (no progress);
7. a turn, tool-call or cost budget of the run, or a step's tool-call or cost budget, used up ->
   ``budget_exhausted`` (a spent budget is not completion evidence: the unmet checks are listed);
8. otherwise ``continue``.

plantrail never writes an event on its own: ``status``, ``next`` and ``resume`` show the decision with its
reason, and :mod:`ledger.rules.decide` refuses a ``start`` it forbids (STOP_POLICY). The deadline is compared with
``now``, the time the caller asks at (a command's timestamp); the clock never enters the reducer.

:func:`budget_view` reports what is used and left; soft thresholds (the policy's ``soft_threshold``, default
80%) give advice, never an outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, cast

from plantrail.ledger.vocabulary.contract import parse_ts
from plantrail.ledger.vocabulary.evidence import Usage
from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec
from plantrail.projections.model import PlanState, step_status
from plantrail.projections.repair_edges import idle_repairs
from plantrail.projections.table import Table

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = ["STOPPING", "StopDecision", "StopOutcome", "budget_view", "stop_decision"]

StopOutcome = Literal["continue", "complete", "paused", "failed", "budget_exhausted", "cancelled", "partial"]
#: Decisions that forbid starting more work (a replan or a finish still may follow).
STOPPING: Final = frozenset({"failed", "budget_exhausted"})
DEFAULT_REPEATED_FAILURES: Final = 2


class StopDecision(NamedTuple):
    """The stop policy's verdict: the outcome, the rule that decided it, why, and the checks still unmet."""

    outcome: StopOutcome
    rule: str
    reason: str
    unmet: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The decision as JSON."""
        return {"outcome": self.outcome, "rule": self.rule, "reason": self.reason, "unmet": list(self.unmet)}


_USAGE_FIELDS: Final = (("max_turns", "turns"), ("max_tool_calls", "tool_calls"), ("max_cost_usd", "cost_usd"))


def _unmet(state: StateView) -> tuple[str, ...]:
    """Open steps and criteria, as ``step:ID`` / ``criterion:ID`` (an idle repair step is not open work)."""
    idle = idle_repairs(state)
    steps = [f"step:{s.id}" for s in state.steps.values() if s.status != "completed" and s.id not in idle]
    criteria = [f"criterion:{c.id}" for c in state.criteria.values() if c.status != "passed"]
    return (*steps, *criteria)


def _used(usage: Usage | None, field: str) -> float:
    return 0 if usage is None else getattr(usage, field)


def _work_left(state: StateView) -> bool:
    """Whether :func:`_unmet` names anything, without listing it: counted from the steps' tally by status (an
    idle repair step is pending or stale, so it is among the steps not completed), not by a scan of the plan."""
    steps = state.steps
    if isinstance(steps, Table):  # a state's: `status` from a snapshot asks this without loading the reducer
        left = len(steps) - steps.tally(step_status).get("completed", 0)
    else:
        from plantrail.projections.state import open_steps  # the fold's builder

        left = open_steps(state)
    if left > len(idle_repairs(state)):
        return True
    return any(c.status != "passed" for c in state.criteria.values())


#: The last two plans asked about and their steps with a budget of their own (one plan is active at a time).
_BUDGETED: list[tuple[tuple[PlanSpec, tuple[StepSpec, ...]], ...]] = [()]


def _budgeted(plan: PlanSpec) -> tuple[StepSpec, ...]:
    """The plan's steps with a tool-call or cost budget of their own, in the plan's order (most plans: none)."""
    entries = _BUDGETED[0]
    for known, steps in entries:
        if known is plan:
            return steps
    steps = tuple(s for s in plan.steps if s.max_tool_calls is not None or s.max_cost_usd is not None)
    _BUDGETED[0] = ((plan, steps), *entries[:1])
    return steps


def _exhausted_budget(state: StateView) -> str | None:
    """The first run or step budget that is used up, described; None when none is."""
    assert state.plan is not None
    policy = state.plan.policy
    for limit_name, used_name in _USAGE_FIELDS:
        limit = getattr(policy, limit_name)
        if limit is not None and _used(state.usage, used_name) >= limit:
            return f"the run's {limit_name} ({limit}) is used up ({_used(state.usage, used_name):g})"
    for spec in _budgeted(state.plan):
        step = state.steps[spec.id]
        if step.status == "completed":
            continue
        for limit_name, used_name in (("max_tool_calls", "tool_calls"), ("max_cost_usd", "cost_usd")):
            limit = getattr(spec, limit_name)
            if limit is not None and _used(step.usage, used_name) >= limit:
                return f"step {spec.id}'s {limit_name} ({limit}) is used up ({_used(step.usage, used_name):g})"
    return None


def stop_decision(state: StateView, now: str | None = None) -> StopDecision:
    """The stop policy's decision for ``state`` at time ``now`` (None: the deadline is not judged)."""
    if state.plan is None:
        return StopDecision("continue", "no_plan", "the log has no plan yet")
    if state.outcome in ("cancelled", "complete", "failed", "partial", "budget_exhausted"):
        outcome = cast("StopOutcome", state.outcome)
        rule = "cancelled" if outcome == "cancelled" else "finished"
        return StopDecision(outcome, rule, f"the log records the run as {outcome}")
    authority = state.authority
    if authority is not None and authority.violation is not None:
        held = authority.violation
        outside = ", ".join((*held.paths, *held.tools))
        reason = (
            f"step {held.step}'s attempt {held.attempt} left its scope ({outside}); an approval that widens the "
            "scope, or a replan, ends the pause"
        )
        return StopDecision("paused", "scope_violation", reason, _unmet(state))
    if state.criteria and not _work_left(state):
        return StopDecision("complete", "checks_passed", "every step is completed and every criterion passed")
    if authority is not None and authority.denied:
        reason = (
            f"an approval for {', '.join(authority.denied)} was denied; a replan that removes or changes those "
            "steps ends the pause"
        )
        return StopDecision("paused", "approval_denied", reason, _unmet(state))
    policy = state.plan.policy
    if policy.deadline is not None and now is not None:
        deadline, moment = parse_ts(policy.deadline), parse_ts(now)
        if deadline is not None and moment is not None and moment > deadline:
            return StopDecision("budget_exhausted", "deadline", f"the deadline {policy.deadline} passed", _unmet(state))
    repeats = policy.max_repeated_failures or (DEFAULT_REPEATED_FAILURES if state.contract else None)
    streak = state.failure_streak
    if repeats is not None and streak is not None and streak.repeats >= repeats:
        reason = f"step {streak.step} failed the same way {streak.repeats} times in a row (no progress)"
        return StopDecision("failed", "no_progress", reason, _unmet(state))
    spent = _exhausted_budget(state)
    if spent is not None:
        return StopDecision("budget_exhausted", "budget", spent, _unmet(state))
    return StopDecision("continue", "continue", "next bounded step")


def _line(limit: float | None, used: float, threshold: float) -> dict[str, Any]:
    left = None if limit is None else max(limit - used, 0)
    level = None
    if limit is not None:
        level = "exhausted" if used >= limit else "soft" if used >= threshold * limit else None
    return {"limit": limit, "used": used, "left": left, "level": level}


def budget_view(state: PlanState) -> dict[str, Any]:
    """What is used and left: the run's usage against its budgets, each step's against its own, and advice
    for every budget past the soft threshold (advice only; the stop policy decides on used-up budgets)."""
    if state.plan is None:
        return {"run": {}, "steps": {}, "advice": []}
    policy = state.plan.policy
    threshold = policy.soft_threshold
    usage = state.usage or Usage()
    run: dict[str, Any] = {
        used: _line(getattr(policy, limit), getattr(usage, used), threshold) for limit, used in _USAGE_FIELDS
    }
    run["tokens"] = {"limit": None, "used": usage.tokens, "left": None, "level": None}
    run["deadline"] = policy.deadline
    steps: dict[str, Any] = {}
    advice: list[str] = []
    for name, line in run.items():
        if isinstance(line, dict) and line["level"] == "soft":
            advice.append(f"the run has used {line['used']:g} of {line['limit']:g} {name} ({threshold:.0%} reached)")
    for spec in state.plan.steps:
        step = state.steps[spec.id]
        step_usage = step.usage or Usage()
        lines = {
            "attempts": _line(spec.max_attempts, step.charged, threshold),
            "tool_calls": _line(spec.max_tool_calls, step_usage.tool_calls, threshold),
            "cost_usd": _line(spec.max_cost_usd, step_usage.cost_usd, threshold),
        }
        steps[spec.id] = {**lines, "timeout_s": spec.timeout_s}
        if step.status == "completed":
            continue
        for name, line in lines.items():
            if line["level"] == "soft" and name != "attempts":
                advice.append(f"step {spec.id} has used {line['used']:g} of {line['limit']:g} {name}")
    return {"run": run, "steps": steps, "advice": advice, "soft_threshold": threshold}
