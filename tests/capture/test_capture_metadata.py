"""What an adapter does not map is kept in the events' source ``meta``, bounded, with the adapter's version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.capture.hook import ERRORS_FILE, claude_hook, gemini_hook, opencode_hook
from plantrail.ledger.importers import import_transcript
from plantrail.ledger.importers.metadata import CUT_NAMES, META_CAP, NAME_LIMIT, source_meta
from plantrail.ledger.verify import verify_log
from tests.helpers.hook_payloads import post_tool_use


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, with $PLANTRAIL_HOME unset so runs go under its .plantrail/."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    return tmp_path


def _records(log: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def _todo_payload(project: Path, **extra: Any) -> dict[str, Any]:
    todos = [{"content": "Reproduce the crash", "status": "in_progress", "activeForm": "Reproducing"}]
    payload = post_tool_use(
        "s1", project, "TodoWrite", "toolu_1", {"todos": todos}, {"oldTodos": [], "newTodos": todos}
    )
    return {**payload, "effort": {"level": "high"}, "prompt_id": "p-1", **extra}


def test_a_hook_payloads_unread_fields_are_in_each_events_source_meta(project: Path) -> None:
    """The payload's fields the Claude Code hook adapter does not read, and the tool input's, are kept in the
    source meta of every event the update gives, with the adapter and its version; the log verifies."""
    payload = _todo_payload(project)
    payload["tool_input"]["note"] = "kept"

    assert claude_hook(orjson.dumps(payload)).errors == ()

    log = project / ".plantrail" / "runs" / "s1.jsonl"
    events = [r for r in _records(log) if not r["type"].startswith("log.")]
    assert [r["type"] for r in events] == ["plan.created", "step.started"]
    for record in events:
        assert record["v"] == 2
        assert record["source"]["meta"] == {
            "adapter": "claude-code-hooks",
            "adapter_version": 1,
            "unread": {
                "transcript_path": str(project / "transcript.jsonl"),
                "permission_mode": "default",
                "duration_ms": 12,
                "effort": {"level": "high"},
                "prompt_id": "p-1",
                "tool_input.note": "kept",
            },
        }
    assert any("claude-code-hooks adapter v1" in note for note in events[0]["data"]["plan"]["notes"])
    assert verify_log(log).last_seq == len(_records(log)) - 1


def test_an_unread_field_over_the_cap_is_cut_and_named(project: Path) -> None:
    """A payload field too large for the cap (or one a line cannot hold) is left out of meta and named in its
    ``cut`` marker; the rest is kept and the update is recorded."""
    deep: Any = "bottom"
    for _ in range(20):
        deep = [deep]
    payload = _todo_payload(project, background_tasks=["x" * 5000], deep=deep)

    assert claude_hook(orjson.dumps(payload)).errors == ()

    [plan] = [r for r in _records(project / ".plantrail" / "runs" / "s1.jsonl") if r["type"] == "plan.created"]
    meta = plan["source"]["meta"]
    assert meta["cut"] == ["background_tasks", "deep"]
    assert "permission_mode" in meta["unread"] and len(orjson.dumps(meta["unread"])) <= META_CAP
    assert not (project / ".plantrail" / ERRORS_FILE).exists()


def test_source_meta_is_none_when_nothing_is_unread() -> None:
    """Nothing unread gives no meta, so the source keeps the bytes it always had."""
    assert source_meta("claude-code", 4, {}) is None


def test_source_meta_keeps_fields_whole_in_order_within_the_cap() -> None:
    """Fields are kept whole, in the payload's order, while ``unread`` fits the cap; the cut names are bounded."""
    unread = {f"field-{n:03}": "y" * 100 for n in range(60)} | {"z" * 100: "a"}

    meta = source_meta("claude-code-hooks", 1, unread)

    assert meta is not None
    kept = meta["unread"]
    assert list(kept) == list(unread)[: len(kept)] and len(orjson.dumps(kept)) <= META_CAP
    assert len(orjson.dumps({**kept, "field-999": "y" * 100})) > META_CAP
    assert len(meta["cut"]) == CUT_NAMES + 1 and meta["cut"][-1].startswith("... and ")
    assert all(len(name) <= NAME_LIMIT for name in meta["cut"])


