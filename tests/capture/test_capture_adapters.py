"""`plantrail hook gemini` and `plantrail hook opencode`: each adapter on payload fixtures written from the
documented shapes (Gemini CLI docs/hooks/reference.md, OpenCode's todo.updated event)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from plantrail.ledger.capture.hook import ERRORS_FILE, gemini_hook, opencode_hook

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
INTEGRATIONS = Path(__file__).resolve().parents[2] / "integrations"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, with $PLANTRAIL_HOME unset."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    return tmp_path


def _fixture_lines(name: str, project: Path) -> list[bytes]:
    text = (FIXTURES / name).read_text().replace("PROJECT", str(project))
    return [line.encode() for line in text.splitlines() if line.strip()]


def _records(log: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def _steps(records: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(r["type"], r["data"]["step"]) for r in records if str(r["type"]).startswith("step.")]  # type: ignore[index]


def test_gemini_write_todos_become_the_plan_and_its_transitions(project: Path) -> None:
    """A Gemini CLI session's hooks give the plan (goal from BeforeAgent), its transitions, and a pause at the end."""
    for line in _fixture_lines("gemini_session.jsonl", project):
        assert gemini_hook(line).errors == ()

    records = _records(project / ".plantrail" / "runs" / "209c0000-gemini-hooks.jsonl")
    plan = records[1]["data"]["plan"]  # type: ignore[index]
    assert plan["goal"] == "Fix the port type in the build config and re-run the build."
    assert [s["id"] for s in plan["steps"]] == ["fix-port-type", "re-run-build"]
    assert _steps(records) == [
        ("step.started", "fix-port-type"),
        ("step.completed", "fix-port-type"),
        ("step.started", "re-run-build"),
        ("step.completed", "re-run-build"),
    ]
    assert records[-1]["type"] == "run.finished" and records[-1]["data"]["outcome"] == "paused"  # type: ignore[index]


def test_gemini_adapter_version_is_in_the_log_and_unknown_fields_are_kept(project: Path) -> None:
    """The plan names the hook adapter and its version; a field the adapter does not read stays in the journal."""
    for line in _fixture_lines("gemini_session.jsonl", project):
        gemini_hook(line)

    records = _records(project / ".plantrail" / "runs" / "209c0000-gemini-hooks.jsonl")
    notes = records[1]["data"]["plan"]["notes"]  # type: ignore[index]
    journal = (project / ".plantrail" / "capture" / "209c0000-gemini-hooks.gemini-cli-hooks.jsonl").read_text()
    assert any("gemini-cli-hooks adapter v1" in note for note in notes)
    assert '"tool_call_id":"a-newer-field"' in journal


def test_gemini_another_tool_is_an_error_line_and_exit_0(project: Path) -> None:
    """An AfterTool of a tool other than write_todos leaves a line in the error file; the process exits 0."""
    payload = {"session_id": "g1", "cwd": str(project), "hook_event_name": "AfterTool", "tool_name": "run_shell"}

    result = subprocess.run(
        [sys.executable, "-m", "plantrail.cli.main", "hook", "gemini"],
        input=orjson.dumps(payload),
        capture_output=True,
        check=False,
    )

    assert (result.returncode, result.stdout) == (0, b"")
    assert "error[HOOK_PAYLOAD_INVALID]" in (project / ".plantrail" / ERRORS_FILE).read_text()
    assert not (project / ".plantrail" / "runs").exists()


def test_opencode_todo_updated_lines_become_the_plan_and_its_transitions(project: Path) -> None:
    """OpenCode's todo.updated events, sent as JSON lines, give the plan, its transitions and the cancelled
    item's removal (a replan)."""
    lines = _fixture_lines("opencode_events.jsonl", project)
    assert opencode_hook(b"\n".join(lines[:2]) + b"\n").errors == ()
    assert opencode_hook(lines[2]).errors == ()

    records = _records(project / ".plantrail" / "runs" / "ses_hooks0001.jsonl")
    kinds = [r["type"] for r in records if not str(r["type"]).startswith("log.")]
    assert kinds.count("plan.replanned") == 1
    assert ("step.completed", "add-the-old-name-as-an-alias") in _steps(records)
    assert any("opencode-hooks adapter v1" in n for n in records[1]["data"]["plan"]["notes"])  # type: ignore[index]


def test_opencode_events_delivered_twice_are_recorded_once(project: Path) -> None:
    """The same todo.updated list again adds an update to the journal but no event to the log."""
    [first, *_] = _fixture_lines("opencode_events.jsonl", project)
    opencode_hook(first)
    log = project / ".plantrail" / "runs" / "ses_hooks0001.jsonl"
    before = log.read_bytes()

    opencode_hook(first)

    assert log.read_bytes() == before


@pytest.mark.parametrize(
    "raw",
    [b'{"type": "todo.updated", "properties": {"sessionID": "s"', b'{"type": "session.idle", "properties": {}}', b"{}"],
)
def test_opencode_bad_lines_are_an_error_line_and_exit_0(project: Path, raw: bytes) -> None:
    """Truncated JSON, an event it does not record, no session: one error line, exit 0, no log."""
    result = subprocess.run(
        [sys.executable, "-m", "plantrail.cli.main", "hook", "opencode"],
        input=raw,
        capture_output=True,
        cwd=project,
        check=False,
    )

    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert len((project / ".plantrail" / ERRORS_FILE).read_text().splitlines()) == 1
    assert not (project / ".plantrail" / "runs").exists()


def test_the_gemini_extension_runs_the_hook_and_the_mcp_server() -> None:
    """gemini-extension.json starts `plantrail mcp`; hooks/hooks.json runs `plantrail hook gemini` after write_todos."""
    manifest = json.loads((INTEGRATIONS / "gemini-cli" / "gemini-extension.json").read_text())
    hooks = json.loads((INTEGRATIONS / "gemini-cli" / "hooks" / "hooks.json").read_text())["hooks"]

    assert manifest["mcpServers"]["plantrail"] == {"command": "plantrail", "args": ["mcp"]}
    [after] = hooks["AfterTool"]
    assert after["matcher"] == "write_todos" and after["hooks"][0]["command"] == "plantrail hook gemini"
    from plantrail.ledger.capture.servers import gemini_hooks

    assert hooks == gemini_hooks()  # what plantrail install gemini merges, with a bare plantrail


def test_the_opencode_plugin_forwards_todo_updated_to_the_hook() -> None:
    """The OpenCode plugin file forwards todo.updated events, with the directory, to `plantrail hook opencode`."""
    plugin = (INTEGRATIONS / "opencode" / "plantrail.ts").read_text()

    assert 'event.type !== "todo.updated"' in plugin and "${PLANTRAIL} hook opencode" in plugin
    assert 'const PLANTRAIL = ["plantrail"]' in plugin
    assert "directory" in plugin
