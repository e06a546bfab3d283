"""Gemini CLI sessions: `write_todos` snapshots, in the three shapes Gemini CLI writes.

* `gemini`: a chat session, one JSON document `{sessionId, projectHash, startTime, messages: [...]}`
  (`~/.gemini/tmp/<projectHash>/chats/session-<stamp>-<id>.json`); `line` is the 1-based message index.
* `gemini-jsonl`: the same messages one a line (from 2026), after a first line `{sessionId, projectHash,
  startTime, kind}`; `{"$set": ...}` lines change session fields, `{"$rewindTo": <message id>}` takes the
  conversation back to that message: the plan updates of the messages after it are dropped (counted as
  `rewound`); `line` is the file line.
* `gemini-share`: a `/chat share` Markdown export: `## USER` and `## MODEL` sections (the role's icon before or
  after the role), a call as a JSON block after `**Tool Command**:`, its answer after `**Tool Response**:`,
  each marker wherever it stands on its line (the export joins a message's parts with nothing between them);
  no times; `line` is the line of the block's opening fence.

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
    "SHARE_ADAPTER_VERSION",
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
#: The `/chat share` reader's version: raised alone when only what it reads changes.
SHARE_ADAPTER_VERSION = 3
PLAN_TOOL = "write_todos"
GEMINI_STATUSES: frozenset[Status] = frozenset({"pending", "in_progress", "completed", "cancelled", "blocked"})
_UPDATED = "Successfully updated the todo list"
_SECTION = re.compile(r"^\W*##\s+(?P<who>USER|MODEL)(?!\w)\W*$")  # the role's icon before or after it
_FENCE = re.compile(r"^\s*```")
_MARKER = re.compile(r"\*\*Tool (?P<kind>Command|Response)\*\*:?")
#: The context Gemini CLI (or a fork) sends as the first user message: the CLI's words, not the user's.
_SESSION_CONTEXT = re.compile(
    r"<session_context>|This is the [^.\n]{1,40}\. We are setting up the context for our chat\."
)


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

    def snapshot(
        self,
        line: int,
        call: JsonObject,
        timestamp: str | None,
        outcome: ToolOutcome | None,
        said: tuple[str | None, int | None] = (None, None),
    ) -> bool:
        """Append a write_todos call's list (``said``: the model's words before it, and their line); False when
        it is malformed."""
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
                explanation=said[0],
                explanation_line=said[1],
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
    a line at a time, and a fence's body only when a tool block's marker precedes it).

    The export joins a message's parts with nothing between them, so a tool marker may follow the model's
    words, or the fence that closed the block before it, on the same line: a marker is read wherever it stands
    on a line, and the words before it are the model's (the call's ``explanation``) or the user's. A marker
    that no JSON block follows, or whose block is not a JSON tool call, is counted as a skipped line
    (``unreadable_tool_marker``; ``malformed_plan_update`` when the block names write_todos)."""
    source = TextLines(path, SHARE_MARKERS)
    share = _Share()
    number = 0
    lines = iter(source)
    for line in lines:
        number += 1
        opened = share.read(line, number)
        while opened is not None:  # a tool block: its body, to the closing fence
            body: list[str] = []
            after: str | None = None
            for inner in lines:
                number += 1
                fence = _FENCE.match(inner)
                if fence is not None:
                    after = inner[fence.end() :]
                    break
                body.append(inner)
            share.block(opened, "\n".join(body))
            opened = share.read(after, number) if after else None  # what follows the fence on its line
    if not found_share(source.found):
        raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not a Gemini CLI /chat share export")
    share.end()
    share.tally.total = source.count
    return share.tally.transcript(SHARE_FORMAT, path, None, share.reader.observations)


class _Share:
    """What the `/chat share` parser carries from line to line: the section, its words, a marker waiting for
    its block."""

    def __init__(self) -> None:
        self.reader = _Reader()
        self.tally = Tally(recognized=1)
        self.who: str | None = None
        self.words = Words()  # the user's, in a USER section
        self.words_line = 0
        self.said = Words()  # the model's last words in the section: since it began, or its words after a block
        self.said_at = 0  # the line the model's words begin on
        self.after_block = False  # whether a tool block came after the model's words
        self.waiting: tuple[str, int] | None = None  # a marker's kind and line, until its block opens

    def read(self, line: str, number: int) -> tuple[str, int] | None:
        """Read one line (or what follows a closing fence on it); the marker's kind and line when a tool
        block opens on it."""
        if self.waiting is not None:
            if _FENCE.match(line):
                opened, self.waiting = (self.waiting[0], number), None
                return opened
            if not line.strip():
                return None
            self._unreadable()
        section = _SECTION.match(line)
        if section is not None:
            self._flush()
            self.who, self.words = section["who"], Words()
            self.said, self.after_block = Words(), False
            return None
        markers = list(_MARKER.finditer(line))
        if not markers:
            self._text(line, number)
            return None
        marker = markers[-1]  # the export writes one at the end of a line: earlier ones are words
        self._text(line[: marker.start()], number)
        self.waiting = (marker["kind"], number)
        rest = line[marker.end() :]
        if not rest.strip():
            return None
        if _FENCE.match(rest):
            opened, self.waiting = (marker["kind"], number), None
            return opened
        self._unreadable()
        return None

    def block(self, opened: tuple[str, int], body: str) -> None:
        """A tool block's JSON: a write_todos call's list, or its answer."""
        kind, line = opened
        explanation = self.said.text().strip() if self.who == "MODEL" else ""
        self.after_block = True
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            self.tally.skip(line, "malformed_plan_update" if PLAN_TOOL in body else "unreadable_tool_marker")
            return
        if value["name"] != PLAN_TOOL:
            return
        if kind == "Command":
            said = (clip(explanation), self.said_at) if explanation else (None, None)
            if not self.reader.snapshot(line, value, None, None, said):
                self.tally.skip(line, "malformed_plan_update")
        elif self.reader.observations and self.reader.observations[-1].result is None:
            output = text_field(object_field(value, "response"), "output") or ""
            outcome: ToolOutcome = "ok" if _UPDATED in output else "error"
            self.reader.observations[-1] = replace(self.reader.observations[-1], result=outcome, result_line=line)

    def end(self) -> None:
        """The end of the export: a marker still waiting for its block cannot be read."""
        if self.waiting is not None:
            self._unreadable()
        self._flush()

    def _text(self, text: str, number: int) -> None:
        if text.strip() == "---":  # the export's separator between messages
            return
        if self.who == "USER":
            if text.strip() and not self.words.lines:
                self.words_line = number  # where the user's words begin
            self.words.add(text)
        elif self.who == "MODEL":
            if text.strip() and (self.after_block or not self.said.lines):
                self.said, self.said_at, self.after_block = Words(), number, False
            self.said.add(text)

    def _unreadable(self) -> None:
        assert self.waiting is not None
        self.tally.skip(self.waiting[1], "unreadable_tool_marker")
        self.waiting = None

    def _flush(self) -> None:
        text = self.words.text().strip()
        if self.who == "USER" and text and not _SESSION_CONTEXT.match(text):
            self.reader.prompt(text, self.words_line)
