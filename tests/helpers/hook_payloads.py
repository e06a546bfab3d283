"""Claude Code hook payloads, shaped as its hooks reference documents them, for a session whose transcript the
tests hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

__all__ = ["as_hooks_see", "payloads_of", "post_tool_use", "post_tool_use_failure", "prompt"]

PLAN_TOOLS = ("TodoWrite", "TaskCreate", "TaskUpdate", "ExitPlanMode")


def post_tool_use(session: str, cwd: Path, tool: str, call: str, given: Any, answer: Any) -> dict[str, Any]:
    """A PostToolUse payload of a plan tool."""
    return {
        "session_id": session,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": given,
        "tool_response": answer,
        "tool_use_id": call,
        "duration_ms": 12,
    }


def post_tool_use_failure(session: str, cwd: Path, tool: str, call: str, given: Any, said: str) -> dict[str, Any]:
    """A PostToolUseFailure payload of a plan tool (Claude Code's hooks reference: ``error``, ``is_interrupt``,
    ``duration_ms``)."""
    return {
        "session_id": session,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": tool,
        "tool_input": given,
        "tool_use_id": call,
        "error": said,
        "is_interrupt": False,
        "duration_ms": 3,
    }


def prompt(session: str, cwd: Path, text: str) -> dict[str, Any]:
    """A UserPromptSubmit payload."""
    return {
        "session_id": session,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }


def payloads_of(transcript: Path, cwd: Path, *, failures: bool = False) -> list[dict[str, Any]]:
    """The payloads Claude Code's hooks send for the session the transcript records: each user prompt, and
    each plan tool call once its answer is in (tool_response is the transcript's toolUseResult); a call that
    did not run sends nothing, or with ``failures`` its PostToolUseFailure (``error``: the answer's text)."""
    records = [orjson.loads(line) for line in transcript.read_bytes().splitlines() if line.strip()]
    session = next(r["sessionId"] for r in records if "sessionId" in r)
    calls: dict[str, tuple[str, Any]] = {}
    sent: list[dict[str, Any]] = []
    for record in records:
        content = record.get("message", {}).get("content") if isinstance(record.get("message"), dict) else None
        blocks = [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
        if record.get("type") == "assistant":
            for block in blocks:
                if block.get("type") == "tool_use" and block.get("name") in PLAN_TOOLS:
                    calls[block["id"]] = (block["name"], block["input"])
        elif record.get("type") == "user" and isinstance(content, str) and not record.get("isMeta"):
            sent.append(prompt(session, cwd, content))
        elif record.get("type") == "user":
            for block in blocks:
                if block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                    tool, given = calls.pop(block["tool_use_id"])
                    answer = record.get("toolUseResult")
                    if _refused(block, tool):  # a call that did not run: no PostToolUse
                        if failures and block.get("is_error"):
                            said = _text(block.get("content"))
                            sent.append(post_tool_use_failure(session, cwd, tool, block["tool_use_id"], given, said))
                        continue
                    sent.append(post_tool_use(session, cwd, tool, block["tool_use_id"], given, answer))
                elif block.get("type") == "text" and not record.get("isMeta"):
                    sent.append(prompt(session, cwd, block["text"]))
    return sent


def _text(content: Any) -> str:
    """A tool_result's text (a string, or its text parts)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))


def _refused(block: dict[str, Any], tool: str) -> bool:
    """Whether a plan call's answer says it did not run (refused, or a plan the user did not approve)."""
    return bool(block.get("is_error")) or (tool == "ExitPlanMode" and "approved" not in str(block))


def as_hooks_see(transcript: Path, out: Path) -> Path:
    """The transcript without the plan calls that never ran, nor their answers: PostToolUse fires only for a
    call that ran, so a plan the user refused never reaches the hooks (what they can tell is the rest)."""
    records = [orjson.loads(line) for line in transcript.read_bytes().splitlines() if line.strip()]
    tools: dict[str, str] = {}
    unseen: set[str] = set()
    for record in records:
        content = record.get("message", {}).get("content") if isinstance(record.get("message"), dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") in PLAN_TOOLS:
                tools[block["id"]] = block["name"]
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in tools:
                unseen |= {block["tool_use_id"]} if _refused(block, tools[block["tool_use_id"]]) else set()
    kept = []
    for line in transcript.read_bytes().splitlines():
        record = orjson.loads(line) if line.strip() else {}
        content = record.get("message", {}).get("content") if isinstance(record.get("message"), dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        ids = {b.get("id") for b in blocks} | {b.get("tool_use_id") for b in blocks}
        if not ids & unseen:
            kept.append(line)
    out.write_bytes(b"\n".join(kept) + b"\n")
    return out
