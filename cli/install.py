"""``plantrail install AGENT`` / ``plantrail uninstall AGENT``: the plan server and, where plantrail reads the
agent's hooks, the hooks, in each agent's own configuration files.

Everything installed runs the absolute path of the ``plantrail`` that ran the install (:func:`running_command`),
so an agent that starts hooks or servers with a bare PATH still finds it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from plantrail.cli.common import emit, json_option

if TYPE_CHECKING:
    from plantrail.ledger.capture.install import InstallReport

__all__ = ["install", "running_command", "uninstall"]

_SCOPE = click.option(
    "--project/--user",
    "project",
    default=True,
    help="This project's configuration (the default) or your own, in your home folder.",
)
_SETTINGS = click.option(
    "--settings",
    "settings",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Another settings file for the hooks (e.g. .claude/settings.local.json) instead of --project or --user.",
)
_PLUGIN = click.option(
    "--plugin",
    is_flag=True,
    help="Only record this plantrail for the Claude Code plugin's launcher (the plugin brings its own hooks).",
)

#: What each agent gets besides the plan server, said to the user.
_NOTES = {
    "codex": "Codex's plan tool reaches no hook, so only the plan server was installed; the model keeps its plan "
    "there.",
    "cursor": "plantrail reads no Cursor hooks, so only the plan server was installed; the model keeps its plan there.",
    "opencode": "OpenCode loads its plugins when it starts: start it again to record its todo list.",
}


def running_command() -> tuple[str, ...]:
    """The absolute command of the ``plantrail`` running now: its console script when that is how it was
    started, else this Python with ``-m plantrail``."""
    started = sys.argv[0] if sys.argv else ""
    if os.path.basename(started) == "plantrail" and os.path.isfile(started):
        return (os.path.abspath(started),)
    return (os.path.abspath(sys.executable), "-m", "plantrail")


def _scope(project: bool) -> str:
    return "project" if project else "user"


def _render(reports: Sequence[InstallReport], verb: str, note: str | None) -> str:
    lines = []
    for report in reports:
        if not report.changed:
            lines.append(f"{report.settings}: nothing to {verb}")
            continue
        lines.append(f"{report.settings}: {verb}ed plantrail's {', '.join(report.changed)}")
        if report.backup is not None:
            lines.append(f"the file as it was: {report.backup}")
    if note and verb == "add":
        lines.append(note)
    return "\n".join(lines)


def _data(agent: str, reports: Sequence[InstallReport], note: str | None, command: Sequence[str]) -> dict[str, object]:
    files = [{"file": r.settings, "changed": list(r.changed), "backup": r.backup} for r in reports]
    return {"ok": True, "agent": agent, "command": list(command), "files": files, "note": note}


def _emit(agent: str, as_json: bool, verb: str, reports: Sequence[InstallReport], command: Sequence[str] = ()) -> None:
    note = _NOTES.get(agent)
    data = _data(agent, reports, note, command)
    if agent == "claude" and reports:  # the hooks' settings file, as earlier releases answered
        data |= {"settings": reports[0].settings, "changed": list(reports[0].changed), "backup": reports[0].backup}
    emit(as_json, data, lambda: _render(reports, verb, note))


@click.group()
def install() -> None:
    """Install an agent integration: the plan server, and the hooks where plantrail reads them (see
    docs/live-agents.md).

    \b
    Example:
      plantrail install claude --project
      plantrail install codex --user
    """


@click.group()
def uninstall() -> None:
    """Remove an agent integration that install added.

    \b
    Example:
      plantrail uninstall claude --project
    """


@install.command(name="claude")
@_SCOPE
@_SETTINGS
@_PLUGIN
@json_option
def install_claude_command(project: bool, settings: Path | None, plugin: bool, as_json: bool) -> None:
    """Merge the plan hooks into a Claude Code settings file and the plan server into its MCP file (.mcp.json;
    ~/.claude.json with --user), both running this plantrail by its absolute path.

    The files as they were are kept beside them (.plantrail-backup); a file that is not JSON is refused and left
    alone. With --plugin, only record this plantrail for the plugin's launcher.

    \b
    Example:
      plantrail install claude --project
      plantrail install claude --user
      plantrail install claude --plugin
    """
    from plantrail.ledger.capture.install import install_claude, record_plugin_command, settings_path
    from plantrail.ledger.capture.servers import config_path, install_server

    command = running_command()
    if plugin:
        _emit("claude-plugin", as_json, "add", [record_plugin_command(command)], command)
        return
    hooks = settings if settings is not None else settings_path(_scope(project))
    server = _claude_servers(settings) if settings is not None else config_path("claude", _scope(project))
    _emit(
        "claude", as_json, "add", [install_claude(hooks, command), install_server(server, "claude", command)], command
    )


@uninstall.command(name="claude")
@_SCOPE
@_SETTINGS
@_PLUGIN
@json_option
def uninstall_claude_command(project: bool, settings: Path | None, plugin: bool, as_json: bool) -> None:
    """Remove exactly what install added: the hooks from a Claude Code settings file, the plan server from its
    MCP file (with --plugin: the plantrail recorded for the plugin).

    \b
    Example:
      plantrail uninstall claude --project
    """
    from plantrail.ledger.capture.install import forget_plugin_command, settings_path, uninstall_claude
    from plantrail.ledger.capture.servers import config_path, uninstall_server

    if plugin:
        _emit("claude-plugin", as_json, "remov", [forget_plugin_command()])
        return
    hooks = settings if settings is not None else settings_path(_scope(project))
    server = _claude_servers(settings) if settings is not None else config_path("claude", _scope(project))
    _emit("claude", as_json, "remov", [uninstall_claude(hooks), uninstall_server(server, "claude")])


def _claude_servers(settings: Path) -> Path:
    """The project's .mcp.json for a settings file named by hand: beside its ``.claude`` folder, else beside it."""
    folder = settings.parent
    return (folder.parent if folder.name == ".claude" else folder) / ".mcp.json"


