"""``plantrail install claude`` / ``uninstall claude``: the plugin's hooks merged into a Claude Code settings file,
and the machinery every install uses to edit an agent's configuration (:class:`ConfigFile`).

    install_claude(Path(".claude/settings.json"), ("/usr/local/bin/plantrail",)) -> InstallReport

* **The same hooks** as the plugin's ``integrations/claude-code/hooks/hooks.json`` (:data:`PLUGIN_HOOKS`, run by
  the plugin's launcher; a test keeps the two equal): PostToolUse and PostToolUseFailure for the plan tools
  (TodoWrite, TaskCreate, TaskUpdate, ExitPlanMode), TaskCreated, TaskCompleted, UserPromptSubmit, SessionStart
  (startup, resume, clear, compact), PreCompact, Stop, SubagentStop and SessionEnd, each running the given
  command (the CLI gives the absolute path of the plantrail that runs the install) with ``hook claude``, in exec
  form. A handler of ours is known by its status message and its arguments' end, whatever program it runs: one
  of an earlier install (a bare ``plantrail``) is replaced where it stands.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import orjson

from plantrail.ledger.stores.owned import Folder
from plantrail.ledger.vocabulary.errors import PlantrailError, error

__all__ = [
    "CLAUDE_HOOKS",
    "HANDLER",
    "PLUGIN_HOOKS",
    "PLUGIN_LAUNCHER",
    "ConfigFile",
    "InstallReport",
    "check_hooks",
    "check_settings",
    "claude_hooks",
    "config_home",
    "forget_plugin_command",
    "handler",
    "install_claude",
    "invalid",
    "merged_hooks",
    "plugin_command_path",
    "record_plugin_command",
    "settings_path",
    "uninstall_claude",
    "without_hooks",
]

#: What a hook handler of ours says of itself: install and uninstall know ours by it (and the arguments' end).
STATUS_MESSAGE = "plantrail: recording the plan"
#: The plugin's launcher (``integrations/claude-code/bin``), which its hooks and plan server run.
PLUGIN_LAUNCHER = "${CLAUDE_PLUGIN_ROOT}/bin/plantrail-launch"
_PLAN_MATCHER = "TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode"
#: event -> matcher (None: the event takes no matcher)
_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("PostToolUse", _PLAN_MATCHER),
    ("PostToolUseFailure", _PLAN_MATCHER),
    ("TaskCreated", None),
    ("TaskCompleted", None),
    ("UserPromptSubmit", None),
    ("SessionStart", "startup|resume|clear|compact"),
    ("PreCompact", None),
    ("Stop", None),
    ("SubagentStop", None),
    ("SessionEnd", None),
)


def handler(command: Sequence[str] = ("plantrail",)) -> dict[str, Any]:
    """Our hook handler running ``command`` (the program, then any arguments before ``hook claude``)."""
    return {
        "type": "command",
        "command": command[0],
        "args": [*command[1:], "hook", "claude"],
        "timeout": 30,
        "statusMessage": STATUS_MESSAGE,
    }


def claude_hooks(command: Sequence[str] = ("plantrail",)) -> dict[str, list[dict[str, Any]]]:
    """Every event's matcher group with our handler running ``command``."""
    return {
        event: [{**({"matcher": matcher} if matcher is not None else {}), "hooks": [handler(command)]}]
        for event, matcher in _EVENTS
    }


HANDLER: Mapping[str, Any] = handler()
#: The hooks as a bare ``plantrail`` on PATH runs them (install writes an absolute path instead).
CLAUDE_HOOKS: Mapping[str, list[dict[str, Any]]] = claude_hooks()
#: The plugin's ``hooks/hooks.json``: the same hooks, run by the plugin's launcher.
PLUGIN_HOOKS: Mapping[str, list[dict[str, Any]]] = claude_hooks((PLUGIN_LAUNCHER,))
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


def install_claude(path: Path, command: Sequence[str] = ("plantrail",)) -> InstallReport:
    """Merge the plantrail hooks, running ``command``, into the settings file at ``path`` (created when
    missing); a handler of ours running another command (a bare ``plantrail`` of an earlier install) is replaced
    in its place."""
    with ConfigFile.open(path) as found:
        settings = found.read(check_settings)
        merged, changed = merged_hooks(settings, claude_hooks(command))
        return found.write(merged, changed)


def uninstall_claude(path: Path) -> InstallReport:
    """Remove from the settings file at ``path`` exactly the handlers install adds."""
    with ConfigFile.open(path) as found:
        settings = found.read(check_settings)
        if settings is None:
            return InstallReport(str(path), (), None)
        kept, changed = without_hooks(settings)
        return found.write(kept, changed)


