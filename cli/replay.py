"""Replay and audit commands: versions, replay, diff, why, orphans, resume.

All read-only: each calls the function of the same name in :mod:`ledger.audit` (which folds the log and
builds the ``--json`` document) and renders the document.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import click

from plantrail.cli.common import (
    emit,
    json_option,
    layout_options,
    log_argument,
    snapshot_note,
    table,
    truncate,
    verbose_option,
    with_times_note,
)
from plantrail.cli.terminal import columns, printable
from plantrail.ledger.audit import RESUME_EXIT_CODES

if TYPE_CHECKING:
    from plantrail.ledger.audit import Reading
    from plantrail.projections.model import PlanState

__all__ = ["RESUME_EXIT_CODES", "replay_commands"]

_CAUSES: Final[dict[str, str]] = {
    "contract_changed": "contract changed",
    "upstream_invalidated": "invalidated by",
    "superseded": "superseded while in progress",
    "unblocked": "unblocked",
    "description_changed": "description changed",
    "work_invalidated": "completed work was invalidated",
    "input_changed": "an input's digest changed, from",
}


def _when(ts: str) -> str:
    return ts[:19].replace("T", " ")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _aligned(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows of cells, left-aligned in columns by display width, without a header."""
    from plantrail.cli.tables import align

    return align(rows, indent)


#: The most lines a list of ids takes in versions and diff before the others are only counted.
_LISTING_LINES: Final = 4


def _listing(label: str, items: Sequence[str]) -> list[str]:
    """``label: a, b, c`` over as many lines of the terminal's width as it takes (at most :data:`_LISTING_LINES`,
    then a count of the others), broken between ids, never inside one; nothing when there are no items."""
    from plantrail.cli.tables import cell, wrap_ids

    if not items:
        return []
    head = f"  {label}: "
    lines = wrap_ids(", ".join(cell(i) for i in items), columns() - len(head))
    if len(lines) > _LISTING_LINES:
        shown = sum(line.count(", ") + 1 for line in lines[:_LISTING_LINES])
        lines = [*lines[:_LISTING_LINES], f"... and {len(items) - shown} more (--json lists them all)"]
    return [head + lines[0], *(" " * len(head) + line for line in lines[1:])]


def _why_reset(change: dict[str, Any]) -> str:
    """Why a step or criterion lost its state, in words: cause (upstream, fields), what it was, where."""
    parts = []
    if change.get("cause") in _CAUSES:
        cause = _CAUSES[change["cause"]]
        if change.get("upstream"):
            cause += f" {change['upstream']}"
        if change.get("fields"):
            cause += f" ({', '.join(change['fields'])})"
        parts.append(cause)
    if change.get("was"):
        parts.append(f"was {change['was']}" + (f", attempt {change['attempt']}" if change.get("attempt") else ""))
    if change.get("at_version"):
        parts.append(f"at v{change['at_version']}")
    return "; ".join(parts)


def _change_lines(changes: dict[str, Any]) -> list[str]:
    """A replan's recorded changes (:func:`projections.history.changes_view`), lists first, then each loss."""
    rows = [["reset", c["step"], _why_reset(c)] for c in changes["reset"]]
    rows += [["removed", c["step"], _why_reset(c)] for c in changes["removed"]]
    rows += [["criterion reset", c["criterion"], _why_reset(c)] for c in changes["criteria_reset"]]
    return [
        *_listing("kept", changes["kept"]),
        *_listing("added", changes["added"]),
        *_aligned(rows),
        *_listing("criteria kept", changes["criteria_kept"]),
        *_listing("criteria added", changes["criteria_added"]),
        *_listing("criteria removed", changes["criteria_removed"]),
        *(["  policy: changed"] if changes["policy_changed"] else []),
    ]


# --------------------------------------------------------------------------- versions


