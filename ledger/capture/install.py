"""``plantrail install claude`` / ``uninstall claude``: the plugin's hooks merged into a Claude Code settings file.

    install_claude(Path(".claude/settings.json")) -> InstallReport

* **The same hooks** as the plugin's ``integrations/claude-code/hooks/hooks.json`` (:data:`CLAUDE_HOOKS`; a test
  keeps the two equal): PostToolUse and PostToolUseFailure for the plan tools (TodoWrite, TaskCreate, TaskUpdate,
  ExitPlanMode), TaskCreated, TaskCompleted, UserPromptSubmit, SessionStart (startup, resume, compact), Stop,
  SubagentStop and SessionEnd, each running ``plantrail hook claude`` in exec form.
* **Nothing lost.** Every other key, event, matcher group and handler is kept as it is, in its order; a handler
  of ours that is already there is not added twice. The file as it was is kept beside it
  (``settings.json.plantrail-backup``) and the new one is written to a temporary file and renamed into place,
  both with the file's mode and owner (a settings file holding keys stays ``0600``).
* **A settings folder is not plantrail's** (a cloned repository's ``.claude/`` can hold anything): every file
  is reached through :class:`plantrail.ledger.stores.owned.Folder`. A FIFO or anything but a regular file in
  the settings file's place is refused (NOT_A_FILE), never waited on; a missing folder is made, refusing a file
  or a dangling link in its place; the backup and the new file are fresh files (created exclusive) renamed into
  place, so a link planted at the backup's name is refused, never written through.
* **A settings file that is a link** (into a dotfiles repository, say) is edited through the link: its target
  is replaced by a temporary file in the target's folder, and the backup is made beside the target; the link
  stays a link.
* **A file it cannot read as settings** (not JSON, not an object, ``hooks`` not an object of lists of matcher
  groups, a matcher group not an object or its ``hooks`` not a list of handler objects) is refused with
  SETTINGS_INVALID naming the place, and left untouched.
* **Uninstall removes exactly what install added**: our handlers are known by their every field (the
  ``statusMessage`` names plantrail), a matcher group is removed only when nothing but ours was in it, an
  event only when no group is left.
"""

from __future__ import annotations

import copy
import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import orjson

from plantrail.ledger.stores.owned import Folder
from plantrail.ledger.vocabulary.errors import PlantrailError, error

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
#: No settings file is read past this size (a planted endless file cannot exhaust memory).
SETTINGS_CAP = 16 * 1024 * 1024


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
    with _Settings.open(path) as found:
        settings = found.read()
        merged, changed = _merged(settings)
        return found.write(merged, changed)


def uninstall_claude(path: Path) -> InstallReport:
    """Remove from the settings file at ``path`` exactly the handlers install adds."""
    with _Settings.open(path) as found:
        settings = found.read()
        if settings is None:
            return InstallReport(str(path), (), None)
        kept, changed = _without(settings)
        return found.write(kept, changed)


