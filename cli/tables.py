"""Text that lines up on a terminal: display width, one-line cells, aligned tables.

Widths are counted in terminal columns, not characters: East Asian wide and fullwidth characters (CJK,
most emoji) take two columns, combining marks and zero-width characters none (``unicodedata``). A cell is
always one line: newlines, tabs and other control characters are shown escaped (``\\n``), so multi-line
evidence stays on its row and nothing in it can act on the terminal.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["align", "cell", "display_width", "fit", "pad", "table", "truncate"]

_ELLIPSIS = "…"
_ZERO_WIDTH_CATEGORIES = frozenset({"Mn", "Me", "Cf"})  # combining marks, enclosing marks, format (ZWJ, VS16)


def _terminal_columns() -> int:
    """The terminal's width (120 when stdout is no terminal), as ``shutil.get_terminal_size`` finds it, without
    importing shutil (and the archive modules it loads) on every command."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(1).columns
        except (OSError, ValueError):
            columns = 0
    return columns or 120


@lru_cache(maxsize=4096)
def _char_width(char: str) -> int:
    if unicodedata.category(char) in _ZERO_WIDTH_CATEGORIES or unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The columns ``text`` takes on a terminal (``text`` holds no control characters: see :func:`cell`)."""
    if text.isascii():
        return len(text)
    return sum(_char_width(c) for c in text)


#: A cell never shows more than a terminal's width: longer texts are cut to this many characters (and an
#: ellipsis) before they are escaped, so a megabyte of evidence costs what a line of it costs.
CELL_MOST = 1024


def cell(text: str | None) -> str:
    """``text`` as one printable line: control characters (newline, tab, escape ...) shown escaped; a text of
    more than :data:`CELL_MOST` characters is cut there, with an ellipsis."""
    if not text:
        return ""
    cut = len(text) > CELL_MOST
    if cut:
        text = text[:CELL_MOST]
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text + _ELLIPSIS if cut else text


def fit(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` columns, ending with an ellipsis when cut."""
    if display_width(text) <= width:
        return text
    room = max(width - 1, 0)
    used = 0
    kept: list[str] = []
    for char in text:
        w = _char_width(char)
        if used + w > room:
            break
        kept.append(char)
        used += w
    return "".join(kept) + _ELLIPSIS


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` columns."""
    return text + " " * max(width - display_width(text), 0)


def truncate(text: str | None, width: int) -> str:
    """One line of at most ``width`` columns (control characters escaped, then cut with an ellipsis)."""
    return fit(cell(text), max(width, 1))


def align(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows of cells, left-aligned in columns by display width, without a header."""
    cells = [[cell(c) for c in r] for r in rows]
    if not cells:
        return []
    widths = [max(display_width(r[i]) for r in cells) for i in range(len(cells[0]))]
    return [indent + "  ".join(pad(c, w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, last_flexible: bool = True) -> str:
    """A plain aligned table (columns by display width); the last column is cut to fit the terminal."""
    if not rows:
        return "  (none)"
    cells = [[cell(c) for c in headers], *[[cell(c) for c in r] for r in rows]]
    widths = [max(display_width(r[i]) for r in cells) for i in range(len(headers))]
    if last_flexible:
        room = _terminal_columns() - sum(w + 2 for w in widths[:-1]) - 2
        widths[-1] = max(min(widths[-1], room), 12)
        cells = [[*r[:-1], fit(r[-1], widths[-1])] for r in cells]
    lines = ["  " + "  ".join(pad(c, w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)
