"""The reducer: pure, total, deterministic, and associative over log concatenation."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.decide import Command
from ledger.plan import PlanSpec
from projections.canonical import canonical_bytes, state_hash
from projections.state import evolve, fold, initial
from projections.table import Table
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
    from ledger.events import LogRepaired, Record

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
