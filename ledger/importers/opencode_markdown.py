"""OpenCode Markdown exports (`/export`): todowrite snapshots.

The export is a sequence of `## User` and `## Assistant (<agent> · <model> · <time>)` sections. A plan update
is a `**Tool: todowrite**` block whose `**Input:**` is a JSON block `{todos: [{content, status, priority, id?}]}`
(the whole list; `cancelled` is a status, as in OpenCode's JSON export); an `**Output:**` block may follow.
The export has no times. `line` is the line of the input's JSON block; `agent` is the section's agent name
(e.g. "Build"); the user's words are the text of a `## User` section.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import orjson

from ._records import Tally, TextLines, Words, clip, todo_items, with_prompt
from .errors import transcript_error
from .model import ListSnapshot, Transcript
from .opencode import OPENCODE_STATUSES

__all__ = ["ADAPTER_VERSION", "FORMAT", "MARKERS", "found_export", "is_export", "parse"]

FORMAT = "opencode-markdown"
#: This adapter's version, recorded in every plan version it imports (see ``parse.ADAPTER_VERSIONS``).
ADAPTER_VERSION = 2
PLAN_TOOL = "todowrite"
_SECTION = re.compile(r"^##\s+(?P<who>User|Assistant)\b(?:\s*\((?P<about>[^)]*)\))?\s*$")
_TOOL = re.compile(r"^\*\*Tool:\s*(?P<name>[\w.-]+)\*\*\s*$")
_FENCE = re.compile(r"^\s*```")


def is_export(text: str) -> bool:
    """Whether Markdown text is an OpenCode export: Assistant sections with tool blocks."""
    return "**Tool: " in text and re.search(r"^## (User|Assistant)\b", text, re.MULTILINE) is not None


#: :func:`is_export`'s two tests, each of one line (its markers hold no newline).
MARKERS: Final[Mapping[str, Callable[[str], bool]]] = {
    "tool": lambda line: "**Tool: " in line,
    "section": lambda line: re.match(r"## (User|Assistant)\b", line) is not None,
}


def found_export(found: set[str]) -> bool:
    """:func:`is_export` from the :data:`MARKERS` some line passed."""
    return found >= set(MARKERS)


@dataclass
class _Reader:
    observations: list[ListSnapshot] = field(default_factory=list)
    context: tuple[str | None, int | None] = (None, None)
    prompts: tuple[tuple[str, int], ...] = ()
    who: str | None = None
    agent: str | None = None
    tool: str | None = None
    input_next: bool = False
    words: Words = field(default_factory=Words)
    words_line: int = 0

    def flush(self) -> None:
        text = self.words.text().strip()
        if self.who == "User" and text:
            self.context = (clip(text), self.words_line)
            self.prompts = with_prompt(self.prompts, text, self.words_line)
        self.words = Words()


def parse(path: Path) -> Transcript:
    """Read an OpenCode Markdown export into its todowrite snapshots, in file order (streamed: a line at a time,
    and a fence's body only when it is a plan update's input)."""
    source = TextLines(path, MARKERS)
    tally = Tally(recognized=1)
    reader = _Reader()
    lines = iter(source)
    number = 0
    for line in lines:
        number += 1
        section, tool = _SECTION.match(line), _TOOL.match(line.strip())
        if section is not None:
            reader.flush()
            about = (section["about"] or "").split("·")
            reader.who, reader.agent, reader.tool = section["who"], about[0].strip() or None, None
            reader.words_line = number + 1
        elif tool is not None:
            reader.tool, reader.input_next = tool["name"], False
        elif line.strip() == "**Input:**":
            reader.input_next = reader.tool == PLAN_TOOL
        elif _FENCE.match(line):
            start, body = number, []
            for inner in lines:
                number += 1
                if _FENCE.match(inner):
                    break
                if reader.input_next:
                    body.append(inner)
            if reader.input_next:
                _snapshot(reader, "\n".join(body), start, tally)
            reader.input_next = False
        elif reader.who == "User" and line.strip() != "---":  # a rule between sections is no one's words
            reader.words.add(line)
    if not found_export(source.found):
        raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not an OpenCode Markdown export")
    reader.flush()
    tally.total = source.count
    return tally.transcript(FORMAT, path, None, reader.observations)


def _snapshot(reader: _Reader, body: str, line: int, tally: Tally) -> None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        value = None
    items = todo_items(value.get("todos"), OPENCODE_STATUSES) if isinstance(value, dict) else None
    if items is None:
        tally.skip(line, "malformed_plan_update")
        return
    reader.observations.append(
        ListSnapshot(
            line=line,
            native_id=None,
            timestamp=None,
            items=items,
            tool=PLAN_TOOL,
            context=reader.context[0],
            context_line=reader.context[1],
            agent=reader.agent,
            prompts=reader.prompts,
        )
    )
