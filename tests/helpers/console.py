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

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

__all__ = ["Example", "Write", "matches", "normalised", "not_run", "shell", "steps", "updated"]

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
        found.extend(_examples(body, start))
    return found


def not_run(page: str) -> list[str]:
    """The reasons the page gives for each console block it marks as not run."""
    return [
        b.group("note").removeprefix("not run: ")
        for b in _FENCE.finditer(page)
        if (b.group("note") or "").startswith("not run:")
    ]


def shell(command: str, folder: Path, programs: Path) -> tuple[int, str]:
    """Run ``command`` in ``folder`` as a reader's shell would, with ``programs`` (a bin folder) first on the
    path, no PLANTRAIL_* variable, ``folder`` as home and 120 columns: its exit status and what it printed
    (both streams)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PLANTRAIL_")}
    # A reader's terminal of 120 columns: the tables lay out for it whatever the terminal running the tests.
    env |= {"PATH": f"{programs}{os.pathsep}{env['PATH']}", "HOME": str(folder), "COLUMNS": "120"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", "-c", f"{{ {command}\n}} 2>&1"], cwd=folder, capture_output=True, text=True, env=env)
    return done.returncode, done.stdout


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


def updated(page: str, run: Callable[[str], str | None], write: Callable[[str, str], None]) -> str:
    """``page`` with the output shown under each command that no longer matches replaced by what ``run``
    printed (``write`` writes each file the page writes first); output that still matches, ``...`` and all,
    and that of a command ``run`` does not run (None), is left as written."""
    pieces: list[str] = []
    last = 0
    for block in _FENCE.finditer(page):
        note = block.group("note") or ""
        if note.startswith("write "):
            write(note.removeprefix("write "), block.group("body"))
            continue
        if block.group("lang") != "console" or note.startswith("not run:") or not _examples(block.group("body")):
            continue
        lines: list[str] = []
        for example in _examples(block.group("body")):
            printed = run(example.command)
            lines.append(f"$ {example.command}")
            kept = printed is None or matches(example.shown, printed)
            shown = example.shown if kept or printed is None else printed.rstrip("\n")
            lines.extend(line.rstrip() for line in shown.splitlines())
        pieces += [page[last : block.start("body")], "".join(f"{line}\n" for line in lines)]
        last = block.end("body")
    return "".join(pieces) + page[last:]


def _examples(body: str, start: int = 0) -> list[Example]:
    """The commands of one console block (its first line numbered ``start``) and what it shows each prints."""
    found: list[tuple[str, list[str], int]] = []
    for number, line in enumerate(body.splitlines(), start):
        if line.startswith("$ "):
            found.append((line[2:], [], number))
        elif found:
            found[-1][1].append(line)
    return [Example(command, "\n".join(shown), number) for command, shown, number in found]
