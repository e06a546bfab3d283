"""The rules judged against the fold's builder, which keeps counts as its steps move, give the verdicts they
give against the immutable state, which is scanned: ``verify`` and a group commit judge every record against
the builder."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.rules.decide import Block, Command, Complete, Fail, Replan, Start, check
from plantrail.ledger.rules.leases import Abandon
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Event, StepStarted
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections.model import PlanState
from plantrail.projections.state import Advancing, StateView, initial, steps_in_progress
from tests.strategies import STEP_IDS, commands, plans, simulate

_STEP = st.sampled_from(STEP_IDS)
#: Commands a busy run sends, mostly legal (a plantrail writer accepts them), so that steps start, finish, go
#: back to pending and are superseded by replans; and now and then any command at all.
BUSY = st.one_of(
    st.builds(Start, step=_STEP),
    st.builds(Start, step=_STEP),
    st.builds(Start, step=_STEP),
    st.builds(Complete, step=_STEP, evidence=st.just(["done"])),
    st.builds(Complete, step=_STEP, evidence=st.just(["done"])),
    st.builds(Fail, step=_STEP, error=st.just("boom")),
    st.builds(Block, step=_STEP, reason=st.just("stuck")),
    st.builds(Abandon, step=_STEP, reason=st.just("worker gone")),
    st.builds(Replan, reason=st.just("agent_revision"), why=st.just("w"), plan=plans()),
    st.builds(Complete, step=_STEP, evidence=st.just(["late"]), plan_version=st.just(1), attempt=st.just(1)),
    commands(),
)
LOGS = st.tuples(plans(), st.lists(BUSY, min_size=15, max_size=40))


def _verdict(state: StateView, data: Event, plan_version: int, now: str | None) -> Any:
    """What the rules say: why a result is late (None: it applies), or the refusal's code, message and fields."""
    try:
        return ("late", check(state, data, plan_version, now=now))
    except PlantrailError as exc:
        return exc.as_dict()


def _scanned(state: PlanState) -> int:
    return sum(1 for s in state.steps.values() if s.status == "in_progress")


@settings(max_examples=200, deadline=None)
@given(LOGS)
def test_the_builders_verdicts_are_the_scanned_states(log: tuple[PlanSpec, list[Command]]) -> None:
    """Before each record of a generated log, the builder counts the steps in progress that a scan of the
    immutable state finds, and the rules give the same verdict against either: on the record itself and on a
    start of every step (the focus limit reads the count)."""
    records = simulate(*log).records
    advancing = Advancing(initial())
    for record in records:
        builder, frozen = advancing.current(), advancing.result()
        assert steps_in_progress(builder) == steps_in_progress(frozen) == _scanned(frozen)
        now = record.ts
        assert _verdict(builder, record.data, record.plan_version, now) == _verdict(
            frozen, record.data, record.plan_version, now
        )
        for step in (*STEP_IDS, "ghost"):
            current = frozen.steps.get(step)
            start = StepStarted(step=step, attempt=1 if current is None else current.attempt + 1)
            version = max(frozen.version, 1)
            assert _verdict(builder, start, version, now) == _verdict(frozen, start, version, now)
        advancing.add(record)
    frozen = advancing.result()
    assert steps_in_progress(advancing.current()) == _scanned(frozen)


def test_a_start_past_the_focus_limit_names_the_steps_in_progress_in_order() -> None:
    """The refusal lists the steps in progress in the state's order, against the builder as against the
    immutable state."""
    from plantrail.ledger.vocabulary.plan import CriterionSpec, Policy, StepSpec

    steps = tuple(StepSpec(i, "do " + i, (), "evidence of " + i) for i in ("c", "a", "b"))
    plan = PlanSpec("ship it", (CriterionSpec("c1", "works"),), steps, Policy(max_in_progress=2))
    sim = simulate(plan, [Start(step="c"), Start(step="a")])
    assert sim.refused == 0
    advancing = Advancing(initial())
    for record in sim.records:
        advancing.add(record)
    start = StepStarted(step="b", attempt=1)
    refused = _verdict(advancing.current(), start, 1, None)
    assert refused == _verdict(advancing.result(), start, 1, None)
    assert refused["code"] == "STEP_ALREADY_ACTIVE"
    assert refused["active"] == ["a", "c"]  # topological order: a before c


def test_an_event_of_a_derived_class_is_judged_by_its_base_classes_rules() -> None:
    """check finds the rules by the event's exact class; an event of a class derived from one is judged as its
    base class is (the rules, in the same order)."""
    from plantrail.ledger.vocabulary.plan import CriterionSpec, StepSpec

    class Started(StepStarted):
        """A start the rules know only by its base class."""

    steps = tuple(StepSpec(i, "do " + i, (), "evidence of " + i) for i in ("a", "b"))
    state = simulate(PlanSpec("ship it", (CriterionSpec("c1", "works"),), steps), []).states[-1]
    for step, attempt, version in [("a", 1, 1), ("ghost", 1, 1), ("a", 2, 1), ("a", 1, 7)]:
        base, derived = StepStarted(step=step, attempt=attempt), Started(step=step, attempt=attempt)
        assert _verdict(state, derived, version, None) == _verdict(state, base, version, None)
    assert _verdict(state, Started(step="ghost", attempt=1), 1, None)["code"] == "STEP_NOT_FOUND"
    assert _verdict(state, Started(step="a", attempt=1), 1, None) == ("late", None)
