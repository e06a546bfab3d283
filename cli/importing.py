"""``plantrail import``: an agent transcript (Claude Code, Codex, OpenCode, Cline, Gemini CLI) into a new log."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from plantrail.cli.common import emit, json_option, locate_log, signing_options, store_option
from plantrail.cli.terminal import printable, screen

if TYPE_CHECKING:
    from plantrail.ledger.capture.append import AppendReport
    from plantrail.ledger.importers.importer import FileReport, ImportReport

__all__ = ["import_command", "import_data", "render_append", "render_report"]


def render_append(report: AppendReport) -> str:
    """One append's summary: updates found, already recorded, appended (events), and any refused."""
    made = "created" if report.created else "extended"
    lines = [
        f"{made} {report.log}: {report.updates_appended} new plan update(s), {report.events_written} event(s) "
        f"written; {report.updates_recorded} of {report.plan_updates} plan update(s) were already recorded",
        *(f"  refused {r.identity}: error[{r.code}]: {r.message}" for r in report.refused),
    ]
    if report.head_hash is not None:
        lines.append(f"anchor: {report.last_seq}:{report.head_hash}")
    return "\n".join(lines)


def import_data(report: ImportReport) -> dict[str, object]:
    """The JSON of an import: every figure of the report, ``files`` (each file's part, the lead's first) and
    ``total`` (the same figures for the whole log)."""
    total = {
        "lines_read": report.lines_read,
        "plan_updates": report.plan_updates,
        "items": report.items,
        "versions": report.versions,
        "extensions": report.extensions,
        "events_written": report.events_written,
        "events_inferred": report.events_inferred,
        "skipped": report.skipped,
    }
    files = [part._asdict() for part in report.files]
    return {
        "ok": True,
        **report._asdict(),
        "files": files,
        "total": total,
        "anchor": f"{report.last_seq}:{report.head_hash}",
    }


def _append_data(report: AppendReport) -> dict[str, object]:
    return {
        "ok": True,
        "log": report.log,
        "run": report.run,
        "created": report.created,
        "plan_updates": report.plan_updates,
        "updates_recorded": report.updates_recorded,
        "updates_appended": report.updates_appended,
        "events_written": report.events_written,
        "refused": [{"identity": r.identity, "code": r.code, "message": r.message} for r in report.refused],
        "last_seq": report.last_seq,
        "head_hash": report.head_hash,
    }


def _file_lines(part: FileReport) -> list[str]:
    """One file's part of the import: what it wrote, then what it could not map, by reason."""
    extended = f", {part.extensions} extended in place" if part.extensions else ""
    return [
        f"  {part.file}: {part.plan_updates} plan update(s), {part.items} item(s), {part.versions} version(s)"
        f"{extended}, {part.events_written} event(s) written ({part.events_inferred} inferred); "
        f"{part.lines_read} line(s) read",
        *(f"    could not map {count} {reason}" for reason, count in part.skipped.items()),
    ]


def render_report(report: ImportReport) -> str:
    """The human summary of an import: what was read, what was written, what was inferred or skipped, for each
    file (the lead's, each merged subagent's), then in total."""
    lines = [
        f"imported {report.format} transcript {report.transcripts[0]} -> {report.log}",
        *(f"  with subagent file {path}" for path in report.transcripts[1:]),
        f"run {report.run} · last seq {report.last_seq}",
        f"anchor: {report.last_seq}:{report.head_hash}",
        "per file",
        *(line for part in report.files for line in _file_lines(part)),
        "total",
        f"  plan updates seen  {report.plan_updates}",
        f"  items              {report.items}",
        f"  versions made      {report.versions}",
        f"  extended in place  {report.extensions}",
        f"  steps completed    {report.steps_completed}",
        f"  events written     {report.events_written} ({report.events_inferred} inferred)",
        f"  max in progress    {report.max_in_progress}",
        f"  lines read         {report.lines_read} ({report.lines_skipped} skipped)",
        *(f"    skipped {count} {reason}" for reason, count in report.skipped.items()),
    ]
    if report.untimed_events:
        lines.append(
            f"note: the transcript gives no time for {report.untimed_events} of the events; they are stamped "
            "1970-01-01T00:00:00Z plus their line number, and their source has no timestamp"
        )
    if report.subagent_files:
        lines.append(
            f"note: {len(report.subagent_files)} subagent file(s) beside it were not imported; "
            "add --with-subagents to merge them into this log"
        )
    return "\n".join(lines)