def test_an_imported_task_updates_unread_input_is_kept_with_the_importers_version(tmp_path: Path) -> None:
    """A transcript's TaskUpdate input keys the adapter does not read (addBlockedBy) are in its events' source
    meta, named with the claude-code importer and its version."""
    transcript = tmp_path / "t.jsonl"
    base = {"sessionId": "s9", "timestamp": "2026-12-02T00:00:00Z"}
    create = {"subject": "Fix it", "description": "d"}
    update = {"taskId": "1", "status": "in_progress", "addBlockedBy": ["2"]}
    change = {"success": True, "taskId": "1", "updatedFields": ["status"], "statusChange": {"to": "in_progress"}}

    def call(uuid: str, call_id: str, tool: str, given: dict[str, Any]) -> dict[str, Any]:
        use = {"type": "tool_use", "id": call_id, "name": tool, "input": given}
        return {**base, "type": "assistant", "uuid": uuid, "message": {"role": "assistant", "content": [use]}}

    def answer(uuid: str, call_id: str, result: dict[str, Any], text: str) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        message = {"role": "user", "content": [block]}
        return {**base, "type": "user", "uuid": uuid, "toolUseResult": result, "message": message}

    lines = [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "Fix the parser crash now"}},
        call("u2", "toolu_a", "TaskCreate", create),
        answer("u3", "toolu_a", {"task": {"id": "1", "subject": "Fix it"}}, "Task #1 created"),
        call("u4", "toolu_b", "TaskUpdate", update),
        answer("u5", "toolu_b", change, "Updated task #1 status"),
    ]  # fmt: skip
    transcript.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))

    log = Path(import_transcript(transcript, tmp_path / "run.jsonl").log)

    records = _records(log)
    [started] = [r for r in records if r["type"] == "step.started"]
    assert started["source"]["meta"] == {
        "adapter": "claude-code",
        "adapter_version": 4,
        "unread": {"tool_input.addBlockedBy": ["2"]},
    }
    [created] = [r for r in records if r["type"] == "plan.created"]
    assert "meta" not in created["source"] and created["v"] == 2


def test_opencode_events_unread_properties_are_kept(project: Path) -> None:
    """A todo.updated event's properties the OpenCode adapter does not read are in its events' source meta."""
    event = {
        "type": "todo.updated",
        "properties": {"sessionID": "ses_1", "todos": [{"content": "Rename it", "status": "pending"}], "turn": 3},
        "directory": str(project),
    }

    assert opencode_hook(orjson.dumps(event) + b"\n").errors == ()

    [plan] = [r for r in _records(project / ".plantrail" / "runs" / "ses_1.jsonl") if r["type"] == "plan.created"]
    assert plan["source"]["meta"] == {"adapter": "opencode-hooks", "adapter_version": 1, "unread": {"turn": 3}}


def test_gemini_payloads_unread_fields_are_kept(project: Path) -> None:
    """An AfterTool payload's fields the Gemini CLI hook adapter does not read are in its events' source meta."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "gemini_session.jsonl"
    payloads = [
        orjson.loads(line.replace(b"PROJECT", str(project).encode())) for line in fixture.read_bytes().splitlines()[:3]
    ]
    payloads[2]["mcp_context"] = {"server": "x"}

    assert all(gemini_hook(orjson.dumps(payload)).errors == () for payload in payloads)

    records = _records(project / ".plantrail" / "runs" / f"{payloads[0]['session_id']}.jsonl")
    [plan] = [r for r in records if r["type"] == "plan.created"]
    meta = plan["source"]["meta"]
    assert (meta["adapter"], meta["adapter_version"]) == ("gemini-cli-hooks", 1)
    assert meta["unread"]["mcp_context"] == {"server": "x"}