def _render_versions(run: str | None, count: int, versions: list[dict[str, Any]]) -> str:
    lines = [f"run {run} · {_plural(count, 'plan version', 'plan versions')} · active v{count}"]
    if versions and len(versions) < count:
        first, last = versions[0]["version"], versions[-1]["version"]
        lines.append(f"showing v{first} to v{last} (--all for every version, --since-version V, --limit N)")
    lines.append("")
    rows = []
    for v in versions:
        causes = ", ".join(map(str, v["causes"])) or "-"
        created = f"created: {_plural(v['steps'], 'step', 'steps')}, {_plural(v['criteria'], 'criterion', 'criteria')}"
        what = v["why"] if v["changes"] else created
        if v.get("extended"):
            what += f" (extended in place at seq {', '.join(map(str, v['extended']))})"
        rows.append(
            [f"v{v['version']}", str(v["seq"]), _when(v["ts"]), v["actor"], v["reason"] or "created", causes, what]
        )
    lines.append(table(["VERSION", "SEQ", "ADOPTED (UTC)", "ACTOR", "REASON", "CAUSES", "WHY"], rows, lists=(5,)))
    for v in versions:
        if v["changes"]:
            patched = ", from a patch" if v["patched"] else ""
            lines += ["", f"v{v['version']}: what the replan at seq {v['seq']} changed{patched}"]
            lines += _change_lines(v["changes"])
    return "\n".join(lines)


@click.command()
@log_argument
@click.option("--all", "everything", is_flag=True, help="Every version (default: the latest 20).")
@click.option(
    "--limit", type=click.IntRange(min=1), metavar="N", help="The latest N versions (from V with --since-version)."
)
@click.option("--since-version", "since", type=click.IntRange(min=1), metavar="V", help="Versions from V on.")
@layout_options
@json_option
def versions(log: str, everything: bool, limit: int | None, since: int | None, as_json: bool) -> None:
    """Plan versions (the latest 20 by default): when, by whom and why each was adopted, its causes, and what
    changed. Read from the history index beside the log (brought up to date first), not by folding the log.

    \b
    JSON: {"run", "active_version", "versions": [{"version", "seq", "ts", "actor", "reason", "why",
      "causes": [seq], "observations", "patched", "steps", "criteria", "superseded_at",
      "changes": null | {"kept", "reset": [{"step", "cause", "was", "attempt", "upstream", "fields"}],
      "added", "removed": [...], "criteria_kept", "criteria_reset": [{"criterion", "cause", "was"}],
      "criteria_added", "criteria_removed", "policy_changed"}}]}
      (the versions shown; there are "active_version" in all)

    \b
    Example:
      plantrail versions samples/login-fix-replans.jsonl
      plantrail versions run.jsonl --since-version 40 --limit 5 --json
    """
    from plantrail.ledger.audit import read_versions

    reading = read_versions(log, everything=everything, limit=limit, since=since)
    document = reading.document
    emit(as_json, document, lambda: _render_versions(document["run"], document["active_version"], document["versions"]))
    _raise_damage(reading)


# --------------------------------------------------------------------------- replay


def _replay_header(state: PlanState, version: int | None, at_seq: int | None, superseded_at: int | None) -> str:
    if at_seq is not None:
        return f"replay: the state after seq {at_seq} (plan v{state.version})"
    if superseded_at is not None:
        return (
            f"replay: plan v{state.version} as it stood when superseded at seq {superseded_at} "
            f"(the state after seq {state.last_seq})"
        )
    active = "" if version is None else f"v{version} is the active version; "
    return f"replay: {active}the state now (after seq {state.last_seq})"


@click.command()
@log_argument
@click.option(
    "--version",
    "version",
    type=click.IntRange(min=1),
    metavar="V",
    help="Rebuild version V as it stood when superseded (or now, for the active version).",
)
@click.option("--at-seq", type=click.IntRange(min=0), metavar="N", help="Rebuild the state right after event N.")
@layout_options
@json_option
def replay(log: str, version: int | None, at_seq: int | None, as_json: bool) -> None:
    """Rebuild the plan and every step's state at a past point, read-only (nothing is re-executed).

    --version V folds the log up to the replan that superseded V and reads no further (so damage after
    that point is not reported: run verify); --at-seq N folds events 0..N. Without either, the state now.

    \b
    JSON: the status --json document at that point, plus "state_hash" and
      "replay": {"version", "at_seq", "superseded_at"} (superseded_at: the seq of the replan that
      superseded the version; null for the active version and for --at-seq, which reads no further).

    \b
    Example:
      plantrail replay samples/login-fix-replans.jsonl --version 1
      plantrail replay samples/login-fix-replans.jsonl --at-seq 12 --json
    """
    from plantrail.cli.inspect import render_status
    from plantrail.ledger.audit import read_replay

    reading = read_replay(log, version, at_seq)
    state, view = reading.state, reading.document

    def human() -> str:
        header = _replay_header(state, version, at_seq, view["replay"]["superseded_at"])
        return f"{header}\n\n{render_status(state, view)}\n\nstate hash: {view['state_hash']}"

    emit(as_json, view, human)
    _raise_damage(reading)


