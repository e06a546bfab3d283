"""The canonical bytes of a state and their SHA-256: two replays, machines or versions compare by hash."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from plantrail.projections.model import PlanState
from plantrail.projections.table import Table

__all__ = ["canonical_bytes", "state_hash"]


def _default(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return value._asdict()
    if isinstance(value, Table):
        return dict(value.items())
    raise TypeError(f"cannot encode {type(value).__name__}")


def canonical_bytes(state: PlanState) -> bytes:
    """The full projection as JSON with sorted keys (it holds no read-time values such as "now")."""
    return orjson.dumps(state, default=_default, option=orjson.OPT_SORT_KEYS)


def state_hash(state: PlanState) -> str:
    """SHA-256 of :func:`canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(state)).hexdigest()
