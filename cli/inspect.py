"""Commands that read: status and next (the timeline is :mod:`plantrail.cli.timeline`).

Nothing here writes or re-executes anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from plantrail.cli.common import (
    anchor,
    approval_lines,
    current_state_noted,
    emit,
    json_option,
    layout_options,
    log_argument,
    raise_if_torn,
    readiness_lines,
    run_records,
    snapshot_note,
    table,
    truncate,
    verbose_option,
    with_times_note,
)
from plantrail.cli.tables import cell
from plantrail.cli.terminal import printable

if TYPE_CHECKING:
    from plantrail.projections.model import PlanState

__all__ = ["inspect_commands", "lineage_lines", "render_status"]


def lineage_lines(state: PlanState) -> list[str]:
    """One line per run this one was forked from, the nearest parent first (none for a run never forked)."""
    lines = []
    for link in reversed(state.lineage):
        why = f": {truncate(link.reason, 80)}" if link.reason else ""
        lines.append(f"forked from run {link.run} at seq {link.seq}{why}")
    return lines


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
        *lineage_lines(state),
        "",
        "steps",
    ]
    rows = []
    for s in view["steps"]:
        status = s["status"] + (" (ready)" if s["ready"] else "")
        detail = "; ".join(s["evidence"]) or s["reason"] or s["error"] or ""
        if s["reset"] and s["status"] == "pending" and not detail:
            detail = f"reset: {s['reset']}" + (f" by {s['invalidated_by']}" if s["invalidated_by"] else "")
        attempt = f"{s['charged']}" if s["max_attempts"] is None else f"{s['charged']}/{s['max_attempts']}"
        notes = [f"+{len(s['abandoned'])} abandoned"] if s["abandoned"] else []
        if s["attempt"] != s["charged"] + len(s["abandoned"]):  # attempts before it went stale or an earlier repair
            notes.append(f"attempt {s['attempt']}")
        if notes:
            attempt += f" ({', '.join(notes)})"
        depends = ", ".join(s["depends_on"]) or "-"
        rows.append([s["id"], s["title"], status, attempt, depends, detail])
    header = ["STEP", "TITLE", "STATUS", "ATTEMPT", "DEPENDS ON", "EVIDENCE / REASON"]
    lines.append(table(header, rows, texts=(1, 5), lists=(4,)))
    if not state.finished:
        lines += readiness_lines(state)
        lines += approval_lines(view.get("approvals"))
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
    lines += lease_lines(view.get("leases", []))
    lines += drift_lines(view)
    return "\n".join(lines)


def drift_lines(view: dict[str, Any]) -> list[str]:
    """Format v2 lineage: the attempts to cancel (an input changed under them) and a possibly stale plan."""
    lines = []
    for step in view.get("cancel", []):
        lines.append(f"cancel: {step} (an input changed under its attempt; end it with abandon)")
    return lines + possibly_stale_lines(view)


def possibly_stale_lines(view: dict[str, Any]) -> list[str]:
    """The line saying the plan was made from other observations than the current ones (none when it was not)."""
    if not view.get("possibly_stale"):
        return []
    shown = ", ".join(f"{d['key']} {d['planned']} -> {d['current']}" for d in view["drift"])
    return [f"possibly stale: the plan was made from other observations ({printable(shown)})"]


def lease_lines(leases: list[dict[str, Any]]) -> list[str]:
    """One line per running attempt's lease (format v2), saying when it expires or that it expired."""
    lines = []
    for lease in leases:
        if lease["expired"]:
            state = f"EXPIRED at {lease['expires_at']}: its worker is gone? abandon it (plantrail abandon LOG)"
        else:
            state = f"expires at {lease['expires_at']}"
        lines.append(
            f"lease: {lease['step']} attempt {lease['attempt']} ({lease['lease_s']:g} s since seq "
            f"{lease['since_seq']}) {state}"
        )
    return lines


def _attempt_result(a: dict[str, Any]) -> str:
    if a["result"] is None:
        return "in progress" if a["started_seq"] is not None else "-"
    return f"{a['result']} (seq {a['result_seq']})"


