"""The ``meta`` of an event's source (format v2): what the adapter that read the event's payload did not map.

    source_meta("claude-code-hooks", 1, {"permission_mode": "default"})
    -> {"adapter": "claude-code-hooks", "adapter_version": 1, "unread": {"permission_mode": "default"}}

Unknown fields are kept, never refused (one adapter and one mapping per dialect): a parser names the payload's
fields its adapter does not read (a hook payload's, a plan call's input's), and the one mapping puts them on the
source of every event the update gives, with the adapter and its version. Pure; no I/O.

* **Kept as given**, in the payload's order, each field whole while the compact JSON of ``unread`` (the fields
  kept) stays within :data:`META_CAP` bytes.
* **Cut, and marked so.** A field that does not fit, or that a log line cannot hold as it is (an integer beyond
  64 bits, a float that is not finite, nesting deeper than :data:`META_DEPTH`), is left out and named in
  ``cut`` (at most :data:`CUT_NAMES` names, each at most :data:`NAME_LIMIT` characters; past that ``cut`` ends
  with ``"... and N more"``).
* **Nothing unread, no meta** (None): the source is then the one it always was, and its line keeps its bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import orjson

from plantrail.ledger.vocabulary.cut import cut as shorten

__all__ = ["CUT_NAMES", "META_CAP", "META_DEPTH", "NAME_LIMIT", "marked_meta", "source_meta"]

META_CAP: Final = 2048
META_DEPTH: Final = 16
CUT_NAMES: Final = 16
NAME_LIMIT: Final = 64
_LOWEST: Final = -(1 << 63)
_HIGHEST: Final = (1 << 64) - 1


def source_meta(adapter: str, version: int, unread: Mapping[str, Any]) -> dict[str, Any] | None:
    """The bounded ``meta`` of the sources of a payload's events (see the module); None when nothing is unread."""
    if not unread:
        return None
    meta: dict[str, Any] = {"adapter": adapter, "adapter_version": version, "unread": {}}
    kept: dict[str, Any] = meta["unread"]
    cut: list[str] = []
    size = 2  # {}
    for name, value in unread.items():
        if not _storable(value, 0):
            cut.append(name)
            continue
        grows = len(orjson.dumps({name: value})) - 2 + (1 if kept else 0)
        if size + grows > META_CAP:
            cut.append(name)
            continue
        kept[name] = value
        size += grows
    if cut:
        meta["cut"] = _names(cut)
    return meta


def marked_meta(
    mark: Mapping[str, Any] | None, unread: Mapping[str, Any] | None = None, *, adapter: str = "", version: int = 0
) -> dict[str, Any] | None:
    """The meta of a transcript line's plan update: the fields its parser left ``unread``, plus, on a line of
    plantrail's hook journal, the hook payload's unread fields that the line's ``plantrail`` mark keeps, named
    with the hook adapter that wrote it (its ``adapter`` and ``adapter_version``); a line without a mark is
    named with the parser's own ``adapter`` and ``version``."""
    given = mark.get("unread") if mark is not None else None
    fields: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    fields.update(unread or {})
    named, numbered = (mark or {}).get("adapter"), (mark or {}).get("adapter_version")
    if isinstance(named, str) and named and isinstance(numbered, int) and not isinstance(numbered, bool):
        adapter, version = named, numbered
    return source_meta(adapter, version, fields)


def _names(cut: list[str]) -> list[str]:
    """The names of the fields left out, bounded (see the module)."""
    named = [shorten(name, NAME_LIMIT) for name in cut[:CUT_NAMES]]
    if len(cut) > CUT_NAMES:
        named.append(f"... and {len(cut) - CUT_NAMES} more")
    return named


def _storable(value: Any, depth: int) -> bool:
    """Whether a log line holds ``value`` as it is (JSON the writer encodes and reads back to the same bytes)."""
    if depth > META_DEPTH:
        return False
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return _LOWEST <= value <= _HIGHEST
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_storable(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _storable(item, depth + 1) for key, item in value.items())
    return False
