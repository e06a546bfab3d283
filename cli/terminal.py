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
"""

from __future__ import annotations

__all__ = ["printable", "screen"]


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
