"""The canonical bytes of a state and their SHA-256: two replays, machines or versions compare by hash.

Fields that format v2 added (to the plan's specs, :mod:`ledger.vocabulary.versions`, and to the state's own values,
``_ADDED``) are left out at their defaults, so a log that uses no v2 feature keeps the state hash it had
under v1; the fields that only locate records (``_LEFT_OUT``) are never hashed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson

from plantrail.ledger.vocabulary.payloads import Payload
from plantrail.ledger.vocabulary.versions import plain
from plantrail.projections.model import Orphan, PlanState, StepState, VersionInfo
from plantrail.projections.table import Table

__all__ = ["canonical_bytes", "state_hash"]

#: The state's values' fields added with format v2, each with the default at which it is left out.
_ADDED: dict[type[Any], tuple[tuple[str, Any], ...]] = {
    StepState: (
        ("usage", None),
        ("lease", None),
        ("abandoned", ()),
        ("reset_at", 0),
        ("artifacts", ()),
        ("consumed", ()),
        ("cancel", None),
        ("repair", None),
    ),
    PlanState: (
        ("usage", None),
        ("failure_streak", None),
        ("contract", False),
        ("lineage", ()),
        ("authority", None),
        ("effects", ()),
        ("observations", ()),
    ),
    VersionInfo: (("extended", ()),),
    Orphan: (("adopted", None),),
}

#: The state's fields that are never part of its hash: they locate records (the seq of each attempt's start,
#: of each version's adoption) or keep what a later command compares with (the contract a late result was
#: made under), so the hash of a log's state stays what it was before they existed.
_LEFT_OUT: dict[type[Any], tuple[str, ...]] = {
    StepState: ("started",),
    PlanState: ("cut_off", "adoptions"),
    Orphan: ("contract",),
}


def _default(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        body = value._asdict()
        for name, default in _ADDED.get(type(value), ()):
            if body[name] == default:
                del body[name]
        for name in _LEFT_OUT.get(type(value), ()):
            del body[name]
        return body
    if isinstance(value, Table):
        return dict(value.items())
    if isinstance(value, Payload):
        return value.resolve()  # the state hash covers the text, as a full replay's does
    # A plan spec (a dataclass): its fields in their declared order, as orjson always wrote dataclasses here
    # (OPT_SORT_KEYS sorts dicts, never a dataclass), without the fields v2 added at their defaults.
    return orjson.Fragment(orjson.dumps(value, default=plain, option=orjson.OPT_PASSTHROUGH_DATACLASS))


def canonical_bytes(state: PlanState) -> bytes:
    """The full projection as JSON with sorted keys (it holds no read-time values such as "now")."""
    return orjson.dumps(state, default=_default, option=orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS)


def state_hash(state: PlanState) -> str:
    """SHA-256 of :func:`canonical_bytes`, taken over its bytes piece by piece (:func:`_pieces`): the state's
    members, and each step, criterion or late result inside them, encoded one at a time, so that a state
    holding megabytes of evidence costs the memory of its largest piece, not of the whole encoding."""
    digest = hashlib.sha256()
    for piece in _pieces(state, _OPENED):
        digest.update(piece)
    return digest.hexdigest()


#: How many levels of the state :func:`state_hash` opens: the state itself, then its tables and lists.
_OPENED = 2


def _pieces(value: Any, depth: int) -> Iterator[bytes]:
    """:func:`canonical_bytes` of ``value`` (the same bytes, in order), in pieces: down to ``depth`` levels, an
    object (a state value, a table, a dict with string keys) is written member by member with its keys sorted,
    as ``OPT_SORT_KEYS`` orders them (by code point), and a plain tuple or list item by item; below that, or
    for anything else, a value is encoded whole."""
    if depth > 0:
        if type(value) in (tuple, list):
            separator = b"["
            for item in value:
                yield separator
                yield from _pieces(item, depth - 1)
                separator = b","
            yield b"]" if separator == b"," else b"[]"
            return
        body = _default(value) if isinstance(value, (tuple, Table)) and type(value) is not tuple else value
        if type(body) is dict and all(type(key) is str for key in body):
            separator = b"{"
            for key in sorted(body):
                yield separator + orjson.dumps(key) + b":"
                yield from _pieces(body[key], depth - 1)
                separator = b","
            yield b"}" if separator == b"," else b"{}"
            return
    yield orjson.dumps(value, default=_default, option=orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS)
