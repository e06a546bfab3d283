"""``plantrail import``: an agent transcript (Claude Code, Codex, OpenCode, Cline, Gemini CLI) into a new log."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from plantrail.cli.common import emit, json_option

if TYPE_CHECKING:
    from plantrail.ledger.importers.importer import ImportReport

__all__ = ["import_command", "render_report"]


def render_report(report: ImportReport) -> str:
    """The human summary of an import: what was read, what was written, what was inferred or skipped."""
    lines = [
        f"imported {report.format} transcript {report.transcripts[0]} -> {report.log}",
        *(f"  with subagent file {path}" for path in report.transcripts[1:]),
        f"run {report.run} · last seq {report.last_seq}",
        f"anchor: {report.last_seq}:{report.head_hash}",
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
    help="The plantrail log to write (refused if it exists, unless --force).",
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
@json_option
def import_command(
    transcript: str,
    log: str,
    format_name: str | None,
    with_subagents: bool,
    run_id: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Turn an agent transcript into a plantrail log that status, log, verify and replay can read.

    Each whole-list plan update (TodoWrite, update_plan, todowrite, write_todos, a Cline checklist, a
    Markdown plan of ExitPlanMode or Codex Plan Mode) or task change (TaskCreate, TaskUpdate) becomes plan
    versions and step events, citing the transcript line it came
    from; events the agent never emitted are marked inferred. The same transcript always gives the same
    bytes.

    \b
    Example:
      plantrail import samples/claude-session.jsonl -o session.plantrail.jsonl
      plantrail status session.plantrail.jsonl
    """
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
    data = {"ok": True, **report._asdict(), "anchor": f"{report.last_seq}:{report.head_hash}"}
    emit(as_json, data, lambda: render_report(report))
