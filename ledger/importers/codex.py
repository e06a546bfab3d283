"""Codex CLI rollouts (JSONL lines `{timestamp, type, payload}`): update_plan snapshots.

A plan update is a `response_item` whose payload is a `function_call` named `update_plan`; its
`arguments` is a JSON string `{explanation?, plan: [{step, status}]}`. The matching
`function_call_output` (same `call_id`) answers "Plan updated" on success and an error text
otherwise. User prompts are `event_msg` lines of type `user_message` (the `response_item` copies of
user messages also carry injected instructions and environment context, so they are not used).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from ._records import (
    JsonObject,
    Tally,
    clip,
    json_lines,
    list_field,
    object_field,
    objects,
    status_of,
    text_field,
    with_prompt,
)
from .model import ListSnapshot, TodoItem, Transcript

__all__ = ["FORMAT", "is_record", "parse"]

FORMAT = "codex"
RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
PLAN_TOOL = "update_plan"
_ACCEPTED = "Plan updated"


def is_record(record: JsonObject) -> bool:
    """Whether a JSONL line is a Codex rollout record."""
    return record.get("type") in RECORD_TYPES and isinstance(record.get("payload"), dict)


@dataclass
class _Reader:
    """What the parser carries from line to line."""

    observations: list[ListSnapshot] = field(default_factory=list)
    awaiting: dict[str, int] = field(default_factory=dict)
    context: tuple[str | None, int | None] = (None, None)
    session_id: str | None = None
    prompts: tuple[tuple[str, int], ...] = ()


def parse(path: Path) -> Transcript:
    """Read a Codex rollout into its update_plan snapshots, in file order."""
    tally = Tally()
    reader = _Reader()
    for number, record in json_lines(path, tally):
        payload = object_field(record, "payload")
        if payload is None or not is_record(record):
            tally.skip(number, "unknown_record_type")
            continue
        tally.recognized += 1
        if not _read(reader, number, record, payload):
            tally.skip(number, "malformed_plan_update")
    tally.require(FORMAT, path)
    return tally.transcript(FORMAT, path, reader.session_id, reader.observations)


def _read(reader: _Reader, number: int, record: JsonObject, payload: JsonObject) -> bool:
    """Take what the line says about the session, prompts or plan; False for a malformed plan call."""
    record_type, payload_type = record.get("type"), payload.get("type")
    message = text_field(payload, "message")
    if record_type == "session_meta":
        reader.session_id = reader.session_id or text_field(payload, "id")
    elif record_type == "event_msg" and payload_type == "user_message" and message is not None:
        reader.context = (clip(message), number)
        reader.prompts = with_prompt(reader.prompts, message, number)
    elif record_type == "response_item" and payload_type == "function_call" and payload.get("name") == PLAN_TOOL:
        return _read_plan_call(reader, number, record, payload)
    elif record_type == "response_item" and payload_type == "function_call_output":
        _read_output(reader, number, payload)
    return True


def _read_plan_call(reader: _Reader, number: int, record: JsonObject, payload: JsonObject) -> bool:
    arguments = _arguments(payload)
    items = _plan_items(list_field(arguments, "plan"))
    if arguments is None or items is None:
        return False
    call_id = text_field(payload, "call_id")
    explanation = text_field(arguments, "explanation")
    if call_id is not None:
        reader.awaiting[call_id] = len(reader.observations)
    reader.observations.append(
        ListSnapshot(
            line=number,
            native_id=call_id,
            timestamp=text_field(record, "timestamp"),
            items=items,
            tool=PLAN_TOOL,
            explanation=explanation,
            explanation_line=None if explanation is None else number,
            context=reader.context[0],
            context_line=reader.context[1],
            prompts=reader.prompts,
        )
    )
    return True


def _arguments(payload: JsonObject) -> JsonObject | None:
    raw = text_field(payload, "arguments")
    try:
        value = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _plan_items(plan: list[object] | None) -> tuple[TodoItem, ...] | None:
    """`[{step, status}]` as items; None when the plan is missing or any step is malformed."""
    if plan is None:
        return None
    items = []
    for entry in plan:
        step = text_field(entry, "step") if isinstance(entry, dict) else None
        status = status_of(entry.get("status")) if isinstance(entry, dict) else None
        if step is None or status is None:
            return None
        items.append(TodoItem(text=step, status=status))
    return tuple(items)


def _read_output(reader: _Reader, number: int, payload: JsonObject) -> None:
    index = reader.awaiting.pop(text_field(payload, "call_id") or "", None)
    if index is None:
        return
    accepted = _output_text(payload).strip() == _ACCEPTED
    reader.observations[index] = replace(
        reader.observations[index], result="ok" if accepted else "error", result_line=number
    )


def _output_text(payload: JsonObject) -> str:
    """The output's text: Codex writes a plain string, or a list of content items when it has several."""
    output = payload.get("output")
    if isinstance(output, str):
        return output
    return "".join(text_field(part, "text") or "" for part in objects(list_field(payload, "output")))