@click.command(name="import")
@click.argument("transcript", type=click.Path(path_type=str))
@click.option(
    "-o",
    "--output",
    "log",
    required=True,
    metavar="LOG",
    type=click.Path(dir_okay=False, path_type=str),
    help="The plantrail log to write (refused if it exists, unless --force): a path, a postgresql://…/db#RUN "
    "URL, or a run id in --store.",
)
@click.option(
    "--format",
    "format_name",
    metavar="NAME",
    help=(
        "claude-code, codex, opencode, cline, gemini, gemini-jsonl, gemini-share or opencode-markdown, or a "
        "dialect's own name: claude-code-plan-mode, codex-plan-mode, codex-legacy, cline-text (default: "
        "detected from the file)."
    ),
)
@click.option(
    "--with-subagents",
    is_flag=True,
    help="Claude Code: merge the subagent files beside the lead's transcript into the same log.",
)
@click.option("--run", "run_id", metavar="ID", help="The run id (default: the transcript's session id).")
@click.option("--force", is_flag=True, help="Replace LOG if it exists (written aside, then renamed).")
@click.option(
    "--append",
    is_flag=True,
    help="Extend LOG (created if missing) with the plan updates it does not hold yet, recognised by the "
    "transcript's own ids; nothing is recorded twice.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Like --append, again each time the transcript grows (a live Codex rollout); Ctrl-C stops (exit 0).",
)
@store_option
@signing_options
@json_option
def import_command(
    transcript: str,
    log: str,
    store: str | None,
    format_name: str | None,
    with_subagents: bool,
    run_id: str | None,
    force: bool,
    append: bool,
    follow: bool,
    as_json: bool,
) -> None:
    """Turn an agent transcript into a plantrail log that status, log, verify and replay can read.

    Each whole-list plan update (TodoWrite, update_plan, todowrite, write_todos, a Cline checklist, a
    Markdown plan of ExitPlanMode or Codex Plan Mode) or task change (TaskCreate, TaskUpdate) becomes plan
    versions and step events, citing the transcript line it came
    from; events the agent never emitted are marked inferred. The same transcript always gives the same
    bytes.

    With --append the log is extended instead (created when missing) with the updates it does not hold
    yet; --follow does so each time the file grows, until Ctrl-C.

    \b
    Example:
      plantrail import samples/claude-session.jsonl -o session.plantrail.jsonl
      plantrail status session.plantrail.jsonl
      plantrail import --follow ~/.codex/sessions/2026/12/01/rollout-1.jsonl -o run.jsonl
      plantrail import session.jsonl -o login-fix --store postgresql://localhost/plantrail
    """
    log = locate_log(log, store, new=True)
    if append or follow:
        _extend(transcript, log, format_name, with_subagents, run_id, force, follow, as_json)
        return
    from plantrail.cli.progress import progress_bar, size_of
    from plantrail.ledger.importers.importer import import_transcript

    with progress_bar("import", size_of(transcript), enabled=not as_json) as shown:
        report = import_transcript(
            transcript,
            log,
            format_name,
            with_subagents=with_subagents,
            run=run_id,
            force=force,
            on_progress=shown,
        )
    emit(as_json, import_data(report), lambda: render_report(report))


def _extend(
    transcript: str,
    log: str,
    format_name: str | None,
    with_subagents: bool,
    run_id: str | None,
    force: bool,
    follow: bool,
    as_json: bool,
) -> None:
    """--append and --follow: one append, or one per change of the file until Ctrl-C."""
    from plantrail.ledger.vocabulary.errors import error

    if force:
        raise error("USAGE", "--force replaces a log; --append and --follow extend one (give one or the other)")
    if not follow:
        from plantrail.ledger.capture.append import append_transcript

        report = append_transcript(transcript, log, format_name, with_subagents=with_subagents, run=run_id)
        emit(as_json, _append_data(report), lambda: render_append(report))
        return
    if with_subagents:
        raise error("USAGE", "--follow follows one file; import --append --with-subagents once the session ends")
    from plantrail.ledger.capture.follow import follow_transcript

    def shown(report: AppendReport) -> None:
        if report.updates_appended or report.refused:
            text = json.dumps(_append_data(report)) if as_json else screen(render_append(report))
            click.echo(text)

    try:
        _follow_through_repairs(lambda: follow_transcript(transcript, log, format_name, run=run_id, on_append=shown))
    except KeyboardInterrupt:
        if not as_json:
            click.echo(f"stopped following {transcript}", err=True)


def _follow_through_repairs(follow: Callable[[], object]) -> None:
    """Run ``follow`` (it appends until Ctrl-C); while the log ends with a torn tail (a writer refuses to append
    onto one), say so once and wait for its repair, then follow again: what was not appended yet is appended
    then, nothing twice."""
    import time

    from plantrail.ledger.capture.follow import POLL_SECONDS
    from plantrail.ledger.vocabulary.errors import PlantrailError

    told: object = None  # the tear said (where it starts): each tear is said once
    while True:
        try:
            follow()
            return
        except PlantrailError as exc:
            if exc.code != "TORN_TAIL":
                raise
            if exc.fields.get("offset") != told:
                click.echo(f"waiting: {printable(exc.text('cli'))}; the import goes on once it is repaired", err=True)
            told = exc.fields.get("offset")
        time.sleep(POLL_SECONDS)
