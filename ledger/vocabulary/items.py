"""Sequence and text arguments: where a sequence is expected, a bare item is one item, everywhere.

``tuple("pytest: ok")`` is ten one-character strings, and a log can never be corrected; so every public
entry that takes a sequence of strings (evidence, observations, dependencies) or of seqs (causes) turns its
argument into a tuple here, and only here: a bare ``str`` (or a bare ``int`` for seqs) is one item; any
other iterable gives its items in order, each of which must be of the item type; anything else (a mapping,
bytes, a number where text is expected) is refused with a stable code naming the argument. The converse
mistake, a list where one text is expected (a criterion's evidence, a reason), is refused by
:func:`as_text` rather than failing deep inside a decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from plantrail.ledger.vocabulary.errors import error

__all__ = ["as_items", "as_text"]

T = TypeVar("T", str, int)

_NOT_SEQUENCES = (str, bytes, bytearray, memoryview, Mapping)


def as_items(value: T | Iterable[T], item: type[T], what: str, *, code: str = "USAGE", **fields: Any) -> tuple[T, ...]:
    """``value`` as a tuple of ``item`` (``str`` or ``int``): a bare ``item`` is a tuple of one.

    ``what`` names the argument in the refusal, raised with ``code`` (USAGE unless the caller parses a
    document, e.g. DRAFT_INVALID) and ``fields``.
    """
    kind = type(value)
    if kind is not tuple and kind is not list:  # the common cases skip the checks below (this is a hot path)
        if _is_item(value, item):
            return (value,)  # type: ignore[return-value]  # _is_item checked it is a T
        if isinstance(value, _NOT_SEQUENCES) or not isinstance(value, Iterable):
            raise _refusal(value, item, what, code, fields)
    iterable: Any = value  # a tuple, a list or another iterable (no bare item): its items are checked below
    items: tuple[T, ...] = tuple(iterable)
    for i, one in enumerate(items):
        if type(one) is not item and not _is_item(one, item):
            raise error(code, f"{what}[{i}] must be {_name(item)}, not {type(one).__name__}", **fields)
    return items


def _is_item(value: Any, item: type[str] | type[int]) -> bool:
    return isinstance(value, item) and not isinstance(value, bool)


def _name(item: type[str] | type[int]) -> str:
    return "a string" if item is str else "a whole number (a seq)"


def _refusal(value: Any, item: type[str] | type[int], what: str, code: str, fields: dict[str, Any]) -> Exception:
    many = "strings" if item is str else "whole numbers"
    return error(code, f"{what} must be {_name(item)} or a sequence of {many}, not {type(value).__name__}", **fields)


def as_text(value: str, what: str) -> str:
    """``value`` if it is a ``str``; else USAGE naming ``what`` (the only list of texts is a completion's)."""
    if isinstance(value, str):
        return value
    raise error("USAGE", f"{what} must be a string, not {type(value).__name__}")
