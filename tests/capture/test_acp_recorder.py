"""The ACP recorder fed messages directly (no relay): what it records of each plan, and what it writes down."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from plantrail.ledger.capture.acp_recorder import AcpRecorder

PLANTRAIL = [sys.executable, "-m", "plantrail"]


def _send(recorder: AcpRecorder, sender: str, message: dict[str, Any]) -> None:
    recorder.message(sender, orjson.dumps({"jsonrpc": "2.0", **message}))  # type: ignore[arg-type]


def _plan(recorder: AcpRecorder, session: str, *items: tuple[str, str]) -> None:
    entries = [{"content": text, "priority": "medium", "status": status} for text, status in items]
    update = {"sessionUpdate": "plan", "entries": entries}
    _send(recorder, "agent", {"method": "session/update", "params": {"sessionId": session, "update": update}})


def _open(recorder: AcpRecorder, project: Path, *, load: str | None = None) -> None:
    _send(recorder, "editor", {"id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    _send(
        recorder, "agent", {"id": 0, "result": {"protocolVersion": 1, "agentInfo": {"name": "gemini", "version": "9"}}}
    )
    if load is None:
        _send(recorder, "editor", {"id": 1, "method": "session/new", "params": {"cwd": str(project), "mcpServers": []}})
        _send(recorder, "agent", {"id": 1, "result": {"sessionId": "s1"}})
    else:
        params = {"cwd": str(project), "sessionId": load, "mcpServers": []}
        _send(recorder, "editor", {"id": 1, "method": "session/load", "params": params})
    prompt = [{"type": "text", "text": "Ship the release notes for version two"}]
    _send(recorder, "editor", {"id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": prompt}})


def _types(log: Path) -> list[str]:
    return [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]


def _status(log: Path) -> list[tuple[str, str]]:
    done = subprocess.run([*PLANTRAIL, "status", str(log), "--json"], capture_output=True, check=True)
    return [(step["title"], step["status"]) for step in orjson.loads(done.stdout)["steps"]]


FIRST = (("Draft the notes", "in_progress"), ("Publish them", "pending"))
SECOND = (("Draft the notes", "completed"), ("Publish them", "in_progress"))
THIRD = (("Draft the notes", "completed"), ("Publish them", "completed"))


def test_a_loaded_session_that_replays_its_plan_appends_only_what_is_new(tmp_path: Path) -> None:
    """A second relay of the same session (session/load, the agent replaying its updates) recognises the
    updates already recorded and appends only the new one."""
    project = tmp_path / "proj"
    project.mkdir()
    first = AcpRecorder(env={})
    _open(first, project)
    _plan(first, "s1", *FIRST)
    _plan(first, "s1", *SECOND)
    log = project / ".plantrail" / "runs" / "acp-s1.jsonl"
    before = _types(log)
    again = AcpRecorder(env={})
    _open(again, project, load="s1")
    _plan(again, "s1", *FIRST)
    _plan(again, "s1", *SECOND)
    assert _types(log) == before
    _plan(again, "s1", *THIRD)
    assert _types(log) == [*before, "step.completed"]
    assert _status(log) == [("Draft the notes", "completed"), ("Publish them", "completed")]
    assert first.errors == [] and again.errors == []


def test_a_markdown_plan_before_the_first_list_is_kept_in_its_notes(tmp_path: Path) -> None:
    """A v2 Markdown plan that comes before its plan's first list is a note of version 1; one that comes after
    is written down as EMPTY_PLAN in the hook error file under the session's working directory."""
    project = tmp_path / "proj"
    project.mkdir()
    recorder = AcpRecorder(env={})
    _open(recorder, project)

    def v2(plan: dict[str, Any]) -> None:
        update = {"sessionUpdate": "plan_update", "plan": {"planId": "p", **plan}}
        _send(recorder, "agent", {"method": "session/update", "params": {"sessionId": "s1", "update": update}})

    v2({"type": "markdown", "content": "# Release\n\nDraft, then publish."})
    v2({"type": "items", "entries": [{"content": "Draft the notes", "priority": "high", "status": "pending"}]})
    v2({"type": "markdown", "content": "# Changed my mind"})
    log = project / ".plantrail" / "runs" / "acp-s1.p.jsonl"
    created = orjson.loads(log.read_bytes().splitlines()[1])
    notes = created["data"]["plan"]["notes"]
    assert any("the agent's plan as Markdown: # Release Draft, then publish." in note for note in notes)
    assert any("agent acp:gemini 9" in note for note in notes)
    errors = (project / ".plantrail" / "hook-errors.log").read_text()
    assert "acp session s1: error[EMPTY_PLAN]: plan s1.p: the Markdown plan at message" in errors
    assert len(recorder.errors) == 1


