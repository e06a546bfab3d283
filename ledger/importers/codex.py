"""Codex CLI rollouts (JSONL lines `{timestamp, type, payload}`): update_plan snapshots and Plan Mode plans.

A plan update is a `response_item` whose payload is a `function_call` named `update_plan`; its
`arguments` is a JSON string `{explanation?, plan: [{step, status}]}`. The matching
`function_call_output` (same `call_id`) answers "Plan updated" on success and an error text
otherwise. User prompts are `event_msg` lines of type `user_message` (the `response_item` copies of
user messages also carry injected instructions and environment context, so they are not used).

Plan Mode (Codex 0.117 and later) writes a Markdown plan as an `event_msg` of type `item_completed` whose
`item.type` is "Plan"; its items are read by `markdown_plan`'s rule. The assistant message that usually
follows repeats it in a `<proposed_plan>` block, which is read only when it is not that same plan.

Legacy rollouts (before the `payload` wrapper) open with a bare header `{id, timestamp, ...}`, then a
`{"record_type": "state"}` line, then the items themselves (`{"type": "function_call", ...}`) with no
timestamp of their own; their user prompts are the `message` items of role `user` that are not injected
context (text opening with `<`).

A resumed session writes a second `session_meta`, then replays the earlier history within a moment. The
records within REPLAY_WINDOW_MS of a later `session_meta`'s timestamp are its replay: a plan call replayed
there whose `call_id` the file already holds is skipped (`replayed_history`: it is recorded once, with its
first time); one the file does not hold is kept, marked `replayed` (its work is older than its time here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from msgspec.structs import replace

from ._records import (
    JsonObject,
    Tally,
    clip,
    iso_to_millis,
    json_lines,
    list_field,
    object_field,
    objects,
    status_of,
    text_field,
    with_prompt,
)
from .markdown_plan import plan_items
from .model import ListSnapshot, TodoItem, Transcript

__all__ = ["ADAPTER_VERSION", "FORMAT", "is_record", "parse"]

FORMAT = "codex"
#: This adapter's version, recorded in every plan version it imports (see ``parse.ADAPTER_VERSIONS``).
ADAPTER_VERSION = 3
RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
PLAN_TOOL = "update_plan"
PLAN_MODE_TOOL = "Plan"
PROPOSED_PLAN_TOOL = "proposed_plan"
REPLAY_WINDOW_MS = 1000
_ACCEPTED = "Plan updated"
_LEGACY_ITEMS = frozenset({"message", "function_call", "function_call_output", "reasoning", "local_shell_call"})
_PROPOSED = re.compile(r"<proposed_plan>\s*(?P<plan>.*?)\s*(?:</proposed_plan>|$)", re.DOTALL)


def is_record(record: JsonObject) -> bool:
    """Whether a JSONL line is a Codex rollout record (of either shape)."""
    return (record.get("type") in RECORD_TYPES and isinstance(record.get("payload"), dict)) or is_legacy_record(record)


def is_legacy_record(record: JsonObject) -> bool:
    """Whether a JSONL line is the state marker of a legacy Codex rollout (no `payload` wrapper)."""
    return record.get("record_type") == "state"


@dataclass
class _Reader:
    """What the parser carries from line to line."""

    observations: list[ListSnapshot] = field(default_factory=list)
    awaiting: dict[str, int] = field(default_factory=dict)
    context: tuple[str | None, int | None] = (None, None)
    session_id: str | None = None
    prompts: tuple[tuple[str, int], ...] = ()
    legacy: bool = False
    calls: set[str] = field(default_factory=set)
    resumed: tuple[int, str] | None = None  # a later session_meta: its time (ms) and timestamp
    last_plan: str | None = None
    heard: set[str] = field(default_factory=set)


def _legacy(reader: _Reader, number: int, record: JsonObject) -> JsonObject | None:
    """A legacy line as the record it would be today (`response_item` around the item), or None to pass over."""
    if number == 1 and "payload" not in record and "type" not in record and isinstance(record.get("id"), str):
        reader.legacy = True
        reader.session_id = reader.session_id or text_field(record, "id")
        return None
    if is_legacy_record(record):
        reader.legacy = True
        return None
    if reader.legacy and record.get("type") in _LEGACY_ITEMS and "payload" not in record:
        return {"timestamp": record.get("timestamp"), "type": "response_item", "payload": record}
    return record


def parse(path: Path) -> Transcript:
    """Read a Codex rollout into its update_plan snapshots, in file order."""
    tally = Tally()
    reader = _Reader()
    for number, line in json_lines(path, tally):
        record = _legacy(reader, number, line)
        if record is None:
            tally.recognized += 1
            continue
        payload = object_field(record, "payload")
        if payload is None or not is_record(record):
            tally.skip(number, "unknown_record_type")
            continue
        tally.recognized += 1
        skipped = _read(reader, number, record, payload)
        if skipped is not None:
            tally.skip(number, skipped)
    tally.require(FORMAT, path)
    return tally.transcript(FORMAT, path, reader.session_id, reader.observations)


def _read(reader: _Reader, number: int, record: JsonObject, payload: JsonObject) -> str | None:
    """Take what the line says about the session, prompts or plan; the reason when the line is skipped."""
    record_type, payload_type = record.get("type"), payload.get("type")
    message = text_field(payload, "message")
    if record_type == "session_meta":
        _session_meta(reader, number, record, payload)
    elif record_type == "event_msg" and payload_type == "user_message" and message is not None:
        if _replayed(reader, record) is None or message not in reader.heard:
            _prompt(reader, number, message)  # a replayed message already read is history, not a new one
    elif record_type == "event_msg" and payload_type == "item_completed":
        item = object_field(payload, "item")
        plan = text_field(item, "text") if item is not None and item.get("type") == PLAN_MODE_TOOL else None
        if item is not None and item.get("type") == PLAN_MODE_TOOL:
            read = _read_markdown_plan(reader, number, record, plan, text_field(item, "id"))
            return None if read else "malformed_plan_update"
    elif record_type == "response_item" and payload_type == "message":
        _read_message(reader, number, record, payload)
    elif record_type == "response_item" and payload_type == "function_call" and payload.get("name") == PLAN_TOOL:
        if _replayed(reader, record) and text_field(payload, "call_id") in reader.calls:
            return "replayed_history"  # the resumed session's copy of a call already read
        return None if _read_plan_call(reader, number, record, payload) else "malformed_plan_update"
    elif record_type == "response_item" and payload_type == "function_call_output":
        _read_output(reader, number, payload)
    return None


def _session_meta(reader: _Reader, number: int, record: JsonObject, payload: JsonObject) -> None:
    """The first session_meta names the session; a later one opens the replay of a resumed session."""
    if reader.session_id is None:
        reader.session_id = text_field(payload, "id")
        return
    stamp = text_field(record, "timestamp")
    millis = iso_to_millis(stamp) if stamp is not None else None
    reader.resumed = None if millis is None or stamp is None else (millis, stamp)


def _replayed(reader: _Reader, record: JsonObject) -> str | None:
    """The resume's timestamp when `record` lies in a resumed session's replay, else None."""
    if reader.resumed is None:
        return None
    stamp = text_field(record, "timestamp")
    millis = iso_to_millis(stamp) if stamp is not None else None
    if millis is None or millis - reader.resumed[0] > REPLAY_WINDOW_MS:
        reader.resumed = None
        return None
    return reader.resumed[1]


def _prompt(reader: _Reader, number: int, message: str) -> None:
    reader.heard.add(message)
    reader.context = (clip(message), number)
    reader.prompts = with_prompt(reader.prompts, message, number)


def _read_message(reader: _Reader, number: int, record: JsonObject, payload: JsonObject) -> None:
    """A message item: a legacy rollout's user prompt, or an assistant's `<proposed_plan>` block."""
    texts = [text_field(part, "text") or "" for part in objects(list_field(payload, "content"))]
    text = "\n".join(t for t in texts if t.strip())
    if payload.get("role") == "user" and reader.legacy and text and not text.lstrip().startswith("<"):
        _prompt(reader, number, text)
    proposed = _PROPOSED.search(text) if payload.get("role") == "assistant" else None
    if proposed is not None and proposed["plan"].strip() != (reader.last_plan or "").strip():
        _read_markdown_plan(reader, number, record, proposed["plan"], None, tool=PROPOSED_PLAN_TOOL)


def _read_markdown_plan(
    reader: _Reader,
    number: int,
    record: JsonObject,
    text: str | None,
    native_id: str | None,
    *,
    tool: str = PLAN_MODE_TOOL,
) -> bool:
    """A Plan Mode plan; False when it holds no text to read items from."""
    items = plan_items(text) if text is not None else ()
    if not items:
        return False
    reader.last_plan = text
    reader.observations.append(_snapshot(reader, number, record, items, tool, native_id=native_id))
    return True


def _snapshot(
    reader: _Reader,
    number: int,
    record: JsonObject,
    items: tuple[TodoItem, ...],
    tool: str,
    *,
    native_id: str | None,
    explanation: str | None = None,
) -> ListSnapshot:
    return ListSnapshot(
        line=number,
        native_id=native_id,
        timestamp=text_field(record, "timestamp"),
        items=items,
        tool=tool,
        explanation=explanation,
        explanation_line=None if explanation is None else number,
        context=reader.context[0],
        context_line=reader.context[1],
        prompts=reader.prompts,
        replayed=_replayed(reader, record),
    )


def _read_plan_call(reader: _Reader, number: int, record: JsonObject, payload: JsonObject) -> bool:
    arguments = _arguments(payload)
    items = _plan_items(list_field(arguments, "plan"))
    if arguments is None or items is None:
        return False
    call_id = text_field(payload, "call_id")
    explanation = text_field(arguments, "explanation")
    if call_id is not None:
        reader.awaiting[call_id] = len(reader.observations)
        reader.calls.add(call_id)
    snapshot = _snapshot(reader, number, record, items, PLAN_TOOL, native_id=call_id, explanation=explanation)
    reader.observations.append(snapshot)
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
    """The output's text: Codex writes a plain string, or a list of content items when it has several; a
    legacy rollout wraps it as the JSON string `{"output": ..., "metadata": ...}`."""
    output = payload.get("output")
    if isinstance(output, str):
        try:
            wrapped = orjson.loads(output) if output.lstrip().startswith("{") else None
        except orjson.JSONDecodeError:
            wrapped = None
        inner = wrapped.get("output") if isinstance(wrapped, dict) else None
        return inner if isinstance(inner, str) else output
    return "".join(text_field(part, "text") or "" for part in objects(list_field(payload, "output")))
