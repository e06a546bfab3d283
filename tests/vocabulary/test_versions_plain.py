"""The writer's JSON view of a value (ledger.versions.plain, generated per class) is the one format v2 defined,
and the canonical-form check encodes every record the way the writer does, whichever encoder it takes."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.vocabulary import codec, versions
from plantrail.ledger.vocabulary import events as ev
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.versions import COMPILE_AFTER, added_defaults, needs_v2, plain
from tests.strategies import json_value


def reference_plain(value: Any) -> dict[str, Any]:
    """The writer's view as format v2 first defined it: every field in order, then each added field at its
    default removed (a loop over the names; the generated functions must give exactly this)."""
    cls = type(value)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
    elif hasattr(cls, "__struct_fields__"):
        names = list(cls.__struct_fields__)
    else:
        raise TypeError(f"Type is not JSON serializable: {cls.__name__}")
    body = {name: getattr(value, name) for name in names}
    for name, default in added_defaults(cls):
        if body[name] == default:
            del body[name]
    return body


def _is_object(tp: Any) -> bool:
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or hasattr(tp, "__struct_fields__"))


def _fields(cls: type[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else cls.__struct_fields__
    return {name: hints[name] for name in names}


def _reachable() -> list[type[Any]]:
    """Every dataclass and struct an event can hold, the events and the record's source included."""
    found: list[type[Any]] = []
    todo: list[Any] = [*typing.get_args(ev.Event), ev.Source]
    while todo:
        tp = todo.pop()
        if _is_object(tp):
            if tp not in found:
                found.append(tp)
                todo.extend(_fields(tp).values())
        else:
            todo.extend(typing.get_args(tp))
    return found


def _built(cls: type[Any], fields: dict[str, Any]) -> Any:
    try:
        return cls(**fields)
    except (PlantrailError, TypeError, ValueError):
        return None  # a combination the class's own checks refuse


_STRATEGIES: dict[Any, st.SearchStrategy[Any]] = {}


def values_of(tp: Any) -> st.SearchStrategy[Any]:
    """Values of type ``tp``: each added field at its default about half the time, so v1-shaped values and v2
    values both come up, nested to any depth the types allow."""
    if tp in _STRATEGIES:
        return _STRATEGIES[tp]
    if _is_object(tp):
        _STRATEGIES[tp] = st.deferred(lambda: made)
        added = dict(added_defaults(tp))
        fields = {
            name: st.one_of(st.just(added[name]), values_of(hint)) if name in added else values_of(hint)
            for name, hint in _fields(tp).items()
        }
        made = st.fixed_dictionaries(fields).map(lambda kw: _built(tp, kw)).filter(lambda v: v is not None)
        _STRATEGIES[tp] = made
        return made
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return json_value
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return st.one_of(*(values_of(arg) for arg in args))
    if origin is tuple:
        return st.lists(values_of(args[0]), max_size=3).map(tuple)
    if origin in (dict, Mapping) or origin is typing.get_origin(Mapping[str, Any]):
        return st.dictionaries(st.text(max_size=5), json_value, max_size=3)
    if tp is type(None):
        return st.none()
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is int:
        return st.integers(-(2**63), 2**63 - 1)
    return st.from_type(tp)


CLASSES = _reachable()
EVENTS = typing.get_args(ev.Event)


def test_every_class_is_reached() -> None:
    """The differential tests below cover the plan specs, the contract's terms and the evidence records."""
    names = {cls.__name__ for cls in CLASSES}
    assert {"PlanSpec", "StepSpec", "Policy", "CriterionSpec", "StepTerms", "Report", "Source"} <= names


@settings(max_examples=300, deadline=None)
@given(st.one_of(*(values_of(cls) for cls in CLASSES)))
def test_generated_plain_is_the_reference(value: Any) -> None:
    """Each class's generated plain gives the reference's dict: the same members with the same values, in the
    same order."""
    assert list(plain(value).items()) == list(reference_plain(value).items())