def test_a_refused_update_is_written_down_and_the_next_still_recorded(tmp_path: Path) -> None:
    """When the log went its own way (its run finished), the update it refuses is one error line; nothing
    raises."""
    project = tmp_path / "proj"
    project.mkdir()
    recorder = AcpRecorder(env={})
    _open(recorder, project)
    _plan(recorder, "s1", *FIRST)
    log = project / ".plantrail" / "runs" / "acp-s1.jsonl"
    finished = subprocess.run(
        [*PLANTRAIL, "finish", str(log), "--outcome", "cancelled", "--reason", "stopped by hand"], capture_output=True
    )
    assert finished.returncode == 0, finished.stderr
    before = log.read_bytes()
    _plan(recorder, "s1", *SECOND)
    assert log.read_bytes() == before
    assert len(recorder.errors) == 1 and recorder.errors[0].startswith("error[RUN_FINISHED]: plan s1:")
    assert "error[RUN_FINISHED]" in (project / ".plantrail" / "hook-errors.log").read_text()


def test_a_message_that_is_no_json_records_nothing(tmp_path: Path) -> None:
    """A line that is not JSON (or not JSON-RPC) is passed over without an error."""
    recorder = AcpRecorder(directory=str(tmp_path), env={})
    recorder.message("agent", b"\xff not json")
    recorder.message("agent", b"[1, 2]")
    assert recorder.errors == [] and list(tmp_path.iterdir()) == []


def test_a_session_id_that_is_no_run_id_gets_a_hashed_run(tmp_path: Path) -> None:
    """A session id with a slash and spaces is recorded as acp-<hash>, inside the runs folder."""
    recorder = AcpRecorder(directory=str(tmp_path / "runs"), env={})
    _plan(recorder, "../a session", *FIRST)
    (log,) = (tmp_path / "runs").glob("*.jsonl")
    assert log.name.startswith("acp-") and len(log.stem) == len("acp-") + 32
    assert recorder.errors == []


def test_the_store_option_names_where_the_runs_go(tmp_path: Path) -> None:
    """With a store (here a runs folder, as --store or PLANTRAIL_STORE names it) the run is that store's."""
    store = tmp_path / "store"
    store.mkdir()
    recorder = AcpRecorder(env={"PLANTRAIL_STORE": str(store)})
    _plan(recorder, "s1", *FIRST)
    assert [p.name for p in store.glob("*.jsonl")] == ["acp-s1.jsonl"]
    assert _status(store / "acp-s1.jsonl") == [("Draft the notes", "in_progress"), ("Publish them", "pending")]


def test_a_project_recorded_only_through_acp_keeps_its_plantrail_folder_out_of_git(tmp_path: Path) -> None:
    """The first write under a project made by the recorder (a run, the hook error file) makes
    ``.plantrail/.gitignore`` as a hook's does: a project used through ACP alone commits no prompts."""
    project = tmp_path / "proj"
    project.mkdir()
    recorder = AcpRecorder(env={})
    _open(recorder, project)
    _plan(recorder, "s1", *FIRST)
    assert (project / ".plantrail" / "runs" / "acp-s1.jsonl").is_file()
    assert (project / ".plantrail" / ".gitignore").read_text().splitlines()[-1] == "*"
