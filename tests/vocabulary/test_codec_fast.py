"""msgspec decodes the log's lines, but pydantic's schema is the contract: the two must agree on every line.

The codec decodes each line with msgspec and hands whatever msgspec refuses to pydantic. That is only sound
if msgspec never accepts a line pydantic refuses, and decodes every line it accepts to the record pydantic
would give. These properties mutate valid lines of every event type (values of every JSON type at every
place, members removed and added, bytes inserted) and compare the codec's verdict with pydantic's alone.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.vocabulary import codec
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, encode
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Source, Trace
from plantrail.ledger.vocabulary.versions import plain
from tests.strategies import EVENTS, SOURCES, TRACES, anything, counts

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _line_body(
    event: Any, source: Source | None, key: str | None, seq: int, trace: Trace | None = None
) -> dict[str, Any]:
    line, _ = encode(
        seq=seq, ts="2026-11-29T23:00:00Z", run="r", plan_version=1, actor="agent", data=event, prev=GENESIS_PREV,
        source=source, key=key, trace=trace,
    )  # fmt: skip
    body: dict[str, Any] = orjson.loads(line)
    del body["h"]
    return body


def _compact(value: Any) -> bytes:
    """Compact JSON of any value, integers beyond 64 bits included (orjson refuses those)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _sealed(raw: bytes) -> bytes:
    return raw[:-1] + b',"h":"' + hashlib.sha256(raw).hexdigest().encode() + b'"}'


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: the path of keys and indices that leads to it."""
    found = [path]
    if isinstance(value, dict):
        for name, inner in value.items():
            found += _places(inner, (*path, name))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _places(inner, (*path, index))
    return found


def _mutated(body: dict[str, Any], path: tuple[Any, ...], how: str, value: Any, name: str) -> Any:
    """``body`` with the value at ``path`` replaced, removed or renamed, or (an object) given one more member."""
    if not path:
        return value if how == "replace" else body
    parent = body
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "replace":
        parent[last] = value
    elif how == "remove":
        del parent[last]
    elif how == "rename" and isinstance(parent, dict):  # same place, same number of members, another name
        renamed = {(name if key == last else key): inner for key, inner in parent.items()}
        parent.clear()
        parent.update(renamed)
    elif isinstance(parent[last], dict):
        parent[last][name] = value
    return body


def _verdict(decode_line: Any, line: bytes) -> tuple[Any, ...]:
    try:
        record = decode_line(line)
    except PlantrailError as exc:  # damage, or a line a newer plantrail wrote
        return ("refused", exc.code, str(exc))
    return ("accepted", type(record).__name__, *(getattr(record, f) for f in record.__struct_fields__))


def _pydantic_alone(line: bytes) -> Any:
    """The reference: what pydantic alone accepts (``codec._checked`` never consults msgspec), held to the
    canonical form as the format defines it: the line is its record's own encoding, byte for byte."""
    record = codec._checked(line, 1)
    if _plain_encoding(record) != line[:-72] + b"}":
        raise codec._not_canonical(1)
    codec._check_version(record, 1)  # canonical form includes the line's version (ledger.versions)
    return record


def _plain_encoding(record: Any) -> bytes | None:
    """The writer's bytes for a record (orjson over the envelope, the fields format v2 added left out at their
    defaults), or None when the writer could not encode it."""
    try:
        return orjson.dumps(
            codec._envelope(
                record.v, record.seq, record.ts, record.run, record.plan_version, record.actor, record.data,
                record.prev, record.source, record.key, record.trace,
            ),
            default=plain,
            option=orjson.OPT_PASSTHROUGH_DATACLASS,
        )  # fmt: skip
    except orjson.JSONEncodeError:
        return None


def _codec(line: bytes) -> Any:
    """The codec's own path: ``decode`` for a line framed as v1 or v2 (the hot path included), else the schema
    check."""
    if line.startswith((b'{"v":1,', b'{"v":2,')):
        return codec.decode(line, line_no=1)
    return codec._record(line, 1, codec._msgspec(line))


