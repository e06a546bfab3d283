"""Commands about a run's lineage and its next plan: fork, check and brief."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import click

from plantrail.cli.common import (
    FilePath,
    emit,
    json_option,
    layout_options,
    locate_log,
    log_argument,
    read_draft_file,
    table,
    truncate,
)
from plantrail.cli.terminal import printable

if TYPE_CHECKING:
    from plantrail.ledger.fork import ForkResult
    from plantrail.ledger.vocabulary.draft_check import DraftCheck
    from plantrail.ledger.vocabulary.events import Actor

__all__ = ["brief", "check", "fork"]


def _render_fork(result: ForkResult, reason: str | None) -> str:
    why = f" ({truncate(reason.strip(), 100)})" if reason and reason.strip() else ""
    return "\n".join(
        [
            f"forked {printable(result.path)}: run {result.run} from run {result.parent} at seq {result.seq}{why}",
            f"carries plan v{result.plan_version}, state hash {result.state_hash}",
            f"parent head there: {result.seq}:{result.head}",
            f"anchor: {result.last_seq}:{result.fork_head}",
        ]
    )


@click.command()
@log_argument
@click.option("--at-seq", type=click.IntRange(min=1), metavar="N", help="Fork right after the parent's record N.")
@click.option(
    "--version",
    "version",
    type=click.IntRange(min=1),
    metavar="V",
    help="Fork where `replay --version V` stands (V as it stood when superseded, or now for the active one).",
)
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=FilePath(dir_okay=False, path_type=str),
    metavar="NEW",
    help="The new run (never overwritten): a path, a postgresql://…/db#RUN URL, or a run id in --store.",
)
@click.option("--reason", metavar="TEXT", help="Why the run is forked (kept in the fork's lineage).")
@click.option("--run", "run_id", metavar="ID", help="The new run's id (default: NEW's file name without .jsonl).")
@click.option("--actor", type=click.Choice(["agent", "planner", "user", "runtime"]), default="user", show_default=True)
@json_option
def fork(
    log: str,
    at_seq: int | None,
    version: int | None,
    output: str,
    reason: str | None,
    run_id: str | None,
    actor: str,
    as_json: bool,
    store: str | None,
) -> None:
    """Start a new run NEW from any point of LOG, to try another way from there: its first record names
    the parent (run id, seq, the hash there) and carries the parent's state at that point, so NEW is small and
    verifies on its own. Record on NEW as on any log; LOG is only read. `verify NEW --parent LOG` checks the
    two agree.

    \b
    JSON: {"ok", "path", "run", "parent", "seq", "head", "state_hash", "plan_version", "last_seq",
      "fork_head", "anchor"}

    \b
    Example:
      plantrail fork samples/login-fix-replans.jsonl --at-seq 5 -o retry.jsonl --reason "try the other fix"
      plantrail fork run.jsonl --version 2 -o v2-again.jsonl
      plantrail fork login-fix --at-seq 5 -o retry --store postgresql://localhost/plantrail
    """
    from plantrail.ledger.fork import fork_run

    result = fork_run(
        log,
        locate_log(output, store, new=True),
        at_seq=at_seq,
        version=version,
        reason=reason,
        run=run_id,
        actor=cast("Actor", actor),
    )
    data = {"ok": True, **result._asdict(), "anchor": f"{result.last_seq}:{result.fork_head}"}
    emit(as_json, data, lambda: _render_fork(result, reason))


def _render_check(draft: str, found: DraftCheck) -> str:
    """The coverage matrix when the plan declares coverage, each problem and warning with its fix, the verdict."""
    from plantrail.ledger.vocabulary.draft_check import fix_for

    lines = []
    if found.coverage is not None and found.coverage["declared"]:
        rows = [
            [
                row["id"],
                ", ".join(row["steps"]) or "-",
                ", ".join(row["checks"]) or "-",
                "yes" if row["covered"] else "NO",
            ]
            for row in found.coverage["criteria"]
        ]
        lines += ["coverage", table(["CRITERION", "STEPS", "CHECKS", "COVERED"], rows, texts=(), lists=(1, 2)), ""]
    for label, errors in (("problem", found.problems), ("warning", found.warnings)):
        for e in errors:
            lines += [f"{label}[{e.code}]: {printable(e.message)}", f"  fix: {printable(fix_for(e))}"]
    if found.ok:
        warned = f" ({len(found.warnings)} warning(s))" if found.warnings else ""
        lines.append(f"ok: {printable(draft)} validates{warned}")
    else:
        lines.append(f"NOT ok: {printable(draft)} has {len(found.problems)} problem(s), each above with its fix")
    return "\n".join(lines)


@click.command()
@click.argument("draft", metavar="DRAFT")
@click.option(
    "--strict",
    is_flag=True,
    help="A task criterion that no step covers and no typed check covers is a problem, not a warning.",
)
@layout_options
@json_option
def check(draft: str, strict: bool, as_json: bool) -> None:
    """Validate a plan draft (JSON, or TOML when its name ends in .toml) as create would, without a log: every
    problem at once, each with its fix (exit 1 on any); for a plan that declares coverage (a step's covers, a
    criterion's typed checks) the coverage matrix (which steps and typed checks cover each task criterion), and
    the coverage gaps as warnings (as problems with --strict; a draft that declares no coverage is warned only by
    --strict).

    \b
    JSON: {"ok", "problems": [{"code", "message", "exit_code", "fix", ...}], "warnings": [...],
      "coverage": null | {"declared", "criteria": [{"id", "steps", "checks", "covered"}], "uncovered"}}

    \b
    Example:
      plantrail check samples/login-fix.draft.json
      plantrail check draft.json --strict --json
      plantrail check plan.toml
    """
    from plantrail.ledger.vocabulary.draft_check import check_draft
    from plantrail.ledger.vocabulary.limits import DRAFT

    found = check_draft(read_draft_file(draft, DRAFT), strict=strict)
    emit(as_json, found.as_dict(), lambda: _render_check(draft, found))
    if not found.ok:
        first = found.problems[0]
        if as_json or len(found.problems) == 1:  # (the document holds them all; stderr lists them too)
            first.errors = found.problems  # type: ignore[attr-defined]
            raise first
        from plantrail.ledger.vocabulary.errors import error

        raise error(  # stdout listed each problem with its fix: stderr says how many, and the first
            first.code,
            f"{draft} has {len(found.problems)} problem(s), the first: {first.message}",
            path=draft,
        )


def _step_line(entry: dict[str, Any], detail: str) -> str:
    return f"  {entry['id']}: {truncate(entry['step']['title'], 50)}" + (f" · {detail}" if detail else "")


def _done(entry: dict[str, Any]) -> str:
    """A completed step's evidence, then its artifacts (format v2) as NAME=DIGEST."""
    artifacts = [f"{a['name']}={a['digest']}" for a in entry.get("artifacts", [])]
    return "; ".join([*entry["evidence"], *artifacts])


def _waits(entry: dict[str, Any], gated: set[str]) -> str:
    """What a step not run waits on: its unmet dependencies, then an approval (``gated``); else ready. An idle
    repair step says so: only a failure calls it."""
    if "repairs" in entry and not entry["needed"]:
        return f"repair step of {', '.join(entry['repairs'])}, not needed now (only a failure calls it)"
    waits = [f"waits on {', '.join(entry['waiting_on'])}"] if entry["waiting_on"] else []
    waits += ["waits for an approval"] if entry["id"] in gated else []
    return " · ".join(waits) or "ready"


def _render_brief(doc: dict[str, Any]) -> str:
    if doc["plan_version"] == 0:
        return f"run {doc['run']}: no plan yet"
    where = f"plan v{doc['plan_version']} (round {doc['round']}) · {doc['outcome'] or 'open'}"
    lines = [f"brief for run {doc['run']} · {where}"]
    lines.append(f"goal: {truncate(doc['goal'], 100)}")  # every text shown through truncate: escaped
    gated = {w["step"] for w in doc["scope"]["waiting_approval"]}
    sections: list[tuple[str, list[dict[str, Any]], Callable[[dict[str, Any]], str]]] = [
        ("completed (keep them: their ids and evidence stay)", doc["completed"], _done),
        ("failed", doc["failed"], lambda e: e["reason"] or e["error"] or ""),
        ("in progress (no result yet)", doc["in_progress"], lambda e: f"attempt {e['attempt']}"),
        ("not run", doc["not_run"], lambda e: _waits(e, gated)),
        ("stale (an input changed: run them again)", doc.get("stale", []), lambda e: e["reason"] or ""),
    ]
    for title, entries, detail in sections:
        if entries:
            lines += ["", title, *(_step_line(e, truncate(detail(e), 80)) for e in entries)]
    if doc["unmet_criteria"]:
        lines += ["", "criteria not passed"]
        lines += [
            f"  {c['id']}: {c['status']} · {truncate(c['evidence'] or c['description'], 80)}"
            for c in doc["unmet_criteria"]
        ]
    if doc["orphans"]:
        lines += ["", f"late results: {len(doc['orphans'])} (plantrail orphans LOG)"]
    if doc["effects_in_doubt"]:
        from plantrail.cli.effects import effect_lines

        lines += [
            "",
            *effect_lines("effects in doubt (check each target before doing it again)", doc["effects_in_doubt"]),
        ]
    if doc["coverage"]["declared"] and doc["coverage"]["uncovered"]:
        lines += ["", f"criteria no step covers: {', '.join(doc['coverage']['uncovered'])}"]
    lines += [f"budget: {advice}" for advice in doc["budget"]["advice"]]
    lines += _scope_lines(doc["scope"])
    from plantrail.cli.inspect import possibly_stale_lines

    drift = possibly_stale_lines(doc)
    lines += ["", *drift] if drift else []
    return "\n".join(lines)


def _globs(globs: list[str] | None) -> str:
    return "any" if globs is None else truncate(", ".join(globs), 80) if globs else "none"


def _scope_lines(scope: dict[str, Any]) -> list[str]:
    """The scope left: the task scope, the approvals that bear on the open steps, the denied steps and the
    violation pausing the run (nothing when none of them is there)."""
    lines: list[str] = []
    if scope["task"] is not None:
        lines.append(f"  task: writes {_globs(scope['task']['writes'])} · reads {_globs(scope['task']['reads'])}")
    for approval in scope["granted"]:
        widens = [f"writes {', '.join(approval['writes'])}"] if approval["writes"] else []
        widens += [f"tools {', '.join(approval['tools'])}"] if approval["tools"] else []
        extra = f" · widens {truncate('; '.join(widens), 60)}" if widens else ""
        lines.append(f"  granted {approval['id']}: steps {', '.join(approval['steps'])}{extra}")
    for approval in scope["pending"]:
        lines.append(
            f"  pending {approval['id']}: steps {', '.join(approval['steps'])} · {truncate(approval['question'], 60)}"
        )
    for waiting in scope["waiting_approval"]:
        requests = f" (requests {', '.join(waiting['requests'])})" if waiting["requests"] else ""
        lines.append(f"  {waiting['step']}: waits for an approval · {waiting['because']}{requests}")
    if scope["denied"]:
        lines.append(f"  denied: {', '.join(scope['denied'])} (paused until a replan changes or removes them)")
    if scope["violation"] is not None:
        held = scope["violation"]
        outside = truncate(", ".join([*held["paths"], *held["tools"]]), 60)
        lines.append(f"  violation: {held['step']} attempt {held['attempt']} went outside its scope · {outside}")
    return ["", "scope left", *lines] if lines else []


@click.command()
@log_argument
@json_option
def brief(log: str, as_json: bool) -> None:
    """The replan brief for the planner: completed steps and their evidence (keep them: a replan
    that leaves their contract alone keeps them under their ids), failed steps with reasons, steps in doubt and
    not run, unmet criteria, late results, coverage, the work remaining, the budget and the scope left; derived from the
    log only, each step with its whole contract so a patch can be written from the brief alone.

    \b
    JSON: {"run", "goal", "plan_version", "round", "outcome", "completed": [{"id", "attempt", "evidence",
      "last_seq", "step"}], "failed": [{"id", "status", "attempt", "max_attempts", "exhausted", "error",
      "reason", "last_seq", "step"}], "in_progress", "not_run": [{"id", "waiting_on", "reset", "step"}],
      "unmet_criteria": [{"id", "description", "status", "evidence"}], "orphans", "coverage", "remaining":
      {"steps", "criteria"}, "budget", "lineage", "effects_in_doubt", "stale": [{"id", "reason",
      "invalidated_by", "consumed", "step"}], "scope": {"task", "granted", "pending", "waiting_approval",
      "denied", "violation"}, "draft"} ("step": the step's contract as a draft writes it, every term; each
      completed step has its "artifacts"; "draft": the active plan as a whole draft, which replan --plan
      takes; a run with observations adds "observations", "possibly_stale", "drift" and "cancel")

    \b
    Example:
      plantrail brief samples/login-fix-replans.jsonl --json
    """
    from plantrail.ledger.audit import read_brief

    reading = read_brief(log)
    emit(as_json, reading.document, lambda: _render_brief(reading.document))
    if reading.damage is not None:
        raise reading.damage
