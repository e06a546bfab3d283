"""The reducer's fast paths give what the slow paths give: a carried-over step order, bare-step changes,
shared specs in reconcile, and replans a hand-made log holds that never validated."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from plantrail.ledger.rules.decide import Command, Complete, Fail, Finish, Replan, Start
from plantrail.ledger.vocabulary.errors import PlanInvalid
from plantrail.ledger.vocabulary.events import PlanReplanned, Record, StepStarted
from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanSpec, StepSpec, carried_order, topo_order, validate_plan
from plantrail.projections.model import PlanState
from plantrail.projections.reconcile import reconcile
from plantrail.projections.state import evolve, fold, share_unchanged
from tests.strategies import commands, plans, simulate

#: Ids whose sorted order says nothing about the dependency order, so the smallest-ready rule matters.
POOL = ("m", "c", "x", "a", "q", "f", "z", "k", "b", "t")
CRITERIA = (CriterionSpec("c1", "works"),)


def _step(step_id: str, deps: list[str] | tuple[str, ...]) -> StepSpec:
    return StepSpec(step_id, "do " + step_id, tuple(deps), "evidence of " + step_id)


def _plan(steps: list[StepSpec]) -> PlanSpec:
    return PlanSpec(goal="ship it", acceptance_criteria=CRITERIA, steps=tuple(steps))


@st.composite
def old_plans(draw: st.DrawFn) -> PlanSpec:
    """A valid plan over ids from POOL, each step depending only on steps drawn before it, listed shuffled."""
    ids = draw(st.permutations(POOL))[: draw(st.integers(min_value=1, max_value=8))]
    steps = [_step(i, draw(st.lists(st.sampled_from(ids[:n]), max_size=3)) if n else []) for n, i in enumerate(ids)]
    return _plan(draw(st.permutations(steps)))


@st.composite
def replans(draw: st.DrawFn) -> tuple[PlanSpec, PlanSpec]:
    """A valid plan and a replan of it: steps removed, re-listed, some with new dependencies, some added.

    Nothing keeps the replan valid: removed steps may leave unknown dependencies, added ones may form cycles,
    depend on themselves, or reuse an id.
    """
    old = draw(old_plans())
    kept = [s for s in old.steps if not draw(st.booleans()) or len(old.steps) == 1]
    kept = [
        _step(s.id, draw(st.lists(st.sampled_from(POOL), max_size=2))) if draw(st.integers(0, 9)) == 0 else s
        for s in kept
    ]
    free = [i for i in POOL if i not in {s.id for s in kept}]
    new_ids = draw(st.lists(st.sampled_from(free), max_size=3, unique=True)) if free else []
    if new_ids and kept and draw(st.integers(0, 9)) == 0:
        new_ids.append(kept[0].id)  # a duplicate id
    every = [s.id for s in kept] + new_ids
    added = [_step(i, draw(st.lists(st.sampled_from(every), max_size=2))) for i in new_ids]
    return old, _plan(draw(st.permutations(kept + added)))


def _outcome(plan: PlanSpec, previous: tuple[PlanSpec, tuple[str, ...]] | None) -> Any:
    """validate_plan's order, or the error it raised (code, message and fields), judged afresh (a copy:
    validate_plan remembers the last plan object it accepted)."""
    try:
        return validate_plan(replace(plan), previous)
    except PlanInvalid as e:
        return e.as_dict()


@settings(max_examples=400, deadline=None)
@given(replans())
def test_a_carried_over_order_is_the_order_sorted_from_scratch(pair: tuple[PlanSpec, PlanSpec]) -> None:
    """validate_plan with the previous plan and its order returns the same order, or raises the same error."""
    old, new = pair
    outcome = _outcome(new, None)
    carried = isinstance(outcome, tuple) and carried_order(old.steps, topo_order(old.steps), new.steps) is not None
    event("carried over" if carried else "sorted" if isinstance(outcome, tuple) else "invalid")
    assert _outcome(new, (old, topo_order(old.steps))) == outcome


def test_the_order_is_carried_over_when_steps_are_only_added_or_removed() -> None:
    """A replan adding a leaf, removing one, or adding a chain reuses the order; new dependencies do not."""
    old = _plan([_step("z", []), _step("m", ["z"]), _step("a", ["m"]), _step("k", ["z"]), _step("b", [])])
    before = topo_order(old.steps)
    assert before == ("b", "z", "k", "m", "a")
    cases = {
        "add a leaf": [*old.steps, _step("c", ["z"])],
        "remove a leaf": [s for s in old.steps if s.id != "a"],
        "add a chain": [*old.steps, _step("q", ["c"]), _step("c", ["k"])],
        "rename a leaf": [*[s for s in old.steps if s.id != "k"], _step("d", ["z"])],
    }
    for name, steps in cases.items():
        carried = carried_order(old.steps, before, steps)
        assert carried is not None, name
        assert carried == topo_order(steps), name
    rewired = [replace(s, depends_on=("b",)) if s.id == "a" else s for s in old.steps]
    assert carried_order(old.steps, before, rewired) is None
    cycle = [*old.steps, _step("c", ["q"]), _step("q", ["c"])]
    assert carried_order(old.steps, before, cycle) is None
    with pytest.raises(PlanInvalid) as raised:
        validate_plan(_plan(cycle), (old, before))
    assert raised.value.code == "DEPENDENCY_CYCLE"


LOGS = st.tuples(plans(), st.lists(commands(), max_size=25))


def _replans(records: list[Record]) -> list[tuple[PlanState, Record]]:
    """Each replan record of a log with the state just before it."""
    found, state = [], fold([])
    for record in records:
        if record.type == "plan.replanned":
            found.append((state, record))
        state = evolve(state, record)
    return found


@settings(max_examples=150, deadline=None)
@given(LOGS)
def test_reconcile_gives_the_same_with_shared_specs_and_either_step_table(log: tuple[PlanSpec, list[Command]]) -> None:
    """Sharing unchanged specs (compared by identity) and fold's dict of steps change nothing in reconcile."""
    for state, record in _replans(simulate(*log).records):
        assert isinstance(record.data, PlanReplanned) and state.plan is not None
        new = record.data.plan
        order = validate_plan(new)
        slow = reconcile(state.plan, state.steps, state.criteria, new, record.seq)
        shared = share_unchanged(state.plan, new)
        assert reconcile(state.plan, state.steps, state.criteria, shared, record.seq, order=order) == slow
        assert reconcile(state.plan, state.steps.to_dict(), state.criteria, shared, record.seq) == slow


