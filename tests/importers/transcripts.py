"""Builders for small transcripts in each format, written the way the real tools write them.

Each builder numbers its lines as the file will: `todo(...)` returns the line of the plan call, so tests
can assert the source line an event cites.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

Items = tuple[tuple[str, str], ...]
SESSION = "5e551011-0000-4000-8000-000000000001"


class Claude:
    """A Claude Code session (new TodoWrite schema, and the 2.1 task tools)."""

    def __init__(self, session: str = SESSION, agent: str | None = None) -> None:
        self.lines: list[bytes] = []
        self.session = session
        self.agent = agent
        self.todos: list[dict[str, str]] = []
        self.calls = 0

    def _add(self, record: dict[str, Any]) -> int:
        record |= {
            "sessionId": self.session,
            "uuid": f"u-{len(self.lines) + 1}",
            "timestamp": f"2026-02-01T10:{len(self.lines) // 60:02d}:{len(self.lines) % 60:02d}.000Z",
        }
        if self.agent is not None:
            record |= {"agentId": self.agent, "isSidechain": True}
        self.lines.append(orjson.dumps(record))
        return len(self.lines)

    def user(self, text: str) -> int:
        """A person's message."""
        return self._add({"type": "user", "message": {"role": "user", "content": text}})

    def says(self, text: str) -> int:
        """The agent's text."""
        return self._add(
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}
        )

    def raw(self, line: bytes) -> int:
        """A line written as given (e.g. one that is not JSON)."""
        self.lines.append(line)
        return len(self.lines)

    def _call(self, name: str, call: dict[str, Any], result: str, structured: dict[str, Any] | None) -> int:
        self.calls += 1
        call_id = f"toolu_{self.calls}"
        line = self._add(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": call_id, "name": name, "input": call}],
                },
            }
        )
        answer: dict[str, Any] = {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
            },
        }
        if structured is not None:
            answer["toolUseResult"] = structured
        self._add(answer)
        return line

    def todo(self, *items: tuple[str, str], emptied: bool = False) -> int:
        """A TodoWrite of the whole list; `emptied` makes the tool report an empty list before it."""
        todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
        old = [] if emptied else self.todos
        self.todos = todos
        return self._call(
            "TodoWrite",
            {"todos": todos},
            "Todos have been modified successfully.",
            {"oldTodos": old, "newTodos": todos},
        )

    def task_create(self, subject: str) -> int:
        """A TaskCreate answered with the next task id."""
        task_id = str(sum(1 for line in self.lines if b'"TaskCreate"' in line) + 1)
        return self._call(
            "TaskCreate",
            {"subject": subject, "description": subject},
            f"Task #{task_id} created successfully: {subject}",
            {"task": {"id": task_id}},
        )

    def task_update(
        self,
        task_id: str,
        status: str | None = None,
        *,
        was: str | None = None,
        subject: str | None = None,
        structured: bool = True,
    ) -> int:
        """A TaskUpdate; the answer reports the status change from `was` (nothing when `was` is None)."""
        call: dict[str, Any] = {"taskId": task_id}
        fields = []
        if subject is not None:
            call["subject"] = subject
            fields.append("subject")
        if status is not None:
            call["status"] = status
            if was is not None or not structured:
                fields.append("status")
        answer: dict[str, Any] = {"success": True, "taskId": task_id, "updatedFields": fields}
        if was is not None:
            answer["statusChange"] = {"from": was, "to": status}
        text = f"Updated task #{task_id} {', '.join(fields)}"
        return self._call("TaskUpdate", call, text, answer if structured else None)

    def write(self, path: Path) -> Path:
        """Write the session as JSONL."""
        path.write_bytes(b"".join(line + b"\n" for line in self.lines))
        return path


class Codex:
    """A Codex rollout with update_plan calls."""

    def __init__(self) -> None:
        self.lines: list[bytes] = [
            orjson.dumps(
                {
                    "timestamp": "2026-02-01T09:00:00.000Z",
                    "type": "session_meta",
                    "payload": {"id": "019c0000-0000-7000-8000-00000000c0de"},
                }
            )
        ]

    def _add(self, kind: str, payload: dict[str, Any]) -> int:
        stamp = f"2026-02-01T09:00:{len(self.lines):02d}.000Z"
        self.lines.append(orjson.dumps({"timestamp": stamp, "type": kind, "payload": payload}))
        return len(self.lines)

    def user(self, text: str) -> int:
        """A user_message event."""
        return self._add("event_msg", {"type": "user_message", "message": text})

    def plan(self, *items: tuple[str, str], explanation: str | None = None) -> int:
        """An update_plan call and its "Plan updated" output."""
        arguments: dict[str, Any] = {"plan": [{"step": text, "status": status} for text, status in items]}
        if explanation is not None:
            arguments["explanation"] = explanation
        call_id = f"call_{len(self.lines)}"
        line = self._add(
            "response_item",
            {
                "type": "function_call",
                "name": "update_plan",
                "call_id": call_id,
                "arguments": orjson.dumps(arguments).decode(),
            },
        )
        self._add("response_item", {"type": "function_call_output", "call_id": call_id, "output": "Plan updated"})
        return line

    def write(self, path: Path) -> Path:
        """Write the rollout as JSONL."""
        path.write_bytes(b"".join(line + b"\n" for line in self.lines))
        return path


class OpenCode:
    """An OpenCode session export with todowrite parts."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def user(self, text: str) -> int:
        """A user message."""
        self.messages.append({"info": {"role": "user"}, "parts": [{"type": "text", "text": text}]})
        return len(self.messages)

    def todo(self, *items: tuple[str, str]) -> int:
        """An assistant message with one todowrite part (positional ids, as OpenCode writes them)."""
        todos = [
            {"id": str(n), "content": text, "status": status, "priority": "high"}
            for n, (text, status) in enumerate(items, start=1)
        ]
        part = {
            "type": "tool",
            "tool": "todowrite",
            "callID": f"call_{len(self.messages) + 1}",
            "state": {
                "status": "completed",
                "input": {"todos": todos},
                "time": {"start": 1769900000000 + 1000 * len(self.messages)},
            },
        }
        self.messages.append({"info": {"role": "assistant", "agent": "build"}, "parts": [part]})
        return len(self.messages)

    def write(self, path: Path) -> Path:
        """Write the export as one JSON document."""
        path.write_bytes(orjson.dumps({"info": {"id": "ses_built"}, "messages": self.messages}))
        return path


class Cline:
    """A Cline conversation history with task_progress checklists (no timestamps)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def user(self, text: str) -> int:
        """A user message holding the person's words."""
        self.messages.append({"role": "user", "content": [{"type": "text", "text": f"<task>\n{text}\n</task>"}]})
        return len(self.messages)

    def checklist(self, *items: tuple[str, bool]) -> int:
        """An assistant tool call carrying the checklist."""
        progress = "\n".join(f"- [{'x' if done else ' '}] {text}" for text, done in items)
        call = {
            "type": "tool_use",
            "id": f"toolu_{len(self.messages) + 1}",
            "name": "read_file",
            "input": {"path": "README.md", "task_progress": progress},
        }
        self.messages.append({"role": "assistant", "content": [call]})
        return len(self.messages)

    def write(self, path: Path) -> Path:
        """Write the history as one JSON array."""
        path.write_bytes(orjson.dumps(self.messages))
        return path