@settings(max_examples=300, deadline=None)
@given(st.one_of(*(values_of(cls) for cls in CLASSES)))
def test_the_loop_and_the_generated_plain_are_the_reference(value: Any) -> None:
    """Both forms of a class's plain, the loop that serves its first values and the function generated for the
    rest, give the reference's dict: the same members with the same values, in the same order."""
    expected = list(reference_plain(value).items())
    assert list(versions._looping_plain(type(value))(value).items()) == expected
    assert list(versions._make_plain(type(value))(value).items()) == expected


def test_plain_generates_a_class_function_after_its_first_values() -> None:
    """A class's first COMPILE_AFTER values go through the loop; the last of them puts the generated function
    in its place, and every value gives the same dict either way."""

    @dataclasses.dataclass(frozen=True)
    class Fresh:
        ADDED: typing.ClassVar[frozenset[str]] = frozenset({"extra"})
        first: int
        extra: tuple[str, ...] = ()

    values = [Fresh(i, ("x",) * (i % 2)) for i in range(COMPILE_AFTER + 2)]
    made = []
    for value in values:
        made.append(plain(value))
        made_by = versions._PLAIN[Fresh].__name__
        assert made_by == ("plain" if len(made) >= COMPILE_AFTER else "plain_loop")
    assert made == [reference_plain(v) for v in values]


def test_plain_keeps_field_order_around_an_added_field() -> None:
    """An added field between two v1 fields is left out at its default and kept in place otherwise."""

    @dataclasses.dataclass(frozen=True)
    class Mixed:
        ADDED: typing.ClassVar[frozenset[str]] = frozenset({"middle"})
        first: int
        middle: tuple[str, ...] = ()
        last: str = "x"

    assert list(plain(Mixed(1))) == ["first", "last"]
    assert list(plain(Mixed(1, ("m",), "y")).items()) == [("first", 1), ("middle", ("m",)), ("last", "y")]


def test_plain_refuses_what_is_no_dataclass_or_struct() -> None:
    """orjson's default gets TypeError for a value it cannot write, as before (the writer's INVALID_TEXT)."""
    try:
        plain(object())
    except TypeError as exc:
        assert "not JSON serializable" in str(exc)
    else:
        raise AssertionError("plain accepted an object")


@settings(max_examples=300, deadline=None)
@given(st.one_of(*(values_of(cls) for cls in EVENTS)), st.none() | values_of(ev.Source), st.none() | st.text())
def test_line_bytes_and_their_canonical_check(data: Any, source: ev.Source | None, key: str | None) -> None:
    """A line is the bytes the reference view gives, and a line the writer accepts re-encodes to exactly its
    bytes through the canonical-form check, by msgspec or by orjson, as the codec chose for its class."""
    try:
        line, _ = codec.encode(
            seq=3,
            ts="2026-01-01T00:00:00Z",
            run="r",
            plan_version=1,
            actor="agent",
            data=data,
            prev="0" * 64,
            source=source,
            key=key,
        )
    except PlantrailError:
        return  # a value no line can hold (too large, or text JSON cannot carry)
    envelope = codec._envelope(
        codec.line_version(data, source=source), 3, "2026-01-01T00:00:00Z", "r", 1, "agent", data, "0" * 64, source, key
    )
    expected = orjson.dumps(envelope, default=reference_plain, option=orjson.OPT_PASSTHROUGH_DATACLASS)
    assert line == b'%s,"h":"%s"}\n' % (expected[:-1], line[-67:-3])
    try:
        record = codec.check_schema(line[:-1], line_no=4)
    except PlantrailError:
        return  # the writer refuses a value of the wrong type before it is written
    body = line[:-73] + b"}"
    assert codec._as_written(record) == body
    assert codec.decode(line[:-1], 4) == record
    if codec._NATIVE[type(record.data)] and not needs_v2(record.data):
        envelope = codec._record_envelope(record)
        if record.source is not None and not record.source.meta:  # a source is encoded without its v2 meta
            v1 = codec._source_v1()
            envelope["source"] = v1(*[getattr(record.source, n) for n in v1.__struct_fields__])
        if record.source is None or not record.source.meta:
            assert codec._ENCODE(envelope) == body
