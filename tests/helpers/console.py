"""The console examples of a docs page, read as a reader sees them and run as a reader would.

A page shows a command as ``$ COMMAND`` in a ```` ```console ```` block, followed by what it prints. Two HTML
comments, invisible on the rendered page, tell the runner more:

- ``<!-- write NAME -->`` before a fenced block: the reader writes the block's text to the file NAME (an
  edited draft, say) before the next command;
- ``<!-- not run: REASON -->`` before a console block: the block is not run, for the reason given (it needs a
  model provider, a server, or names files of its own).

What a command prints is compared with what the page shows after both are normalised: a hash of 64 hex digits
is ``<hash>``, a UTC timestamp ``<time>``; a line ``...`` on its own stands for any lines, and ``...`` inside
a line for any text. Nothing else is loosened.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Example", "Write", "matches", "normalised", "not_run", "steps"]

_FENCE = re.compile(
    r"(?:<!-- (?P<note>write [^\s>]+|not run: [^>]+?) -->\n)?^```(?P<lang>[a-z]*)[ \t]*\n(?P<body>.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


class Example(NamedTuple):
    """One command of a console block and what the page shows it prints."""

    command: str
    shown: str
    line: int


class Write(NamedTuple):
    """A file the reader writes: its name and its text."""

    name: str
    text: str


def steps(page: str) -> list[Example | Write]:
    """The page's writes and console commands, in the page's order (blocks marked not run left out)."""
    found: list[Example | Write] = []
    for block in _FENCE.finditer(page):
        note = block.group("note") or ""
        body = block.group("body")
        if note.startswith("write "):
            found.append(Write(note.removeprefix("write "), body))
            continue
        if block.group("lang") != "console" or note.startswith("not run:"):
            continue
        start = page.count("\n", 0, block.start("body")) + 1
        command: str | None = None
        shown: list[str] = []
        at = start
        for number, line in enumerate(body.splitlines(), start):
            if line.startswith("$ "):
                if command is not None:
                    found.append(Example(command, "\n".join(shown), at))
                command, shown, at = line[2:], [], number
            elif command is not None:
                shown.append(line)
        if command is not None:
            found.append(Example(command, "\n".join(shown), at))
    return found


def not_run(page: str) -> list[str]:
    """The reasons the page gives for each console block it marks as not run."""
    return [
        b.group("note").removeprefix("not run: ")
        for b in _FENCE.finditer(page)
        if (b.group("note") or "").startswith("not run:")
    ]


def normalised(text: str) -> str:
    """``text`` with its volatile parts named: hashes, timestamps; trailing spaces and blank ends dropped."""
    text = re.sub(r"\b[0-9a-f]{64}\b", "<hash>", text)
    text = re.sub(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?", "<time>", text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def matches(shown: str, printed: str) -> bool:
    """True when ``printed`` is what the page shows (both normalised; ``...`` as said above)."""
    pattern = []
    for line in normalised(shown).splitlines():
        if line == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), normalised(printed) + "\n" if printed.strip() else "") is not None