class _Settings:
    """A settings file as install edits it: the file itself, or the target of the link at its path, in its
    folder held open (:class:`Folder`); ``folder`` is None while that folder does not exist."""

    def __init__(self, path: Path, folder: Folder | None, where: str, name: str, *, linked: bool) -> None:
        self.path = path
        self.folder = folder
        self.where = where
        self.name = name
        self.linked = linked
        self.raw: bytes | None = None
        self.found: os.stat_result | None = None

    @classmethod
    @contextmanager
    def open(cls, path: Path) -> Iterator[_Settings]:
        """The settings file at ``path``: through a link at that path to its target (see the module)."""
        where, name = os.path.split(os.fspath(path))
        folder = _folder(where or ".")
        found = None if folder is None else folder.lstat(name)
        linked = folder is not None and found is not None and stat.S_ISLNK(found.st_mode)
        if linked and folder is not None:
            folder.close()
            target = os.path.realpath(os.fspath(path))  # edited through the link: its target, in its folder
            where, name = os.path.split(target)
            folder = _folder(where)
            if folder is None:
                raise error(
                    "FOLDER_NOT_FOUND", f"{path} links to {target}, whose folder does not exist", path=str(path)
                )
        settings = cls(path, folder, where or ".", name, linked=linked)
        try:
            yield settings
        finally:
            if settings.folder is not None:
                settings.folder.close()

    def read(self) -> dict[str, Any] | None:
        """The settings (None when there is no file yet), checked (SETTINGS_INVALID naming the place)."""
        if self.folder is None:
            return None
        try:
            fd = self.folder.open_file(self.name, what="settings file")
        except PlantrailError as exc:
            if exc.code == "FILE_NOT_FOUND":
                return None
            raise
        try:
            from plantrail.ledger.stores.owned import read_descriptor

            self.found = os.fstat(fd)
            self.raw = read_descriptor(fd, SETTINGS_CAP, self.folder.child(self.name), "settings file")
        finally:
            os.close(fd)
        return _parse(self.path, self.raw)

    def write(self, after: dict[str, Any], changed: tuple[str, ...]) -> InstallReport:
        """Write ``after`` when it changed anything: the file as it was kept as the backup beside it, the new
        one renamed in; both with the file's mode and owner."""
        if not changed:
            return InstallReport(str(self.path), (), None)
        if self.folder is None:
            self.folder = Folder.open(self.where, create=True, what="settings folder")
        mode = None if self.found is None else stat.S_IMODE(self.found.st_mode)
        owner = None if self.found is None else (self.found.st_uid, self.found.st_gid)
        backup = None
        if self.raw is not None:
            name = self.name + BACKUP_SUFFIX
            self.folder.replace(name, self.raw, mode=mode, owner=owner, what="settings backup")
            backup = self.folder.child(name) if self.linked else str(self.path) + BACKUP_SUFFIX
        new = orjson.dumps(after, option=orjson.OPT_INDENT_2) + b"\n"
        self.folder.replace(self.name, new, mode=mode, owner=owner, what="settings file")
        return InstallReport(str(self.path), changed, backup)


def _folder(path: str) -> Folder | None:
    """The settings folder as the caller names it (None when missing: install makes it when it writes)."""
    try:
        return Folder.open(path, what="settings folder")
    except PlantrailError as exc:
        if exc.code == "FILE_NOT_FOUND":
            return None
        raise


def _parse(path: Path, raw: bytes) -> dict[str, Any]:
    """The settings in ``raw``, checked as far as install and uninstall walk them."""
    if not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error("SETTINGS_INVALID", f"{path} is not JSON ({exc}); it was left as it is", path=str(path)) from None
    if not isinstance(value, dict):
        raise error("SETTINGS_INVALID", f"{path} is not a JSON object; it was left as it is", path=str(path))
    _check_hooks(path, value.get("hooks", {}))
    return value


def _check_hooks(path: Path, hooks: object) -> None:
    """Refuse, naming the place, any part of ``hooks`` that install or uninstall walks into and that is not of
    the shape Claude Code's settings give it: an object of events, each a list of matcher groups, each an
    object whose ``hooks`` (when present) is a list of handler objects."""
    if not isinstance(hooks, dict):
        _invalid(path, "hooks", "an object of events")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            _invalid(path, f"hooks.{event}", "a list of matcher groups")
        for place, group in enumerate(groups):
            where = f"hooks.{event}[{place}]"
            if not isinstance(group, dict):
                _invalid(path, where, "an object (a matcher group)")
            handlers = group.get("hooks", [])
            if not isinstance(handlers, list):
                _invalid(path, f"{where}.hooks", "a list of handlers")
            for number, handler in enumerate(handlers):
                if not isinstance(handler, dict):
                    _invalid(path, f"{where}.hooks[{number}]", "an object (a handler)")


def _invalid(path: Path, place: str, shape: str) -> NoReturn:
    raise error(
        "SETTINGS_INVALID",
        f"{path}: {place} must be {shape}; it was left as it is",
        path=str(path),
        place=place,
    )


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