# --------------------------------------------------------------------------- diff


def _field_rows(step: str, fields: dict[str, dict[str, Any]]) -> list[list[str]]:
    """One row per changed field of a step: ``name: from -> to`` (lists shown comma-separated)."""

    def shown(value: Any) -> str:
        return truncate(", ".join(value) if isinstance(value, list) else str(value), 50)

    return [
        ["changed" if i == 0 else "", step if i == 0 else "", f"{name}: {shown(c['from'])} -> {shown(c['to'])}"]
        for i, (name, c) in enumerate(fields.items())
    ]


def _render_diff(diff: dict[str, Any]) -> list[str]:
    """The body of a diff: lists of added and removed ids, then one row per changed, kept or reset item."""
    at: dict[str, Any] = {"at_version": None} if diff["adjacent"] else {}  # adjacent: every change is at V2
    criteria = diff["criteria"]
    rows = [row for c in diff["changed"] for row in _field_rows(c["step"], c["fields"])]
    rows += [
        ["kept", k["step"], f"attempt {k['attempt']}: {truncate('; '.join(k['evidence']), 70)}"] for k in diff["kept"]
    ]
    rows += [["removed" if r["cause"] == "removed" else "reset", r["step"], _why_reset(r | at)] for r in diff["reset"]]
    rows += [
        ["criterion changed", c["criterion"], f"{truncate(c['from'], 40)} -> {truncate(c['to'], 40)}"]
        for c in criteria["changed"]
    ]
    rows += [
        ["criterion kept", k["criterion"], f"{k['status']}: {truncate(k['evidence'], 70)}"] for k in criteria["kept"]
    ]
    rows += [["criterion reset", r["criterion"], _why_reset(r | at)] for r in criteria["reset"]]
    rows += [
        ["criterion reverified", r["criterion"], f"a newer verdict in v{r['at_version']}"]
        for r in criteria["reverified"]
    ]
    if diff["policy"]:
        change = diff["policy"]["max_in_progress"]
        rows.append(["policy", "max_in_progress", f"{change['from']} -> {change['to']}"])
    lines = [
        *_listing("added", diff["added"]),
        *_listing("removed", diff["removed"]),
        *_listing("criteria added", criteria["added"]),
        *_listing("criteria removed", criteria["removed"]),
        *_aligned(rows),
    ]
    return lines or ["  (no differences)"]


@click.command()
@log_argument
@click.argument("old", metavar="V1", type=click.IntRange(min=1))
@click.argument("new", metavar="V2", type=click.IntRange(min=1))
@layout_options
@json_option
def diff(log: str, old: int, new: int, as_json: bool) -> None:
    """What changed from plan version V1 to a later V2: steps added, removed and changed field by field;
    completed work kept (with its evidence) or reset (with the cause, and the upstream step for lineage);
    criteria kept or reset. Read from the history index and the version index beside the log.

    For versions that are not adjacent, the work is traced through each replan between them as that replan
    recorded it, not recomputed (see projections.history.diff_view).

    \b
    JSON: {"from", "to", "adjacent", "added", "removed", "changed": [{"step", "fields": {name: {"from",
      "to"}}}], "kept": [{"step", "attempt", "evidence", "completed_seq"}], "reset": [{"step", "cause",
      "was", "attempt", "upstream", "fields", "at_version"}], "criteria": {"added", "removed",
      "changed": [{"criterion", "from", "to"}], "kept": [{"criterion", "status", "evidence",
      "verified_seq"}], "reset": [{"criterion", "cause", "was", "at_version"}], "reverified":
      [{"criterion", "at_version"}]}, "policy": null | {"max_in_progress": {"from", "to"}}}

    \b
    Example:
      plantrail diff samples/login-fix-replans.jsonl 1 2
    """
    from plantrail.ledger.audit import diff as diff_document

    data = diff_document(log, old, new)
    through = "" if data["adjacent"] else " (work traced through every replan between them)"
    emit(as_json, data, lambda: "\n".join([f"diff v{old} -> v{new}{through}", *_render_diff(data)]))


