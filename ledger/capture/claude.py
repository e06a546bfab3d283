"""Claude Code hook payloads -> lines of the session's hook journal, in Claude Code's own transcript dialect
(adapter ``claude-code-hooks``, version :data:`VERSION`).

Each payload becomes the transcript lines that the session's transcript holds for the same moment, so the
importer's Claude Code parser and the one mapping read the journal as they read a transcript:

* ``PostToolUse`` of a plan tool (TodoWrite, TaskCreate, TaskUpdate, ExitPlanMode): the call (an ``assistant``
  line with the ``tool_use`` block: ``tool_use_id``, ``tool_name``, ``tool_input``) and its answer (a ``user``
  line with the ``tool_result`` and ``toolUseResult`` = ``tool_response``). ExitPlanMode's answer says the user
  approved the plan (the tool only runs, and PostToolUse only fires, once they did), with their edits when the
  plan in ``tool_response`` differs from the one proposed. A PostToolUse of any other tool is
  refused (HOOK_PAYLOAD_INVALID): the plugin's matcher never sends one. A response that says the call failed
  (``success: false``, an ``error``) is the transcript's error answer (``is_error``).
* ``PostToolUseFailure`` of a plan tool: the call and its error answer (``is_error``, the payload's ``error``
  as its text), as the transcript holds a call the tool rejected or the user refused, so the mapping does what
  an import does: the update is skipped as ``rejected_by_tool``, the user's words in a refusal ("... the user
  said: ...") are theirs for the next replan, and a refused ExitPlanMode is the user's denial of the plan.
* ``TaskCreated`` / ``TaskCompleted``: the TaskCreate / TaskUpdate (to ``completed``) they report, with the
  answer that names the task (the call id is ``TaskCreated-<task id>``; the identity of a creation or a
  completion is the task's, whichever report comes first, see :mod:`.identity`).
* ``UserPromptSubmit``: the user's message (the goal of a new run, the why of a replan they ask for).
* ``SessionStart``, ``Stop``, ``SubagentStop``, ``SessionEnd``, ``PreCompact``: a ``system`` line saying so
  (turn boundaries; a compaction, with its trigger).
  A ``Stop``'s line keeps the turn (:func:`turn_of`: its id and usage, read from the transcript's tail by
  :mod:`.turns`) in its mark; the parser adds it to the usage that the next result it maps reports, so the
  run's usage and its ``max_turns`` budget count the agent's turns (a turn already journaled is not again).
  ``SubagentStop`` also copies the plan calls of the subagent's transcript (``agent_transcript_path``) that the
  journal does not hold yet, as ``--with-subagents`` merges them.

Inside a subagent the payload names ``agent_id``; its lines carry it as ``agentId``, so the subagent is
credited as in a transcript. Every line keeps, under ``plantrail``, the hook's event, this adapter's version
and every payload field this adapter does not read (unknown fields are kept, never refused).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from plantrail.ledger.stores.locations import pure_path
from plantrail.ledger.vocabulary.errors import error

if TYPE_CHECKING:
    from .turns import TurnUsage

__all__ = [
    "ADAPTER",
    "EVENTS",
    "PLAN_TOOLS",
    "VERSION",
    "Payload",
    "call_id",
    "journal_records",
    "read_object",
    "read_payload",
    "turn_of",
]

ADAPTER = "claude-code-hooks"
VERSION = 1
EVENTS = frozenset(
    {
        "PostToolUse",
        "PostToolUseFailure",
        "TaskCreated",
        "TaskCompleted",
        "UserPromptSubmit",
        "SessionStart",
        "Stop",
        "SubagentStop",
        "SessionEnd",
        "PreCompact",
    }
)
PLAN_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate", "ExitPlanMode"})
#: The events that report one call of a plan tool: it ran (PostToolUse) or it failed or was refused.
_TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})
_READ = frozenset(
    {
        "session_id",
        "hook_event_name",
        "cwd",
        "tool_name",
        "tool_input",
        "tool_response",
        "tool_use_id",
        "error",
        "prompt",
        "agent_id",
        "task_id",
        "task_subject",
        "task_description",
        "agent_transcript_path",
        "source",
        "reason",
        "trigger",
    }
)


class Payload(msgspec.Struct, frozen=True):
    """One hook payload, checked: its event, session, working directory and the object itself."""

    event: str
    session: str
    cwd: str | None
    fields: Mapping[str, Any]

    def text(self, name: str) -> str | None:
        """The payload's field ``name`` when it is a non-empty string."""
        value = self.fields.get(name)
        return value if isinstance(value, str) and value else None