class ConfigFile:
    """A JSON settings file as install edits it (see the module): the file itself, or the target of the link at
    its path, in its folder held open (:class:`Folder`); ``folder`` is None while that folder does not exist."""

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
    def open(cls, path: Path) -> Iterator[ConfigFile]:
        """The file at ``path``: through a link at that path to its target (see the module)."""
        with _opened(cls, path) as settings:
            yield settings

    def read_raw(self, what: str = "settings file") -> bytes | None:
        """The file's bytes (None when there is no file yet); ``what`` names the file in errors."""
        if self.folder is None:
            return None
        try:
            fd = self.folder.open_file(self.name, what=what)
        except PlantrailError as exc:
            if exc.code == "FILE_NOT_FOUND":
                return None
            raise
        try:
            from plantrail.ledger.stores.owned import read_descriptor

            self.found = os.fstat(fd)
            self.raw = read_descriptor(fd, SETTINGS_CAP, self.folder.child(self.name), what)
        finally:
            os.close(fd)
        return self.raw

    def read(self, check: Callable[[Path, dict[str, Any]], None] = lambda path, value: None) -> dict[str, Any] | None:
        """The settings (None when there is no file yet), a JSON object, judged by ``check``
        (SETTINGS_INVALID naming the place)."""
        raw = self.read_raw()
        if raw is None:
            return None
        value = _parse(self.path, raw)
        check(self.path, value)
        return value

    def write(self, after: dict[str, Any], changed: tuple[str, ...]) -> InstallReport:
        """Write ``after`` as JSON when it changed anything (see :meth:`write_raw`)."""
        return self.write_raw(orjson.dumps(after, option=orjson.OPT_INDENT_2) + b"\n", changed)

    def write_raw(
        self, new: bytes, changed: tuple[str, ...], *, backup: bool = True, what: str = "settings file"
    ) -> InstallReport:
        """Write ``new`` when ``changed`` names anything: the file as it was kept as the backup beside it (unless
        not ``backup``: a file holding nothing but what plantrail wrote), the new one renamed in; both with the
        file's mode and owner."""
        if not changed:
            return InstallReport(str(self.path), (), None)
        if self.folder is None:
            self.folder = Folder.open(self.where, create=True, what="settings folder")
        mode = None if self.found is None else stat.S_IMODE(self.found.st_mode)
        owner = None if self.found is None else (self.found.st_uid, self.found.st_gid)
        kept = None
        if self.raw is not None and backup:
            name = self.name + BACKUP_SUFFIX
            self.folder.replace(name, self.raw, mode=mode, owner=owner, what="settings backup")
            kept = self.folder.child(name) if self.linked else str(self.path) + BACKUP_SUFFIX
        self.folder.replace(self.name, new, mode=mode, owner=owner, what=what)
        return InstallReport(str(self.path), changed, kept)


@contextmanager
def _opened(cls: type[ConfigFile], path: Path) -> Iterator[ConfigFile]:
    """The settings file at ``path``, through a link at that path to its target."""
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
            raise error("FOLDER_NOT_FOUND", f"{path} links to {target}, whose folder does not exist", path=str(path))
    settings = cls(path, folder, where or ".", name, linked=linked)
    try:
        yield settings
    finally:
        if settings.folder is not None:
            settings.folder.close()


def _folder(path: str) -> Folder | None:
    """The settings folder as the caller names it (None when missing: install makes it when it writes)."""
    try:
        return Folder.open(path, what="settings folder")
    except PlantrailError as exc:
        if exc.code == "FILE_NOT_FOUND":
            return None
        raise


