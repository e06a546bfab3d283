"""Texts shortened for a line of their own: a note, a name, a label cut to a number of characters.

One rule everywhere: a text longer than its limit keeps its first ``limit - 1`` characters and ends with '…',
so what was cut is visible and the result is never longer than the limit. (Display width on a terminal is
another question: ``cli.tables`` answers it.)
"""

from __future__ import annotations

__all__ = ["cut", "one_line"]


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a trailing '…' when it is longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (every run of whitespace one space, none at either end), then :func:`cut`."""
    return cut(" ".join(text.split()), limit)
