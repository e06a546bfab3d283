"""Every file the hooks and install open, create, rename or remove in a folder plantrail does not own (a
project's .plantrail/, its .claude/) goes through the one safe way in, stores.owned: a new direct open
anywhere in the capture code fails here without a test of its own."""

from __future__ import annotations

import ast
import builtins
import io
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest

from plantrail.ledger.capture.hook import ERRORS_CAP, ERRORS_FILE, claude_hook, gemini_hook, hook_errors, opencode_hook
from plantrail.ledger.capture.install import install_claude, uninstall_claude
from tests.conftest import CliResult
from tests.helpers.hook_payloads import post_tool_use, prompt

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hooks"
#: The capture and install code: none of it touches the file system but through stores.owned (and, for
#: inputs outside a project's folders, stores.files).
CAPTURE_SOURCES = (
    *sorted((ROOT / "ledger" / "capture").glob("*.py")),
    ROOT / "cli" / "hooks.py",
    ROOT / "cli" / "hook_call.py",
    ROOT / "cli" / "install.py",
    ROOT / "cli" / "acp.py",
)
CAPTURE_MODULES = ("plantrail.ledger.capture.", "plantrail.cli.")
#: The one safe way into a folder plantrail does not own.
HELPER = "plantrail.ledger.stores.owned"
#: The cache layer, which reaches its files relative to a folder the helper opened (dir_fd), never by a path
#: (its reads through stores.files' no-follow reader).
SEAL = "plantrail.ledger.stores.jsonl.seal"
#: The input reader (never blocks, only a regular file): how the importers read a Gemini or OpenCode journal
#: again by its path, in a capture folder the helper has just reached without a link, its journal held open.
INPUTS = "plantrail.ledger.stores.files"

#: File-system calls, by module: each is recorded while the hooks and install run.
_CALLS: dict[Any, tuple[str, ...]] = {
    os: ("open", "mkdir", "replace", "rename", "link", "symlink", "unlink", "remove", "rmdir", "chmod", "mkfifo"),
    builtins: ("open",),
    io: ("open",),
}
#: Calls the capture sources may not make themselves (by name, on the modules above, and Path's I/O methods).
_FORBIDDEN_NAMES = frozenset({"open", "fdopen", "makedirs", "truncate", "copyfile", "copy", "copy2", "move"}) | {
    name for names in _CALLS.values() for name in names
}
_PATH_IO = frozenset(
    {"read_bytes", "read_text", "write_bytes", "write_text", "mkdir", "touch", "symlink_to", "hardlink_to", "unlink"}
    | {"rmdir", "chmod", "rename", "iterdir", "glob", "rglob"}
)


class Call(NamedTuple):
    """One file-system call: what, by which plantrail module, on which path, with which flags."""

    function: str
    caller: str
    path: str
    flags: int | None
    relative: bool