@pytest.mark.parametrize("decoder", ["union", "one type"])
@settings(max_examples=1500, deadline=None)
@given(
    EVENTS,
    SOURCES,
    st.none() | anything,
    counts,
    st.data(),
    st.sampled_from(["replace", "remove", "rename", "add"]),
    json_values,
    st.text(max_size=6),
    TRACES,
)
def test_msgspec_accepts_exactly_what_pydantic_accepts_on_mutated_lines(
    decoder: str,
    event: Any,
    source: Source | None,
    key: str | None,
    seq: int,
    data: st.DataObject,
    how: str,
    value: Any,
    name: str,
    trace: Trace | None,
) -> None:
    """Whatever member of whatever line is changed, removed, renamed or added, the codec's verdict is pydantic's,
    through the union's decoder and through the one-type decoders a process's first lines get."""
    body = _line_body(event, source, key, seq, trace)
    path = data.draw(st.sampled_from(_places(body)))
    line = _sealed(_compact(_mutated(body, path, how, value, name)))
    ours = _codec if decoder == "union" else _one_type_first
    assert _verdict(ours, line) == _verdict(_pydantic_alone, line)


@settings(max_examples=500, deadline=None)
@given(EVENTS, SOURCES, counts, st.data(), st.binary(min_size=1, max_size=4))
def test_msgspec_accepts_exactly_what_pydantic_accepts_after_inserted_bytes(
    event: Any, source: Source | None, seq: int, data: st.DataObject, junk: bytes
) -> None:
    """Bytes inserted anywhere in a line (mostly breaking its JSON) get pydantic's verdict from the codec."""
    raw = orjson.dumps(_line_body(event, source, None, seq))
    at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))  # before the closing brace
    line = _sealed(raw[:at] + junk + raw[at:])
    assert _verdict(_codec, line) == _verdict(_pydantic_alone, line)


def test_msgspec_alone_decodes_valid_step_lines_to_what_decode_returns() -> None:
    """A valid line of each step type is decoded by msgspec on its own (the fast path is really taken), to the
    record ``decode`` returns."""
    for event in ("step.started", "step.completed"):
        data = {"step": "a", "attempt": 1} | ({"evidence": ["ok"]} if event == "step.completed" else {})
        body = {"v": 1, "seq": 1, "ts": "t", "run": "r", "type": event, "plan_version": 1, "actor": "agent",
                "data": data, "prev": GENESIS_PREV}  # fmt: skip
        line = _sealed(orjson.dumps(body))
        record = codec._msgspec(line)
        assert record is not None and record.type == event
        assert codec._canonical(record, line[:-72] + b"}") and codec.decode(line, 1) == record


def _started(envelope_seq_key: bytes, data: bytes) -> bytes:
    return _sealed(
        b'{"v":1,' + envelope_seq_key + b'1,"ts":"t","run":"r","type":"step.started","plan_version":1,'
        b'"actor":"agent","data":' + data + b',"prev":"' + GENESIS_PREV.encode() + b'"}'
    )


@pytest.mark.parametrize(
    ("line", "code"),
    [
        # an unknown member counted away by a gap between another key and its colon: bytes no writer writes
        (_started(b'"seq" :', b'{"step":"a","attempt":1,"zz":3}'), "CORRUPT_LINE"),
        (_started(b'"seq":', b'{"step":"a","attempt"\t:1,"zz":3}'), "CORRUPT_LINE"),
        # an unknown member whose name ends in "[", which the escaped-string correction of the count discounts:
        # written as a writer writes, so a newer writer's member
        (_started(b'"seq":', b'{"step":"a","attempt":1,"[":null}'), "FORMAT_TOO_NEW"),
    ],
)
def test_an_unknown_member_hidden_from_the_key_count_is_still_refused(line: bytes, code: str) -> None:
    """msgspec skips unknown members; the codec must still refuse every line pydantic refuses, with its code."""
    assert _verdict(_pydantic_alone, line)[:2] == ("refused", code)
    assert _verdict(_codec, line) == _verdict(_pydantic_alone, line)


@pytest.mark.parametrize("value", [-(2**63) - 1, 2**64, 2**70, -(2**63), 2**64 - 1])
@pytest.mark.parametrize("member", ["v", "seq", "attempt"])
def test_an_integer_beyond_64_bits_gets_pydantics_verdict(member: str, value: int) -> None:
    """msgspec decodes and encodes integers of any size, the writer (orjson) only 64-bit ones: a line holding a
    bigger one is no writer's, and the fast path must not take it as canonical (found by the mutation property)."""
    body = {"v": 1, "seq": 1, "ts": "t", "run": "r", "type": "step.started", "plan_version": 1, "actor": "agent",
            "data": {"step": "a", "attempt": 1}, "prev": GENESIS_PREV}  # fmt: skip
    if member == "attempt":
        body["data"] = {"step": "a", "attempt": value}
    else:
        body[member] = value
    line = _sealed(json.dumps(body, separators=(",", ":")).encode())
    assert _verdict(_codec, line) == _verdict(_pydantic_alone, line)


