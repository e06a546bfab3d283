"""``plantrail install claude`` / ``plantrail uninstall claude``: the plan hooks in a Claude Code settings file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from plantrail.cli.common import emit, json_option

if TYPE_CHECKING:
    from plantrail.ledger.capture.install import InstallReport

__all__ = ["install", "uninstall"]

_SCOPE = click.option(
    "--project/--user",
    "project",
    default=True,
    help="This project's .claude/settings.json (the default) or your ~/.claude/settings.json.",
)
_SETTINGS = click.option(
    "--settings",
    "settings",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Another settings file (e.g. .claude/settings.local.json) instead of --project or --user.",
)


def _path(project: bool, settings: Path | None) -> Path:
    from plantrail.ledger.capture.install import settings_path

    return settings if settings is not None else settings_path("project" if project else "user")


def _render(report: InstallReport, verb: str) -> str:
    if not report.changed:
        return f"{report.settings}: nothing to {verb}"
    lines = [f"{report.settings}: {verb}ed the plantrail hooks for {', '.join(report.changed)}"]
    if report.backup is not None:
        lines.append(f"the file as it was: {report.backup}")
    return "\n".join(lines)


def _data(report: InstallReport) -> dict[str, object]:
    return {"ok": True, "settings": report.settings, "changed": list(report.changed), "backup": report.backup}


@click.group()
def install() -> None:
    """Install an agent integration (see docs/live-agents.md).

    \b
    Example:
      plantrail install claude --project
    """


@install.command(name="claude")
@_SCOPE
@_SETTINGS
@json_option
def install_claude_command(project: bool, settings: Path | None, as_json: bool) -> None:
    """Merge the plugin's hooks (plantrail hook claude) into a Claude Code settings file, keeping what is there.

    The file as it was is kept beside it (.plantrail-backup); a file that is not JSON is refused and left alone.

    \b
    Example:
      plantrail install claude --project
      plantrail install claude --user
    """
    from plantrail.ledger.capture.install import install_claude

    report = install_claude(_path(project, settings))
    emit(as_json, _data(report), lambda: _render(report, "add"))


@click.group()
def uninstall() -> None:
    """Remove an agent integration that install added.

    \b
    Example:
      plantrail uninstall claude --project
    """


@uninstall.command(name="claude")
@_SCOPE
@_SETTINGS
@json_option
def uninstall_claude_command(project: bool, settings: Path | None, as_json: bool) -> None:
    """Remove exactly the hooks install added from a Claude Code settings file.

    \b
    Example:
      plantrail uninstall claude --project
    """
    from plantrail.ledger.capture.install import uninstall_claude

    report = uninstall_claude(_path(project, settings))
    emit(as_json, _data(report), lambda: _render(report, "remov"))