def _agent(name: str, title: str, where: str) -> None:
    """``install NAME`` and ``uninstall NAME`` for an agent whose plan server (and Gemini's hooks, OpenCode's
    plugin) install writes."""

    def installing(project: bool, as_json: bool) -> None:
        command = running_command()
        _emit(name, as_json, "add", _installers()[name][0](_scope(project), command), command)

    def removing(project: bool, as_json: bool) -> None:
        _emit(name, as_json, "remov", _installers()[name][1](_scope(project)))

    installing.__doc__ = (
        f"Write the plan server into {title}'s configuration ({where}), running this plantrail by its absolute "
        "path; the file as it was is kept beside it, a file it cannot read is refused and left alone.\n\n"
        f"\b\nExample:\n  plantrail install {name} --project"
    )
    removing.__doc__ = (
        f"Remove what install wrote into {title}'s configuration.\n\n\b\nExample:\n  plantrail uninstall {name}"
    )
    install.command(name=name)(_SCOPE(json_option(installing)))
    uninstall.command(name=name)(_SCOPE(json_option(removing)))


#: Install into a scope (``project``, ``user``) running a command; uninstall from a scope: the files' reports.
_Installing = Callable[[str, Sequence[str]], Sequence["InstallReport"]]
_Removing = Callable[[str], Sequence["InstallReport"]]


def _installers() -> dict[str, tuple[_Installing, _Removing]]:
    from functools import partial

    from plantrail.ledger.capture.codex_config import install_codex, uninstall_codex
    from plantrail.ledger.capture.servers import install_gemini, uninstall_gemini

    return {
        "codex": (partial(_one, "codex", install_codex), partial(_one_removed, "codex", uninstall_codex)),
        "gemini": (partial(_one, "gemini", install_gemini), partial(_one_removed, "gemini", uninstall_gemini)),
        "cursor": (partial(_server, "cursor"), partial(_server_removed, "cursor")),
        "opencode": (_opencode, _opencode_removed),
    }


def _one(
    agent: str, installing: Callable[[Path, Sequence[str]], InstallReport], scope: str, command: Sequence[str]
) -> list[InstallReport]:
    from plantrail.ledger.capture.servers import config_path

    return [installing(config_path(agent, scope), command)]


def _one_removed(agent: str, removing: Callable[[Path], InstallReport], scope: str) -> list[InstallReport]:
    from plantrail.ledger.capture.servers import config_path

    return [removing(config_path(agent, scope))]


def _server(agent: str, scope: str, command: Sequence[str]) -> list[InstallReport]:
    from plantrail.ledger.capture.servers import config_path, install_server

    return [install_server(config_path(agent, scope), agent, command)]


def _server_removed(agent: str, scope: str) -> list[InstallReport]:
    from plantrail.ledger.capture.servers import config_path, uninstall_server

    return [uninstall_server(config_path(agent, scope), agent)]


def _opencode(scope: str, command: Sequence[str]) -> list[InstallReport]:
    """The plan server into opencode.json and the plugin file, both running ``command``; a plugin file of the
    user's is refused (PLUGIN_EXISTS) before either is written."""
    from plantrail.ledger.capture.opencode_plugin import check_plugin, install_opencode_plugin, plugin_path

    plugin = plugin_path(scope)
    check_plugin(plugin)
    return [*_server("opencode", scope, command), install_opencode_plugin(plugin, command)]


def _opencode_removed(scope: str) -> list[InstallReport]:
    from plantrail.ledger.capture.opencode_plugin import plugin_path, uninstall_opencode_plugin

    return [*_server_removed("opencode", scope), uninstall_opencode_plugin(plugin_path(scope))]


_agent("codex", "Codex", ".codex/config.toml; ~/.codex/config.toml with --user")
_agent("gemini", "Gemini CLI", ".gemini/settings.json, with the plan hooks; ~/.gemini/settings.json with --user")
_agent("cursor", "Cursor", ".cursor/mcp.json; ~/.cursor/mcp.json with --user")
_agent(
    "opencode",
    "OpenCode",
    "opencode.json, and the plugin that records its todo list, .opencode/plugins/plantrail.ts, never over a "
    "plugin file of your own; both under ~/.config/opencode/ with --user, or $XDG_CONFIG_HOME/opencode/ when set",
)
