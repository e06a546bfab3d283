"""OpenCode's plugin file, written by ``plantrail install opencode`` with the plantrail that ran the install.

    install_opencode_plugin(Path(".opencode/plugins/plantrail.ts"), ("/usr/local/bin/plantrail",))

OpenCode loads every ``.ts`` and ``.js`` file in ``.opencode/plugins/`` (the project's) and
``~/.config/opencode/plugins/`` (the user's). The plugin forwards each ``todo.updated`` event as one JSON line
to ``plantrail hook opencode``; :func:`plugin_source` makes it from one template, with the command that runs
plantrail written into it as a list (Bun's shell passes each element of an interpolated list as one argument,
quoted), so a hook never depends on the agent's PATH. The repository's ``integrations/opencode/plantrail.ts``
is this template's output for a bare ``plantrail`` on PATH (:data:`ON_PATH`), and a test keeps the two equal.

* **Ours** is a file whose first line is :data:`MARKER`: install replaces it when it differs (an earlier
  install's path, an earlier plantrail's template), uninstall removes it. Any other file at that path is the
  user's: install refuses it with PLUGIN_EXISTS before anything is written, uninstall leaves it.
* The file is reached as install reaches settings (:class:`.install.ConfigFile`: never through a planted link,
  a missing folder made, written whole through a fresh temporary file). No backup is kept: the file holds
  nothing but what plantrail wrote.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from plantrail.ledger.vocabulary.errors import error

from .install import ConfigFile, InstallReport, config_home

__all__ = [
    "MARKER",
    "ON_PATH",
    "PLUGIN_FILE",
    "check_plugin",
    "install_opencode_plugin",
    "is_our_plugin",
    "plugin_path",
    "plugin_source",
    "uninstall_opencode_plugin",
]

PLUGIN_FILE = "plantrail.ts"
#: The first line of every plugin file plantrail writes: how install and uninstall know the file is ours.
MARKER = "// plantrail for OpenCode: `plantrail install opencode` writes this file, `uninstall opencode` removes it."
#: The command of the repository's copy: the first ``plantrail`` on PATH.
ON_PATH: tuple[str, ...] = ("plantrail",)
_WHAT = "OpenCode plugin"

_TEMPLATE = """\
{marker}
// On every todo.updated event (the agent's whole todo list) it writes the event, with the project's directory, as
// one JSON line to `plantrail hook opencode`. See docs/live-agents.md.
// Written in the JavaScript subset of TypeScript (the type is a JSDoc comment), so the very file runs under
// Node in plantrail's tests (tests/capture/test_opencode_plugin.py) as it does under OpenCode's Bun.

// The plantrail this plugin runs: the absolute command install wrote, or a bare `plantrail` found on PATH.
// Bun's shell passes each element of an interpolated list as one argument, quoted.
const PLANTRAIL = {command}

/** @type {{import("@opencode-ai/plugin").Plugin}} */
export const Plantrail = async ({{ $, directory }}) => {{
  return {{
    event: async ({{ event }}) => {{
      if (event.type !== "todo.updated") return
      const line = JSON.stringify({{ ...event, directory }}) + "\\n"
      try {{
        // The hook always exits 0 and prints nothing; its errors go to .plantrail/hook-errors.log.
        await $`${{PLANTRAIL}} hook opencode < ${{new Response(line)}}`.quiet().nothrow()
      }} catch {{
        // plantrail cannot be run: never break the session
      }}
    }},
  }}
}}
"""


def plugin_source(command: Sequence[str] = ON_PATH) -> bytes:
    """The plugin file running ``command`` (the program, then its leading arguments) with ``hook opencode``."""
    baked = json.dumps(list(command), ensure_ascii=True)  # a JSON list of strings is a JavaScript array literal
    return _TEMPLATE.format(marker=MARKER, command=baked).encode()


def plugin_path(scope: str, cwd: Path | None = None, home: Path | None = None) -> Path:
    """The plugin file of ``scope``: ``project`` (``.opencode/plugins/`` under ``cwd``) or ``user``
    (``$XDG_CONFIG_HOME/opencode/plugins/``, ``~/.config`` when unset)."""
    if scope == "user":
        return config_home(home=home) / "opencode" / "plugins" / PLUGIN_FILE
    return (cwd if cwd is not None else Path.cwd()) / ".opencode" / "plugins" / PLUGIN_FILE


def is_our_plugin(raw: bytes) -> bool:
    """A file plantrail wrote: its first line is :data:`MARKER`."""
    return raw.split(b"\n", 1)[0] == MARKER.encode()


def check_plugin(path: Path) -> None:
    """Refuse (PLUGIN_EXISTS) when a file at ``path`` is not ours; nothing is written."""
    with ConfigFile.open(path) as found:
        _read(found)


def install_opencode_plugin(path: Path, command: Sequence[str]) -> InstallReport:
    """Write the plugin running ``command`` at ``path`` (its folder made when missing); an earlier plugin of ours
    is replaced, a file of the user's refused (PLUGIN_EXISTS) and left as it is."""
    new = plugin_source(command)
    with ConfigFile.open(path) as found:
        raw = _read(found)
        return found.write_raw(new, () if raw == new else ("plugin",), backup=False, what=_WHAT)


def uninstall_opencode_plugin(path: Path) -> InstallReport:
    """Remove the plugin file at ``path`` when it is ours; a file of the user's is left as it is."""
    with ConfigFile.open(path) as found:
        raw = found.read_raw(_WHAT)
        if raw is None or found.folder is None or not is_our_plugin(raw):
            return InstallReport(str(path), (), None)
        found.folder.remove(found.name, what=_WHAT)
        return InstallReport(str(path), ("plugin",), None)


def _read(found: ConfigFile) -> bytes | None:
    """The bytes at the plugin's path (None when there is none); PLUGIN_EXISTS when they are not ours."""
    raw = found.read_raw(_WHAT)
    if raw is not None and not is_our_plugin(raw):
        raise error(
            "PLUGIN_EXISTS",
            f"{found.path} is a plugin plantrail did not write; it was left as it is",
            path=str(found.path),
        )
    return raw
