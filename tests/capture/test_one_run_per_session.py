"""One agent session is one run, named by the session id, whichever path reports it: the hooks (a session's
events) and the plan server (`plantrail mcp` started as a process, driven over real stdio by the MCP SDK's
client), with and without the agent's own plan tool."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp")

import anyio
from mcp import Client, StdioServerParameters

from plantrail.ledger.capture.hook import claude_hook
from plantrail.ledger.capture.notes import AGENT_PLAN_TOOL
from tests.helpers.hook_payloads import post_tool_use, prompt
from tests.helpers.mcp_calls import call, result

SESSION = "9f1c2e7a-5b3d-4c1e-8a2f-6d0b1e3c4a5f"
STEPS = [
    {"id": "reproduce", "title": "Reproduce the failure", "completion_evidence": "failing output"},
    {"id": "fix", "title": "Fix it", "depends_on": ["reproduce"], "completion_evidence": "the diff"},
]
PLAN = {"goal": "fix the login", "criteria": [{"id": "tests-pass", "description": "the suite passes"}]}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}


def _hook(payload: dict[str, Any]) -> None:
    """One hook call as the installed hook makes it; it must record without an error."""
    done = claude_hook(orjson.dumps(payload), env=_env())
    assert done.errors == (), done.errors


def _event(event: str, project: Path, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def _todo(project: Path, call_id: str, *items: tuple[str, str]) -> dict[str, Any]:
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    return post_tool_use(SESSION, project, "TodoWrite", call_id, {"todos": todos}, {"oldTodos": [], "newTodos": todos})


def _session(project: Path, work: Callable[[Client], Awaitable[None]]) -> None:
    """SessionStart, a prompt, then ``work`` against `plantrail mcp` started in the project, Stop, SessionEnd."""
    _hook(_event("SessionStart", project, source="startup"))
    _hook(prompt(SESSION, project, "fix the login"))

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "plantrail", "mcp"], env=_env(), cwd=project)
        async with Client(params) as client:
            await work(client)

    anyio.run(main)
    _hook(_event("Stop", project, stop_hook_active=False, last_assistant_message="done"))
    _hook(_event("SessionEnd", project, reason="prompt_input_exit"))


def _records(project: Path) -> list[dict[str, Any]]:
    runs = sorted((project / ".plantrail" / "runs").glob("*.jsonl"))
    assert [p.name for p in runs] == [f"{SESSION}.jsonl"]
    return [orjson.loads(line) for line in runs[0].read_bytes().splitlines()]


async def _plan_and_work(client: Client, between: Callable[[], None] = lambda: None) -> None:
    """The model keeps its plan through the plan server, passing no run (the hook announced it)."""
    answer = result(await call(client, "plan_set", steps=STEPS, **PLAN))
    assert answer["run"] == SESSION
    between()
    result(await call(client, "step_start", step="reproduce"))
    result(await call(client, "step_update", step="reproduce", action="complete", evidence=["401 seen"]))
    between()


def test_a_session_without_a_plan_tool_is_one_run_named_by_the_session(tmp_path: Path) -> None:
    _session(tmp_path, _plan_and_work)

    records = _records(tmp_path)
    assert {r["run"] for r in records} == {SESSION}
    assert [r["type"] for r in records if not r["type"].startswith("log.")] == [
        "plan.created",
        "step.started",
        "step.completed",
        "run.finished",  # the session's end pauses the run
    ]


def test_the_agents_own_plan_tool_beside_the_plan_server_adds_notes_not_versions(tmp_path: Path) -> None:
    """TodoWrite snapshots arriving through the hooks once the plan server holds the plan are notes on the
    current version: one run, one plan version, each snapshot once (a payload delivered twice is one note)."""
    snapshots = iter(
        [
            _todo(tmp_path, "toolu_1", ("Reproduce the failure", "in_progress"), ("Fix it", "pending")),
            _todo(tmp_path, "toolu_2", ("Reproduce the failure", "completed"), ("Fix it", "in_progress")),
        ]
    )

    def todo_write() -> None:
        payload = next(snapshots)
        _hook(payload)
        _hook(payload)  # delivered twice

    _session(tmp_path, lambda client: _plan_and_work(client, todo_write))

    records = _records(tmp_path)
    assert {r["run"] for r in records} == {SESSION}
    assert [r["plan_version"] for r in records if r["type"].startswith("plan.")] == [1]
    notes = [r["data"] for r in records if r["type"] == "observation.recorded"]
    assert [(n["key"], n["version"]) for n in notes] == [
        (AGENT_PLAN_TOOL, "TodoWrite: [>] Reproduce the failure · [ ] Fix it"),
        (AGENT_PLAN_TOOL, "TodoWrite: [x] Reproduce the failure · [>] Fix it"),
    ]
    assert [r["type"] for r in records if r["type"].startswith("step.")] == ["step.started", "step.completed"]


def test_without_the_plan_server_the_plan_tool_makes_the_versions_as_before(tmp_path: Path) -> None:
    _hook(_event("SessionStart", tmp_path, source="startup"))
    _hook(_todo(tmp_path, "toolu_1", ("Reproduce the failure", "in_progress"), ("Fix it", "pending")))
    _hook(_todo(tmp_path, "toolu_2", ("Reproduce the failure", "completed"), ("Fix it", "in_progress")))

    records = _records(tmp_path)
    assert [r["type"] for r in records if not r["type"].startswith("log.")] == [
        "plan.created",
        "step.started",
        "step.completed",
        "step.started",
    ]
    assert not [r for r in records if r["type"] == "observation.recorded"]


def test_the_plan_servers_first_write_keeps_the_project_folder_out_of_git(tmp_path: Path) -> None:
    """With no hook before it, the plan server's first plan under a git repository makes .plantrail/.gitignore:
    git status shows nothing under .plantrail/."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "plantrail", "mcp"], env=_env(), cwd=tmp_path
        )
        async with Client(params) as client:
            result(await call(client, "plan_set", run="r1", steps=STEPS, **PLAN))

    anyio.run(main)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path, capture_output=True, check=True
    )
    assert status.stdout == b"" and (tmp_path / ".plantrail" / "runs" / "r1.jsonl").is_file()


