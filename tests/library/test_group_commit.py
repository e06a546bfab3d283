"""A group commit (``Ledger.execute_many``) decides each command against a state advanced in place and frozen
once; it must append exactly what deciding and evolving one event at a time appends, ack the same, and reach
the same state. The reference below is that one-at-a-time path, written with ``decide_one`` and ``evolve``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import NamedTuple

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import (
    Block,
    Command,
    Complete,
    Fail,
    Finish,
    Replan,
    Start,
    VerifyCriterion,
    decide,
    decide_one,
)
from plantrail.ledger.rules.idempotency import match
from plantrail.ledger.stores.protocol import Ack
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import REASON_CODES, Actor, Event, LogBatch, Record, Source
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections.model import PlanState
from plantrail.projections.state import evolve
from plantrail.projections.views import in_doubt, ready_steps
from tests.strategies import commands, plans

TS = "2026-01-01T00:00:00.000000Z"
RUN = "r"


def _clock() -> str:
    return TS


class Reference(NamedTuple):
    """The one-at-a-time path's view of the log: its state, its idempotency keys, and the first seq the ledger
    under test appended (with fsync "none", nothing from it on is durable)."""

    state: PlanState
    keys: dict[str, Record]
    first_appended: int | None = None


def reference_batch(ref: Reference, batch: list[Command]) -> tuple[Reference, list[bytes], list[Ack]]:
    """Decide and evolve one event at a time (raising the first refusal), as a group commit must behave."""
    state, keys = ref.state, dict(ref.keys)
    lines: list[bytes] = []
    done: list[tuple[int, str, bool, str | None]] = []
    for command in batch:
        key = command.key
        entry = None if key is None else keys.get(key)
        if entry is not None:
            assert key is not None
            match(entry, command, key)
            done.append((entry.seq, entry.h, True, None))
            continue
        data, plan_version, orphan = decide_one(state, command)
        if len(batch) > 1 and not lines:  # more than one command: the events go between log.batch bounds
            state = _append(state, lines, LogBatch(part="begin"), plan_version, "runtime")
        state = _append(state, lines, data, plan_version, command.actor, command.source, key)
        record = decode(lines[-1][:-1], line_no=state.last_seq + 1)
        if key is not None:
            keys[key] = record
        done.append((record.seq, record.h, False, orphan))
    if len(batch) > 1 and lines:
        state = _append(state, lines, LogBatch(part="end"), state.version, "runtime")
    first = ref.first_appended
    if first is None and lines:
        first = min(seq for seq, _, dup, _ in done if not dup)
    durable = not lines  # the ledger under test syncs nothing (fsync="none")
    acks = [
        Ack(seq, h, (first is None or seq < first) if dup else durable, dup, orphan) for seq, h, dup, orphan in done
    ]
    return Reference(state, keys, first), lines, acks


def _append(
    state: PlanState,
    lines: list[bytes],
    data: Event,
    plan_version: int,
    actor: Actor,
    source: Source | None = None,
    key: str | None = None,
) -> PlanState:
    """Encode the next record after ``state``'s head into ``lines``; return the state after it."""
    seq, prev = state.last_seq + 1, state.head
    assert prev is not None  # the log holds its header and plan
    line, _ = encode(
        seq=seq, ts=TS, run=RUN, plan_version=plan_version, actor=actor, data=data, prev=prev, source=source, key=key
    )
    lines.append(line)
    return evolve(state, decode(line[:-1], line_no=seq + 1))


def keyed(command: Command, key: str | None) -> Command:
    """The command with an idempotency key (or none)."""
    return msgspec.structs.replace(command, key=key)


