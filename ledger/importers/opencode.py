"""OpenCode session exports (one JSON document `{info, messages: [{info, parts}]}`): todowrite snapshots.

The export is a single document, so `line` on an observation is the 1-based index of its message in
`messages`, and `lines_total` counts messages. A todowrite call is a part `{type: "tool", tool:
"todowrite", callID, state: {status, input: {todos}, time: {start}}}` whose items are
`{id, content, status, priority}`; the `id` is model-chosen and kept as `position_label`. OpenCode
also knows the status `cancelled`. `agent` is the name of the OpenCode agent that wrote the
message (e.g. "build").
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeGuard

from msgspec.structs import replace

from ._records import (
    STATUSES,
    JsonObject,
    JsonStream,
    Tally,
    clip,
    iso_from_millis,
    list_field,
    object_field,
    objects,
    text_field,
    todo_items,
    with_prompt,
)
from .errors import transcript_error
from .metadata import marked_meta
from .model import ListSnapshot, Status, ToolOutcome, Transcript

__all__ = ["ADAPTER_VERSION", "FORMAT", "is_document", "parse"]

FORMAT = "opencode"
#: This adapter's version, recorded in every plan version it imports (see ``parse.ADAPTER_VERSIONS``).
ADAPTER_VERSION = 3
PLAN_TOOL = "todowrite"
OPENCODE_STATUSES: frozenset[Status] = STATUSES | {"cancelled"}
_OUTCOMES: dict[object, ToolOutcome] = {"completed": "ok", "error": "error"}


def is_document(document: object) -> TypeGuard[dict[str, object]]:
    """Whether a JSON value has the shape of an OpenCode session export."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("info"), dict)
        and isinstance(document.get("messages"), list)
    )


def parse(path: Path) -> Transcript:
    """Read an OpenCode export into its todowrite snapshots, in document order."""
    document = JsonStream(path, FORMAT)
    tally = Tally()
    observations: list[ListSnapshot] = []
    context: tuple[str | None, int | None] = (None, None)
    prompts: tuple[tuple[str, int], ...] = ()
    for index, message in enumerate(document.items("messages"), start=1):
        if document.kind != "object":
            break  # an array: not an export (said below)
        tally.total = index
        info = object_field(message, "info") if isinstance(message, dict) else None
        parts = list_field(message, "parts") if isinstance(message, dict) else None
        if info is None or parts is None:
            tally.skip(index, "unknown_record_type")
        elif info.get("role") == "user":
            said = _prompt(parts, index)
            context = said or context
            prompts = prompts if said is None else with_prompt(prompts, *said)
        else:
            meta = marked_meta(object_field(message, "plantrail") if isinstance(message, dict) else None)
            found = _snapshots(parts, index, info, context, tally)
            observations.extend(replace(o, prompts=prompts, meta=meta) for o in found)
    if document.kind != "object" or not document.array_seen or not is_document({**document.members, "messages": []}):
        raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not an OpenCode session export")
    return tally.transcript(FORMAT, path, text_field(object_field(document.members, "info"), "id"), observations)


def _prompt(parts: list[object], index: int) -> tuple[str, int] | None:
    """The user's own text parts (not the synthetic ones OpenCode adds), with the message index."""
    texts = [
        text_field(part, "text") or ""
        for part in objects(parts)
        if part.get("type") == "text" and part.get("synthetic") is not True
    ]
    words = "\n".join(text for text in texts if text.strip())
    return (clip(words), index) if words else None


def _snapshots(
    parts: list[object], index: int, info: JsonObject, context: tuple[str | None, int | None], tally: Tally
) -> list[ListSnapshot]:
    snapshots = []
    for part in objects(parts):
        if part.get("type") != "tool" or part.get("tool") != PLAN_TOOL:
            continue
        snapshot = _snapshot(part, index, info, context)
        if snapshot is None:
            tally.skip(index, "malformed_plan_update")
        else:
            snapshots.append(snapshot)
    return snapshots


def _snapshot(
    part: JsonObject, index: int, info: JsonObject, context: tuple[str | None, int | None]
) -> ListSnapshot | None:
    state = object_field(part, "state")
    call = object_field(state, "input")
    items = todo_items(call.get("todos"), OPENCODE_STATUSES) if call is not None else None
    if state is None or items is None:
        return None
    started = object_field(state, "time")
    millis = started.get("start") if started is not None else None
    return ListSnapshot(
        line=index,
        native_id=text_field(part, "callID"),
        timestamp=iso_from_millis(millis) if isinstance(millis, int) else None,
        items=items,
        tool=PLAN_TOOL,
        context=context[0],
        context_line=context[1],
        agent=text_field(info, "agent"),
        result=_OUTCOMES.get(state.get("status")),
        result_line=index if state.get("status") in _OUTCOMES else None,
    )
