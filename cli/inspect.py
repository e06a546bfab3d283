"""Commands that read: status, log (the timeline), next. Nothing here writes or re-executes anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from plantrail.cli.common import (
    emit,
    json_option,
    log_argument,
    open_records,
    raise_if_torn,
    read_state,
    table,
    truncate,
)

if TYPE_CHECKING:
    from plantrail.ledger.events import Record
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
    stop = view.get("stop")
    if stop is not None and stop["outcome"] not in ("continue", state.outcome):
        lines += ["", f"stop policy: {stop['outcome']} ({stop['rule']}): {stop['reason']}"]
    for advice in view.get("budget", {}).get("advice", []):
        lines.append(f"budget: {advice}")
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
    from plantrail.ledger.clock import utc_now
    from plantrail.projections.canonical import state_hash
    from plantrail.projections.views import status_view

    state, torn = read_state(log)
    view = status_view(state, now=utc_now()) | {"state_hash": state_hash(state), "torn_tail": torn is not None}
    emit(as_json, view, lambda: render_status(state, view))
    raise_if_torn(log, torn)


def _summary(record: Record) -> str:
    data: Any = record.data
    match record.type:
        case "log.opened":
            return f"log opened for run {data.run} (fsync {data.fsync})"
        case "plan.created":
            return f"plan v1: {len(data.plan.steps)} steps, {len(data.plan.acceptance_criteria)} criteria"
        case "step.started":
            return f"{data.step} attempt {data.attempt}"
        case "step.completed":
            return f"{data.step} attempt {data.attempt}: {'; '.join(data.evidence)}"
        case "step.blocked":
            return f"{data.step} attempt {data.attempt}: {data.reason}"
        case "step.failed":
            return f"{data.step} attempt {data.attempt}: {data.error}"
        case "criterion.verified":
            return f"{data.criterion} {data.verdict}: {data.evidence}"
        case "run.finished":
            return f"{data.outcome}: {data.reason}"
        case "plan.replanned":
            causes = f" (caused by {', '.join(map(str, data.causes))})" if data.causes else ""
            return f"v{data.new_version} [{data.reason}] {data.why}{causes}"
        case "log.repaired":
            return f"repaired: {data.bytes} torn bytes moved to {data.quarantine}"
        case "log.checkpoint":
            return f"checkpoint over seq {data.covers_seq}"
    return ""


def _timeline_entry(record: Record, orphan_seqs: set[int]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "seq": record.seq,
        "ts": record.ts,
        "actor": record.actor,
        "type": record.type,
        "plan_version": record.plan_version,
        "summary": _summary(record),
        "orphan": record.seq in orphan_seqs,
    }
    if record.source is not None:
        entry["source"] = record.source
    return entry


@click.command(name="log")
@log_argument
@click.option("--from-seq", type=click.IntRange(min=0), default=0, help="Start at this seq.")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many events.")
@json_option
def log_command(log: str, from_seq: int, limit: int | None, as_json: bool) -> None:
    """The timeline: every event with its seq, time, actor, type, plan version and a summary.

    \b
    Example:
      plantrail log samples/login-fix.jsonl --from-seq 5
    """
    from plantrail.projections.state import evolve, initial

    entries: list[dict[str, Any]] = []
    state = initial()
    with open_records(log) as (reader, records):
        for record in records:
            before = len(state.orphans)
            state = evolve(state, record)
            late = {record.seq} if len(state.orphans) > before else set()
            if record.seq >= from_seq and (limit is None or len(entries) < limit):
                entries.append(_timeline_entry(record, late))

    def human() -> str:
        rows = []
        for e in entries:
            kind = e["type"] + (" (late)" if e["orphan"] else "")
            rows.append(
                [str(e["seq"]), e["ts"][:19].replace("T", " "), e["actor"], kind, f"v{e['plan_version']}", e["summary"]]
            )
        return table(["SEQ", "TIME (UTC)", "ACTOR", "TYPE", "PLAN", "SUMMARY"], rows)

    emit(as_json, entries, human)
    raise_if_torn(log, reader.torn)


@click.command(name="next")
@log_argument
@json_option
def next_command(log: str, as_json: bool) -> None:
    """The ready steps in stable order, or the replan advice when nothing can start (seed 000 shouldReplan).

    Advice: repeated_tool_failure after two failed attempts in a row, retries_exhausted when a step ran out of
    attempts, no_ready_step when work remains but nothing runs and nothing can start.

    \b
    JSON: {"plan_version", "outcome", "ready": [step ids, stable topological order: priority, then id;
      none while the stop policy forbids starting], "in_progress": [step ids], "advice": null | reason code,
      "stop": {"outcome", "rule", "reason", "unmet"}}

    \b
    Example:
      plantrail next samples/login-fix-replans.jsonl
    """
    from plantrail.ledger.clock import utc_now
    from plantrail.projections.stop import STOPPING, stop_decision
    from plantrail.projections.views import advice, in_doubt, ready_steps

    state, torn = read_state(log)
    stop = stop_decision(state, utc_now())
    ready = [] if stop.outcome in STOPPING else ready_steps(state)
    running = [s.id for s in in_doubt(state)]
    data = {
        "plan_version": state.version,
        "outcome": state.outcome,
        "ready": ready,
        "in_progress": running,
        "advice": advice(state),
        "stop": stop.as_dict(),
    }

    def human() -> str:
        if state.finished:
            return f"the run finished {state.outcome}; nothing to do"
        lines = [f"ready: {', '.join(ready)}" if ready else "no step is ready"]
        if stop.outcome in STOPPING:
            lines.append(f"stop policy: {stop.outcome} ({stop.rule}): {stop.reason}")
        if running:
            lines.append(f"in progress: {', '.join(running)}")
        if data["advice"]:
            lines.append(f"advice: replan with --reason {data['advice']}")
        return "\n".join(lines)

    emit(as_json, data, human)
    raise_if_torn(log, torn)


inspect_commands = (status, log_command, next_command)
