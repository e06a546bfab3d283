"""The codec: every event type round-trips through its line; damage is named with a code and the line."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode, json_schema
from plantrail.ledger.vocabulary.errors import LogDamaged, PlantrailError
from plantrail.ledger.vocabulary.events import (
    Source,
    StepCompleted,
    Trace,
)
from tests.strategies import EVENTS, SOURCES, TRACES, anything, counts


@settings(max_examples=400, deadline=None)
@given(EVENTS, SOURCES, st.none() | anything, counts, counts, TRACES)
def test_every_event_type_round_trips_through_its_line(
    event: Any, source: Source | None, key: str | None, seq: int, version: int, trace: Trace | None
) -> None:
    """decode(encode(e)) == e for every event type, any text, any source, key and trace context."""
    line, h = encode(
        seq=seq,
        ts="2026-11-29T21:28:39.123456Z",
        run="r",
        plan_version=version,
        actor="agent",
        data=event,
        prev=GENESIS_PREV,
        source=source,
        key=key,
        trace=trace,
    )
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    record = decode(line[:-1], line_no=1)
    assert (record.data, record.source, record.key, record.trace, record.seq, record.h) == (
        event,
        source,
        key,
        trace,
        seq,
        h,
    )
    assert record.type == event.TYPE
    assert hashlib.sha256(line[:-73] + b"}").hexdigest() == h  # any language can check it: strip the h member


def _line(**changes: Any) -> bytes:
    body: dict[str, Any] = {
        "v": 1,
        "seq": 1,
        "ts": "t",
        "run": "r",
        "type": "step.started",
        "plan_version": 1,
        "actor": "agent",
        "data": {"step": "a", "attempt": 1},
        "prev": GENESIS_PREV,
    }
    body.update(changes)
    raw = orjson.dumps(body)
    return raw[:-1] + b',"h":"' + hashlib.sha256(raw).hexdigest().encode() + b'"}'


def _resealed(raw: bytes) -> bytes:
    """A hand-made line with a correct hash: the hash cannot catch it, so the decoder must."""
    return raw[:-1] + b',"h":"' + hashlib.sha256(raw).hexdigest().encode() + b'"}'


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (_line(), None),
        (_line(type="step.teleported"), "FORMAT_TOO_NEW"),
        (_line(seq=True), "CORRUPT_LINE"),
        (_line(seq="1"), "CORRUPT_LINE"),
        (_line(data={"step": "a"}), "CORRUPT_LINE"),
        (_line(data={"step": "a", "attempt": 1, "extra": 2}), "FORMAT_TOO_NEW"),
        (_line(data={"step": "a", "extra": 2}), "CORRUPT_LINE"),
        (_line(data={"step": "a", "attempt": "1", "extra": 2}), "CORRUPT_LINE"),
        (_line(actor="robot"), "CORRUPT_LINE"),
        (_line()[:-3] + (b'0"}' if _line()[-3:-2] != b"0" else b'1"}'), "HASH_MISMATCH"),
        (_line()[:-3] + b'x"}', "CORRUPT_LINE"),
        (_line().replace(b'"step":"a"', b'"step":"b"'), "HASH_MISMATCH"),
        (
            _resealed(
                b'{"v":1,"seq":1,"seq":1,"ts":"t","run":"r","type":"step.started","plan_version":1,'
                b'"actor":"agent","data":{"step":"a","attempt":1},"prev":"' + GENESIS_PREV.encode() + b'"}'
            ),
            "CORRUPT_LINE",
        ),
        (
            _resealed(
                b'{"v":1,"seq":1,"ts":"t","run":"r","type":"step.started","plan_version":1,'
                b'"actor":"agent","data":{"step":"a","attempt":1,"attempt":1},"prev":"' + GENESIS_PREV.encode() + b'"}'
            ),
            "CORRUPT_LINE",
        ),
        (b'{"v":3,"seq":1}', "FORMAT_TOO_NEW"),
        (b"[1,2,3]", "CORRUPT_LINE"),
        (b"not json", "CORRUPT_LINE"),
        (b"", "CORRUPT_LINE"),
        (b'{"v":1,"seq":NaN}', "CORRUPT_LINE"),
    ],
)
def test_decode_names_each_kind_of_damage(line: bytes, code: str | None) -> None:
    """A valid line decodes; every damaged one raises its documented code with the line number, as damage
    (LogDamaged), except a line a newer plantrail wrote, which is FORMAT_TOO_NEW and no damage."""
    if code is None:
        assert decode(line, line_no=7).seq == 1
        return
    with pytest.raises(PlantrailError) as info:
        decode(line, line_no=7)
    assert (info.value.code, info.value.fields["line"]) == (code, 7)
    assert isinstance(info.value, LogDamaged) == (code != "FORMAT_TOO_NEW")


def test_a_value_that_starts_with_a_colon_is_not_taken_for_a_key() -> None:
    """Strings such as ":" or ":x" inside data are not miscounted as keys by the canonical-form check."""
    for text in (":", "::", ':":', 'a:"b', ":x\\"):
        line, _ = encode(
            seq=1,
            ts="t",
            run="r",
            plan_version=1,
            actor="agent",
            data=StepCompleted(step="a", attempt=1, evidence=(text, text)),
            prev=GENESIS_PREV,
        )
        assert decode(line[:-1], line_no=1).data.evidence == (text, text)  # type: ignore[union-attr]


def test_the_json_schema_covers_every_event_type() -> None:
    """plantrail schema describes a line of every event type."""
    schema = orjson.dumps(json_schema()).decode()
    for name in (
        "plan.created",
        "step.started",
        "step.completed",
        "step.blocked",
        "step.failed",
        "plan.replanned",
        "criterion.verified",
        "run.finished",
        "log.opened",
        "log.repaired",
        "log.checkpoint",
    ):
        assert f'"{name}"' in schema
