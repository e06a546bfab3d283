"""Gemini CLI sessions: `write_todos` snapshots, in the three shapes Gemini CLI writes.

* `gemini`: a chat session, one JSON document `{sessionId, projectHash, startTime, messages: [...]}`
  (`~/.gemini/tmp/<projectHash>/chats/session-<stamp>-<id>.json`); `line` is the 1-based message index.
* `gemini-jsonl`: the same messages one a line (from 2026), after a first line `{sessionId, projectHash,
  startTime, kind}`; `{"$set": ...}` lines change session fields, `{"$rewindTo": <message id>}` takes the
  conversation back to that message: the plan updates of the messages after it are dropped (counted as
  `rewound`); `line` is the file line.
* `gemini-share`: a `/chat share` Markdown export: `## USER` and `## MODEL` sections, a call as a JSON block
  after `**Tool Command**:`, its answer after `**Tool Response**:`; no times; `line` is the line of the block.

A message is `{id, timestamp, type: "user" | "gemini", content, toolCalls?}`; a `write_todos` call's `args`
are `{todos: [{description, status}]}`, the whole list each time; status is `pending`, `in_progress`,
`completed`, `cancelled` or (newer) `blocked`. A call whose `status` is not "success" (or whose answer does not
say the list was updated) is answered `error`. A user message's `content` is a string or a list of parts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import orjson
from msgspec.structs import replace

from ._records import (
    JsonObject,
    JsonStream,
    Tally,
    TextLines,
    Words,
    clip,
    json_lines,
    list_field,
    object_field,
    objects,
    status_of,
    text_field,
    with_prompt,
)
from .errors import transcript_error
from .metadata import marked_meta
from .model import ListSnapshot, Status, TodoItem, ToolOutcome, Transcript

__all__ = [
    "ADAPTER_VERSION",
    "FORMAT",
    "JSONL_FORMAT",
    "SHARE_FORMAT",
    "SHARE_MARKERS",
    "found_share",
    "is_document",
    "is_header",
    "is_share",
    "parse",
    "parse_jsonl",
]

FORMAT = "gemini"
JSONL_FORMAT = "gemini-jsonl"
SHARE_FORMAT = "gemini-share"
#: This adapter's version, recorded in every plan version it imports (see ``parse.ADAPTER_VERSIONS``).
ADAPTER_VERSION = 2
PLAN_TOOL = "write_todos"
GEMINI_STATUSES: frozenset[Status] = frozenset({"pending", "in_progress", "completed", "cancelled", "blocked"})
_UPDATED = "Successfully updated the todo list"
_SECTION = re.compile(r"^\W*##\s+(?P<who>USER|MODEL)\s*$")
_FENCE = re.compile(r"^\s*```")


def is_header(record: JsonObject) -> bool:
    """Whether a JSONL line opens a Gemini CLI session (its `sessionId` and `projectHash`)."""
    return isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)


def is_document(document: object) -> bool:
    """Whether a JSON value is a Gemini CLI chat session."""
    return isinstance(document, dict) and is_header(document) and isinstance(document.get("messages"), list)


def is_share(text: str) -> bool:
    """Whether Markdown text is a Gemini CLI `/chat share` export."""
    return "**Tool Command**" in text or ("## MODEL" in text and "## USER" in text)


@dataclass
class _Reader:
    """What the parser carries from message to message."""

    observations: list[ListSnapshot] = field(default_factory=list)
    context: tuple[str | None, int | None] = (None, None)
    prompts: tuple[tuple[str, int], ...] = ()
    ids: dict[str, int] = field(default_factory=dict)  # message id -> observations before its own
    malformed: set[int] = field(default_factory=set)  # the lines skipped as a malformed plan update

    def prompt(self, text: str, line: int) -> None:
        self.context = (clip(text), line)
        self.prompts = with_prompt(self.prompts, text, line)

    def snapshot(self, line: int, call: JsonObject, timestamp: str | None, outcome: ToolOutcome | None) -> bool:
        """Append a write_todos call's list; False when it is malformed."""
        items = gemini_items(object_field(call, "args"))
        if items is None:
            return False
        self.observations.append(
            ListSnapshot(
                line=line,
                native_id=text_field(call, "id"),
                timestamp=timestamp,
                items=items,
                tool=PLAN_TOOL,
                context=self.context[0],
                context_line=self.context[1],
                result=outcome,
                result_line=None if outcome is None else line,
                prompts=self.prompts,
            )
        )
        return True


