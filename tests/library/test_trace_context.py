"""The library records each command in its W3C trace context: given as ``trace=``, set for a block with
``traced``, or the current OpenTelemetry span's; an invalid one writes nothing; a retry is the same command
whatever its trace context, and the state does not hold it."""

from __future__ import annotations

import copy
import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from plantrail import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.tracing import traced
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Trace
from plantrail.projections.canonical import state_hash
from plantrail.projections.history import quote_record
from tests.conftest import LOGIN_DRAFT

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


def _clock() -> object:
    ticks = itertools.count()
    return lambda: f"2026-12-04T10:00:{next(ticks):02d}.000000Z"


def _traces(log: Path) -> list[Trace | None]:
    with LogReader(log) as reader:
        return [record.trace for record in reader.records()][1:]


def test_a_command_is_recorded_in_the_trace_context_it_is_given(tmp_path: Path) -> None:
    """``trace=`` on create and on a method, ``traced`` around a block (an explicit ``trace=`` winning), and
    execute's ``trace=`` are each stored on their event; a command given none records none."""
    log = tmp_path / "run.jsonl"
    with Ledger.create(log, copy.deepcopy(LOGIN_DRAFT), fsync="none", trace=PARENT) as ledger:
        ledger.start("reproduce", trace=Trace(OTHER, "congo=t61rcWkgMzE"))
        with traced(PARENT, "rojo=00f067aa0ba902b7"):
            ledger.heartbeat("reproduce", lease_s=60)
            ledger.complete("reproduce", "1 failed", trace=OTHER)
        ledger.start("diagnose")
    assert _traces(log) == [
        Trace(PARENT),
        Trace(OTHER, "congo=t61rcWkgMzE"),
        Trace(PARENT, "rojo=00f067aa0ba902b7"),
        Trace(OTHER),
        None,
    ]
    with LogReader(log) as reader:
        quoted = [quote_record(record) for record in reader.records()]
    assert quoted[2]["trace"] == {"traceparent": OTHER, "tracestate": "congo=t61rcWkgMzE"}  # as why quotes it
    assert "trace" not in quoted[5]


@pytest.mark.parametrize("bad", ["00-bad", PARENT.upper(), "00-" + "0" * 32 + "-00f067aa0ba902b7-01"])
def test_an_invalid_trace_context_is_refused_and_the_log_unchanged(tmp_path: Path, bad: str) -> None:
    """An invalid traceparent, given or set for a block, is INVALID_TRACE_CONTEXT and nothing is written; a
    trace of another type is INVALID_ARGUMENT."""
    log = tmp_path / "run.jsonl"
    Ledger.create(log, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    before = log.read_bytes()
    with Ledger.open(log, cache=False) as ledger:
        with pytest.raises(PlantrailError) as caught:
            ledger.start("reproduce", trace=bad)
        assert caught.value.code == "INVALID_TRACE_CONTEXT"
        with pytest.raises(PlantrailError) as caught, traced(bad):
            ledger.start("reproduce")
        assert caught.value.code == "INVALID_TRACE_CONTEXT"
        with pytest.raises(PlantrailError) as caught:
            ledger.start("reproduce", trace=7)  # type: ignore[arg-type]
        assert caught.value.code == "INVALID_ARGUMENT"
        with pytest.raises(PlantrailError) as caught:
            ledger.start("reproduce", trace=Trace(PARENT, "a=b,a=c"))
        assert caught.value.code == "INVALID_TRACE_CONTEXT"
    assert log.read_bytes() == before


def test_a_retry_in_another_trace_context_is_the_same_command(tmp_path: Path) -> None:
    """A retried command under its idempotency key with another traceparent (or none) answers the original's
    ack, and the log keeps its bytes."""
    log = tmp_path / "run.jsonl"
    with Ledger.create(log, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        first = ledger.start("reproduce", idempotency_key="s-1", trace=PARENT)
        before = log.read_bytes()
        again = ledger.start("reproduce", idempotency_key="s-1", trace=OTHER)
        bare = ledger.start("reproduce", idempotency_key="s-1")
    assert (again.seq, again.hash, again.duplicate) == (first.seq, first.hash, True)
    assert (bare.seq, bare.duplicate) == (first.seq, True)
    assert log.read_bytes() == before


def test_the_state_hash_is_the_same_with_and_without_trace_contexts(tmp_path: Path) -> None:
    """The same commands recorded with and without trace contexts fold to states with the same hash but for the
    log's head hash, which covers every byte of the chain (as it does a line's ``ts`` and ``actor``): the state
    holds no trace context."""
    hashes, logs = [], []
    for name, trace in (("plain", None), ("traced", PARENT)):
        log = tmp_path / f"{name}.jsonl"
        with Ledger.create(
            log, copy.deepcopy(LOGIN_DRAFT), run="r", fsync="none", nonce="0" * 32, clock=_clock(), trace=trace
        ) as ledger:
            ledger.start("reproduce", trace=trace)
            ledger.complete("reproduce", "1 failed", trace=trace)
            state = ledger.refresh()
            hashes.append(state_hash(state._replace(head=None)))
        logs.append(log.read_bytes())
    assert hashes[0] == hashes[1]
    assert logs[0] != logs[1] and b'"trace":' not in logs[0]


_SPAN = """
import sys
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState
from plantrail import Ledger
span = NonRecordingSpan(SpanContext(
    trace_id=0x4bf92f3577b34da6a3ce929d0e0e4736, span_id=0x00f067aa0ba902b7, is_remote=False,
    trace_flags=TraceFlags(1), trace_state=TraceState([("congo", "t61rcWkgMzE")]),
))
with Ledger.open(sys.argv[1], cache=False) as ledger:
    with trace.use_span(span):
        ledger.start("reproduce")
        ledger.heartbeat("reproduce", lease_s=60, trace="{other}")
    ledger.heartbeat("reproduce", lease_s=60)
"""

_NO_SPAN = """
import sys
from plantrail import Ledger
with Ledger.open(sys.argv[1], cache=False) as ledger:
    ledger.start("reproduce")
assert not any(name.startswith("opentelemetry") for name in sys.modules), "the write path imported OpenTelemetry"
"""


def test_the_current_opentelemetry_span_is_the_default_when_the_caller_imported_it(tmp_path: Path) -> None:
    """A process that imported OpenTelemetry records its commands in the current span's trace context (an
    explicit ``trace=`` wins; outside a span, none); a process that did not never has it imported for it."""
    pytest.importorskip("opentelemetry.trace")
    log = tmp_path / "run.jsonl"
    Ledger.create(log, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    script = _SPAN.replace("{other}", OTHER)
    subprocess.run([sys.executable, "-c", script, str(log)], check=True)
    assert _traces(log)[1:] == [
        Trace(PARENT, "congo=t61rcWkgMzE"),
        Trace(OTHER),
        None,
    ]
    plain = tmp_path / "plain.jsonl"
    Ledger.create(plain, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    subprocess.run([sys.executable, "-c", _NO_SPAN, str(plain)], check=True)
    assert _traces(plain) == [None, None]
