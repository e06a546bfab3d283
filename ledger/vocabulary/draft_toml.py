"""A plan draft written in TOML, read with the standard library's ``tomllib`` into the same mapping a JSON draft
gives: the draft's own validation then judges it, so a wrong type is refused, never coerced (TOML's dates and
times are no type a draft takes, and are refused as any other wrong type is).

A TOML syntax error is ``DRAFT_INVALID`` with the line and column ``tomllib`` reports (``line``, ``column`` in the
error's fields).
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from plantrail.ledger.vocabulary.errors import error

__all__ = ["is_toml", "loads_toml"]

_WHERE = re.compile(r"\(at line (\d+), column (\d+)\)")


def is_toml(path: str) -> bool:
    """True when ``path`` names a TOML draft (its name ends in ``.toml``, any case)."""
    return path.lower().endswith(".toml")


def loads_toml(raw: bytes, path: str, what: str = "draft") -> dict[str, Any]:
    """The TOML document ``raw`` (read from ``path``) as a mapping; DRAFT_INVALID, with the line, when it is not
    TOML (or not UTF-8)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error("DRAFT_INVALID", f"{what} {path} is not UTF-8 text: {exc}", path=path) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, column = _where(str(exc), text)
        reason = _WHERE.sub("", str(exc)).replace("(at end of document)", "").strip()
        raise error(
            "DRAFT_INVALID",
            f"{what} {path} is not valid TOML at line {line}, column {column}: {reason}",
            path=path,
            line=line,
            column=column,
        ) from None


def _where(message: str, text: str) -> tuple[int, int]:
    """The line and column (from 1) a ``tomllib`` error names; "at end of document" is after the last character."""
    found = _WHERE.search(message)
    if found:
        return int(found.group(1)), int(found.group(2))
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
