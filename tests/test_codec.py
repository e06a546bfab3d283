"""The codec: every event type round-trips through its line; damage is named with a code and the line."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.codec import GENESIS_PREV, decode, encode, json_schema
from ledger.errors import LogDamaged
from ledger.events import (
    REASON_CODES,
    CriterionVerified,
    LogCheckpoint,
    LogOpened,
    LogRepaired,
    PlanCreated,
    PlanReplanned,
    RunFinished,
    Source,
    StepBlocked,
    StepCompleted,
    StepFailed,
    StepStarted,
)
from ledger.plan import CriterionSpec, PatchOp, PlanPatch, Policy, StepSpec
from tests.strategies import plans

anything = st.text()  # any Unicode text hypothesis can make (it excludes lone surrogates)
ident = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,20}", fullmatch=True)
counts = st.integers(min_value=0, max_value=2**53)
hex64 = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)

EVENTS = st.one_of(
    st.builds(PlanCreated, plan=plans()),
    st.builds(StepStarted, step=ident, attempt=counts),
    st.builds(StepCompleted, step=ident, attempt=counts, evidence=st.lists(anything, max_size=3).map(tuple)),
    st.builds(StepBlocked, step=ident, attempt=counts, reason=anything),
    st.builds(StepFailed, step=ident, attempt=counts, error=anything),
    st.builds(CriterionVerified, criterion=ident, verdict=st.sampled_from(["passed", "failed"]), evidence=anything),
    st.builds(RunFinished, outcome=st.sampled_from(["complete", "paused", "failed", "cancelled"]), reason=anything),
    st.builds(
        PlanReplanned,
        new_version=counts,
        reason=st.sampled_from(REASON_CODES),
        why=anything,
        causes=st.lists(counts, max_size=3).map(tuple),
        observations=st.lists(anything, max_size=2).map(tuple),
        plan=plans(),
        patch=st.none()
        | st.builds(
            PlanPatch,
            base_version=counts,
            operations=st.lists(
                st.one_of(
                    st.builds(PatchOp, op=st.just("remove_step"), step_id=ident),
                    st.builds(
                        PatchOp,
                        op=st.just("add_step"),
                        step=st.builds(
                            StepSpec, id=ident, title=anything, depends_on=st.just(()), completion_evidence=anything
                        ),
                    ),
                    st.builds(
                        PatchOp, op=st.just("add_criterion"), criterion=st.builds(CriterionSpec, ident, anything)
                    ),
                    st.builds(PatchOp, op=st.just("set_policy"), policy=st.builds(Policy, st.none() | counts)),
                ),
                max_size=3,
            ).map(tuple),
        ),
    ),
    st.builds(
        LogOpened,
        format=st.just("plantrail/1"),
        run=ident,
        nonce=hex64,
        fsync=st.sampled_from(["always", "batch", "none"]),
        created_by=anything,
    ),
    st.builds(
        LogRepaired, truncated_at=counts, bytes=counts, sha256=hex64, kind=st.just("torn_tail"), quarantine=anything
    ),
    st.builds(LogCheckpoint, covers_seq=counts, head=hex64, algorithm=st.just("hmac-sha256"), key_id=ident, mac=hex64),
)
SOURCES = st.none() | st.builds(
    Source,
    file=anything,
    line=st.none() | counts,
    id=st.none() | anything,
    timestamp=st.none() | anything,
    tool=st.none() | anything,
    inferred=st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(EVENTS, SOURCES, st.none() | anything, counts, counts)
def test_every_event_type_round_trips_through_its_line(
    event: Any, source: Source | None, key: str | None, seq: int, version: int
) -> None:
    """decode(encode(e)) == e for every event type, any text, any source and key."""
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
    )
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    record = decode(line[:-1], line_no=1)
    assert (record.data, record.source, record.key, record.seq, record.h) == (event, source, key, seq, h)
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
        (_line(type="step.teleported"), "UNKNOWN_EVENT_TYPE"),
        (_line(seq=True), "CORRUPT_LINE"),
        (_line(seq="1"), "CORRUPT_LINE"),
        (_line(data={"step": "a"}), "CORRUPT_LINE"),
        (_line(data={"step": "a", "attempt": 1, "extra": 2}), "CORRUPT_LINE"),
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
        (b'{"v":2,"seq":1}', "UNSUPPORTED_SCHEMA_VERSION"),
        (b"[1,2,3]", "CORRUPT_LINE"),
        (b"not json", "CORRUPT_LINE"),
        (b"", "CORRUPT_LINE"),
        (b'{"v":1,"seq":NaN}', "CORRUPT_LINE"),
    ],
)
def test_decode_names_each_kind_of_damage(line: bytes, code: str | None) -> None:
    """A valid line decodes; every damaged one raises its documented code with the line number."""
    if code is None:
        assert decode(line, line_no=7).seq == 1
        return
    with pytest.raises(LogDamaged) as info:
        decode(line, line_no=7)
    assert (info.value.code, info.value.fields["line"]) == (code, 7)


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