def _fold_matches_evolve(records: list[Record]) -> PlanState:
    state = fold([])
    for record in records:
        state = evolve(state, record)
    assert fold(records) == state
    return state


def test_a_completion_after_failures_and_a_start_after_a_pause_take_the_delta_path() -> None:
    """The bare-step shortcut is only for records that change one step: these also reset the failure streak
    or resume the run, in fold as in evolve."""
    plan = _plan([_step("a", []), _step("b", ["a"])])
    sim = simulate(
        plan,
        [
            Start(step="a"),
            Fail(step="a", error="boom"),
            Start(step="a"),
            Complete(step="a", evidence=["ok"]),
            Finish(outcome="paused", reason="lunch"),
            Start(step="b"),
        ],
    )
    assert sim.refused == 0
    after = {record.type: state for record, state in zip(sim.records, sim.states, strict=True)}
    assert after["step.failed"].consecutive_failures == 1
    assert after["step.completed"].consecutive_failures == 0  # the completion reset the streak
    assert after["run.finished"].outcome == "paused"
    state = _fold_matches_evolve(sim.records)
    assert state.outcome is None and state.steps["b"].status == "in_progress"


def _hand_made(records: list[Record], data: Any, plan_version: int) -> list[Record]:
    """``records`` plus one record no writer checked (fold does not look at the hash chain)."""
    last = records[-1]
    extra = Record(
        v=last.v,
        seq=last.seq + 1,
        ts=last.ts,
        run=last.run,
        plan_version=plan_version,
        actor="planner",
        data=data,
        prev=last.h,
        h=last.h,
    )
    return [*records, extra]