def _caller() -> str | None:
    """The plantrail module that made the call (None when the test itself did)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith("plantrail."):
            return name
        if name.startswith("tests."):
            return None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _resolved(path: Any, dir_fd: int | None) -> str:
    if isinstance(path, int):
        return os.readlink(f"/proc/self/fd/{path}")
    text = os.fsdecode(path)
    if dir_fd is not None and not os.path.isabs(text):
        return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
    return os.path.abspath(text)


@contextmanager
def _recording() -> Iterator[list[Call]]:
    """Record every file-system call plantrail makes inside the block."""
    calls: list[Call] = []
    saved = [(module, name, getattr(module, name)) for module, names in _CALLS.items() for name in names]

    def wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            caller = _caller()
            if caller is not None:
                fds = (kwargs.get("dir_fd"), kwargs.get("src_dir_fd"), kwargs.get("dst_dir_fd"))
                paths = args[:2] if name in ("replace", "rename", "link", "symlink") else args[:1]
                flags = args[1] if name == "open" and len(args) > 1 and isinstance(args[1], int) else None
                for place, path in enumerate(paths):
                    fd = fds[0] if fds[0] is not None else fds[1 + place] if name in ("replace", "rename") else None
                    relative = fd is not None and not os.path.isabs(os.fsdecode(path))
                    calls.append(Call(name, caller, _resolved(path, fd), flags, relative))
            return original(*args, **kwargs)

        return recorded

    for module, name, original in saved:
        setattr(module, name, wrap(name, original))
    try:
        yield calls
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def _every_hook_and_install(project: Path, run_cli: Callable[..., CliResult]) -> None:
    """The hook calls of every agent and event kind (a kept state, an error file over its cap, a resumed run, a
    paused one), the error file read back, and install and uninstall through the library and the CLI."""
    transcript = project / "transcript.jsonl"
    todos = [{"content": "read the code", "status": "in_progress", "activeForm": "reading"}]
    done = [{"content": "read the code", "status": "completed", "activeForm": "reading"}]
    payloads: list[dict[str, Any]] = [
        {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"},
        prompt("s1", project, "Read the code and fix the login failure, then run the tests"),
        post_tool_use("s1", project, "TodoWrite", "toolu_1", {"todos": todos}, {"newTodos": todos}),
        post_tool_use("s1", project, "TodoWrite", "toolu_2", {"todos": done}, {"newTodos": done}),
        {"session_id": "s1", "cwd": str(project), "hook_event_name": "Stop", "transcript_path": str(transcript)},
        {
            "session_id": "s1",
            "cwd": str(project),
            "hook_event_name": "SubagentStop",
            "agent_id": "a1",
            "agent_transcript_path": str(transcript),
        },
        {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart", "source": "resume"},
        {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionEnd", "reason": "exit"},
        {"session_id": "s1", "cwd": str(project), "hook_event_name": "Nope"},
    ]
    for payload in payloads:
        claude_hook(orjson.dumps(payload))
    for name, take in (("gemini_session.jsonl", gemini_hook), ("opencode_events.jsonl", opencode_hook)):
        text = (FIXTURES / name).read_text().replace("PROJECT", str(project))
        for line in text.splitlines():
            take(line.encode())
    hook_errors(project / ".plantrail")
    settings = project / ".claude" / "settings.json"
    install_claude(settings)
    uninstall_claude(settings)
    install_claude(settings)
    run_cli("uninstall", "claude", "--settings", settings)
    run_cli("install", "claude", "--settings", settings)
    run_cli("hook", "errors", "--dir", project / ".plantrail")


def _rereads_a_journal(call: Call) -> bool:
    """A read-only, non-blocking open of a journal (or the metadata looked for beside it) by the input reader."""
    if call.caller != INPUTS or call.function != "open" or call.flags is None:
        return False
    return call.flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) == 0 and call.path.endswith((".json", ".jsonl"))


def _problems(calls: list[Call], project: Path) -> list[str]:
    """What breaks the rules (see the module and the test's docstring)."""
    owned = (str(project / ".plantrail") + "/", str(project / ".claude") + "/")
    runs = str(project / ".plantrail" / "runs") + "/"
    found = []
    for call in calls:
        inside = (call.path + "/").startswith(owned)
        if call.caller.startswith(CAPTURE_MODULES):
            found.append(f"{call.caller} calls {call.function} itself on {call.path}")
        if not inside or (call.path + "/").startswith(runs):
            continue  # not a folder plantrail does not own; or the log's own folder, the store's (checked first)
        if call.function == "open" and call.flags is not None:
            blocking = not call.flags & (os.O_NONBLOCK | os.O_DIRECTORY) and not call.flags & os.O_EXCL
            if blocking:
                found.append(f"{call.caller} opens {call.path} in a way that can block (flags {call.flags:#o})")
        if call.caller == HELPER:
            continue
        if call.caller in (SEAL, INPUTS) and call.relative and (call.flags is None or call.flags & os.O_NOFOLLOW):
            continue  # a cache file, reached relative to the folder the helper opened, never through a link
        if _rereads_a_journal(call):
            continue
        found.append(f"{call.caller} calls {call.function} on {call.path}, not through {HELPER}")
    return found


def test_every_file_touched_in_a_folder_plantrail_does_not_own_goes_through_the_owned_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., CliResult]
) -> None:
    """While every hook kind and install run, each open, create, rename or removal in .plantrail/ or
    .claude/ is made by stores.owned (or, relative to a folder it opened, by the cache's seal; or a read-only,
    non-blocking re-read of a journal by the importers), none by the capture or CLI code itself, and none
    opens a file in a way that can block; the runs folder's log is the store's."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    project = tmp_path / "project"
    (project / ".plantrail").mkdir(parents=True)
    (project / ".plantrail" / ERRORS_FILE).write_bytes(b"an old error line\n" * (ERRORS_CAP // 18 + 1))
    (project / "transcript.jsonl").write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')

    with _recording() as calls:
        _every_hook_and_install(project, run_cli)

    problems = _problems(calls, project)
    assert problems == [], "\n".join(problems)
    by_helper = {Path(c.path).name for c in calls if c.caller == HELPER}
    seen = {ERRORS_FILE, "s1.claude-code-hooks.jsonl", "s1.claude-code-hooks.jsonl.lock", "settings.json"}
    assert seen <= by_helper, by_helper  # the recording saw the calls it checks
    assert (project / ".plantrail" / ERRORS_FILE).stat().st_size <= ERRORS_CAP  # the rotation ran


def _a_class(name: str | None) -> bool:
    """Whether a call's receiver names a class (``Folder.open``, ``cls.open``: its own API, not a path's)."""
    return name is not None and (name.lstrip("_")[:1].isupper() or name == "cls")


def _forbidden(path: Path) -> list[str]:
    """The direct file-system calls in one source file: open(), os.open and the like, Path's I/O methods."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Name) and function.id == "open":
            found.append(f"{path.name}:{node.lineno}: open()")
        elif isinstance(function, ast.Attribute):
            owner = function.value.id if isinstance(function.value, ast.Name) else None
            if owner in ("os", "io", "shutil", "tempfile", "pathlib") and function.attr in _FORBIDDEN_NAMES:
                found.append(f"{path.name}:{node.lineno}: {owner}.{function.attr}()")
            elif function.attr in _PATH_IO:
                found.append(f"{path.name}:{node.lineno}: .{function.attr}()")
            elif function.attr == "open" and not _a_class(owner):
                found.append(f"{path.name}:{node.lineno}: .open() of a path")
    return found


@pytest.mark.parametrize("source", CAPTURE_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_capture_code_makes_no_file_system_call_of_its_own(source: Path) -> None:
    """No capture or install source opens, creates, renames or removes a file itself (open(), os.open,
    os.replace, os.mkdir, Path.write_bytes ...): it asks stores.owned (or stores.files, for an input)."""
    assert _forbidden(source) == []
