"""What the hooks tell the model: where its plan stands when a session starts, resumes or comes back from a
compaction, and what the summary of a compaction must keep.

Written for a model, not for a terminal: the run id to pass to the plan server, the current plan version, what
is done, in progress, ready, waiting for approval or in doubt, and one next step in the plan server's terms
(its tools and their parameters); never an exit code or a command-line flag. Every text ends with what to do
next. Pure functions of the hook's result (the run's resume receipt, or None while the run has no log).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["LAUNCHER_ENV", "compaction_instructions", "session_start_text"]

#: Set by the plugin's launcher when it fell back to the first ``plantrail`` on PATH (its value: that path).
LAUNCHER_ENV = "PLANTRAIL_LAUNCHED_FROM_PATH"

_OPENING = {
    "compact": "Your context was just compacted. The plan below is the current one: a plan, step list or version "
    "in the summary that differs from it is out of date.",
    "resume": "This session resumed. The plan below is where the run stands now.",
}


def session_start_text(
    run: str,
    receipt: Mapping[str, Any] | None,
    source: str | None = None,
    launched_from: str | None = None,
    unreadable: str | None = None,
) -> str:
    """The text a session-start hook hands the model (``source``: startup, resume, compact …; ``launched_from``:
    the ``plantrail`` the plugin's launcher found on PATH, when it had no recorded one; ``unreadable``: the code
    of the error that kept the run's log from being read)."""
    lines = [f'plantrail: this session\'s run is "{run}". Pass run "{run}" on every plan server call.']
    if unreadable is not None:
        lines.append(f"Its log could not be read ({unreadable}).")
        lines.append(
            "Next: tell the user the run's log could not be read, and call plan_status, which says what it can "
            "read and what to do."
        )
    elif receipt is None:
        lines.append("It has no plan yet.")
        lines.append(
            f'Next: keep your plan with the plan server: call plan_set with run "{run}", a goal, acceptance '
            "criteria and steps; then start each step with step_start and end it with step_update."
        )
    else:
        lines += [_OPENING[source]] if source in _OPENING else []
        if receipt.get("damage"):
            lines.append("Its log is damaged: what follows is what its valid part holds.")
        lines += _where(receipt) if receipt.get("goal") is not None else []
        lines.append(f"Next: {next_step(receipt)}.")
    if launched_from:
        lines.append(
            f"Also tell the user: the plantrail plugin found no recorded plantrail and ran the first one on PATH "
            f"({launched_from}); recording the one they want (see the plugin's README) keeps it from changing."
        )
    return "\n".join(lines)


def compaction_instructions(run: str, receipt: Mapping[str, Any] | None) -> str:
    """What a pre-compact hook asks the summary to keep."""
    if receipt is None:
        return (
            f'Keep this word for word in the summary: this session\'s plantrail run is "{run}"; pass run "{run}" '
            "on every plan server call. Next, after the compaction: call plan_status or plan_set with that run."
        )
    version = receipt["plan_version"]
    return (
        f'Keep this word for word in the summary: this session\'s plantrail run is "{run}" and its current plan '
        f"version is {version}; the plan server holds the plan. Next, after the compaction: call plan_status with "
        f'run "{run}" before any other plan call.'
    )


def _where(receipt: Mapping[str, Any]) -> list[str]:
    """Where the run stands, one line a kind."""
    progress, doubt = _in_progress(receipt), _in_doubt(receipt)
    lines = [
        f"Goal: {receipt['goal']}",
        f"Current plan version: {receipt['plan_version']}",
        f"Done: {_names(d['step'] for d in receipt['done'])}",
        f"In progress (started, no result yet): {_names(_attempt(d) for d in progress)}",
        f"Ready to start: {_names(receipt['ready'])}",
        f"Waiting for approval: {_names(w['step'] for w in _waiting(receipt))}",
        f"In doubt (nobody knows whether its work happened): {_names(_attempt(d) for d in doubt)}",
    ]
    if _denied(receipt):
        lines.append(f"Approval denied (a replan must remove or change them): {_names(_denied(receipt))}")
    if receipt["blocked"]:
        blocked = (f"{b['step']} ({b['reason']})" for b in receipt["blocked"])
        lines.append(f"Blocked: {_names(blocked)}")
    if receipt["orphans"]:
        lines.append(
            f"Late results kept on the orphan path: {len(receipt['orphans'])}; they changed nothing in the current "
            f"plan version {receipt['plan_version']}."
        )
    if receipt["outcome"] == "paused":
        lines.append("The run was paused when the last session ended; your next plan call continues it.")
    return lines


def next_step(receipt: Mapping[str, Any]) -> str:
    """The one thing to do next, as the run stands in ``receipt``."""
    if receipt.get("damage"):
        return "tell the user the run's log is damaged and needs a repair before the plan can change"
    if receipt["finished"] and receipt["outcome"] != "paused":
        return f"nothing is left in this run (it finished {receipt['outcome']}); tell the user"
    if receipt["verdict"] in ("failed", "budget_exhausted"):  # the plan's stop policy ends the run (resume_verdict)
        return (
            f"the plan's stop policy says this run is {receipt['verdict']}; replan with plan_set if the work can "
            f"go on another way, else end the run with run_finish, outcome {receipt['verdict']}"
        )
    doubt, progress = _in_doubt(receipt), _in_progress(receipt)
    ending = "complete with its evidence, or fail or block with a reason"
    if doubt:
        step = doubt[0]["step"]
        return f"find out whether {step} did its work, then record it with step_update ({ending})"
    if progress:
        step = progress[0]["step"]
        return f"carry on with {step} and end its attempt with step_update ({ending})"
    waiting = _waiting(receipt)
    stop = receipt.get("stop") or {}
    if receipt["verdict"] == "paused" and stop.get("outcome") == "paused":
        return _paused(stop)
    effects = [e for e in (receipt.get("effects") or {}).get("in_doubt") or () if e["step"] in receipt["ready"]]
    if receipt["verdict"] == "in_doubt" and effects:
        effect = effects[0]
        return (
            f"before {effect['step']} starts again, check whether its side effect {effect['key']} on "
            f"{effect['target']!r} already happened: if it did, record it with step_effect, phase committed; "
            "never do it twice"
        )
    if receipt["ready"]:
        return f"start {receipt['ready'][0]} with step_start"
    if waiting:
        return _ask_approval(waiting)
    if receipt["advice"]:
        return f"replan with plan_set, reason {receipt['advice']}, saying why (plan_brief gives what is left)"
    if receipt["criteria_unverified"]:
        criteria = _names(receipt["criteria_unverified"])
        return f"record the verdict of each acceptance criterion ({criteria}) with criterion_verdict, then run_finish"
    return "end the run with run_finish"


def _in_doubt(receipt: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Started steps whose work nobody can vouch for: a lease that ran out, a result a crash cut off."""
    return [d for d in receipt["in_doubt"] if d.get("lease_expired") or d.get("cut_off")]


def _in_progress(receipt: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [d for d in receipt["in_doubt"] if not (d.get("lease_expired") or d.get("cut_off"))]


def _paused(stop: Mapping[str, Any]) -> str:
    """What ends a pause of the plan's stop policy: a replan without the denied steps, or an approval of the
    wider scope a result needed (or that replan)."""
    if stop.get("rule") == "approval_denied":
        return (
            f"the plan's stop policy paused this run: {stop['reason']}; replan with plan_set without those steps or "
            "with them changed, or ask the user how to go on"
        )
    if stop.get("rule") == "scope_violation":
        return (
            f"the plan's stop policy paused this run: {stop['reason']}; ask for approval of the wider scope with "
            "approval_request, or replan with plan_set"
        )
    return f"the plan's stop policy paused this run: {stop['reason']}; tell the user why and wait for their word"


def _ask_approval(waiting: Sequence[Mapping[str, Any]]) -> str:
    asked = [w for w in waiting if w.get("requests")]
    if asked:
        return f"wait for the person's answer on {asked[0]['step']} with approval_wait"
    return f"ask for approval of {waiting[0]['step']} with approval_request, then wait with approval_wait"


def _waiting(receipt: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The steps waiting for an approval nobody has denied (a denied one waits for a replan, not an answer)."""
    denied = set(_denied(receipt))
    approvals = receipt.get("approvals") or {}
    return [w for w in approvals.get("waiting_approval") or () if w["step"] not in denied]


def _denied(receipt: Mapping[str, Any]) -> list[str]:
    approvals = receipt.get("approvals") or {}
    return list(approvals.get("denied") or ())


def _attempt(entry: Mapping[str, Any]) -> str:
    return f"{entry['step']} (attempt {entry['attempt']})"


def _names(items: Any) -> str:
    listed = [str(i) for i in items]
    return ", ".join(listed) if listed else "none"