INVALID_REPLANS = {
    "cycle among added steps": [_step("a", []), _step("b", ["a"]), _step("c", ["d"]), _step("d", ["c"])],
    "unknown dependency": [_step("a", []), _step("b", ["a"]), _step("c", ["gone"])],
    "removed dependency": [_step("b", ["a"])],
    "duplicate id": [_step("a", []), _step("b", ["a"]), _step("b", [])],
    "self dependency": [_step("a", []), _step("b", ["a"]), _step("c", ["c"])],
}


@pytest.mark.parametrize("name", sorted(INVALID_REPLANS))
def test_a_hand_made_replan_that_never_validated_is_not_applied(name: str) -> None:
    """An invalid plan in a hand-made log leaves the plan as it was, by the carried-over path as by sorting."""
    plan = _plan([_step("a", []), _step("b", ["a"])])
    records = simulate(plan, [Start(step="a"), Complete(step="a", evidence=["ok"])]).records
    event = PlanReplanned(
        new_version=2,
        reason="agent_revision",
        why="hand-made",
        causes=(),
        observations=(),
        plan=_plan(INVALID_REPLANS[name]),
    )
    with pytest.raises(PlanInvalid):
        validate_plan(event.plan)
    log = _hand_made(records, event, 2)
    log = _hand_made(log, StepStarted(step="b", attempt=1), 1)
    before = fold(records)
    after = _fold_matches_evolve(log)
    assert (after.plan, after.version, after.adopted) == (before.plan, before.version, before.adopted)
    assert after.steps["b"].status == "in_progress"


def test_a_valid_replan_that_adds_and_removes_steps_folds_as_evolve() -> None:
    """The carried-over order is the order the state's steps are kept in, in fold and in evolve."""
    plan = _plan([_step("m", []), _step("c", ["m"]), _step("x", ["m"])])
    revised = _plan([_step("m", []), _step("c", ["m"]), _step("a", ["c"]), _step("b", [])])
    sim = simulate(
        plan,
        [Start(step="m"), Complete(step="m", evidence=["ok"]), Replan(reason="agent_revision", why="w", plan=revised)],
    )
    assert sim.refused == 0
    state = _fold_matches_evolve(sim.records)
    assert tuple(state.steps) == topo_order(revised.steps) == ("b", "m", "c", "a")