# --------------------------------------------------------------------------- why


def _render_why(why: dict[str, Any]) -> str:
    title = (
        f"why v{why['version']}: {why['reason']} · replan at seq {why['seq']} ({_when(why['ts'])} UTC) "
        f"by {why['actor']}, replacing v{why['replaced']}"
    )
    width = min(columns(), 100)
    lines = [title, textwrap.fill(why["why"], width, initial_indent="  ", subsequent_indent="  ")]
    for link in reversed(why.get("lineage", [])):
        reason = f": {truncate(link['reason'], 80)}" if link["reason"] else ""
        lines.append(f"  (this run was forked from run {link['run']} at seq {link['seq']}{reason})")
    if why["observations"]:
        lines += ["", "observations", *(f"  - {printable(o)}" for o in why["observations"])]
    if why["patch"]:
        ops = "; ".join(_patch_op(op) for op in why["patch"]["operations"])
        lines += ["", f"patch on v{why['patch']['base_version']}: {ops}"]
    lines += ["", "caused by"]
    lines += [
        f"  seq {c['seq']} · {_when(c['ts'])} · {c['actor']} · {c['type']} (plan v{c['plan_version']})\n"
        f"    {printable(c['summary']) if 'summary' in c else _quote_data(c['data'])}"
        for c in why["causes"]
    ]
    lines += [f"  {printable(p['summary'])}" for p in why.get("parent_causes", [])]
    if not why["causes"] and not why.get("parent_causes"):
        lines.append("  (no causing event recorded)")
    lines += ["", f"what changed from v{why['replaced']}"]
    lines += _render_diff(why["changes"])
    lines += ["", f"late results for v{why['replaced']} (kept off the plan)"]
    lines += [
        f"  seq {o['seq']} · {o['type']} {o['step']} attempt {o['attempt']} · {o['why']} · "
        f"{truncate('; '.join(o['evidence']) or o['reason'], 100)}"
        for o in why["late_results"]
    ] or ["  (none)"]
    return "\n".join(lines)


def _patch_op(op: dict[str, Any]) -> str:
    """One patch operation in words: its name and the step or criterion it touches."""
    item = op["step"] or op["criterion"] or {}
    subject = op["step_id"] or op["criterion_id"] or item.get("id") or ""
    return f"{op['op']} {subject}".rstrip()


def _quote_data(data: dict[str, Any]) -> str:
    import orjson

    return orjson.dumps(data).decode()


@click.command()
@log_argument
@click.option(
    "--version",
    "version",
    type=click.IntRange(min=2),
    metavar="V",
    help="Explain the replan that created version V (default: the latest replan).",
)
@layout_options
@json_option
def why(log: str, version: int | None, as_json: bool) -> None:
    """The audit of a replan: reason code, why, actor, the causing events quoted in full, what changed, what
    work was kept, and the late results that arrived for the version it replaced.

    \b
    JSON: {"version", "replaced", "seq", "ts", "actor", "reason", "why", "observations",
      "patch": null | {"base_version", "operations": [...]}, "causes": [{"seq", "ts", "actor", "type",
      "plan_version", "data", "h", "source"?, "summary"? (a run.forked: one line; its data without the carried
      state)}], "parent_causes": [{"run", "seq", "summary"}] (a fork's causes in the run it was forked from,
      told from the state it carries), "changes": <diff --json of the two versions>,
      "late_results": [<orphans --json item without status_now>], "lineage": [{"run", "seq", "head",
      "state_hash", "reason"}] (the runs a fork was forked from; empty for a run never forked)}

    \b
    Example:
      plantrail why samples/login-fix-replans.jsonl --version 2
    """
    from plantrail.ledger.audit import read_why

    reading = read_why(log, version)
    emit(as_json, reading.document, lambda: _render_why(reading.document))
    _raise_damage(reading)