def _parse(path: Path, raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw`` (an empty file is an empty object)."""
    if not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error("SETTINGS_INVALID", f"{path} is not JSON ({exc}); it was left as it is", path=str(path)) from None
    if not isinstance(value, dict):
        raise error("SETTINGS_INVALID", f"{path} is not a JSON object; it was left as it is", path=str(path))
    return value


def check_settings(path: Path, value: dict[str, Any]) -> None:
    """The settings checked as far as install and uninstall walk them."""
    check_hooks(path, value.get("hooks", {}))


def check_hooks(path: Path, hooks: object) -> None:
    """Refuse, naming the place, any part of ``hooks`` that install or uninstall walks into and that is not of
    the shape Claude Code's settings give it: an object of events, each a list of matcher groups, each an
    object whose ``hooks`` (when present) is a list of handler objects."""
    if not isinstance(hooks, dict):
        invalid(path, "hooks", "an object of events")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            invalid(path, f"hooks.{event}", "a list of matcher groups")
        for place, group in enumerate(groups):
            where = f"hooks.{event}[{place}]"
            if not isinstance(group, dict):
                invalid(path, where, "an object (a matcher group)")
            handlers = group.get("hooks", [])
            if not isinstance(handlers, list):
                invalid(path, f"{where}.hooks", "a list of handlers")
            for number, handler in enumerate(handlers):
                if not isinstance(handler, dict):
                    invalid(path, f"{where}.hooks[{number}]", "an object (a handler)")


def invalid(path: Path, place: str, shape: str) -> NoReturn:
    """SETTINGS_INVALID: ``place`` in the file at ``path`` is not of ``shape``; the file is left as it is."""
    raise error(
        "SETTINGS_INVALID",
        f"{path}: {place} must be {shape}; it was left as it is",
        path=str(path),
        place=place,
    )


def _ours(found: object, args: Sequence[str] = ("hook", "claude")) -> bool:
    """A handler install added: a command handler saying our status message whose arguments end ``args``
    (whatever program runs it: a bare ``plantrail``, an absolute path, the plugin's launcher)."""
    if not isinstance(found, dict) or found.get("statusMessage") != STATUS_MESSAGE:
        return False
    given = found.get("args")
    return found.get("type") == "command" and isinstance(given, list) and given[-len(args) :] == list(args)


def merged_hooks(
    settings: dict[str, Any] | None,
    wanted: Mapping[str, list[dict[str, Any]]],
    ours: Callable[[object], bool] = _ours,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``settings`` with the ``wanted`` matcher groups' one handler in each event (a handler that is ``ours``
    but differs, an earlier install's, replaced where it stands); the events changed."""
    merged = copy.deepcopy(settings) if settings is not None else {}
    hooks: dict[str, Any] = merged.setdefault("hooks", {})
    changed = []
    for event, groups in wanted.items():
        present = hooks.setdefault(event, [])
        mine = groups[0]["hooks"][0]
        found = [h for group in present if isinstance(group, dict) for h in group.get("hooks", ()) if ours(h)]
        if found and all(h == mine for h in found):
            continue
        if found:  # an earlier install's handler (another program): replaced where it stands
            for group in present:
                if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                    group["hooks"] = [copy.deepcopy(mine) if ours(h) else h for h in group["hooks"]]
        else:
            present.extend(copy.deepcopy(groups))
        changed.append(event)
    return merged, tuple(changed)


def without_hooks(
    settings: dict[str, Any], ours: Callable[[object], bool] = _ours
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``settings`` without the handlers that are ``ours`` (a group only when nothing else was in it, an event
    only when no group is left); the events changed."""
    kept = copy.deepcopy(settings)
    hooks: dict[str, Any] = kept.get("hooks", {})
    changed = []
    for event in list(hooks):
        groups = hooks[event]
        new_groups = []
        removed = False
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(ours(h) for h in handlers):
                new_groups.append(group)
                continue
            removed = True
            rest = [h for h in handlers if not ours(h)]
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


#: Where ``install claude --plugin`` records the plantrail the plugin's launcher runs (one argument a line).
PLUGIN_COMMAND = "plugin-command"


def config_home(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """The user's configuration folder: ``$XDG_CONFIG_HOME`` when it is set to an absolute path (a relative one
    is ignored, as the XDG base directory rules say), else ``~/.config``; a ``home`` given explicitly is used
    as is (``home/.config``), whatever the environment says."""
    if home is not None:
        return home / ".config"
    found = env if env is not None else os.environ
    given = found.get("XDG_CONFIG_HOME") or ""
    if os.path.isabs(given):
        return Path(given)
    return Path(found.get("HOME") or str(Path.home())) / ".config"


def plugin_command_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/plantrail/plugin-command`` (``~/.config`` when unset), which the launcher reads."""
    return config_home(env) / "plantrail" / PLUGIN_COMMAND


def record_plugin_command(command: Sequence[str], env: Mapping[str, str] | None = None) -> InstallReport:
    """Record ``command`` (an absolute program and at most two arguments) for the plugin's launcher."""
    path = plugin_command_path(env)
    new = "".join(f"{part}\n" for part in command).encode()
    with ConfigFile.open(path) as found:
        return found.write_raw(new, () if found.read_raw() == new else ("plugin command",))


def forget_plugin_command(env: Mapping[str, str] | None = None) -> InstallReport:
    """Remove the recorded command (the launcher then runs the first plantrail on PATH)."""
    path = plugin_command_path(env)
    with ConfigFile.open(path) as found:
        if found.read_raw() is None or found.folder is None:
            return InstallReport(str(path), (), None)
        found.folder.remove(found.name, what="plugin command")
        return InstallReport(str(path), ("plugin command",), None)