def test_a_replans_plan_is_validated_once_by_the_rules_and_the_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules judge a replan's plan and the fold then adopts the same object: one validation, and the state
    is the one a fresh validation (an equal copy of the plan) gives."""
    from plantrail.ledger.rules.decide import check
    from plantrail.ledger.vocabulary import plan as plan_module

    plan = _plan([_step("m", []), _step("c", ["m"]), _step("x", ["m"])])
    records = simulate(plan, [Start(step="m"), Complete(step="m", evidence=["ok"])]).records
    state = fold(records)
    revised = _plan([_step("m", []), _step("c", ["m"]), _step("a", ["c"]), _step("b", [])])
    event = PlanReplanned(new_version=2, reason="agent_revision", why="w", causes=(), observations=(), plan=revised)
    judged = []
    real = plan_module._validated_order
    monkeypatch.setattr(plan_module, "_validated_order", lambda *args: judged.append(args[0]) or real(*args))
    assert check(state, event, 1) is None
    after = evolve(state, _hand_made(records, event, 1)[-1])
    assert judged == [revised]  # once, by the rules
    fresh = replace(event, plan=replace(revised))
    assert evolve(state, _hand_made(records, fresh, 1)[-1]) == after
    assert judged == [revised, revised] and judged[1] is not revised  # a copy is judged afresh


def test_a_writers_replan_is_validated_once(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a writer, the record of a replan holds the plan decoded from the line it wrote (equal to the one
    the rules validated, another object): the fold adopting it takes the rules' order instead of validating it
    again; the rules carry the active plan's order over (as a reader's fold does) rather than sort afresh; and
    the state is the one a reader folds from the log."""
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.stores.jsonl.current import read_state
    from plantrail.ledger.vocabulary import plan as plan_module

    def spec(step_id: str, deps: list[str]) -> dict[str, Any]:
        return {"id": step_id, "title": f"do {step_id}", "depends_on": deps, "completion_evidence": "output"}

    criteria = [{"id": "c", "description": "done"}]
    draft = {"goal": "g", "acceptance_criteria": criteria, "steps": [spec("m", []), spec("c", ["m"])]}
    revised = draft | {"steps": [spec("m", []), spec("c", ["m"]), spec("a", ["c"]), spec("b", [])]}
    path = tmp_path / "run.jsonl"
    with Ledger.create(path, draft, fsync="none", cache=False) as ledger:
        ledger.start("m")
        ledger.complete("m", ["ok"])
        judged: list[PlanSpec] = []
        sorted_afresh: list[Any] = []
        real, real_sort = plan_module._validated_order, plan_module.topo_order
        monkeypatch.setattr(plan_module, "_validated_order", lambda *args: judged.append(args[0]) or real(*args))
        monkeypatch.setattr(plan_module, "topo_order", lambda *args: sorted_afresh.append(args) or real_sort(*args))
        ledger.execute(Replan(reason="agent_revision", why="w", plan=plan_module.parse_draft(revised)))
        assert len(judged) == 1  # by the rules; the fold took their order
        assert sorted_afresh == []  # the rules carried the active plan's order over, as a reader's fold does
        written = ledger.unread_state
    monkeypatch.undo()
    assert tuple(written.steps) == ("b", "m", "c", "a")
    assert read_state(str(path), use_cache=False).state == written


def test_an_invalid_plan_is_never_remembered() -> None:
    """Each validation of a plan that does not validate raises again, after a valid one or after itself."""
    valid = _plan([_step("a", []), _step("b", ["a"])])
    invalid = _plan(INVALID_REPLANS["cycle among added steps"])
    assert validate_plan(valid) == validate_plan(valid) == ("a", "b")
    for _ in range(2):
        with pytest.raises(PlanInvalid) as raised:
            validate_plan(invalid)
        assert raised.value.code == "DEPENDENCY_CYCLE"
    assert validate_plan(valid) == ("a", "b")


def test_a_moved_step_is_a_whole_step_state() -> None:
    """The fold builds a moved step from a tuple of every field: it has them all, each where ``_replace`` puts it
    (a field added to StepState and not to the tuple would make a short tuple, and fail here)."""
    from plantrail.projections.model import StepState
    from plantrail.projections.state import _moved

    before = StepState(*(f"value of {name}" for name in StepState._fields))
    moved = _moved(before, "completed", 2, ("done",), 9)

    assert type(moved) is StepState
    assert moved == before._replace(status="completed", attempt=2, evidence=("done",), last_seq=9, cancel=None)


def test_a_restarted_step_is_a_whole_step_state_at_its_defaults() -> None:
    """reconcile builds a restarted step from a tuple of every field: it is the step the keyword constructor
    gives, every field it does not name at its default."""
    from plantrail.projections.model import StepState
    from plantrail.projections.reconcile import _restarted

    spec = _step("a", [])
    restarted = _restarted("a", spec, 7, "contract_changed", "b")

    assert type(restarted) is StepState
    assert restarted == StepState(
        id="a", max_attempts=spec.max_attempts, last_seq=7, reset="contract_changed", invalidated_by="b"
    )
