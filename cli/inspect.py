"""Commands that read: status, log (the timeline), next. Nothing here writes or re-executes anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from plantrail.cli.common import (
    anchor,
    emit,
    json_option,
    log_argument,
    open_records,
    raise_if_torn,
    read_state,
    readiness_lines,
    table,
    truncate,
)
from plantrail.cli.tables import cell

if TYPE_CHECKING:
    from plantrail.ledger.events import Record
    from plantrail.projections.model import PlanState

__all__ = ["inspect_commands", "render_status"]


_NARROW = 24  # terminal columns a step's title or dependency list may take in the status table (JSON has all)


def render_status(state: PlanState, view: dict[str, Any]) -> str:
    """The human status: run line, anchor, steps table, what can start, criteria table, orphans and advice."""
    if state.plan is None:
        return f"run {state.run}: no plan yet (last seq {state.last_seq})"
    outcome = state.outcome or "open"
    if state.outcome_reason:
        outcome += f" ({truncate(state.outcome_reason, 60)})"
    lines = [
        f"run {state.run} · plan v{state.version} · {outcome} · last seq {state.last_seq}",
        f"anchor: {anchor(state.last_seq, state.head)}",
        f"goal: {cell(state.goal)}",
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
        depends = truncate(",".join(s["depends_on"]) or "-", _NARROW)
        rows.append([s["id"], truncate(s["title"], _NARROW), status, attempt, depends, detail])
    lines.append(table(["STEP", "TITLE", "STATUS", "ATTEMPT", "DEPENDS ON", "EVIDENCE / REASON"], rows))
    if not state.finished:
        lines += readiness_lines(state)
    if "attempts" in view:
        lines += ["", "attempts", _attempts_table(view["attempts"], set(state.steps))]
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


def _attempt_result(a: dict[str, Any]) -> str:
    if a["result"] is None:
        return "in progress" if a["started_seq"] is not None else "-"
    return f"{a['result']} (seq {a['result_seq']})"


def _attempts_table(attempts: dict[str, list[dict[str, Any]]], in_plan: set[str]) -> str:
    """One row per attempt of each step (late results on rows of their own, under their attempt)."""
    rows = []
    for step, entries in attempts.items():
        name = step if step in in_plan else f"{step} (not in plan)"
        for a in entries:
            started = "-" if a["started_seq"] is None else f"seq {a['started_seq']}"
            detail = "; ".join(a["evidence"]) or a["reason"] or ""
            rows.append([name, f"v{a['plan_version']}", str(a["attempt"]), started, _attempt_result(a), detail])
            for late in a["late"]:
                late_detail = "; ".join(late["evidence"]) or late["reason"] or ""
                result = f"late {late['type'].removeprefix('step.')} (seq {late['seq']}, {late['why']})"
                rows.append(["", "", "", "", result, late_detail])
    return table(["STEP", "PLAN", "ATTEMPT", "STARTED", "RESULT", "EVIDENCE / REASON"], rows)


@click.command()
@log_argument
@click.option(
    "--attempts",
    "with_attempts",
    is_flag=True,
    help="Also show each step's attempt history (reads the whole log).",
)
@json_option
def status(log: str, with_attempts: bool, as_json: bool) -> None:
    """Show the plan's current version, every step's status, what can start now, the criteria, the late
    results, and the anchor (SEQ:HASH, for verify --anchor and repair --acked).

    \b
    JSON: the status document (DESIGN.md) plus "anchor", "state_hash", "torn_tail"; each step has
      "can_start" and "wait_reasons" ([{"code": "run_finished" | "status" | "dependencies" | "capacity",
      ...}], an open set); the run has "can_start" (step ids) and "capacity" ({"max_in_progress",
      "in_progress", "free"}). With --attempts, "attempts": {step: [{"plan_version", "attempt",
      "started_seq", "result", "result_seq", "evidence", "reason", "late": [...]}]} (the active
      version's steps, then the ones replans removed).

    \b
    Example:
      plantrail status samples/login-fix.jsonl
      plantrail status samples/login-fix-replans.jsonl --attempts
    """
    from plantrail.ledger.clock import utc_now
    from plantrail.projections.canonical import state_hash
    from plantrail.projections.views import status_view

    attempts: dict[str, Any] | None = None
    if with_attempts:
        from plantrail.projections.attempts import attempts_view
        from plantrail.projections.attempts import fold as fold_attempts

        with open_records(log) as (reader, records):
            history = fold_attempts(records)
        state, torn = history.state, reader.torn
        gone = [s for s in history.attempts if s not in state.steps]  # steps a replan removed, in log order
        attempts = {s: attempts_view(history.attempts.get(s, ())) for s in [*state.steps, *gone]}
    else:
        state, torn = read_state(log)
    view = status_view(state, now=utc_now()) | {
        "anchor": anchor(state.last_seq, state.head),
        "state_hash": state_hash(state),
        "torn_tail": torn is not None,
    }
    if attempts is not None:
        view["attempts"] = attempts
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

    Ready steps have their dependencies completed; of those, the ones that can start now also fit under
    max_in_progress (the others wait for capacity).

    \b
    JSON: {"plan_version", "outcome", "ready": [step ids, stable topological order: priority, then id],
      "can_start": [step ids], "waiting": [{"step", "wait_reasons": [{"code", ...}]}] (ready steps that
      cannot start now; the codes are an open set, e.g. "capacity" with "max_in_progress", "in_progress"),
      "capacity": {"max_in_progress", "in_progress", "free"}, "in_progress": [step ids],
      "advice": null | reason code, "stop": {"outcome", "rule", "reason", "unmet"} (the stop policy: while
      it says failed or budget_exhausted, nothing can start)}

    \b
    Example:
      plantrail next samples/login-fix-replans.jsonl
    """
    from plantrail.ledger.clock import utc_now
    from plantrail.projections.stop import STOPPING, stop_decision
    from plantrail.projections.views import (
        advice,
        capacity_view,
        in_doubt,
        ready_steps,
        startable_steps,
        wait_reasons,
    )

    state, torn = read_state(log)
    now = utc_now()
    stop = stop_decision(state, now)
    stopped = state.contract and stop.outcome in STOPPING  # a v2 plan's stop policy forbids new work
    ready = ready_steps(state)
    running = [s.id for s in in_doubt(state)]
    waits = wait_reasons(state, now)
    data = {
        "plan_version": state.version,
        "outcome": state.outcome,
        "ready": ready,
        "can_start": [] if stopped else startable_steps(state),
        "waiting": [{"step": s, "wait_reasons": waits[s]} for s in ready if waits[s]],
        "capacity": None if state.plan is None else capacity_view(state),
        "in_progress": running,
        "advice": advice(state),
        "stop": stop.as_dict(),
    }

    def human() -> str:
        if state.finished:
            return f"the run finished {state.outcome}; nothing to do"
        if stopped:  # nothing can start: say so instead of the room left under max_in_progress
            lines = [f"ready: {', '.join(ready)}" if ready else "no step is ready"]
            lines.append(f"can start now: none (stop policy: {stop.outcome} ({stop.rule}): {stop.reason})")
        else:
            lines = readiness_lines(state) or ["no step is ready"]
        if running:
            lines.append(f"in progress: {', '.join(running)}")
        if data["advice"]:
            lines.append(f"advice: replan with --reason {data['advice']}")
        return "\n".join(lines)

    emit(as_json, data, human)
    raise_if_torn(log, torn)


inspect_commands = (status, log_command, next_command)