# --------------------------------------------------------------------------- orphans


def _render_orphans(state: PlanState, orphans: list[dict[str, Any]]) -> str:
    rows = [
        [
            str(o["seq"]),
            o["step"],
            o["type"].removeprefix("step."),
            f"v{o['plan_version']} attempt {o['attempt']}",
            f"v{o['active_version']}",
            o["why"] if o.get("adopted") is None else f"{o['why']}, adopted at seq {o['adopted']}",
            o["status_now"] or "not in plan",
            "; ".join(o["evidence"]) or o["reason"] or "",
        ]
        for o in orphans
    ]
    header = ["SEQ", "STEP", "RESULT", "STAMPED", "ARRIVED", "WHY", "STEP NOW", "EVIDENCE / REASON"]
    count = _plural(len(orphans), "late result", "late results")
    adopted = sum(1 for o in orphans if o.get("adopted") is not None)
    if adopted:
        applied = f"{adopted} taken into the plan by plantrail adopt, the others never applied"
    else:
        applied = "none applied to the plan"
    summary = f"{count} in run {state.run}, {applied} (active v{state.version})"
    if any(o["why"] == "AMBIGUOUS_ATTEMPT" for o in orphans):
        summary += (
            "\nAMBIGUOUS_ATTEMPT: the result named no attempt while more than one could be its own; a worker names "
            "its attempt with --started-seq"
        )
    return f"{table(header, rows)}\n\n{summary}"


@click.command()
@log_argument
@layout_options
@json_option
def orphans(log: str, as_json: bool) -> None:
    """Late results: completions, blocks and failures stamped with a superseded version or a stale attempt,
    arriving after the run finished, or naming no attempt when more than one could be theirs. They are in the
    log, never lost, and never applied to the plan (plantrail adopt takes a late completion into it when its
    step's contract is unchanged).

    \b
    JSON: {"run", "active_version", "orphans": [{"seq", "type", "step", "plan_version", "attempt",
      "active_version", "why", "evidence", "reason", "adopted", "status_now"}]}
      (why: SUPERSEDED_VERSION | STALE_ATTEMPT | RUN_FINISHED | AMBIGUOUS_ATTEMPT; adopted: the seq of the
      step.adopted that took a late completion into the plan, else null; status_now: the step's status in the
      active version, null when it has no such step)

    \b
    Example:
      plantrail orphans samples/login-fix-replans.jsonl
    """
    from plantrail.ledger.audit import read_orphans

    reading = read_orphans(log)
    emit(as_json, reading.document, lambda: _render_orphans(reading.state, reading.document["orphans"]))
    _raise_damage(reading)


# --------------------------------------------------------------------------- resume


#: How many items of each kind the resume receipt shows before it summarises the rest (``--all`` shows all).
_RESUME_SHOWN: Final = 5


def _first(items: Sequence[Any], show_all: bool) -> tuple[Sequence[Any], str | None]:
    """The items to show, and the line that counts the others (None when every item is shown)."""
    if show_all or len(items) <= _RESUME_SHOWN:
        return items, None
    return items[:_RESUME_SHOWN], f"  ... and {len(items) - _RESUME_SHOWN} more (--all shows every one)"


def _lineage_lines(receipt: dict[str, Any], show_all: bool) -> list[str]:
    """The resume lines of format v2 lineage: stale steps, attempts to cancel, a possibly stale plan."""
    lines: list[str] = []
    if receipt.get("stale"):
        stale, more = _first(receipt["stale"], show_all)
        lines.append(f"stale ({len(receipt['stale'])}): an input changed")
        lines += _aligned([[s["step"], truncate(s["reason"] or "", 70)] for s in stale])
        lines += [more] if more else []
    if receipt.get("cancel"):
        lines.append(f"cancel ({len(receipt['cancel'])}): an input changed under them; end each with abandon")
        lines += _aligned([[c["step"], f"attempt {c['attempt']}"] for c in receipt["cancel"]])
    from plantrail.cli.inspect import possibly_stale_lines

    return lines + possibly_stale_lines(receipt)


