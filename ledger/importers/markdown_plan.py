"""A plan written as Markdown (Claude Code ExitPlanMode, Codex Plan Mode) -> its items, by a documented rule.

Plan-mode plans are free Markdown, not lists of items, so the importer needs a rule that picks the steps
the agent wrote and invents none. The first of these that the plan holds gives the items, in the plan's
order:

1. its checklist entries (``- [ ]``, ``- [x]``; an ``x`` is completed);
2. its numbered headings (``### 1. Add the helper``, ``### Step 2: ...``, ``### Phase 3: ...``);
3. its numbered entries (``1.``, ``2)``) at the smallest indent at which any appears, taken only from the
   sections whose heading names the work (plan, step, implementation, approach, change, task, todo) when
   any of those holds one, so a numbered list of the problem is not read as steps;
4. its section headings below the title (``##`` to ``######``);
5. its bullet entries (``-``, ``*``, ``+``) at the smallest indent;
6. the title (the first ``#`` heading, else the first line that holds text) as the one item.

An item's text is the entry's text with its number, emphasis marks and a trailing colon taken off; every
item is pending, except a checked checklist entry. Text inside fenced code blocks is never an item.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .model import Status, TodoItem

__all__ = ["plan_items", "plan_title"]

_CHECK = re.compile(r"^(?P<indent>\s*)[-*+]\s+\[(?P<mark>[ xX])\]\s+(?P<text>\S.*?)\s*$")
_NUMBERED = re.compile(r"^(?P<indent>\s*)\d{1,3}[.)]\s+(?P<text>\S.*?)\s*$")
_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>\S.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(?P<indent>\s*)[-*+]\s+(?P<text>\S.*?)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_EMPHASIS = re.compile(r"(\*\*|__|`)")
_NUMBERED_HEADING = re.compile(r"^(?:(?:step|phase)\s+)?\d{1,3}\s*[.):]\s*(?P<text>\S.*)$", re.IGNORECASE)
_WORK = re.compile(r"plan|step|implement|approach|change|task|todo", re.IGNORECASE)


def _prose_lines(markdown: str) -> list[str]:
    """The plan's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _clean(text: str) -> str:
    return _EMPHASIS.sub("", text).strip().rstrip(":").strip()


def _outermost(lines: Sequence[str], pattern: re.Pattern[str]) -> list[re.Match[str]]:
    found = [m for m in map(pattern.match, lines) if m is not None]
    if not found:
        return []
    least = min(len(m["indent"].expandtabs(4)) for m in found)
    return [m for m in found if len(m["indent"].expandtabs(4)) == least]


def _checklist(lines: Sequence[str]) -> list[TodoItem]:
    items = []
    for m in map(_CHECK.match, lines):
        if m is not None:
            status: Status = "completed" if m["mark"] != " " else "pending"
            items.append(TodoItem(text=_clean(m["text"]), status=status))
    return items


def _numbered_headings(lines: Sequence[str]) -> list[TodoItem]:
    found = [_NUMBERED_HEADING.match(_clean(m["text"])) for m in map(_HEADING.match, lines) if m is not None]
    return [TodoItem(text=_clean(m["text"]), status="pending") for m in found if m is not None]


def _work_sections(lines: Sequence[str]) -> list[str]:
    """The lines of the sections whose heading names the work (not the title's own words)."""
    kept, inside, titled = [], False, False
    for line in lines:
        heading = _HEADING.match(line)
        if heading is not None:
            is_title = len(heading["hashes"]) == 1 and not titled
            titled = titled or is_title
            inside = not is_title and _WORK.search(heading["text"]) is not None
        elif inside:
            kept.append(line)
    return kept


def _numbered(lines: Sequence[str]) -> list[TodoItem]:
    chosen = _outermost(_work_sections(lines), _NUMBERED) or _outermost(lines, _NUMBERED)
    return [TodoItem(text=_clean(m["text"]), status="pending") for m in chosen]


def _headings(lines: Sequence[str]) -> list[TodoItem]:
    found = [m for m in map(_HEADING.match, lines) if m is not None]
    below = found[1:] if found and len(found[0]["hashes"]) == 1 else found
    return [TodoItem(text=_clean(m["text"]), status="pending") for m in below if len(m["hashes"]) > 1]


def _bullets(lines: Sequence[str]) -> list[TodoItem]:
    return [TodoItem(text=_clean(m["text"]), status="pending") for m in _outermost(lines, _BULLET)]


_RULES: tuple[Callable[[Sequence[str]], list[TodoItem]], ...] = (
    _checklist,
    _numbered_headings,
    _numbered,
    _headings,
    _bullets,
)


def plan_title(markdown: str) -> str | None:
    """The plan's title: its first ``#`` heading, else its first line that holds text; None when it is blank."""
    lines = _prose_lines(markdown)
    for m in map(_HEADING.match, lines):
        if m is not None and len(m["hashes"]) == 1:
            return _clean(m["text"])
    for line in lines:
        if line.strip():
            return _clean(_HEADING.sub(lambda m: m["text"], line.strip()))
    return None


def plan_items(markdown: str) -> tuple[TodoItem, ...]:
    """The items of a Markdown plan by the module's rule; empty only for a plan with no text."""
    lines = _prose_lines(markdown)
    for rule in _RULES:
        items = [item for item in rule(lines) if item.text]
        if items:
            return tuple(items)
    title = plan_title(markdown)
    return () if not title else (TodoItem(text=title, status="pending"),)
