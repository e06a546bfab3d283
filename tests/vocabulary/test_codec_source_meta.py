"""A source's ``meta`` (format v2): left out at its default, a v2 line when set, through both decoders."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode
from plantrail.ledger.vocabulary.errors import LogDamaged
from plantrail.ledger.vocabulary.events import PlanExtended, Source, StepCompleted, StepStarted

META = {"adapter": "claude-code-hooks", "adapter_version": 1, "unread": {"permission_mode": "default", "n": 1.5}}


def _encoded(data: Any, source: Source | None, key: str | None = None) -> bytes:
    line, _ = encode(
        seq=3, ts="2026-12-02T00:00:00Z", run="r", plan_version=1, actor="agent", data=data, prev=GENESIS_PREV,
        source=source, key=key,
    )  # fmt: skip
    return line


def _resealed(body: dict[str, Any]) -> bytes:
    """A hand-made line with a correct hash: only the decoder's rules can refuse it."""
    raw = orjson.dumps(body)
    return raw[:-1] + b',"h":"' + hashlib.sha256(raw).hexdigest().encode() + b'"}'


@pytest.mark.parametrize("key", [None, "k1"])
def test_a_source_without_meta_is_written_with_the_bytes_v1_gave_it(key: str | None) -> None:
    """A source whose meta is empty writes no ``meta`` member, and a v1 event's line stays ``"v":1``."""
    source = Source(file="t.jsonl", line=4, id="toolu_1", tool="TodoWrite")

    line = _encoded(StepStarted(step="a", attempt=1), source, key)

    assert line.startswith(b'{"v":1,') and b'"meta"' not in line
    assert (
        b'"source":{"file":"t.jsonl","line":4,"id":"toolu_1","timestamp":null,"tool":"TodoWrite","inferred":false}'
        in line
    )
    assert decode(line[:-1], 1).source == source


@pytest.mark.parametrize(
    "data",
    [
        StepStarted(step="a", attempt=1),
        StepCompleted(step="a", attempt=1, evidence=("done",)),
        PlanExtended(steps=()),
    ],
    ids=lambda d: d.TYPE,
)
def test_a_source_with_meta_is_a_v2_line_that_decodes_to_its_record(data: Any) -> None:
    """A source with meta is written as its last member of the source, on a ``"v":2`` line, and the line
    decodes (fast path and full path alike) to the same source, re-encoding to its own bytes."""
    source = Source(file="t.jsonl", line=4, id="toolu_1", tool="TodoWrite", meta=META)

    line = _encoded(data, source)

    assert line.startswith(b'{"v":2,')
    assert b'"inferred":false,"meta":' + orjson.dumps(META) + b"}" in line
    record = decode(line[:-1], 1)
    assert record.source == source and record.data == data
    assert _encoded(record.data, record.source) == line


def test_a_v1_line_whose_source_has_meta_is_corrupt() -> None:
    """A ``"v":1`` line holding a source with meta (its hash correct) is CORRUPT_LINE: the version is part of
    the canonical form."""
    line = _encoded(StepStarted(step="a", attempt=1), Source(file="t.jsonl", meta=META))
    body = orjson.loads(line)
    del body["h"]
    body["v"] = 1

    with pytest.raises(LogDamaged) as caught:
        decode(_resealed(body), 1)

    assert caught.value.code == "CORRUPT_LINE"


def test_a_v2_line_whose_source_has_empty_meta_written_out_is_not_canonical() -> None:
    """``"meta":{}`` spelled out is not what the writer writes (it leaves meta out at its default)."""
    line = _encoded(StepStarted(step="a", attempt=1), Source(file="t.jsonl"))
    body = orjson.loads(line)
    del body["h"]
    body["source"]["meta"] = {}

    with pytest.raises(LogDamaged) as caught:
        decode(_resealed(body), 1)

    assert caught.value.code == "CORRUPT_LINE"


def test_meta_holding_an_integer_beyond_64_bits_cannot_be_written() -> None:
    """The writer refuses a meta value a line cannot hold (an integer beyond 64 bits) before writing."""
    with pytest.raises(Exception) as caught:
        _encoded(StepStarted(step="a", attempt=1), Source(file="t.jsonl", meta={"n": 2**70}))

    assert getattr(caught.value, "code", None) == "INVALID_TEXT"
