"""Gemini CLI hook payloads -> the session's hook journal, in Gemini CLI's own JSONL session dialect
(adapter ``gemini-cli-hooks``, version :data:`VERSION`; google-gemini/gemini-cli ``docs/hooks/reference.md``).

Every payload has ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and ``timestamp``:

* ``AfterTool`` of ``write_todos`` (``tool_input`` ``{todos: [{description, status}]}``, the whole list;
  ``tool_response`` ``{llmContent, returnDisplay, error?}``): a ``gemini`` message holding the call, answered
  ``success`` unless the response has an ``error``. An AfterTool of any other tool is refused
  (HOOK_PAYLOAD_INVALID): the extension's matcher never sends one.
* ``BeforeAgent`` with the user's ``prompt``: a ``user`` message (the goal of a new run).
* ``SessionStart``, ``SessionEnd``, ``PreCompress``: nothing in the journal (SessionStart announces the session's
  run and tells the model where its plan stands, SessionEnd pauses the run, PreCompress records the compaction
  on an open run, as for Claude Code; Gemini CLI takes no instructions for its summary).

The journal opens with the session header Gemini CLI writes (``sessionId``, ``projectHash``, ``startTime``,
``kind``), so the importer's ``gemini-jsonl`` parser and the one mapping read it as they read a session file.
Gemini names no call id, so an update's identity is its journal line; a write_todos delivered twice is the
same list twice, which records nothing more. Each line keeps, under ``plantrail``, the event, this adapter's
version and the payload fields it does not read.
"""

from __future__ import annotations

from typing import Any

from plantrail.ledger.vocabulary.errors import error

from .claude import Payload, read_object

__all__ = ["ADAPTER", "EVENTS", "FORMAT", "VERSION", "journal_records", "read_payloads"]

ADAPTER = "gemini-cli-hooks"
VERSION = 1
FORMAT = "gemini-jsonl"
PLAN_TOOL = "write_todos"
EVENTS = frozenset({"AfterTool", "BeforeAgent", "SessionStart", "SessionEnd", "PreCompress"})
PLAN_EVENTS = frozenset({"AfterTool"})
_READ = frozenset(
    {"session_id", "hook_event_name", "cwd", "timestamp", "tool_name", "tool_input", "tool_response", "prompt"}
)


def read_payloads(raw: bytes) -> list[Payload]:
    """The one payload on stdin, checked (HOOK_PAYLOAD_INVALID as for Claude Code)."""
    payload = read_object(raw, EVENTS)
    if payload.event == "AfterTool" and payload.fields.get("tool_name") != PLAN_TOOL:
        raise error("HOOK_PAYLOAD_INVALID", f"tool {payload.fields.get('tool_name')!r} is not {PLAN_TOOL}")
    return [payload]


def journal_records(payload: Payload, now: str, lines_so_far: int) -> list[dict[str, Any]]:
    """The journal lines for ``payload`` (the header first when the journal is empty)."""
    stamp = payload.text("timestamp") or now
    mark = {"plantrail": _mark(payload)}
    out: list[dict[str, Any]] = []
    if lines_so_far == 0:
        out.append({"sessionId": payload.session, "projectHash": "plantrail-hook", "startTime": stamp, "kind": "main"})
    number = lines_so_far + len(out) + 1
    if payload.event == "BeforeAgent" and payload.text("prompt"):
        out.append({"id": f"m{number}", "timestamp": stamp, "type": "user", "content": payload.text("prompt"), **mark})
    elif payload.event == "AfterTool":
        response = payload.fields.get("tool_response")
        failed = isinstance(response, dict) and bool(response.get("error"))
        output = response.get("llmContent") if isinstance(response, dict) else None
        call: dict[str, Any] = {
            "id": f"{PLAN_TOOL}-{number}",
            "name": PLAN_TOOL,
            "args": payload.fields.get("tool_input") if isinstance(payload.fields.get("tool_input"), dict) else {},
            "result": [{"functionResponse": {"name": PLAN_TOOL, "response": {"output": output}}}],
            "status": "error" if failed else "success",
        }
        out.append(
            {"id": f"m{number}", "timestamp": stamp, "type": "gemini", "content": "", "toolCalls": [call], **mark}
        )
    return out if len(out) > (1 if lines_so_far == 0 else 0) else []


def _mark(payload: Payload) -> dict[str, Any]:
    unread = {key: value for key, value in payload.fields.items() if key not in _READ}
    return {"hook": payload.event, "adapter": ADAPTER, "adapter_version": VERSION, "unread": unread}
