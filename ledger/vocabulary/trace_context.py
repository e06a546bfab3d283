"""The W3C trace context a command may carry: a ``traceparent`` and an optional ``tracestate``, checked.

A ``traceparent`` (W3C Trace Context, version ``00``) is ``00-<trace id>-<span id>-<flags>``: 32 lowercase hex
digits of trace id and 16 of span id, neither all zeros, and 2 hex digits of flags. A ``tracestate`` is a
comma-separated list of at most 32 ``key=value`` members, at most 512 characters in all, each key unique;
empty members (and blanks around the commas) are allowed, and a tracestate with no member at all is no
tracestate. Anything else is INVALID_TRACE_CONTEXT: a command carrying it records nothing.

Pure and small: no I/O; the places a trace context comes from (an argument, the environment, the current
OpenTelemetry span, an MCP request) are the library's and the front doors'.
"""

from __future__ import annotations

import re
from typing import Any, Final

from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Trace

__all__ = ["MAX_TRACESTATE_CHARS", "MAX_TRACESTATE_MEMBERS", "trace_context"]

#: The most members a tracestate holds (W3C Trace Context).
MAX_TRACESTATE_MEMBERS: Final = 32
#: The most characters a tracestate holds (W3C Trace Context).
MAX_TRACESTATE_CHARS: Final = 512

_TRACEPARENT: Final = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")
_SIMPLE_KEY: Final = r"[a-z][_0-9a-z\-*/]{0,255}"
_TENANT_KEY: Final = r"[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13}"
_MEMBER: Final = re.compile(
    rf"({_SIMPLE_KEY}|{_TENANT_KEY})=([\x20-\x2b\x2d-\x3c\x3e-\x7e]{{0,255}}[\x21-\x2b\x2d-\x3c\x3e-\x7e])"
)


def trace_context(traceparent: Any, tracestate: Any = None) -> Trace:
    """The trace context of ``traceparent`` and ``tracestate`` (None, or one without members: none), both
    checked; INVALID_TRACE_CONTEXT naming what is wrong."""
    if not isinstance(traceparent, str):
        raise _invalid(f"traceparent must be a string, not {type(traceparent).__name__}")
    found = _TRACEPARENT.fullmatch(traceparent)
    if found is None:
        raise _invalid(
            f"traceparent {traceparent[:80]!r} is not 00-<32 lowercase hex trace id>-<16 lowercase hex span id>-"
            "<2 hex flags>"
        )
    if set(found.group(1)) == {"0"}:
        raise _invalid("traceparent's trace id is all zeros")
    if set(found.group(2)) == {"0"}:
        raise _invalid("traceparent's span id is all zeros")
    if tracestate is None:
        return Trace(traceparent)
    if not isinstance(tracestate, str):
        raise _invalid(f"tracestate must be a string, not {type(tracestate).__name__}")
    return Trace(traceparent, tracestate if _members(tracestate) else None)


def _members(tracestate: str) -> int:
    """How many members ``tracestate`` holds, each checked (INVALID_TRACE_CONTEXT for a broken one)."""
    if len(tracestate) > MAX_TRACESTATE_CHARS:
        raise _invalid(f"tracestate is {len(tracestate)} characters; the limit is {MAX_TRACESTATE_CHARS}")
    keys: set[str] = set()
    for member in tracestate.split(","):
        member = member.strip(" \t")
        if not member:
            continue
        found = _MEMBER.fullmatch(member)
        if found is None:
            raise _invalid(f"tracestate member {member[:80]!r} is not key=value as W3C Trace Context spells them")
        if found.group(1) in keys:
            raise _invalid(f"tracestate names the key {found.group(1)!r} twice")
        keys.add(found.group(1))
    if len(keys) > MAX_TRACESTATE_MEMBERS:
        raise _invalid(f"tracestate has {len(keys)} members; the limit is {MAX_TRACESTATE_MEMBERS}")
    return len(keys)


def _invalid(what: str) -> Exception:
    return error("INVALID_TRACE_CONTEXT", f"invalid trace context: {what}")
