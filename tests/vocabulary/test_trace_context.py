"""A command's W3C trace context: checked as W3C Trace Context spells it, and written as an envelope member of a
format v2 line, beside ``actor``, only when the command carried one."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import StepStarted, Trace
from plantrail.ledger.vocabulary.trace_context import trace_context

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    "traceparent",
    [
        PARENT.replace("00-", "01-", 1),  # another version
        PARENT.replace("00-", "ff-", 1),
        PARENT.upper(),  # hex is lowercase
        "00-" + "0" * 32 + "-00f067aa0ba902b7-01",  # trace id all zeros
        "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",  # span id all zeros
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  # 31 hex digits
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",  # 15 hex digits
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",  # one flag digit
        PARENT + "-00",  # a member version 00 does not have
        PARENT + " ",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902g7-01",
        "",
    ],
)
def test_a_traceparent_w3c_does_not_allow_is_refused(traceparent: str) -> None:
    """A traceparent of another version, case, length or with a zero id is INVALID_TRACE_CONTEXT."""
    with pytest.raises(PlantrailError) as caught:
        trace_context(traceparent)
    assert caught.value.code == "INVALID_TRACE_CONTEXT" and caught.value.exit_code == 2


@pytest.mark.parametrize(
    "tracestate",
    [
        ",".join(f"k{i}=v" for i in range(33)),  # 33 members
        "a=" + "b" * 256 + ",c=" + "d" * 252,  # 513 characters
        "a=" + "b" * 257,  # a value of 257 characters
        "Congo=t61rcWkgMzE",  # an upper-case key
        "congo",  # no value
        "congo=",  # an empty value
        "congo=a,congo=b",  # a key twice
        "congo=t61=rcW",  # '=' in a value
        "congo=t61rcWkgMzE ,rojo=00f067aa0ba902b7,x=\x00",
    ],
)
def test_a_tracestate_w3c_does_not_allow_is_refused(tracestate: str) -> None:
    """A tracestate over W3C's limits (32 members, 512 characters) or with a malformed member is refused."""
    with pytest.raises(PlantrailError) as caught:
        trace_context(PARENT, tracestate)
    assert caught.value.code == "INVALID_TRACE_CONTEXT"


@pytest.mark.parametrize("given", [12, b"00-", None])
def test_a_traceparent_of_another_type_is_refused_not_coerced(given: Any) -> None:
    """A traceparent that is no string is refused (None too: a trace context without one is no trace context)."""
    with pytest.raises(PlantrailError) as caught:
        trace_context(given)
    assert caught.value.code == "INVALID_TRACE_CONTEXT"
    with pytest.raises(PlantrailError):
        trace_context(PARENT, 3)


def test_a_valid_trace_context_is_kept_as_given() -> None:
    """A valid traceparent and tracestate (blanks and empty members allowed) are kept as given; 32 members and
    512 characters are within the limits; a tracestate with no member is no tracestate."""
    state = "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7,,tenant@vendor=x"
    assert trace_context(PARENT, state) == Trace(PARENT, state)
    most = ",".join(f"k{i}=v" for i in range(32))
    assert trace_context(PARENT, most).tracestate == most
    longest = "a=" + "b" * 256 + ",c=" + "d" * 251
    assert trace_context(PARENT, longest).tracestate == longest
    assert trace_context(PARENT, " , ") == Trace(PARENT)
    assert trace_context(PARENT) == Trace(PARENT, None)


def _encoded(trace: Trace | None) -> bytes:
    line, _ = encode(
        seq=2, ts="2026-12-04T10:00:00Z", run="r", plan_version=1, actor="agent",
        data=StepStarted(step="a", attempt=1), prev=GENESIS_PREV, trace=trace,
    )  # fmt: skip
    return line[:-1]


def test_a_trace_context_is_a_v2_envelope_member_beside_actor() -> None:
    """A line carrying a trace context is a v2 line with ``trace`` right after ``actor`` (tracestate only when
    there is one), and decodes to the same trace; without one the line is the v1 line it always was."""
    traced = _encoded(Trace(PARENT, "congo=t61rcWkgMzE"))
    assert traced.startswith(b'{"v":2,')
    assert (
        b'"actor":"agent","trace":{"traceparent":"' + PARENT.encode() + b'","tracestate":"congo=t61rcWkgMzE"},"data":'
        in traced
    )
    assert decode(traced, 3).trace == Trace(PARENT, "congo=t61rcWkgMzE")
    bare = _encoded(Trace(PARENT))
    assert b'"trace":{"traceparent":"' + PARENT.encode() + b'"},"data"' in bare
    plain = _encoded(None)
    assert plain.startswith(b'{"v":1,') and b"trace" not in plain and decode(plain, 3).trace is None


def _resealed(line: bytes, old: bytes, new: bytes) -> bytes:
    body = orjson.loads(line)
    del body["h"]
    raw = orjson.dumps(body).replace(old, new, 1)
    return raw[:-1] + b',"h":"' + hashlib.sha256(raw).hexdigest().encode() + b'"}'


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        (b'{"v":2,', b'{"v":1,', "CORRUPT_LINE"),  # a v1 line cannot hold a trace context
        (b'"},"data"', b'","tracestate":null},"data"', "CORRUPT_LINE"),  # written only when there is one
        (b'"},"data"', b'","sampled":true},"data"', "FORMAT_TOO_NEW"),  # a member a newer plantrail may add
        (b'"traceparent":"', b'"traceparent":7,"x":"', "CORRUPT_LINE"),
    ],
)
def test_a_trace_member_written_otherwise_is_refused(old: bytes, new: bytes, code: str) -> None:
    """A trace member in a v1 line, with a null tracestate, or of the wrong type is damage; one with a member this
    plantrail does not know is a newer plantrail's line."""
    line = _resealed(_encoded(Trace(PARENT)), old, new)
    with pytest.raises(PlantrailError) as caught:
        decode(line, 3)
    assert caught.value.code == code
