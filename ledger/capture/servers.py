"""The plan server (``plantrail mcp``) written into an agent's own configuration, and Gemini CLI's hooks.

    install_server(Path(".mcp.json"), "claude", ("/usr/local/bin/plantrail",)) -> InstallReport

Each agent keeps its MCP servers in its own file and shape:

==========  ===============================================  =========================================
agent       file (project; user)                             entry
==========  ===============================================  =========================================
claude      ``.mcp.json``; ``~/.claude.json``                ``mcpServers.plantrail``: command, args
gemini      ``.gemini/settings.json``; ``~/.gemini/…``       ``mcpServers.plantrail``: command, args
cursor      ``.cursor/mcp.json``; ``~/.cursor/mcp.json``     ``mcpServers.plantrail``: command, args
opencode    ``opencode.json``; ``~/.config/opencode/…`` (1)     ``mcp.plantrail``: type local, command list
codex       ``.codex/config.toml``; ``~/.codex/…``           ``[mcp_servers.plantrail]`` (:mod:`.codex_config`)
==========  ===============================================  =========================================

(1) ``$XDG_CONFIG_HOME/opencode/…`` when that is set to an absolute path, as OpenCode reads it.

The file is edited as ``install claude`` edits settings (:class:`.install.ConfigFile`: every other key kept, a
backup beside it, never through a planted link, a file that is not a JSON object refused with SETTINGS_INVALID
and left alone). The entry runs the absolute path of the ``plantrail`` that ran the install, so no PATH is
needed. An entry named ``plantrail`` that runs ``… mcp`` is ours: install replaces it when it differs (an
earlier install's path), uninstall removes it (and the servers' object when nothing else is in it).
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .install import ConfigFile, InstallReport, check_hooks, config_home, invalid, merged_hooks, without_hooks

__all__ = [
    "GEMINI_HOOK_EVENTS",
    "SERVER",
    "config_path",
    "gemini_hooks",
    "install_gemini",
    "install_server",
    "is_our_server",
    "server_entry",
    "uninstall_gemini",
    "uninstall_server",
]

SERVER = "plantrail"
#: agent -> (the project's file, the user's file under the home folder, the key of the servers' object)
_FILES: Mapping[str, tuple[str, str, str]] = {
    "claude": (".mcp.json", ".claude.json", "mcpServers"),
    "gemini": (".gemini/settings.json", ".gemini/settings.json", "mcpServers"),
    "cursor": (".cursor/mcp.json", ".cursor/mcp.json", "mcpServers"),
    "opencode": ("opencode.json", ".config/opencode/opencode.json", "mcp"),
    "codex": (".codex/config.toml", ".codex/config.toml", "mcp_servers"),
}
#: Gemini CLI's hook events plantrail records (the extension's ``hooks/hooks.json``), with their matcher and
#: what each says of itself.
GEMINI_HOOK_EVENTS: tuple[tuple[str, str | None, str], ...] = (
    ("AfterTool", "write_todos", "Record the agent's todo list in .plantrail/runs/<session id>.jsonl"),
    ("BeforeAgent", None, "Record the user's request (the goal of a new run)"),
    ("SessionStart", None, "Tell the model its run and where its plan stands"),
    ("PreCompress", None, "Record that the context was compressed"),
    ("SessionEnd", None, "Pause the run when the session ends"),
)


def config_path(agent: str, scope: str, cwd: Path | None = None, home: Path | None = None) -> Path:
    """The file holding ``agent``'s MCP servers for ``scope`` (``project``: under ``cwd``; ``user``)."""
    project, user, _ = _FILES[agent]
    if scope == "user":
        if agent == "opencode":  # OpenCode keeps its configuration under $XDG_CONFIG_HOME/opencode
            return config_home(home=home) / "opencode" / "opencode.json"
        return (home if home is not None else Path.home()) / user
    return (cwd if cwd is not None else Path.cwd()) / project


def server_entry(agent: str, command: Sequence[str]) -> dict[str, Any]:
    """The plan server's entry for ``agent``, running ``command`` (the program, then its leading arguments)."""
    if agent == "opencode":
        return {"type": "local", "command": [*command, "mcp"], "enabled": True}
    return {"command": command[0], "args": [*command[1:], "mcp"]}


