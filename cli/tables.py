"""Text that lines up on a terminal: display width, one-line cells, aligned tables.

Widths are counted in terminal columns, not characters: East Asian wide and fullwidth characters (CJK,
most emoji) take two columns, combining marks and zero-width characters none (``unicodedata``). A cell is
always one line: newlines, tabs and other control characters are shown escaped (``\\n``), so multi-line
evidence stays on its row and nothing in it can act on the terminal.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Sequence
from functools import lru_cache

from plantrail.cli.terminal import columns, wrapping

__all__ = ["align", "cell", "count_line", "display_width", "fit", "pad", "table", "truncate", "wrap", "wrap_ids"]

_ELLIPSIS = "…"
_ZERO_WIDTH_CATEGORIES = frozenset({"Mn", "Me", "Cf"})  # combining marks, enclosing marks, format (ZWJ, VS16)


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


def wrap(text: str, width: int) -> list[str]:
    """``text`` (one printable line) as lines of at most ``width`` columns, broken at spaces; a word wider than
    ``width`` is broken where the width runs out."""
    width = max(width, 1)
    if display_width(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        joined = f"{line} {word}" if line else word
        if display_width(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        line = ""
        while display_width(word) > width:
            head = _columns_of(word, width)
            lines.append(head)
            word = word[len(head) :]
        line = word
    if line or not lines:
        lines.append(line)
    return lines


def _columns_of(text: str, width: int) -> str:
    """The longest start of ``text`` that takes at most ``width`` columns (at least one character)."""
    used = 0
    for i, char in enumerate(text):
        used += _char_width(char)
        if used > width:
            return text[: max(i, 1)]
    return text


def wrap_ids(text: str, width: int) -> list[str]:
    """A list of ids (``a, b, c``) as lines of at most ``width`` columns, broken only between ids: an id is
    never cut (one wider than ``width`` has a line of its own)."""
    items = text.split(", ")
    lines: list[str] = []
    line = ""
    for n, item in enumerate(items):
        joined = f"{line}, {item}" if line else item
        comma = 0 if n == len(items) - 1 else 1  # a line that goes on ends with a comma
        if not line or display_width(joined) + comma <= width:
            line = joined
            continue
        lines.append(line + ",")
        line = item
    lines.append(line)
    return lines


#: A text column is never made narrower than this (or than its header) to make room for the others.
TEXT_FLOOR = 12
_GAP = 2  # spaces between two columns, and before the first


def _fitted_widths(cells: list[list[str]], texts: Collection[int], lists: Collection[int], room: int) -> list[int]:
    """Each column's width: what its widest cell takes, narrowed to fit ``room`` columns when the row is too
    wide. Only the text and id-list columns narrow, the rightmost first, each down to its floor (its header,
    :data:`TEXT_FLOOR` for a text, its widest id and a comma for a list); the other columns (ids, statuses,
    counts) never narrow, so a row can stay wider than ``room`` when nothing more can give."""
    count = len(cells[0])
    widths = [max(display_width(r[i]) for r in cells) for i in range(count)]
    excess = _GAP + sum(widths) + _GAP * (count - 1) - room
    for i in sorted({*texts, *lists}, reverse=True):
        if excess <= 0:
            break
        header = display_width(cells[0][i])
        if i in lists:
            floor = max([header, *(display_width(item) + 1 for r in cells[1:] for item in r[i].split(", "))])
        else:
            floor = max(header, min(widths[i], TEXT_FLOOR))
        give = min(excess, max(widths[i] - floor, 0))
        widths[i] -= give
        excess -= give
    return widths


def _cell_lines(text: str, width: int, kind: str, wrapped: bool) -> list[str]:
    if display_width(text) <= width:
        return [text]
    if kind == "list":
        return wrap_ids(text, width)
    if kind == "text":
        return wrap(text, width) if wrapped else [fit(text, width)]
    return [text]  # an id or a status is never cut


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    last_flexible: bool = True,
    texts: Collection[int] | None = None,
    lists: Collection[int] = (),
) -> str:
    """A plain aligned table (columns by display width) laid out for the terminal's width (:func:`columns`).

    ``texts`` are the columns of free text (default: the last one, unless ``last_flexible`` is False): they are
    narrowed when the table is too wide, and a cell that does not fit is cut with an ellipsis, or wrapped onto
    more lines with ``--wrap`` (:func:`wrapping`). ``lists`` are the columns holding ids joined by ``, ``: they
    wrap between ids, never inside one. Every other column keeps its widest cell whole: an id is never cut.
    """
    if not rows:
        return "  (none)"
    count = len(headers)
    if texts is None:
        texts = (count - 1,) if last_flexible else ()
    texts = {i % count for i in texts}
    lists = {i % count for i in lists}
    cells = [[cell(c) for c in headers], *[[cell(c) for c in r] for r in rows]]
    widths = _fitted_widths(cells, texts, lists, columns())
    kinds = ["list" if i in lists else "text" if i in texts else "id" for i in range(count)]
    wrapped = wrapping()
    lines = ["  " + "  ".join(pad(c, w) for c, w in zip(cells[0], widths, strict=True)).rstrip()]
    lines.append("  " + "  ".join("-" * w for w in widths))
    for r in cells[1:]:
        parts = [_cell_lines(c, w, k, wrapped) for c, w, k in zip(r, widths, kinds, strict=True)]
        for n in range(max(len(p) for p in parts)):
            line = "  ".join(pad(p[n] if n < len(p) else "", w) for p, w in zip(parts, widths, strict=True))
            lines.append(("  " + line).rstrip())
    return "\n".join(lines)


def count_line(n: int, one: str, many: str) -> str:
    """The line under a list that counts its items: ``  3 runs``."""
    return f"  {n} {one if n == 1 else many}"
