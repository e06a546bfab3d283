"""What reaches a terminal: text from data is shown, never obeyed.

A log holds text that plantrail did not write: titles, evidence, reasons, goals, ids and paths from drafts,
agents and imported transcripts. Printed raw, an ESC sequence in it could set the window title, clear the
screen or rewrite earlier lines, and a bidi override could make a line read otherwise than its bytes. So
every character a terminal could act on (C0 and C1 controls, DEL, bidi overrides and isolates, line and
paragraph separators: whatever ``str.isprintable`` refuses) is shown as its Python escape (``\\x1b``,
``\\u202e``, ``\\n``).

:func:`printable` escapes one piece of data, line breaks included (a title cannot fake a line of output);
:func:`screen` escapes a whole human rendering but keeps its own line breaks, which are plantrail's layout.
``emit`` and the error line apply them, so no human output carries a raw control character from data.

The layout a human output is made for is here too: :func:`columns` (``--width``, else COLUMNS, else the
terminal, else 80), :func:`wrapping` (``--wrap``) and :func:`verbose` (``--verbose``), which the commands'
options set through :func:`set_layout`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FALLBACK_COLUMNS",
    "NARROWEST",
    "columns",
    "printable",
    "reset_layout",
    "screen",
    "set_layout",
    "verbose",
    "wrapping",
]


def printable(text: str) -> str:
    """``text`` with every character a terminal could act on (line breaks included) shown as its escape."""
    if text.isprintable():
        return text  # the common case, one C-level scan
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def screen(text: str) -> str:
    """A human rendering made safe for a terminal: its line breaks kept, every other control escaped."""
    if text.isprintable():
        return text
    return "\n".join(printable(line) for line in text.split("\n"))


_SHORT: dict[str, str] = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


# --------------------------------------------------------------------------- the screen's layout

#: The fewest columns ``--width`` accepts (a table narrower than that shows little but its ids).
NARROWEST = 20
#: The width when neither ``--width``, COLUMNS nor a terminal says one (output piped to a file, say).
FALLBACK_COLUMNS = 80

_layout: dict[str, Any] = {}  # what the running command's --width, --wrap and --verbose said


def set_layout(*, width: int | None = None, wrap: bool | None = None, verbose: bool | None = None) -> None:
    """Note what the running command's ``--width``, ``--wrap`` or ``--verbose`` said (None: not given)."""
    for name, value in (("width", width), ("wrap", wrap), ("verbose", verbose)):
        if value is not None:
            _layout[name] = value


def reset_layout() -> None:
    """Forget the previous command's layout (one CLI invocation at a time)."""
    _layout.clear()


def wrapping() -> bool:
    """True when ``--wrap`` asked tables to wrap long texts onto more lines rather than cut them."""
    return bool(_layout.get("wrap"))


def verbose() -> bool:
    """True when ``--verbose`` asked for the notes on where an answer came from (the cache's snapshot)."""
    return bool(_layout.get("verbose"))


def columns() -> int:
    """The columns a human output is laid out for: ``--width``, else COLUMNS (a positive number), else the
    terminal's width when stdout is one, else :data:`FALLBACK_COLUMNS`."""
    width = _layout.get("width")
    if isinstance(width, int):
        return width
    import os

    try:
        from_environment = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        from_environment = 0
    if from_environment > 0:
        return from_environment
    try:
        return os.get_terminal_size(1).columns or FALLBACK_COLUMNS
    except (OSError, ValueError):
        return FALLBACK_COLUMNS