def test_a_finished_runs_plan_tool_updates_are_neither_versions_nor_errors(tmp_path: Path) -> None:
    """After the plan server finished the run, the agent's plan tool changes nothing and reports no error."""
    from plantrail.ledger.api import Ledger

    log = tmp_path / ".plantrail" / "runs" / f"{SESSION}.jsonl"
    with Ledger.set_plan(log, STEPS, run=SESSION, **PLAN) as ledger:
        ledger.finish("cancelled", "the user stopped")
    before = log.read_bytes()

    _hook(_todo(tmp_path, "toolu_1", ("Reproduce the failure", "in_progress")))

    assert log.read_bytes() == before
    assert not (tmp_path / ".plantrail" / "hook-errors.log").exists()


def test_a_log_replaced_since_the_last_call_is_read_again_from_its_start(tmp_path: Path) -> None:
    """The hook remembers how far it read the log; a log replaced since (the record it stopped at gone) is read
    from its start, so a plan server's run put in its place still makes the next update a note."""
    from plantrail.ledger.api import Ledger

    _hook(_todo(tmp_path, "toolu_1", ("Reproduce the failure", "in_progress"), ("Fix it", "pending")))
    _hook(_todo(tmp_path, "toolu_2", ("Reproduce the failure", "completed"), ("Fix it", "in_progress")))
    log = tmp_path / ".plantrail" / "runs" / f"{SESSION}.jsonl"
    log.unlink()
    with Ledger.set_plan(log, STEPS, run=SESSION, **PLAN):
        pass

    _hook(_todo(tmp_path, "toolu_3", ("Reproduce the failure", "completed"), ("Fix it", "completed")))

    records = _records(tmp_path)
    assert [r["type"] for r in records if not r["type"].startswith("log.")] == ["plan.created", "observation.recorded"]