def read_object(raw: bytes, events: frozenset[str]) -> Payload:
    """One JSON object payload with a ``session_id`` and a ``hook_event_name`` among ``events``, or
    HOOK_PAYLOAD_INVALID (every agent whose hooks send such objects: Claude Code, Gemini CLI)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error("HOOK_PAYLOAD_INVALID", f"the payload is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise error("HOOK_PAYLOAD_INVALID", "the payload is not a JSON object")
    session, event = value.get("session_id"), value.get("hook_event_name")
    if not isinstance(session, str) or not session:
        raise error("HOOK_PAYLOAD_INVALID", "the payload names no session_id")
    if event not in events:
        known = ", ".join(sorted(events))
        raise error("HOOK_PAYLOAD_INVALID", f"hook event {event!r} is not one this hook records ({known})")
    cwd = value.get("cwd")
    return Payload(str(event), session, cwd if isinstance(cwd, str) and cwd else None, value)


def read_payload(raw: bytes) -> Payload:
    """Parse and check one payload; HOOK_PAYLOAD_INVALID when it is not JSON, names no session or event, or
    is an event or a tool this hook does not record."""
    payload = read_object(raw, EVENTS)
    value, event = payload.fields, payload.event
    tool = value.get("tool_name")
    if event in _TOOL_EVENTS and tool not in PLAN_TOOLS:
        raise error("HOOK_PAYLOAD_INVALID", f"tool {tool!r} is not a plan tool ({', '.join(sorted(PLAN_TOOLS))})")
    if event in _TOOL_EVENTS and not isinstance(value.get("tool_use_id"), str):
        raise error("HOOK_PAYLOAD_INVALID", f"the {tool} payload names no tool_use_id")
    if event in ("TaskCreated", "TaskCompleted") and not isinstance(value.get("task_id"), (str, int)):
        raise error("HOOK_PAYLOAD_INVALID", f"the {event} payload names no task_id")
    return payload


def call_id(payload: Payload) -> str | None:
    """The id of the call a payload reports (PostToolUse's tool_use_id, ``TaskCreated-<task>`` ...); None for
    the events that report no call."""
    if payload.event in _TOOL_EVENTS:
        return str(payload.fields["tool_use_id"])
    if payload.event in ("TaskCreated", "TaskCompleted"):
        return f"{payload.event}-{payload.fields['task_id']}"
    return None


def turn_of(payload: Payload, usage: TurnUsage) -> dict[str, Any]:
    """A Stop's turn as the journal keeps it: its id (the payload's ``prompt_id``, else the uuid of the turn's last
    assistant line, else none) and its usage (one turn, its tokens, its cost when the transcript records one)."""
    spent: dict[str, Any] = {"turns": 1, "tokens": usage.tokens}
    if usage.cost_usd is not None:
        spent["cost_usd"] = usage.cost_usd
    return {"id": payload.text("prompt_id") or usage.last, "usage": spent}


def journal_records(
    payload: Payload,
    now: str,
    held: frozenset[str],
    read_subagent: Callable[[str], Iterable[dict[str, Any]]],
    turn: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The journal lines for ``payload``, stamped ``now``; calls whose id is in ``held`` are not repeated.
    ``read_subagent`` reads a subagent transcript's lines, one at a time (SubagentStop); ``turn`` is a Stop's turn
    (:func:`turn_of`), kept in the line's ``plantrail`` mark."""
    base = _base(payload, now)
    if turn is not None:
        base["plantrail"] = {**base["plantrail"], "turn": dict(turn)}
    event = payload.event
    if event == "PostToolUse":
        call = call_id(payload) or ""
        if call in held:
            return []
        response = payload.fields.get("tool_response")
        tool, given = str(payload.fields["tool_name"]), payload.fields.get("tool_input")
        return _call(base, call, tool, given, response, _answer_text(tool, given, response))
    if event == "PostToolUseFailure":
        call = call_id(payload) or ""
        if call in held:
            return []
        tool, given = str(payload.fields["tool_name"]), payload.fields.get("tool_input")
        return _call(base, call, tool, given, None, _failure_text(payload), failed=True)
    if event in ("TaskCreated", "TaskCompleted"):
        return _task_report(base, payload, held)
    if event == "UserPromptSubmit":
        prompt = payload.text("prompt")
        return [] if prompt is None else [{**base, "type": "user", "message": {"role": "user", "content": prompt}}]
    said = {"type": "system", "subtype": f"hook:{event}", "content": _system_text(payload)}
    lines: list[dict[str, Any]] = [{**base, **said}]
    transcript = payload.text("agent_transcript_path")
    if event == "SubagentStop" and transcript is not None:
        lines += _subagent_calls(read_subagent(pure_path(transcript)), held, payload.text("agent_id"))
    return lines