def gemini_items(args: JsonObject | None) -> tuple[TodoItem, ...] | None:
    """`{todos: [{description, status}]}` as items; None when any is malformed."""
    values = list_field(args, "todos")
    if values is None:
        return None
    items = []
    for value in values:
        text = text_field(value, "description") if isinstance(value, dict) else None
        status = status_of(value.get("status"), GEMINI_STATUSES) if isinstance(value, dict) else None
        if text is None or status is None:
            return None
        items.append(TodoItem(text=text, status=status))
    return tuple(items)


def _content_text(message: JsonObject) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [text_field(part, "text") or "" for part in objects(content if isinstance(content, list) else None)]
    joined = "\n".join(t for t in texts if t.strip())
    return joined or None


def _outcome(call: JsonObject) -> ToolOutcome | None:
    status = call.get("status")
    if status is None:
        return None
    answers = [
        object_field(object_field(r, "functionResponse"), "response") for r in objects(list_field(call, "result"))
    ]
    said = " ".join(text_field(a, "output") or "" for a in answers)
    return "ok" if status == "success" and (not answers or _UPDATED in said) else "error"


def _message(reader: _Reader, line: int, message: JsonObject, tally: Tally) -> None:
    kind = message.get("type")
    if kind == "user":
        text = _content_text(message)
        if text and text.strip():
            reader.prompt(text, line)
        return
    if kind != "gemini":
        return
    for call in objects(list_field(message, "toolCalls")):
        if call.get("name") == PLAN_TOOL and not reader.snapshot(
            line, call, text_field(message, "timestamp"), _outcome(call)
        ):
            tally.skip(line, "malformed_plan_update")
            reader.malformed.add(line)


def parse(path: Path) -> Transcript:
    """Read a Gemini CLI JSON chat session into its write_todos snapshots, in message order."""
    document = JsonStream(path, FORMAT)
    tally = Tally()
    reader = _Reader()
    for index, message in enumerate(document.items("messages"), start=1):
        if document.kind != "object":
            break  # an array: not a session (said below)
        tally.total = index
        if isinstance(message, dict):
            _message(reader, index, message, tally)
        else:
            tally.skip(index, "unknown_record_type")
    if document.kind != "object" or not is_document({**document.members, "messages": []}) or not document.array_seen:
        raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not a Gemini CLI chat session")
    return tally.transcript(FORMAT, path, text_field(document.members, "sessionId"), reader.observations)


def parse_jsonl(path: Path) -> Transcript:
    """Read a Gemini CLI JSONL session, applying its rewinds, into its write_todos snapshots."""
    tally = Tally()
    reader = _Reader()
    session: str | None = None
    for number, record in json_lines(path, tally):
        if is_header(record) and "type" not in record:
            session = session or text_field(record, "sessionId")
            tally.recognized += 1
        elif "$set" in record:
            tally.recognized += 1
        elif "$rewindTo" in record:
            tally.recognized += 1
            _rewind(reader, record.get("$rewindTo"), tally, number)
        elif record.get("type") in ("user", "gemini", "info", "error", "warning"):
            tally.recognized += 1
            message_id = text_field(record, "id")
            if message_id is not None:
                reader.ids.setdefault(message_id, len(reader.observations))
            before = len(reader.observations)
            _message(reader, number, record, tally)
            meta = marked_meta(object_field(record, "plantrail"))  # a line of plantrail's hook journal
            if meta is not None:
                reader.observations[before:] = [replace(o, meta=meta) for o in reader.observations[before:]]
        else:
            tally.skip(number, "unknown_record_type")
    tally.require(JSONL_FORMAT, path)
    return tally.transcript(JSONL_FORMAT, path, session, reader.observations)