def _ids(label: str, ids: Sequence[str], show_all: bool) -> str:
    """``label (n): a, b, c`` with at most _RESUME_SHOWN ids unless ``show_all``."""
    shown, more = _first(ids, show_all)
    rest = f", ... {len(ids) - len(shown)} more" if more else ""
    return f"{label} ({len(ids)}): {', '.join(shown) or '(none)'}{rest}"


def _torn_lines(receipt: dict[str, Any]) -> list[str]:
    """What the torn tail and each quarantine file read as (records a crash cut short, not in the log)."""
    lines: list[str] = []
    if receipt.get("torn"):
        lines.append("torn tail (not in the log; plantrail repair moves it aside), reads as:")
        lines += [f"  {truncate(r['summary'], 110)}" for r in receipt["torn"]]
    for q in receipt.get("quarantined") or []:
        lines.append(
            f"quarantined by a repair ({q['file']}: {q['bytes']} bytes cut at offset {q['offset']}), reads as:"
        )
        lines += [f"  {truncate(r['summary'], 110)}" for r in q["records"]] or ["  (nothing)"]
    return lines


def _render_receipt(receipt: dict[str, Any], code: int, show_all: bool = False) -> str:
    outcome = receipt["outcome"] or "open"
    lines = [
        f"run {receipt['run']} · plan v{receipt['plan_version']} · {outcome} · last seq {receipt['last_seq']}",
        f"verdict: {receipt['verdict']} (exit {code})",
        f"next: {receipt['next']}",
        "",
        f"done ({len(receipt['done'])})",
    ]
    done, more = _first(receipt["done"], show_all)
    lines += _aligned(
        [[d["step"], f"attempt {d['attempt']}", truncate("; ".join(d["evidence"]), 70)] for d in done]
    ) or ["  (none)"]
    lines += [more] if more else []
    lines += [f"in doubt ({len(receipt['in_doubt'])}): started, no result"]
    doubt, more = _first(receipt["in_doubt"], show_all)
    lines += _aligned(
        [[d["step"], f"attempt {d['attempt']}", f"started at seq {d['started_seq']}"] for d in doubt]
    ) or ["  (none)"]
    lines += [
        f"  {d['step']} attempt {d['attempt']}: a result of it was cut off by a crash (below); check what the "
        "worker did before starting it again"
        for d in doubt
        if d.get("cut_off")
    ]
    lines += [more] if more else []
    lines += _torn_lines(receipt)
    from plantrail.cli.inspect import lease_lines

    lines += lease_lines(receipt["leases"])
    lines.append(_ids("ready", receipt["ready"], show_all))
    if receipt["blocked"]:
        blocked, more = _first(receipt["blocked"], show_all)
        lines.append(f"blocked ({len(receipt['blocked'])})")
        lines += _aligned([[b["step"], truncate(b["reason"], 70)] for b in blocked])
        lines += [more] if more else []
    lines += _lineage_lines(receipt, show_all)
    lines.append(_ids("criteria unverified", receipt["criteria_unverified"], show_all))
    if receipt["criteria_failed"]:
        lines.append(_ids("criteria failed", receipt["criteria_failed"], show_all))
    if receipt["orphans"]:
        count = _plural(len(receipt["orphans"]), "late result", "late results")
        adopted = sum(1 for o in receipt["orphans"] if o.get("adopted") is not None)
        applied = f"{adopted} adopted, the others never applied" if adopted else "none applied"
        lines.append(f"orphans: {count}, {applied} (plantrail orphans LOG)")
    from plantrail.cli.effects import effect_lines

    effects = receipt["effects"]
    lines += effect_lines("effects in doubt: requested, never known committed (check the target)", effects["in_doubt"])
    lines += effect_lines("effects of superseded attempts, never known committed", effects["superseded"])
    lines += effect_lines("effects committed", effects["committed"])
    if receipt["advice"]:
        lines.append(f"advice: replan with --reason {receipt['advice']}")
    return "\n".join(lines)


