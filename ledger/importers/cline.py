"""Cline task histories (`api_conversation_history.json`, one JSON array of messages): checklists.

The history is a single document, so `line` on an observation is the 1-based index of its message in the
array, and `lines_total` counts messages. Cline carries its plan as a `task_progress` parameter of ordinary
tool calls (older versions, before native tool calls, write it as a `<task_progress>` element inside the
assistant's text, e.g. within `<replace_in_file>`): a markdown checklist whose `- [x]` items are completed
and whose `- [ ]` items are pending (Cline has no in-progress mark); an indented item is a sub-item of the
item above it at a smaller indent (kept as its `parent`). A `<br>` that a model sometimes writes in front
of an item is not part of its text. Newer Cline versions stamp each message with `ts` (Unix milliseconds),
which becomes the observation's timestamp; older histories have none. The run is the task: the name of the
folder that holds `api_conversation_history.json` (Cline names it by the task id). A person's words are
the `<task>`, `<feedback>`, `<answer>` and `<user_message>` elements of user messages, outside the output
of tools other than those that ask the person (`ask_followup_question`, `plan_mode_respond`); the rest of
a user message is tool output and environment details.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeGuard

from msgspec.structs import replace

from ._records import (
    JsonObject,
    JsonStream,
    Tally,
    clip,
    iso_from_millis,
    list_field,
    object_field,
    objects,
    text_field,
    with_prompt,
)
from .errors import transcript_error
from .model import ListSnapshot, Status, TodoItem, Transcript

__all__ = ["ADAPTER_VERSION", "FORMAT", "is_document", "parse"]

FORMAT = "cline"
#: This adapter's version, recorded in every plan version it imports (see ``parse.ADAPTER_VERSIONS``).
ADAPTER_VERSION = 3
PLAN_PARAMETER = "task_progress"
_ROLES = frozenset({"user", "assistant"})
_ITEM = re.compile(r"^(?P<indent>\s*)(?:<br\s*/?>\s*)*[-*+]\s+\[(?P<mark>[ xX])\]\s*(?P<text>.*?)\s*$")
_USER_WORDS = re.compile(r"<(task|feedback|answer|user_message)>\s*(?P<words>.*?)\s*</\1>", re.DOTALL)
_TOOL_RESULT = re.compile(r"^\[(?P<tool>\w+)(?: for .*?)?\] Result:", re.DOTALL)
_ANSWERING_TOOLS = frozenset({"ask_followup_question", "plan_mode_respond"})
_IN_TEXT = re.compile(r"<task_progress>\s*(?P<list>.*?)\s*</task_progress>", re.DOTALL)


def is_document(document: object) -> bool:
    """Whether a JSON value has the shape of a Cline conversation history: it opens with a message."""
    return isinstance(document, list) and bool(document) and _is_message(document[0])


def _is_message(value: object) -> TypeGuard[dict[str, object]]:
    return isinstance(value, dict) and value.get("role") in _ROLES and isinstance(value.get("content"), list)


def parse(path: Path) -> Transcript:
    """Read a Cline conversation history into its checklist snapshots, in document order."""
    document = JsonStream(path, FORMAT)
    tally = Tally()
    observations: list[ListSnapshot] = []
    context: tuple[str | None, int | None] = (None, None)
    prompts: tuple[tuple[str, int], ...] = ()
    messages = 0
    for index, message in enumerate(document.items("messages"), start=1):
        if document.kind != "array":
            break  # an object (its messages are streamed so that none is held): not a history (said below)
        tally.total = index
        if not _is_message(message):
            tally.skip(index, "unknown_record_type")
            continue
        messages += 1
        if message.get("role") == "user":
            said = _prompt(list_field(message, "content") or [], index)
            context = said or context
            prompts = prompts if said is None else with_prompt(prompts, *said)
        else:
            ts = message.get("ts")
            stamp = iso_from_millis(ts) if isinstance(ts, int) and not isinstance(ts, bool) and ts >= 0 else None
            found = _snapshots(list_field(message, "content") or [], index, context, tally)
            observations.extend(replace(o, timestamp=stamp, prompts=prompts) for o in found)
    if document.kind != "array" or messages == 0:
        raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not a Cline conversation history")
    return tally.transcript(FORMAT, path, _task_id(path), observations)


def _task_id(path: Path) -> str | None:
    """The task id of a history kept where Cline keeps it (`tasks/<id>/api_conversation_history.json`)."""
    return path.parent.name if path.name == "api_conversation_history.json" and path.parent.name else None


def _prompt(content: list[object], index: int) -> tuple[str, int] | None:
    texts = (text_field(block, "text") or "" for block in objects(content) if block.get("type") == "text")
    words = [word for text in texts for word in _person_words(text) if word.strip()]
    return (clip("\n".join(words)), index) if words else None


def _person_words(text: str) -> list[str]:
    """The person's words in one text block; a tool's output only counts when the tool asked the person."""
    header = _TOOL_RESULT.match(text.lstrip())
    if header is not None and header["tool"] not in _ANSWERING_TOOLS:
        return []
    return [found["words"] for found in _USER_WORDS.finditer(text)]


def _snapshots(
    content: list[object], index: int, context: tuple[str | None, int | None], tally: Tally
) -> list[ListSnapshot]:
    snapshots = []
    for block in objects(content):
        call = object_field(block, "input") if block.get("type") == "tool_use" else None
        for checklist in _checklists(block, call):
            snapshot = _snapshot(block, checklist, index, context, tally)
            if snapshot is not None:
                snapshots.append(snapshot)
    return snapshots


def _checklists(block: JsonObject, call: JsonObject | None) -> list[str]:
    """The checklists a content block carries: a tool call's task_progress parameter, or (older Cline, before
    native tool calls) the `<task_progress>` elements inside the assistant's text."""
    if call is not None:
        checklist = text_field(call, PLAN_PARAMETER)
        return [] if checklist is None else [checklist]
    text = text_field(block, "text") if block.get("type") == "text" else None
    return [] if text is None else [found["list"] for found in _IN_TEXT.finditer(text)]


def _snapshot(
    block: JsonObject, checklist: str, index: int, context: tuple[str | None, int | None], tally: Tally
) -> ListSnapshot | None:
    items = checklist_items(checklist)
    if items is None:
        tally.skip(index, "malformed_plan_update")
        return None
    return ListSnapshot(
        line=index,
        native_id=text_field(block, "id"),
        timestamp=None,
        items=items,
        tool=PLAN_PARAMETER,
        context=context[0],
        context_line=context[1],
    )


def checklist_items(checklist: str) -> tuple[TodoItem, ...] | None:
    """A markdown checklist as items, each sub-item with its parent's text; None when non-blank text holds no
    checklist item at all."""
    items: list[TodoItem] = []
    above: list[tuple[int, str]] = []  # (indent, text) of the items an indented item may nest under
    for found in map(_ITEM.match, checklist.splitlines()):
        if found is None:
            continue
        indent = len(found["indent"].expandtabs(4))
        while above and above[-1][0] >= indent:
            above.pop()
        status: Status = "completed" if found["mark"] != " " else "pending"
        items.append(TodoItem(text=found["text"], status=status, parent=above[-1][1] if above else None))
        above.append((indent, found["text"]))
    return None if checklist.strip() and not items else tuple(items)