def _rewind(reader: _Reader, target: object, tally: Tally, number: int) -> None:
    """Take the conversation back to message `target`: drop the plan updates of the messages after it."""
    if not isinstance(target, str) or target not in reader.ids:
        tally.skip(number, "unknown_rewind_target")
        return
    ids = list(reader.ids)
    later = ids[ids.index(target) + 1 :]
    keep = reader.ids[later[0]] if later else len(reader.observations)  # the target's own updates stay
    for dropped in reader.observations[keep:]:
        if dropped.line not in reader.malformed:  # a line keeps the first reason it was skipped for
            tally.skip(dropped.line, "rewound")
    del reader.observations[keep:]
    for message_id in later:
        del reader.ids[message_id]


#: :func:`is_share`'s tests, each of one line (its markers hold no newline).
SHARE_MARKERS: Final[Mapping[str, Callable[[str], bool]]] = {
    "command": lambda line: "**Tool Command**" in line,
    "model": lambda line: "## MODEL" in line,
    "user": lambda line: "## USER" in line,
}


def found_share(found: set[str]) -> bool:
    """:func:`is_share` from the :data:`SHARE_MARKERS` some line passed."""
    return "command" in found or {"model", "user"} <= found


def parse_share(path: Path) -> Transcript:
    """Read a Gemini CLI `/chat share` Markdown export into its write_todos snapshots, in file order (streamed:
    a line at a time, and a fence's body only when a tool block's label precedes it)."""
    source = TextLines(path, SHARE_MARKERS)
    tally = Tally(recognized=1)
    reader = _Reader()
    who: str | None = None
    label: str | None = None
    words = Words()
    words_line = 0
    number = 0
    lines = iter(source)
    for line in lines:
        number += 1
        section = _SECTION.match(line)
        if section is not None:
            _flush_words(reader, who, words, words_line)
            who, label, words, words_line = section["who"], None, Words(), number + 1
        elif line.strip().startswith("**Tool Command**") or line.strip().startswith("**Tool Response**"):
            label = line.strip()
        elif _FENCE.match(line) and label is not None:
            start = number
            body = []
            for inner in lines:
                number += 1
                if _FENCE.match(inner):
                    break
                body.append(inner)
            _share_block(reader, label, "\n".join(body), start, tally)
            label = None
        elif who == "USER" and label is None and line.strip() != "---":
            words.add(line)
    if not found_share(source.found):
        raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not a Gemini CLI /chat share export")
    _flush_words(reader, who, words, words_line)
    tally.total = source.count
    return tally.transcript(SHARE_FORMAT, path, None, reader.observations)


def _flush_words(reader: _Reader, who: str | None, words: Words, line: int) -> None:
    text = words.text().strip()
    if who == "USER" and text:
        reader.prompt(text, line)


def _share_block(reader: _Reader, label: str, body: str, line: int, tally: Tally) -> None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        if PLAN_TOOL in body:
            tally.skip(line, "malformed_plan_update")
        return
    if not isinstance(value, dict) or value.get("name") != PLAN_TOOL:
        return
    if label.startswith("**Tool Command**"):
        if not reader.snapshot(line, value, None, None):
            tally.skip(line, "malformed_plan_update")
    elif reader.observations and reader.observations[-1].result is None:
        said = text_field(object_field(value, "response"), "output") or ""
        outcome: ToolOutcome = "ok" if _UPDATED in said else "error"
        reader.observations[-1] = replace(reader.observations[-1], result=outcome, result_line=line)
