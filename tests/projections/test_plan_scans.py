"""A step's event costs what it touches: deciding and applying it never walks every step of the plan.

Counted, not timed: every way to walk the state's steps table (its keys, values, items, a copy, a recount of
its tally) and the active plan's steps is watched while an open ledger records the commands an agent sends on
every turn, on plans that use the v1 and the v2 contract. A new scan anywhere on that path (the rules, the
reducer, the stop policy) fails here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Block, Command, Complete, Fail, Replan, Start
from plantrail.ledger.rules.leases import Abandon
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections import stop
from plantrail.projections.state import evolve, in_place, initial, open_steps, steps_in_progress
from plantrail.projections.table import Table
from tests.strategies import STEP_IDS, commands, plans, simulate

#: Steps in the plan: any table or tuple this long that is walked is a walk over the plan.
STEPS = 300

#: What an agent records turn by turn, on three steps (a replan, an extension or a finish is about the whole plan,
#: and left out).
Turn = Callable[[Ledger, str, str, str], object]
TURNS: tuple[tuple[str, Turn], ...] = (
    ("start", lambda run, a, b, c: run.start(a)),
    ("heartbeat", lambda run, a, b, c: run.heartbeat(a, lease_s=60)),
    ("complete", lambda run, a, b, c: run.complete(a, "pytest: 12 passed")),
    ("start again", lambda run, a, b, c: run.start(b)),
    ("fail", lambda run, a, b, c: run.fail(b, "exit 1")),
    ("start a retry", lambda run, a, b, c: run.start(b)),
    ("abandon", lambda run, a, b, c: run.abandon(b, "the worker is gone")),
    ("start after abandon", lambda run, a, b, c: run.start(b)),
    ("block", lambda run, a, b, c: run.block(b, "needs credentials")),
    ("request an effect", lambda run, a, b, c: (run.start(c), run.request_effect(c, f"deploy-{c}", "staging"))),
    ("commit an effect", lambda run, a, b, c: run.commit_effect(c, f"deploy-{c}", result="deployed")),
    ("observe", lambda run, a, b, c: run.observe("repo", f"commit-{c}")),
    ("verify a criterion", lambda run, a, b, c: run.verify_criterion("c", True, f"checked after {c}")),
)


class _Watched(tuple):  # type: ignore[type-arg]
    """The plan's steps, noting every walk over them."""

    walks: list[str]

    def __iter__(self) -> Iterator[Any]:
        self.walks.append("the plan's steps")
        return super().__iter__()


def _watch_tables(monkeypatch: pytest.MonkeyPatch, walks: list[str]) -> None:
    """Note every walk over a table as long as the plan (the steps table)."""
    for name in ("__iter__", "values", "values_in_order", "to_dict"):
        original = getattr(Table, name)

        def watched(self: Table[Any], *args: Any, _name: str = name, _original: Any = original) -> Any:
            if len(self) >= STEPS:
                walks.append(f"Table.{_name}")
            return _original(self, *args)

        monkeypatch.setattr(Table, name, watched)
    tally = Table.tally

    def recounted(self: Table[Any], of: Any) -> Any:
        if len(self) >= STEPS and (self._tally is None or self._tally[0] is not of):
            walks.append("Table.tally counted again")
        return tally(self, of)

    monkeypatch.setattr(Table, "tally", recounted)


def _draft(v2: bool) -> dict[str, Any]:
    steps = [
        {"id": f"s{i}", "title": f"step {i}", "depends_on": [], "completion_evidence": "output"} for i in range(STEPS)
    ]
    policy: dict[str, Any] = {"max_in_progress": 4} | ({"max_turns": 10**6} if v2 else {})
    return {"goal": "g", "acceptance_criteria": [{"id": "c", "description": "d"}], "steps": steps, "policy": policy}