def _attempts_table(attempts: dict[str, list[dict[str, Any]]], in_plan: set[str]) -> str:
    """One row per attempt of each step (late results on rows of their own, under their attempt)."""
    rows = []
    for step, entries in attempts.items():
        name = step if step in in_plan else f"{step} (not in plan)"  # an id: never cut
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
@layout_options
@verbose_option
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
    JSON: the status document (docs/cli.md) plus "anchor", "state_hash", "torn_tail"; each step has
      "can_start" and "wait_reasons" ([{"code": "run_finished" | "status" | "dependencies" | "capacity",
      ...}], an open set); the run has "can_start" (step ids) and "capacity" ({"max_in_progress",
      "in_progress", "free"}); "lineage" (the runs a fork was forked from: [{"run", "seq", "head",
      "state_hash", "reason"}], empty for a run never forked); "coverage" ({"declared", "criteria": [{"id",
      "steps", "checks", "covered"}], "uncovered"}). With --attempts, "attempts": {step: [{"plan_version", "attempt",
      "started_seq", "result", "result_seq", "evidence", "reason", "late": [...]}]} (the active
      version's steps, then the ones replans removed).

    \b
    Example:
      plantrail status samples/login-fix.jsonl
      plantrail status samples/login-fix-replans.jsonl --attempts
    """
    from plantrail.projections.views import status_document

    attempts: dict[str, Any] | None = None
    snapshot_seq: int | None = None
    if with_attempts:
        from plantrail.projections.attempts import attempts_view
        from plantrail.projections.attempts import fold as fold_attempts

        with run_records(log) as (reader, records):
            history = fold_attempts(records)
        state, torn = history.state, reader.torn
        gone = [s for s in history.attempts if s not in state.steps]  # steps a replan removed, in log order
        attempts = {s: attempts_view(history.attempts.get(s, ())) for s in [*state.steps, *gone]}
    else:
        state, torn, snapshot_seq = current_state_noted(log)
    from plantrail.ledger.vocabulary.clock import utc_now

    view = status_document(state, utc_now()) | {"torn_tail": torn is not None, "snapshot_seq": snapshot_seq}
    if attempts is not None:
        view["attempts"] = attempts
    emit(as_json, view, lambda: with_times_note(log, render_status(state, view)) + snapshot_note(snapshot_seq))
    raise_if_torn(log, torn)


@click.command(name="next")
@log_argument
@verbose_option
@json_option
def next_command(log: str, as_json: bool) -> None:
    """The ready steps in stable order, or the replan advice when nothing can start.

    Advice: repeated_tool_failure after two failed attempts in a row, retries_exhausted when a step ran out of
    attempts, no_ready_step when work remains but nothing runs and nothing can start.

    Ready steps have their dependencies completed; of those, the ones that can start now also fit under
    max_in_progress (the others wait for capacity).

    \b
    JSON: {"plan_version", "outcome", "ready": [step ids, stable topological order: priority, then id],
      "can_start": [step ids], "waiting": [{"step", "wait_reasons": [{"code", ...}]}] (ready steps that
      cannot start now; the codes are an open set, e.g. "capacity" with "max_in_progress", "in_progress"),
      "capacity": {"max_in_progress", "in_progress", "free"}, "in_progress": [step ids],
      "advice": null | reason code, "stop": {"outcome", "rule", "reason", "unmet"} (the stop policy),
      "check_first": [{"step", "check"}] (a run that records side effects: a ready step's effects never
      known committed, whose target to check before it starts again),
      "snapshot_seq": null | the seq up to which a snapshot answered (those records were not re-read)}

    \b
    Example:
      plantrail next samples/login-fix-replans.jsonl
    """
    from plantrail.ledger.vocabulary.clock import utc_now
    from plantrail.projections.views import next_view

    state, torn, snapshot_seq = current_state_noted(log)
    data = next_view(state, utc_now()) | {"snapshot_seq": snapshot_seq}
    stop, ready = data["stop"], data["ready"]
    stopped = state.contract and stop["outcome"] in ("failed", "budget_exhausted")
    running = data["in_progress"]

    def human() -> str:
        return answer() + snapshot_note(snapshot_seq)

    def answer() -> str:
        if state.finished:
            return f"the run finished {state.outcome}; nothing to do"
        if stopped:  # nothing can start: say so instead of the room left under max_in_progress
            lines = [f"ready: {', '.join(ready)}" if ready else "no step is ready"]
            lines.append(f"can start now: none (stop policy: {stop['outcome']} ({stop['rule']}): {stop['reason']})")
        else:
            lines = readiness_lines(state) or ["no step is ready"]
        lines += [f"{c['check']}; then start {c['step']}" for c in data.get("check_first", [])]
        lines += approval_lines(data.get("approvals"))
        if running:
            lines.append(f"in progress: {', '.join(running)}")
        lines += lease_lines(data["leases"])
        lines += drift_lines(data)
        if data["advice"]:
            lines.append(f"advice: replan with --reason {data['advice']}")
        return "\n".join(lines)

    emit(as_json, data, human)
    raise_if_torn(log, torn)


inspect_commands = (status, next_command)
