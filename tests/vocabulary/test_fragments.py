"""Torn bytes read leniently: every event type's line, cut anywhere, reads as its own record as far as it goes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from plantrail.ledger.vocabulary import codec
from plantrail.ledger.vocabulary.fragments import TornRecord, read_fragment
from tests.project.test_event_types import TYPES, sample

_SEQ = 7


def _line(name: str, data: Any) -> bytes:
    line, _ = codec.encode(
        seq=_SEQ, ts="2026-01-01T00:00:00Z", run="r", plan_version=3, actor="agent", data=data, prev="0" * 64
    )
    return line


def _with_members(name: str) -> Any:
    """The type's sample with its step, attempt and criterion (those it has) set to values the test can find."""
    data = sample(name)
    wanted = {"step": "diagnose", "attempt": 2, "criterion": "suite-green"}
    fields = {f for f in wanted if hasattr(data, f)}
    if not fields:
        return data
    if isinstance(data, msgspec.Struct):
        return msgspec.structs.replace(data, **{f: wanted[f] for f in fields})
    import dataclasses

    return dataclasses.replace(data, **{f: wanted[f] for f in fields})


@pytest.mark.parametrize("name", sorted(TYPES))
def test_every_event_types_line_reads_as_its_record_wherever_it_is_cut(name: str) -> None:
    """A whole line reads as the record; a line cut at any byte names nothing it does not hold, and names each
    of type, seq, plan version, step, attempt and criterion once the cut is past that member's value."""
    data = _with_members(name)
    line = _line(name, data)
    [whole] = read_fragment(line)
    expected = {"seq": _SEQ, "type": name, "plan_version": 3, "actor": "agent"}
    for member in ("step", "attempt", "criterion"):
        if hasattr(data, member):
            expected[member] = getattr(data, member)
    assert whole.whole and {k: getattr(whole, k) for k in expected} == expected
    for cut in range(1, len(line) - 1):
        [torn] = read_fragment(line[:cut])
        assert not torn.whole and torn.length == cut
        for member, value in expected.items():
            got = getattr(torn, member)
            assert got in (None, value), (cut, member, got)
            complete_at = line.find(b'"' + member.encode() + b'":')
            end = line.find(b",", complete_at + len(member) + 3)
            if complete_at >= 0 and cut > end > 0:
                assert got == value, (cut, member, line[:cut])
        assert (torn.summary == f"undecodable ({cut} bytes)") == (torn.type is None and torn.seq is None)


def test_bytes_that_name_nothing_are_undecodable() -> None:
    """Zeros (a power loss), garbage and a cut header say nothing: each reads as undecodable, with its length."""
    for data in (b"\0" * 300, b"\xff\xfe garbage", b'{"v":1,"se'):
        [torn] = read_fragment(data)
        assert torn.summary == f"undecodable ({len(data)} bytes)"


def test_a_group_commit_cut_short_reads_as_each_of_its_lines() -> None:
    """A torn group commit: its begin and whole records are described from their JSON, the cut line as far as it
    goes; a text value that holds a quote or a member's name is read as text, never as a member."""
    begin = _line("log.batch", sample("log.batch"))
    said = msgspec.structs.replace(_with_members("step.completed"), evidence=('"criterion":"zzz", "verdict":"no"',))
    tricky = _line("step.completed", said)
    started = _line("step.started", _with_members("step.started"))
    records = read_fragment(begin + tricky + started[:100])
    assert [(r.type, r.whole) for r in records] == [
        ("log.batch", True),
        ("step.completed", True),
        ("step.started", False),
    ]
    assert records[1].step == "diagnose" and records[1].attempt == 2
    assert (records[1].criterion, records[1].verdict) == (None, None)
    [cut] = read_fragment(tricky[:-80])  # the text, cut: its quoted members are still text
    assert (cut.step, cut.attempt, cut.criterion, cut.verdict) == ("diagnose", 2, None, None)
    assert records[2].summary.startswith(f"seq {_SEQ} step.started")
    assert isinstance(records[0], TornRecord) and records[0].as_dict()["summary"] == records[0].summary


def test_only_the_events_own_leading_members_are_read_from_a_cut_line() -> None:
    """A member of the same name inside a nested value (a report) is not the event's, and a quote or a bracket
    escaped inside a text does not end it."""
    [cut] = read_fragment(
        b'{"v":1,"seq":3,"ts":"t","run":"r","type":"step.completed","plan_version":1,"actor":"agent",'
        b'"data":{"step":"a\\\\\\"[b","attempt":4,"evidence":["x"],"report":{"outcome":"zz","criterion":"c"'
    )
    assert (cut.step, cut.attempt, cut.outcome, cut.criterion) == ('a\\"[b', 4, None, None)
