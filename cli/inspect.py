"""Commands that read: status and next (the timeline is :mod:`plantrail.cli.timeline`).

Nothing here writes or re-executes anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from plantrail.cli.common import (
    emit,
    json_option,
    log_argument,
    raise_if_torn,
    read_state,
    table,
    truncate,
)

if TYPE_CHECKING:
    from plantrail.projections.model import PlanState

__all__ = ["inspect_commands", "render_status"]


def render_status(state: PlanState, view: dict[str, Any]) -> str:
    """The human status: run line, steps table, criteria table, orphans and advice."""
    if state.plan is None:
        return f"run {state.run}: no plan yet (last seq {state.last_seq})"
    outcome = state.outcome or "open"
    if state.outcome_reason:
        outcome += f" ({truncate(state.outcome_reason, 60)})"
    lines = [
        f"run {state.run} · plan v{state.version} · {outcome} · last seq {state.last_seq}"
        f" · head {(state.head or '')[:12]}",
        f"goal: {state.goal}",
        "",
        "steps",
    ]
    rows = []
    for s in view["steps"]:
        status = s["status"] + (" (ready)" if s["ready"] else "")
        detail = "; ".join(s["evidence"]) or s["reason"] or s["error"] or ""
        if s["reset"] and s["status"] == "pending" and not detail:
            detail = f"reset: {s['reset']}" + (f" by {s['invalidated_by']}" if s["invalidated_by"] else "")
        attempt = f"{s['attempt']}/{s['max_attempts']}"
        rows.append([s["id"], status, attempt, ",".join(s["depends_on"]) or "-", detail])
    lines.append(table(["STEP", "STATUS", "ATTEMPT", "DEPENDS ON", "EVIDENCE / REASON"], rows))
    lines += ["", "acceptance criteria"]
    rows = [[c["id"], c["status"], c["evidence"] or c["description"]] for c in view["criteria"]]
    lines.append(table(["CRITERION", "STATUS", "EVIDENCE / DESCRIPTION"], rows))
    if state.orphans:
        lines += ["", f"orphans: {len(state.orphans)} late result(s) kept off the plan (plantrail orphans LOG)"]
    if view["advice"]:
        lines += ["", f"advice: consider a replan ({view['advice']})"]
    return "\n".join(lines)


@click.command()
@log_argument
@json_option
def status(log: str, as_json: bool) -> None:
    """Show the plan's current version, every step's status, the criteria and the late results.

    \b
    Example:
      plantrail status samples/login-fix.jsonl
    """
    from plantrail.projections.canonical import state_hash
    from plantrail.projections.views import status_view

    state, torn = read_state(log)
    view = status_view(state) | {"state_hash": state_hash(state), "torn_tail": torn is not None}
    emit(as_json, view, lambda: render_status(state, view))
    raise_if_torn(log, torn)


@click.command(name="next")
@log_argument
@json_option
def next_command(log: str, as_json: bool) -> None:
    """The ready steps in stable order, or the replan advice when nothing can start (seed 000 shouldReplan).

    Advice: repeated_tool_failure after two failed attempts in a row, retries_exhausted when a step ran out of
    attempts, no_ready_step when work remains but nothing runs and nothing can start.

    \b
    JSON: {"plan_version", "outcome", "ready": [step ids, stable topological order],
      "in_progress": [step ids], "advice": null | reason code}

    \b
    Example:
      plantrail next samples/login-fix-replans.jsonl
    """
    from plantrail.projections.views import advice, in_doubt, ready_steps

    state, torn = read_state(log)
    ready = ready_steps(state)
    running = [s.id for s in in_doubt(state)]
    data = {
        "plan_version": state.version,
        "outcome": state.outcome,
        "ready": ready,
        "in_progress": running,
        "advice": advice(state),
    }

    def human() -> str:
        if state.finished:
            return f"the run finished {state.outcome}; nothing to do"
        lines = [f"ready: {', '.join(ready)}" if ready else "no step is ready"]
        if running:
            lines.append(f"in progress: {', '.join(running)}")
        if data["advice"]:
            lines.append(f"advice: replan with --reason {data['advice']}")
        return "\n".join(lines)

    emit(as_json, data, human)
    raise_if_torn(log, torn)


inspect_commands = (status, next_command)
