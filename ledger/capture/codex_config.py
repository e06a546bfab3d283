"""The plan server in Codex's ``config.toml`` (``[mcp_servers.plantrail]``: command and args), edited with
tomlkit so that the user's comments, order and layout stay as they were.

The file is reached as every configuration install edits (:class:`.install.ConfigFile`: a backup beside it,
never through a planted link); a file that is not TOML, or whose ``mcp_servers`` is not a table, is refused with
SETTINGS_INVALID and left alone. Codex's plan tool (``update_plan``) reaches no hook, so plantrail installs no
Codex hook: the plan server is how a Codex session keeps its plan in plantrail.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from plantrail.ledger.vocabulary.errors import error

from .install import ConfigFile, InstallReport, invalid
from .servers import SERVER, is_our_server, server_entry

__all__ = ["install_codex", "uninstall_codex"]

_KEY = "mcp_servers"


def install_codex(path: Path, command: Sequence[str]) -> InstallReport:
    """Write ``[mcp_servers.plantrail]`` running ``command`` into the config at ``path`` (created when missing)."""
    entry = server_entry("codex", command)
    with ConfigFile.open(path) as found:
        document = _parse(path, found.read_raw())
        servers = document.get(_KEY)
        current = None if servers is None else servers.get(SERVER)
        if current is not None and _plain(current) == entry:
            return InstallReport(str(path), (), None)
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            document[_KEY] = servers
        table = tomlkit.table()
        table["command"] = entry["command"]
        table["args"] = entry["args"]
        servers[SERVER] = table
        return found.write_raw(tomlkit.dumps(document).encode(), (f"{_KEY}.{SERVER}",))


def uninstall_codex(path: Path) -> InstallReport:
    """Remove ``[mcp_servers.plantrail]`` when install wrote it (it runs ``… mcp``)."""
    with ConfigFile.open(path) as found:
        raw = found.read_raw()
        if raw is None:
            return InstallReport(str(path), (), None)
        document = _parse(path, raw)
        servers = document.get(_KEY)
        if servers is None or not is_our_server(_plain(servers.get(SERVER))):
            return InstallReport(str(path), (), None)
        del servers[SERVER]
        if not servers:
            del document[_KEY]
        text = tomlkit.dumps(document)
        text = text.rstrip("\n") + "\n" if text.strip() else ""  # the blank line install put before the table
        return found.write_raw(text.encode(), (f"{_KEY}.{SERVER}",))


def _parse(path: Path, raw: bytes | None) -> tomlkit.TOMLDocument:
    """The document (an empty one for no file), its ``mcp_servers`` a table when present."""
    try:
        document = tomlkit.parse((raw or b"").decode("utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise error("SETTINGS_INVALID", f"{path} is not TOML ({exc}); it was left as it is", path=str(path)) from None
    servers = document.get(_KEY)
    if servers is not None and not isinstance(servers, dict):
        invalid(path, _KEY, "a table of servers")
    found = None if servers is None else servers.get(SERVER)
    if found is not None and not isinstance(found, dict):
        invalid(path, f"{_KEY}.{SERVER}", "a table")
    return document


def _plain(value: Any) -> Any:
    """A tomlkit value as plain Python (tables as dicts, arrays as lists)."""
    return value.unwrap() if hasattr(value, "unwrap") else value