def install_server(path: Path, agent: str, command: Sequence[str]) -> InstallReport:
    """Write the plan server's entry into ``agent``'s JSON file at ``path`` (created when missing)."""
    key = _FILES[agent][2]
    entry = server_entry(agent, command)
    with ConfigFile.open(path) as found:
        settings = found.read(lambda where, value: _check_servers(where, value, key))
        merged = copy.deepcopy(settings) if settings is not None else {}
        servers = merged.setdefault(key, {})
        if servers.get(SERVER) == entry:
            return InstallReport(str(path), (), None)
        servers[SERVER] = entry
        return found.write(merged, (f"{key}.{SERVER}",))


def uninstall_server(path: Path, agent: str) -> InstallReport:
    """Remove the plan server's entry install wrote (one named plantrail that runs ``… mcp``)."""
    key = _FILES[agent][2]
    with ConfigFile.open(path) as found:
        settings = found.read(lambda where, value: _check_servers(where, value, key))
        if settings is None or not is_our_server(settings.get(key, {}).get(SERVER)):
            return InstallReport(str(path), (), None)
        kept = copy.deepcopy(settings)
        del kept[key][SERVER]
        if not kept[key]:
            del kept[key]
        return found.write(kept, (f"{key}.{SERVER}",))


def is_our_server(entry: object) -> bool:
    """An entry that runs ``… mcp`` (a command and its args, or OpenCode's one command list)."""
    if not isinstance(entry, Mapping):
        return False
    command, args = entry.get("command"), entry.get("args")
    if isinstance(command, list):
        return bool(command) and command[-1] == "mcp"
    return isinstance(command, str) and isinstance(args, list) and args[-1:] == ["mcp"]


def _check_servers(path: Path, value: dict[str, Any], key: str) -> None:
    if not isinstance(value.get(key, {}), dict):
        invalid(path, key, "an object of servers")


# --------------------------------------------------------------------------- Gemini CLI's hooks


def gemini_hooks(command: Sequence[str] = ("plantrail",)) -> dict[str, list[dict[str, Any]]]:
    """Gemini CLI's hooks running ``command`` (Gemini runs a hook's command through a shell: each part quoted)."""
    line = " ".join(shlex.quote(part) for part in (*command, "hook", "gemini"))
    return {
        event: [
            {
                **({"matcher": matcher} if matcher is not None else {}),
                "hooks": [{"type": "command", "name": SERVER, "command": line, "timeout": 10000, "description": said}],
            }
        ]
        for event, matcher, said in GEMINI_HOOK_EVENTS
    }


def _our_gemini_hook(found: object) -> bool:
    if not isinstance(found, dict) or found.get("name") != SERVER:
        return False
    command = found.get("command")
    return found.get("type") == "command" and isinstance(command, str) and command.endswith(" hook gemini")


def install_gemini(path: Path, command: Sequence[str]) -> InstallReport:
    """Merge plantrail's Gemini CLI hooks and plan server, running ``command``, into the settings file at
    ``path`` (one edit: one backup, the file as the user had it)."""
    key = _FILES["gemini"][2]
    entry = server_entry("gemini", command)
    with ConfigFile.open(path) as found:
        settings = found.read(_check_gemini)
        merged, changed = merged_hooks(settings, gemini_hooks(command), _our_gemini_hook)
        servers = merged.setdefault(key, {})
        if servers.get(SERVER) != entry:
            servers[SERVER] = entry
            changed = (*changed, f"{key}.{SERVER}")
        return found.write(merged, changed)


def uninstall_gemini(path: Path) -> InstallReport:
    """Remove exactly the Gemini CLI hooks and plan server install added."""
    key = _FILES["gemini"][2]
    with ConfigFile.open(path) as found:
        settings = found.read(_check_gemini)
        if settings is None:
            return InstallReport(str(path), (), None)
        kept, changed = without_hooks(settings, _our_gemini_hook)
        if is_our_server(kept.get(key, {}).get(SERVER)):
            del kept[key][SERVER]
            if not kept[key]:
                del kept[key]
            changed = (*changed, f"{key}.{SERVER}")
        return found.write(kept, changed)


def _check_gemini(path: Path, value: dict[str, Any]) -> None:
    check_hooks(path, value.get("hooks", {}))
    _check_servers(path, value, _FILES["gemini"][2])
