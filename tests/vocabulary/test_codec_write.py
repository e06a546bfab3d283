"""The writer's one call per record (``codec.encode_checked``) gives exactly what encoding and then checking the
line the full way gives: the same line, the same record, the same refusal; and the common line is encoded,
hashed and decoded once."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.vocabulary import codec
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, check_schema, encode, encode_checked
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import StepCompleted, StepStarted
from tests.strategies import EVENTS, SOURCES, TRACES, anything, counts

#: Values of other types than a field's, and of the field's type spelled otherwise (a float for an integer, a
#: list for a tuple, a set, an integer beyond 64 bits), for the fields of a drawn event.
_STRANGE = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.lists(st.text(max_size=4) | st.integers(), max_size=2)
    | st.lists(st.text(max_size=4), max_size=2).map(tuple)
    | st.frozensets(st.text(max_size=4), max_size=2)
    | anything
)


def _full_way(**fields: Any) -> tuple[bytes, Any] | str:
    """The line and record of encoding and then checking the line as the writer did before it had one call,
    or the code of the refusal."""
    try:
        line, _ = encode(**fields)
        return line, check_schema(line[:-1], line_no=fields["seq"] + 1)
    except PlantrailError as exc:
        return exc.code


def _one_call(**fields: Any) -> tuple[bytes, Any] | str:
    try:
        return encode_checked(**fields)
    except PlantrailError as exc:
        return exc.code


def _fields(event: Any, source: Any, key: str | None, seq: int, trace: Any = None) -> dict[str, Any]:
    return {
        "seq": seq,
        "ts": "2026-11-29T23:00:00.000000Z",
        "run": "r",
        "plan_version": 1,
        "actor": "agent",
        "data": event,
        "prev": GENESIS_PREV,
        "source": source,
        "key": key,
        "trace": trace,
    }


@settings(max_examples=1500, deadline=None)
@given(EVENTS, SOURCES, st.none() | st.text(min_size=1, max_size=6), counts, TRACES)
def test_one_call_writes_what_encoding_and_checking_write(
    event: Any, source: Any, key: str | None, seq: int, trace: Any
) -> None:
    """For every event type, with and without a source, key or trace context, the one call gives the line and
    the record (or the refusal) that encoding and then checking the line give."""
    fields = _fields(event, source, key, seq, trace)
    assert _one_call(**fields) == _full_way(**fields)


@settings(max_examples=1500, deadline=None)
@given(EVENTS, st.data())
def test_a_field_of_another_type_gets_the_same_verdict(event: Any, data: st.DataObject) -> None:
    """An event whose field holds a value of another type than the field's (or the field's type spelled
    otherwise) is written as the full way writes it, or refused with the same code: the common line's one
    pass never lets through what the full check refuses, nor writes other bytes."""
    names = [f.name for f in msgspec.structs.fields(type(event))] if isinstance(event, msgspec.Struct) else []
    if not names:
        return
    name = data.draw(st.sampled_from(names))
    event = msgspec.structs.replace(event, **{name: data.draw(_STRANGE)})
    fields = _fields(event, None, None, data.draw(counts))
    assert _one_call(**fields) == _full_way(**fields)


@settings(max_examples=1500, deadline=None)
@given(EVENTS, st.sampled_from(["seq", "ts", "run", "plan_version", "actor", "prev"]), st.data())
def test_an_envelope_member_of_another_type_gets_the_same_verdict(event: Any, name: str, data: st.DataObject) -> None:
    """A record whose envelope member (seq, time, run, version, actor, previous hash) holds a value of another
    type than its own, or an actor no line names, is written as the full way writes it, or refused with the
    same code: the check of exact types lets through only what decoding the line gives back unchanged."""
    # A store always gives an integer seq (both ways name the line by it): a bool, or one beyond 64 bits.
    strange = (
        st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
        if name == "seq"
        else _STRANGE | st.sampled_from(["agent", "robot", "runtime"])
    )
    fields = _fields(event, None, None, data.draw(counts)) | {name: data.draw(strange)}
    assert _one_call(**fields) == _full_way(**fields)


@pytest.mark.parametrize(
    "event",
    [StepStarted(step="s1", attempt=1), StepCompleted(step="s1", attempt=2, evidence=("ran the tests",))],
)
def test_a_step_line_is_encoded_and_checked_in_one_pass(event: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step event's line (no source, no key) whose values are of exactly their fields' types is written
    without the full encoding (orjson's, with a Python call per struct), without the full check, and without
    being decoded again: it is encoded and hashed once, and the record holds the event given."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the full way was taken")

    expected = _full_way(**_fields(event, None, None, 5))
    monkeypatch.setattr(codec, "encode", refused)
    monkeypatch.setattr(codec, "check_schema", refused)
    monkeypatch.setitem(codec._ONE_TYPE_ONLY, event.TYPE, refused)
    line, record = encode_checked(**_fields(event, None, None, 5))
    assert (line, record) == expected
    assert type(record) is type(expected[1])
    assert record.data is event


def test_a_value_of_a_subclass_is_checked_by_decoding() -> None:
    """A value whose type is a subclass of its field's (a ``str`` subclass here) is not of exactly that type:
    the line is checked by decoding it, and the record holds what a reader decodes, a plain ``str``."""

    class Name(str):
        __slots__ = ()

    event = StepStarted(step=Name("s1"), attempt=1)
    fields = _fields(event, None, None, 5)
    line, record = encode_checked(**fields)
    assert (line, record) == _full_way(**fields)
    assert type(record.data.step) is str
    assert record.data is not event