def _one_type_first(line: bytes) -> Any:
    """The codec's path as a process's first lines take it: one-type decoders, the union's never built first."""
    saved = codec._DECODE, codec._few_left[0]
    codec._DECODE, codec._few_left[0] = None, codec.FEW_LINES
    try:
        return _codec(line)
    finally:
        codec._DECODE, codec._few_left[0] = saved


def test_a_line_naming_its_type_twice_is_judged_by_its_top_level_type() -> None:
    """A line whose data holds a ``type`` member before a top-level one that differs is decoded as the union
    decodes it (msgspec's one-type decoder refuses the other tag and the union's decides)."""
    body = (
        b'{"v":1,"seq":1,"ts":"t","run":"r","plan_version":1,"actor":"agent","data":{"x":{"a":1,"type":"step.started"}},'
        b'"type":"step.completed","prev":"' + GENESIS_PREV.encode() + b'"}'
    )
    line = _sealed(body)
    assert _verdict(_one_type_first, line) == _verdict(_pydantic_alone, line)


def test_a_writers_few_lines_do_not_build_the_union_decoder() -> None:
    """Decoding a process's first valid lines (a writer's header and tail) leaves the union's decoder unbuilt."""
    line = _sealed(
        b'{"v":1,"seq":1,"ts":"t","run":"r","type":"step.started","plan_version":1,"actor":"agent",'
        b'"data":{"step":"a","attempt":1},"prev":"' + GENESIS_PREV.encode() + b'"}'
    )
    saved = codec._DECODE, codec._few_left[0]
    codec._DECODE, codec._few_left[0] = None, codec.FEW_LINES
    try:
        record = codec.decode(line, 1)
        assert codec._DECODE is None and record.type == "step.started"
    finally:
        codec._DECODE, codec._few_left[0] = saved
    assert codec.decode(line, 1) == record


def test_an_on_demand_entry_is_made_once_when_threads_ask_at_once() -> None:
    """Eight threads asking for one missing entry of a per-class table get one value, made once (so a record
    class is never made twice)."""
    import threading
    import time

    made: list[str] = []

    def make(key: str) -> object:
        made.append(key)
        time.sleep(0.01)
        return object()

    table: Any = codec._OnDemand(make)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(table["k"])) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == ["k"] and len(got) == 8 and all(value is got[0] for value in got)


_EDGES = st.sampled_from([-(2**63) - 1, -(2**63), -1, 0, 2**63, 2**64 - 1, 2**64, 2**70])


def _hot_reference(record: Any) -> bytes | None:
    """The hot path's check as it was written before it was generated: v1, then :func:`codec._fits`, then the
    envelope (``v`` 1) encoded by msgspec."""
    data = record.data
    if codec._OUTGROWS_V1[type(data)](data) or not codec._fits(record, type(data)):
        return None
    envelope = codec._Plain(
        1, record.seq, record.ts, record.run, record.type, record.plan_version, record.actor, data, record.prev
    )
    return codec._ENCODE(envelope)


@settings(max_examples=1500, deadline=None)
@given(EVENTS, st.data())
def test_the_generated_hot_check_agrees_with_fits_and_the_v1_check(event: Any, data: st.DataObject) -> None:
    """For every native event type, the generated check gives the bytes the loop of ``_fits`` and the v1 check
    give, integers at and beyond the 64-bit bounds included (in the envelope and in the event)."""
    import msgspec

    hot = codec._HOT[type(event)]
    if hot is None:
        assert not codec._NATIVE[type(event)]
        return
    ints = st.integers(min_value=-(2**70), max_value=2**70) | _EDGES
    changes = {name: data.draw(st.none() | ints if getattr(event, name) is None else ints)
               for name in codec._INT_FIELDS[type(event)] if data.draw(st.booleans())}  # fmt: skip
    event = msgspec.structs.replace(event, **changes)
    record = codec._RECORD_CLASSES[event.TYPE](
        v=1, seq=data.draw(counts | ints), ts="t", run="r", plan_version=data.draw(counts | ints), actor="agent",
        data=event, prev=GENESIS_PREV, h=GENESIS_PREV,
    )  # fmt: skip
    assert hot(record, event) == _hot_reference(record)