@pytest.mark.parametrize("v2", [False, True], ids=["v1 plan", "v2 plan"])
def test_a_step_event_walks_no_collection_as_long_as_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v2: bool
) -> None:
    """Every command an agent records per turn is decided, appended and applied without walking the plan's steps
    or the state's steps table (once the ledger has recorded each of them once)."""
    walks: list[str] = []
    with Ledger.create(tmp_path / "run.jsonl", _draft(v2), fsync="none", cache=False) as run:
        for _, turn in TURNS:  # once unwatched: what is indexed once per plan (as opening it read it) is built
            turn(run, "s0", "s1", "s2")
        assert run.state.contract is v2
        plan = run.state.plan
        assert plan is not None
        watched = _Watched(plan.steps)
        watched.walks = walks
        object.__setattr__(plan, "steps", watched)
        _watch_tables(monkeypatch, walks)
        for label, turn in TURNS:
            turn(run, "s3", "s4", "s5")
            assert walks == [], f"{label} walked {walks}"
        monkeypatch.undo()
        object.__setattr__(plan, "steps", tuple(watched))


def test_the_watch_sees_a_walk_over_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watch notes a walk over the steps table and over the plan's steps (so the test above can fail)."""
    walks: list[str] = []
    with Ledger.create(tmp_path / "run.jsonl", _draft(False), fsync="none", cache=False) as run:
        plan = run.state.plan
        assert plan is not None
        watched = _Watched(plan.steps)
        watched.walks = walks
        _watch_tables(monkeypatch, walks)
        sum(1 for s in run.state.steps.values() if s.status == "in_progress")
        any(s.max_tool_calls is not None for s in watched)
        monkeypatch.undo()
    assert walks == ["Table.values", "the plan's steps"]


_STEP = st.sampled_from(STEP_IDS)
#: Commands a busy run sends, mostly legal, so that steps start, finish, fail, go back to pending and are
#: superseded by replans; and now and then any command at all.
BUSY = st.one_of(
    st.builds(Start, step=_STEP),
    st.builds(Start, step=_STEP),
    st.builds(Complete, step=_STEP, evidence=st.just(["done"])),
    st.builds(Fail, step=_STEP, error=st.just("boom")),
    st.builds(Block, step=_STEP, reason=st.just("stuck")),
    st.builds(Abandon, step=_STEP, reason=st.just("worker gone")),
    st.builds(Replan, reason=st.just("agent_revision"), why=st.just("w"), plan=plans()),
    commands(),
)


@settings(max_examples=150, deadline=None)
@given(plans(), st.lists(BUSY, min_size=10, max_size=40))
def test_the_counts_carried_from_event_to_event_are_what_a_scan_finds(plan: PlanSpec, sent: list[Command]) -> None:
    """Along a generated log, applied record by record both to immutable states (whose steps tables carry their
    tally by status through each change) and to the fold's builder, the steps in progress, the steps not
    completed and whether the stop policy sees work left are what a scan of the state finds."""
    state, builder = initial(), in_place(initial())
    for record in simulate(plan, sent).records:
        state = evolve(state, record)
        builder.add(record)
        statuses = [s.status for s in state.steps.values()]
        for view in (state, builder):
            assert steps_in_progress(view) == statuses.count("in_progress")
            assert open_steps(view) == len(statuses) - statuses.count("completed")
            assert stop._work_left(view) == bool(stop._unmet(view))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100), st.lists(st.tuples(st.integers(0, 99), st.integers(0, 3)), max_size=60))
def test_a_tally_carried_through_sets_is_a_recount(size: int, sets: list[tuple[int, int]]) -> None:
    """A table asked for its tally, then changed value by value, gives at every step the tally a recount of
    its values gives (and a tally asked with another function is counted afresh)."""
    keys = tuple(f"k{i}" for i in range(size))
    table = Table(keys, (i % 4 for i in range(size)))
    table.tally(_same)
    for index, value in sets:
        table = table.set(keys[index % size], value)
        values = list(table.values())
        assert dict(table.tally(_same)) == {v: values.count(v) for v in set(values)}
    values = list(table.values())
    odd = sum(v % 2 for v in values)
    assert dict(table.tally(_even)) == {k: n for k, n in ((True, len(values) - odd), (False, odd)) if n}


def _same(value: int) -> int:
    return value


def _even(value: int) -> bool:
    return value % 2 == 0
