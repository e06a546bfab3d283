"""``plantrail install claude`` / ``uninstall claude``: the plugin's hooks merged into a Claude Code settings file.

    install_claude(Path(".claude/settings.json")) -> InstallReport

* **The same hooks** as the plugin's ``integrations/claude-code/hooks/hooks.json`` (:data:`CLAUDE_HOOKS`; a test
  keeps the two equal): PostToolUse and PostToolUseFailure for the plan tools (TodoWrite, TaskCreate, TaskUpdate,
  ExitPlanMode), TaskCreated, TaskCompleted, UserPromptSubmit, SessionStart (startup, resume, compact), Stop,
  SubagentStop and SessionEnd, each running ``plantrail hook claude`` in exec form.
* **Nothing lost.** Every other key, event, matcher group and handler is kept as it is, in its order; a handler
  of ours that is already there is not added twice. The file as it was is kept beside it
  (``settings.json.plantrail-backup``) and the new one is written to a temporary file and renamed into place.
* **A file it cannot parse** (not JSON, or not an object, or ``hooks`` not an object) is refused with
  SETTINGS_INVALID and left untouched.
* **Uninstall removes exactly what install added**: our handlers are known by their every field (the
  ``statusMessage`` names plantrail), a matcher group is removed only when nothing but ours was in it, an
  event only when no group is left.
"""

from __future__ import annotations

import copy
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from plantrail.ledger.stores.files import os_error
from plantrail.ledger.vocabulary.errors import error

__all__ = ["CLAUDE_HOOKS", "HANDLER", "InstallReport", "install_claude", "settings_path", "uninstall_claude"]

HANDLER: Mapping[str, Any] = {
    "type": "command",
    "command": "plantrail",
    "args": ["hook", "claude"],
    "timeout": 30,
    "statusMessage": "plantrail: recording the plan",
}
_PLAN_MATCHER = "TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode"
#: event -> matcher (None: the event takes no matcher)
_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("PostToolUse", _PLAN_MATCHER),
    ("PostToolUseFailure", _PLAN_MATCHER),
    ("TaskCreated", None),
    ("TaskCompleted", None),
    ("UserPromptSubmit", None),
    ("SessionStart", "startup|resume|compact"),
    ("Stop", None),
    ("SubagentStop", None),
    ("SessionEnd", None),
)
CLAUDE_HOOKS: Mapping[str, list[dict[str, Any]]] = {
    event: [{**({"matcher": matcher} if matcher is not None else {}), "hooks": [dict(HANDLER)]}]
    for event, matcher in _EVENTS
}
BACKUP_SUFFIX = ".plantrail-backup"


@dataclass(frozen=True, slots=True)
class InstallReport:
    """What install or uninstall changed in a settings file."""

    settings: str
    changed: tuple[str, ...]
    """The events a handler was added to (install) or removed from (uninstall)."""
    backup: str | None


def settings_path(scope: str, cwd: Path | None = None, home: Path | None = None) -> Path:
    """The settings file of ``scope``: ``project`` (``.claude/settings.json`` here) or ``user`` (``~/.claude``)."""
    if scope == "user":
        return (home if home is not None else Path.home()) / ".claude" / "settings.json"
    return (cwd if cwd is not None else Path.cwd()) / ".claude" / "settings.json"


def install_claude(path: Path) -> InstallReport:
    """Merge the plantrail hooks into the settings file at ``path`` (created when missing)."""
    settings = _read(path)
    merged, changed = _merged(settings)
    return _write(path, settings, merged, changed)


def uninstall_claude(path: Path) -> InstallReport:
    """Remove from the settings file at ``path`` exactly the handlers install adds."""
    settings = _read(path)
    if settings is None:
        return InstallReport(str(path), (), None)
    kept, changed = _without(settings)
    return _write(path, settings, kept, changed)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, str(path)) from None
    if not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error("SETTINGS_INVALID", f"{path} is not JSON ({exc}); it was left as it is", path=str(path)) from None
    if not isinstance(value, dict):
        raise error("SETTINGS_INVALID", f"{path} is not a JSON object; it was left as it is", path=str(path))
    hooks = value.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(groups, list) for groups in hooks.values()):
        raise error(
            "SETTINGS_INVALID",
            f"{path}: hooks must be an object of lists of matcher groups; it was left as it is",
            path=str(path),
        )
    return value


def _ours(handler: object) -> bool:
    return handler == HANDLER


def _merged(settings: dict[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
    merged = copy.deepcopy(settings) if settings is not None else {}
    hooks: dict[str, Any] = merged.setdefault("hooks", {})
    changed = []
    for event, groups in CLAUDE_HOOKS.items():
        present = hooks.setdefault(event, [])
        if any(_ours(h) for group in present if isinstance(group, dict) for h in group.get("hooks", ())):
            continue
        present.extend(copy.deepcopy(groups))
        changed.append(event)
    return merged, tuple(changed)


def _without(settings: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    kept = copy.deepcopy(settings)
    hooks: dict[str, Any] = kept.get("hooks", {})
    changed = []
    for event in list(hooks):
        groups = hooks[event]
        new_groups = []
        removed = False
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(_ours(h) for h in handlers):
                new_groups.append(group)
                continue
            removed = True
            rest = [h for h in handlers if not _ours(h)]
            if rest:
                new_groups.append({**group, "hooks": rest})
        if removed:
            changed.append(event)
            if new_groups:
                hooks[event] = new_groups
            else:
                del hooks[event]
    if changed and not hooks:
        del kept["hooks"]
    return kept, tuple(changed)


def _write(path: Path, before: dict[str, Any] | None, after: dict[str, Any], changed: tuple[str, ...]) -> InstallReport:
    """Write ``after`` when it changed anything: the old file kept as the backup, the new one renamed in."""
    if not changed:
        return InstallReport(str(path), (), None)
    backup = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if before is not None:
            backup = str(path) + BACKUP_SUFFIX
            Path(backup).write_bytes(path.read_bytes())
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        temporary.write_bytes(orjson.dumps(after, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(temporary, path)
    except OSError as exc:
        raise os_error(exc, str(path)) from None
    return InstallReport(str(path), changed, backup)