def _base(payload: Payload, now: str) -> dict[str, Any]:
    extra = {key: value for key, value in payload.fields.items() if key not in _READ}
    base: dict[str, Any] = {
        "sessionId": payload.session,
        "timestamp": now,
        "plantrail": {"hook": payload.event, "adapter": ADAPTER, "adapter_version": VERSION, "unread": extra},
    }
    agent = payload.text("agent_id")
    if agent is not None:
        base["agentId"] = agent
    return base


def _answer_text(tool: str, given: object, response: object) -> str:
    """The text of the tool's answer as the transcript holds it, where the parser reads it: an ExitPlanMode that
    ran (PostToolUse fires only for a plan the user approved) is the approval, with the user's edits when the
    plan it returned differs from the one proposed."""
    if tool != "ExitPlanMode":
        return ""
    proposed = given.get("plan") if isinstance(given, dict) else None
    final = response.get("plan") if isinstance(response, dict) else None
    text = "User has approved your plan. You can now start coding."
    if isinstance(final, str) and final.strip() and final != proposed:
        text += f"\n\n## Approved Plan (edited by user):\n{final}"
    return text


def _failure_text(payload: Payload) -> str:
    """The answer a failed call gets in the transcript: the payload's ``error`` (a refusal there reads "The user
    doesn't want to proceed with this tool use ... the user said: ...", as in the transcript)."""
    said = payload.fields.get("error")
    if isinstance(said, str) and said.strip():
        return said
    if payload.fields.get("is_interrupt") is True:
        return "[Request interrupted by user for tool use]"
    return "the tool call failed (the hook payload gives no error text)"


def _call(
    base: dict[str, Any],
    call: str,
    tool: str,
    given: object,
    response: object,
    text: str = "",
    *,
    failed: bool = False,
) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": call, "name": tool, "input": given if isinstance(given, dict) else {}}
    answer: dict[str, Any] = {
        **base,
        "type": "user",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": text}]},
    }
    if isinstance(response, dict):
        answer["toolUseResult"] = response
        failed = failed or response.get("success") is False or bool(response.get("error"))
    if failed:
        answer["message"]["content"][0]["is_error"] = True
    return [{**base, "type": "assistant", "message": {"role": "assistant", "content": [use]}}, answer]


def _task_report(base: dict[str, Any], payload: Payload, held: frozenset[str]) -> list[dict[str, Any]]:
    task = str(payload.fields["task_id"])
    call = call_id(payload) or ""
    if call in held:
        return []
    if payload.event == "TaskCreated":
        subject = payload.text("task_subject") or ""
        given = {"subject": subject, "description": payload.text("task_description") or ""}
        return _call(base, call, "TaskCreate", given, {"task": {"id": task, "subject": subject}})
    answer = {"success": True, "taskId": task, "updatedFields": ["status"], "statusChange": {"to": "completed"}}
    return _call(base, call, "TaskUpdate", {"taskId": task, "status": "completed"}, answer)


def _system_text(payload: Payload) -> str:
    detail = payload.text("source") or payload.text("reason") or payload.text("trigger")
    return f"{payload.event} ({detail})" if detail else payload.event


def _subagent_calls(lines: Iterable[dict[str, Any]], held: frozenset[str], agent: str | None) -> list[dict[str, Any]]:
    """The plan calls of a subagent's transcript and their answers that the journal does not hold, credited
    to the subagent (the lead's context a subagent replays has the lead's call ids, which the journal holds)."""
    calls: set[str] = set()
    kept: list[dict[str, Any]] = []
    for line in lines:
        blocks = _blocks(line)
        uses = {b.get("id") for b in blocks if b.get("type") == "tool_use" and b.get("name") in PLAN_TOOLS}
        answers = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        fresh = {c for c in uses if isinstance(c, str) and c not in held}
        if fresh:
            calls |= fresh
        elif not (answers & calls):
            continue
        kept.append({**line, "agentId": line.get("agentId") or agent} if agent else line)
    return kept


def _blocks(line: dict[str, Any]) -> list[dict[str, Any]]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
