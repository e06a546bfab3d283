"""The trace context a command is recorded in: given, set for a block of code, or the current OpenTelemetry span's.

A recorded command carries the W3C trace context of the distributed trace it was issued in (the envelope member
``trace``, format v2: docs/format-v2.md), found in this order:

1. the ``trace=`` a :class:`~plantrail.ledger.api.Ledger` method was given (a traceparent string, or a
   :class:`~plantrail.ledger.vocabulary.events.Trace` with its tracestate);
2. the one :func:`traced` set for the code around the call (a context variable: per thread and per asyncio task);
3. the current OpenTelemetry span's, when the caller's process has imported OpenTelemetry's API (this module never
   imports it: a process that does not trace pays nothing) and a valid span is current;
4. none: the line has no ``trace`` member.

Whatever is given is checked (INVALID_TRACE_CONTEXT before anything is written).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from plantrail.ledger.vocabulary.arguments import strict

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Trace

__all__ = ["command_trace", "current_trace", "traced"]

#: The trace context :func:`traced` set (the checks are imported when one is given: a command recorded without
#: one loads nothing more than this module).
_SET: Final[ContextVar[Trace | None]] = ContextVar("plantrail_trace", default=None)


@strict
@contextmanager
def traced(traceparent: str | None, tracestate: str | None = None) -> Iterator[Trace | None]:
    """Record every command of the block in the W3C trace context ``traceparent`` (and ``tracestate``), unless
    a command is given its own ``trace=``; a ``traceparent`` of None sets nothing (the block records as it would
    without it). Yields the trace context, checked: INVALID_TRACE_CONTEXT on entry for an invalid one."""
    if traceparent is None:
        if tracestate is not None:
            from plantrail.ledger.vocabulary.errors import error

            raise error("INVALID_TRACE_CONTEXT", "invalid trace context: a tracestate without a traceparent")
        yield None
        return
    from plantrail.ledger.vocabulary.trace_context import trace_context

    trace = trace_context(traceparent, tracestate)
    token = _SET.set(trace)
    try:
        yield trace
    finally:
        _SET.reset(token)


def current_trace() -> Trace | None:
    """The trace context a command given none is recorded in: :func:`traced`'s, else the current OpenTelemetry
    span's (when OpenTelemetry's API is already imported and a valid span is current), else None."""
    found = _SET.get()
    return found if found is not None else _opentelemetry_span()


def command_trace(given: Trace | str | None) -> Trace | None:
    """The trace context of a command given ``given`` (its ``trace=``), checked; :func:`current_trace` for None."""
    if given is None:
        return current_trace()
    from plantrail.ledger.vocabulary.events import Trace
    from plantrail.ledger.vocabulary.trace_context import trace_context

    if isinstance(given, Trace):
        return trace_context(given.traceparent, given.tracestate)
    return trace_context(given)


def _opentelemetry_span() -> Trace | None:
    """The current OpenTelemetry span's trace context, read only when the process imported OpenTelemetry's trace
    API itself (never imported here)."""
    api: Any = sys.modules.get("opentelemetry.trace")
    if api is None:
        return None
    context = api.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    traceparent = f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    state = context.trace_state.to_header() if context.trace_state else None
    from plantrail.ledger.vocabulary.trace_context import trace_context

    return trace_context(traceparent, state or None)