@click.command()
@log_argument
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help=f"List every step and criterion (by default a big plan shows counts and the first {_RESUME_SHOWN} of each).",
)
@click.option(
    "--verify",
    "every_byte",
    is_flag=True,
    help="Read and check every byte of the log instead of starting from the cache's snapshot.",
)
@layout_options
@verbose_option
@json_option
@click.pass_context
def resume(ctx: click.Context, log: str, show_all: bool, every_byte: bool, as_json: bool) -> None:
    """The resume receipt after a crash: is the run finished (and how), the active version, steps done, steps
    in doubt (started, no result) with their attempt, late results, the next ready steps, criteria still
    unverified, and whether the log needs a repair first. Read-only. A big plan is summarised: each kind
    with its count and its first few items (--all lists every one; --json always holds them all).

    \b
    Exit codes (a supervisor script can branch on them; the first that applies wins):
      3   the log is damaged or has a torn tail: repair first (the receipt of the valid part is printed)
      13  the run finished (complete, failed or cancelled)
      16  the run finished partial: the receipt's next says where a continuation resumes
      15  the run finished budget_exhausted (the unmet checks are listed)
      10  steps in doubt: check whether their work happened before continuing (abandon those whose lease
          expired: their worker is gone); or a ready step has side effects never known committed: check
          their targets before it starts again
      14  the stop policy says failed: the same failure repeated (no progress); replan or finish
      15  the stop policy says budget_exhausted: a budget or the deadline is spent; replan or finish
      12  the run is paused
      11  no step can start: replan (the advice is printed)
      0   open and can continue
      4   the log cannot be read

    \b
    JSON: {"verdict": "damaged|finished|partial|in_doubt|failed|budget_exhausted|paused|stuck|continue",
      "exit_code",
      "next", "run",
      "goal", "plan_version", "finished", "outcome", "outcome_reason", "done": [{"step", "attempt",
      "evidence", "completed_seq"}], "in_doubt": [{"step", "attempt", "started_seq", "lease_expired",
      "cut_off": null | what a torn or quarantined result of that attempt reads as}],
      "leases": [{"step", "attempt", "since", "since_seq", "lease_s", "expires_at", "expired"}], "ready",
      "blocked": [{"step", "reason"}], "criteria_unverified", "criteria_failed", "orphans": [...],
      "advice", "last_seq", "head_hash", "damage": null | {"code", "message", ...},
      "snapshot_seq": null | the seq up to which the cache's snapshot answered (not re-read; --verify
      reads every byte and gives null),
      "torn": [{"whole", "length", "seq", "type", "plan_version", "ts", "actor", "step", "attempt",
      "criterion", "verdict", "outcome", "new_version", "part", "summary"}]: what a torn tail reads as,
      "quarantined": [{"file", "offset", "bytes", "records": [as in torn]}]: the repairs' quarantine files,
      "stop": {"outcome", "rule", "reason", "unmet"},
      "effects": {"in_doubt", "superseded", "committed": [{"key", "step", "status", "target", "before",
      "plan_version", "attempt", "requested_seq", "late", "earlier_seqs", "committed_seq", "result",
      "commit_late"}]}}

    \b
    Example:
      plantrail resume --verify run.jsonl; case $? in 0) ;; 10) echo "check steps in doubt" ;; esac
    """
    from plantrail.ledger.audit import read_resume

    reading = read_resume(log, every_byte=every_byte)
    receipt = reading.document
    code = receipt["exit_code"]
    emit(
        as_json,
        receipt,
        lambda: with_times_note(log, _render_receipt(receipt, code, show_all)) + snapshot_note(receipt["snapshot_seq"]),
    )
    if reading.damage is not None:
        click.echo(f"error[{reading.damage.code}]: {printable(reading.damage.text('cli'))}", err=True)
    ctx.exit(code)


def _raise_damage(reading: Reading) -> None:
    """After printing what the valid part says, report what cut the read short (TORN_TAIL, exit 3)."""
    if reading.damage is not None:
        raise reading.damage


replay_commands = (versions, replay, diff, why, orphans, resume)
