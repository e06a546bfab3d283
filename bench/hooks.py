"""The hook row's workload: a Claude Code session of about n events captured by `plantrail hook claude`.

The session is an agent working through lists of ten items (each TodoWrite completes one item and starts the
next; each new list is a replan), as the hooks deliver it. Its journal is written and mapped once, untimed
(`ledger.capture`); each timed call is one more TodoWrite through the whole `plantrail hook claude` process,
on a fresh copy of the session, so every call appends as a live one does.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from plantrail.ledger.capture import claude
from plantrail.ledger.capture.hook import capture_journal, plantrail_folder
from plantrail.ledger.capture.journal import Journal, journal_path
from plantrail.ledger.stores.locations import run_path

__all__ = ["HookSession", "hook_call", "hook_session", "status_of_session", "write_call"]

SESSION = "bench-session"
ITEMS = 10


class HookSession:
    """A captured session (its project folder, log and the next payload) and a pristine copy to reset from."""

    def __init__(self, project: Path, pristine: Path, payload: bytes) -> None:
        self.project = project
        self.pristine = pristine
        self.payload = payload

    @property
    def log(self) -> Path:
        """The session's log."""
        return run_path(plantrail_folder(str(self.project), {}) / "runs", SESSION)

    def reset(self) -> None:
        """Put the session back as it was before the timed call (untimed)."""
        shutil.rmtree(self.project / ".plantrail", ignore_errors=True)
        shutil.copytree(self.pristine, self.project / ".plantrail")


def _todos(round_: int, done: int) -> list[dict[str, str]]:
    """List `round_` with its first `done` items completed and the next in progress."""
    return [
        {
            "content": f"round {round_} item {i}: do the work of this item",
            "status": "completed" if i < done else "in_progress" if i == done else "pending",
            "activeForm": f"doing round {round_} item {i}",
        }
        for i in range(ITEMS)
    ]


def _payload(project: Path, call: int, round_: int, done: int) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_use_id": f"toolu_bench{call:06d}",
        "tool_input": {"todos": _todos(round_, done)},
        "tool_response": {"oldTodos": [], "newTodos": _todos(round_, done)},
    }


def hook_session(workdir: Path, n: int) -> HookSession:
    """A session of at least n events captured by the hook, and the payload of its next TodoWrite."""
    project = workdir / f"hook-session-{n}"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    folder = plantrail_folder(str(project), {})
    prompt = {
        "session_id": SESSION,
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Work through every item of the release checklist, one at a time",
    }
    path = journal_path(folder, SESSION, claude.ADAPTER)
    call = 0
    records = claude.journal_records(
        claude.read_payload(orjson.dumps(prompt)), "2026-12-01T00:00:00.000Z", frozenset(), list
    )
    # about 2.2 events per TodoWrite (a completion, a start, the group commit's bounds for both)
    while call * 4 < n:
        round_, done = divmod(call, ITEMS)
        raw = orjson.dumps(_payload(project, call, round_, done))
        records += claude.journal_records(claude.read_payload(raw), "2026-12-01T00:00:00.000Z", frozenset(), list)
        call += 1
    with Journal.locked(path) as journal:
        journal.append(records)
    capture_journal(path, run_path(folder / "runs", SESSION), SESSION)
    pristine = workdir / f"hook-session-{n}.pristine"
    shutil.rmtree(pristine, ignore_errors=True)
    shutil.copytree(folder, pristine)
    round_, done = divmod(call, ITEMS)
    return HookSession(project, pristine, orjson.dumps(_payload(project, call, round_, done)))


_SESSIONS: dict[tuple[Path, int], HookSession] = {}


def _session(workdir: Path, n: int) -> HookSession:
    """The session of size n, built once per work dir (both sides of the row read the same one)."""
    key = (workdir, n)
    if key not in _SESSIONS:
        _SESSIONS[key] = hook_session(workdir, n)
    return _SESSIONS[key]


def hook_call(workdir: Path, n: int, plantrail: list[str]) -> tuple[Callable[[], None], Callable[[], None]]:
    """(setup, call): reset the session untimed; one `plantrail hook claude` process with the next payload."""
    session = _session(workdir, n)

    def call() -> None:
        subprocess.run([*plantrail, "hook", "claude"], input=session.payload, capture_output=True, check=True)

    return session.reset, call


def write_call(workdir: Path, n: int, plantrail: list[str]) -> tuple[Callable[[], None], Callable[[], None]]:
    """(setup, call): reset the session untimed; one plain write command on its log (`plantrail finish
    --outcome paused`), the floor any appending process pays (the codec, the store, one fsync)."""
    session = _session(workdir, n)
    argv = [*plantrail, "finish", str(session.log), "--outcome", "paused", "--reason", "bench"]

    def call() -> None:
        subprocess.run(argv, capture_output=True, check=True)

    return session.reset, call


def status_of_session(workdir: Path, n: int, plantrail: list[str]) -> list[str]:
    """`plantrail status` on the captured session's log, as a whole process."""
    return [*plantrail, "status", str(_session(workdir, n).log)]