def likely(state: PlanState) -> st.SearchStrategy[Command]:
    """Commands that mostly apply to ``state`` (so batches hold several events): starts of ready steps, results
    of running ones, verdicts, late results of earlier attempts and versions, pauses and replans; now and then
    anything at all."""
    running = [s.id for s in in_doubt(state)] or ["ghost"]
    every = [*state.steps, "ghost"]
    version = st.integers(min_value=1, max_value=max(1, state.version))
    return st.one_of(
        st.builds(Start, step=st.sampled_from(ready_steps(state) or ["ghost"])),
        st.builds(Complete, step=st.sampled_from(running), evidence=st.just(["ok"])),
        st.builds(Fail, step=st.sampled_from(running), error=st.just("exit 1")),
        st.builds(Block, step=st.sampled_from(running), reason=st.just("no access")),
        st.builds(
            VerifyCriterion,
            criterion=st.sampled_from([*state.criteria, "ghost"]),
            passed=st.booleans(),
            evidence=st.just("seen"),
        ),
        st.builds(
            Complete,
            step=st.sampled_from(every),
            evidence=st.just(["late"]),
            attempt=st.integers(min_value=1, max_value=3),
            plan_version=version,
        ),
        st.builds(Finish, outcome=st.just("paused"), reason=st.just("waiting")),
        st.builds(Replan, reason=st.sampled_from(REASON_CODES), why=st.just("saw 401"), plan=plans()),
        commands(),
    )


@st.composite
def batches(draw: st.DrawFn, state: PlanState, keyed_before: list[Command]) -> list[Command]:
    """A batch of up to eight commands, each drawn against the state its predecessors reach: mostly ones that
    apply (a refused one is kept now and then, and refuses the whole batch), some with a new key, some retries
    of a keyed command of this batch or an earlier one."""
    batch: list[Command] = []
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        retries = [*keyed_before, *(c for c in batch if c.key is not None)]
        if retries and draw(st.integers(min_value=0, max_value=5)) == 0:
            batch.append(draw(st.sampled_from(retries)))
            continue
        key = f"k{state.last_seq + 1}" if draw(st.integers(min_value=0, max_value=2)) == 0 else None
        command = keyed(draw(likely(state)), key)
        try:
            [event] = decide(state, command)
        except PlantrailError:
            if draw(st.integers(min_value=0, max_value=9)) == 0:
                batch.append(command)
            continue
        batch.append(command)
        state = evolve(state, _record(state, event.data, event.plan_version))
    return batch


def _record(state: PlanState, data: Event, plan_version: int) -> Record:
    """The record of an event appended after ``state``'s head (untrusted envelope: only for steering draws)."""
    seq, prev = state.last_seq + 1, state.head or GENESIS_PREV
    line, _ = encode(seq=seq, ts=TS, run=RUN, plan_version=plan_version, actor="agent", data=data, prev=prev)
    return decode(line[:-1], line_no=seq + 1)


@settings(max_examples=100, deadline=None)
@given(plans(), st.data())
def test_a_group_commit_appends_acks_and_ends_like_one_event_at_a_time(plan: PlanSpec, data: st.DataObject) -> None:
    """Batch by batch: the same refusal (and nothing written, the state unchanged), or the same lines (between
    log.batch bounds when the batch has more than one command), acks and state as deciding and evolving one
    event at a time."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        with Ledger.create(path, plan, run=RUN, fsync="none", nonce="0" * 32, clock=_clock, cache=False) as ledger:
            ref = Reference(ledger.state, {})
            keyed_before: list[Command] = []
            for _ in range(data.draw(st.integers(min_value=1, max_value=6))):
                batch = data.draw(batches(ref.state, keyed_before))
                before = path.read_bytes()
                try:
                    ref, lines, want = reference_batch(ref, batch)
                except PlantrailError as refusal:
                    state = ledger.state
                    try:
                        ledger.execute_many(batch)
                    except PlantrailError as exc:
                        assert (exc.code, exc.fields) == (refusal.code, refusal.fields)
                    else:
                        raise AssertionError(f"the group commit accepted what one at a time refuses: {refusal}")
                    assert path.read_bytes() == before
                    assert ledger.state is state
                    continue
                assert ledger.execute_many(batch) == want
                assert path.read_bytes() == before + b"".join(lines)
                assert ledger.state == ref.state
                keyed_before += [c for c in batch if c.key is not None]
