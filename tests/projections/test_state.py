"""The reducer: pure, total, deterministic, and associative over log concatenation."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.rules.decide import Command
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.state import Advancing, StateView, evolve, fold, initial
from plantrail.projections.table import Table
from tests.strategies import commands, plans, simulate

LOGS = st.tuples(plans(), st.lists(commands(), max_size=25))


@settings(max_examples=150, deadline=None)
@given(LOGS)
def test_evolve_never_mutates_its_inputs(log: tuple[PlanSpec, list[Command]]) -> None:
    """Every (state, record) pair is byte-identical before and after evolve."""
    sim = simulate(*log)
    state = initial()
    for record in sim.records:
        before = (pickle.dumps(state), pickle.dumps(record))
        after = evolve(state, record)
        assert (pickle.dumps(state), pickle.dumps(record)) == before
        state = after


@settings(max_examples=150, deadline=None)
@given(LOGS, st.data())
def test_fold_of_a_concatenation_is_fold_of_the_tail_from_the_head(
    log: tuple[PlanSpec, list[Command]], data: st.DataObject
) -> None:
    """fold(a + b) == fold(b, fold(a)) at every split point."""
    records = simulate(*log).records
    cut = data.draw(st.integers(min_value=0, max_value=len(records)))
    assert fold(records[cut:], fold(records[:cut])) == fold(records)


def _readable(state: StateView) -> tuple[object, ...]:
    """Everything decide and check may read of a state, in plain values."""
    return (
        state.plan,
        state.version,
        list(state.steps.items()),
        list(state.criteria.items()),
        state.outcome,
        state.outcome_seq,
        state.finished,
        state.adopted,
        state.consecutive_failures,
        state.last_seq,
    )


@settings(max_examples=150, deadline=None)
@given(LOGS, st.data())
def test_advancing_reads_and_ends_like_evolve(log: tuple[PlanSpec, list[Command]], data: st.DataObject) -> None:
    """From any point of a log, Advancing read between records (or not) shows what evolve reaches record by
    record, and its result equals evolve's state; with no records, the result is the start itself."""
    sim = simulate(*log)
    cut = data.draw(st.integers(min_value=0, max_value=len(sim.records)))
    start = initial() if cut == 0 else sim.states[cut - 1]
    advancing = Advancing(start)
    assert _readable(advancing.current()) == _readable(start)
    for record, after in zip(sim.records[cut:], sim.states[cut:], strict=True):
        advancing.add(record)
        if data.draw(st.booleans()):
            assert _readable(advancing.current()) == _readable(after)
    end = advancing.result()
    assert end is start if cut == len(sim.records) else end == sim.states[-1]
    assert canonical_bytes(end) == canonical_bytes(fold(sim.records))


@settings(max_examples=100, deadline=None)
@given(LOGS)
def test_the_incremental_state_equals_the_fold_and_replays_are_identical(log: tuple[PlanSpec, list[Command]]) -> None:
    """The state kept step by step equals fold(log), and two folds give the same canonical bytes and hash."""
    sim = simulate(*log)
    assert sim.states[-1] == fold(sim.records)
    assert canonical_bytes(fold(sim.records)) == canonical_bytes(fold(list(sim.records)))
    assert state_hash(fold(sim.records)) == state_hash(sim.states[-1])


@settings(max_examples=150, deadline=None)
@given(LOGS)
def test_invariants_hold_after_every_event(log: tuple[PlanSpec, list[Command]]) -> None:
    """Never more steps in progress than the policy allows; completed steps always carry evidence."""
    for state in simulate(*log).states:
        if state.plan is None:
            continue
        limit = state.plan.policy.max_in_progress
        running = sum(s.status == "in_progress" for s in state.steps.values())
        assert limit is None or running <= limit
        assert all(s.evidence for s in state.steps.values() if s.status == "completed")


def test_an_unknown_record_type_only_moves_the_position() -> None:
    """evolve is total: a record type it does not handle changes only last_seq and head."""
    from plantrail.ledger.vocabulary.events import LogRepaired, Record

    record = Record(
        v=1,
        seq=5,
        ts="t",
        run="r",
        plan_version=0,
        actor="runtime",
        data=LogRepaired(truncated_at=1, bytes=2, sha256="0" * 64, kind="torn_tail", quarantine="q"),
        prev="0" * 64,
        h="f" * 64,
    )
    assert evolve(initial(), record) == initial()._replace(last_seq=5, head="f" * 64)


def test_table_set_shares_structure_and_leaves_the_original_alone() -> None:
    """Table.set returns a new table; the old one still reads its old value; order is kept."""
    keys = tuple(f"k{i}" for i in range(100))
    table = Table(keys, range(100))
    changed = table.set("k70", -1)
    assert (table["k70"], changed["k70"]) == (70, -1)
    assert list(changed) == list(keys)
    assert [changed[k] for k in keys if k != "k70"] == [table[k] for k in keys if k != "k70"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(), max_size=80), st.data())
def test_table_reads_like_the_dict_of_its_items(values: list[int], data: st.DataObject) -> None:
    """get (with and without a default), values(), values_in_order() and `in` read exactly as a dict of the
    same items does, after any sets; so do the Mapping methods built on them."""
    keys = tuple(f"k{i}" for i in range(len(values)))
    table, plain = Table(keys, values), dict(zip(keys, values, strict=True))
    for key in data.draw(st.lists(st.sampled_from(keys), max_size=5)) if keys else ():
        table, plain[key] = table.set(key, -1), -1
    probes = [*keys, "missing", ""]
    assert [table.get(k) for k in probes] == [plain.get(k) for k in probes]
    assert [table.get(k, "none") for k in probes] == [plain.get(k, "none") for k in probes]
    assert [k in table for k in probes] == [k in plain for k in probes]
    assert list(table.values()) == list(table.values_in_order()) == list(plain.values())
    assert len(table.values()) == len(plain)
    assert all(v in table.values() for v in plain.values())
    assert list(table.items()) == list(plain.items()) and dict(table) == plain
