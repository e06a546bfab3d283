"""Properties of replans, late results and replay over random runs (a hypothesis state machine).

Rules drive a real ledger on disk: start, complete / fail / block, verify criteria, replan with a whole draft
or a patch, late results stamped with a superseded version or a stale attempt, pause and finish, and a
writer restart. After every
rule the log is read back and checked: the fold equals the state the writer saw, twice over by hash; no late
result changed the plan; dropping every late result gives the same plan; replaying each superseded version
gives the state seen just before its replan; and ``verify_log`` passes. Each replan is also checked against
the reconcile rules. ``pytest --hypothesis-show-statistics`` shows how often replans kept work, invalidated
work by lineage, and how many late results of each kind the runs produced.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec
from plantrail.projections.canonical import state_hash
from plantrail.projections.history import replay_version
from plantrail.projections.model import PlanState
from plantrail.projections.state import fold
from plantrail.projections.views import in_doubt, ready_steps
from tests.conftest import Clock
from tests.logs import read_records

BASE: dict[str, Any] = {
    "goal": "Fix the login failure and run the tests",
    "acceptance_criteria": [
        {"id": "login-passes", "description": "tests/login.test.ts passes"},
        {"id": "no-regressions", "description": "the whole suite passes"},
    ],
    "policy": {"max_in_progress": "unlimited"},
    "steps": [
        {"id": "reproduce", "title": "Reproduce", "completion_evidence": "failing output"},
        {"id": "diagnose", "title": "Diagnose", "depends_on": ["reproduce"], "completion_evidence": "root cause"},
        {"id": "test", "title": "Write a test", "depends_on": ["reproduce"], "completion_evidence": "failing test"},
        {"id": "fix", "title": "Fix", "depends_on": ["diagnose", "test"], "completion_evidence": "patch"},
        {"id": "docs", "title": "Changelog", "completion_evidence": "entry"},
    ],
}


def _plan_part(state: PlanState) -> PlanState:
    """What a late result must leave as it was: all but the orphans, what every record moves, and the attempts
    cut off in flight (a late result closes its attempt's entry)."""
    return state._replace(orphans=(), last_seq=0, head=None, cut_off=())


class CutOff(NamedTuple):
    """The model's attempt cut off in flight by a replan: its version, attempt and the seq its start was
    acknowledged with."""

    version: int
    attempt: int
    started_seq: int


def _step_json(step: StepSpec) -> dict[str, Any]:
    return {
        "id": step.id,
        "title": step.title,
        "depends_on": list(step.depends_on),
        "completion_evidence": step.completion_evidence,
        "max_attempts": step.max_attempts,
    }


def _ancestors(plan: PlanSpec, step: str) -> set[str]:
    deps = {s.id: s.depends_on for s in plan.steps}
    seen: set[str] = set()
    todo = list(deps[step])
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(deps[current])
    return seen


class ReplayMachine(RuleBasedStateMachine):
    """A run driven at random, with a model of what replay must give back."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="plantrail-props-"))
        self.path = self.dir / "run.jsonl"
        self.ledger: Ledger
        self.before_replan: dict[int, PlanState] = {}  # version -> the state seen just before its replan
        self.fresh = 0
        # The workers' side: each step's attempt in flight (as its start was acknowledged), and the attempts
        # replans cut off in flight whose workers have not reported; late completions known to be their
        # attempt's own (their seq -> the step and the version they were made under).
        self.running: dict[str, CutOff] = {}
        self.cut: dict[str, list[CutOff]] = {}
        self.own_late: dict[int, tuple[str, int]] = {}

    @initialize()
    def create(self) -> None:
        self.ledger = Ledger.create(self.path, BASE, fsync="none", nonce="0" * 32, clock=Clock())

    def teardown(self) -> None:
        if hasattr(self, "ledger"):
            self.ledger.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def state(self) -> PlanState:
        return self.ledger.state

    def _new_id(self) -> str:
        self.fresh += 1
        return f"new-{self.fresh}"

    # ----------------------------------------------------------- rules that apply to the plan

    @precondition(lambda self: bool(ready_steps(self.state)))
    @rule(pick=st.integers(min_value=0, max_value=9))
    def start(self, pick: int) -> None:
        ready = ready_steps(self.state)
        self._start(ready[pick % len(ready)])

    def _start(self, step: str) -> int:
        """Start ``step``, keeping what its acknowledgement says; the seq a result names the attempt by."""
        ack = self.ledger.start(step)
        assert ack.orphan is None
        answer = self.ledger.acknowledgement(ack)
        assert answer["started_seq"] == ack.seq
        self.running[step] = CutOff(self.state.version, answer["attempt"], ack.seq)
        return ack.seq

    @precondition(lambda self: bool(ready_steps(self.state)))
    @rule(pick=st.integers(min_value=0, max_value=9))
    def do_a_step(self, pick: int) -> None:
        ready = ready_steps(self.state)
        step = ready[pick % len(ready)]
        started = self._start(step)
        assert self.ledger.complete(step, [f"{step} evidence"], started_seq=started).orphan is None
        del self.running[step]

    @precondition(lambda self: bool(ready_steps(self.state)))
    @rule(pick=st.integers(min_value=0, max_value=9))
    def fail_and_retry(self, pick: int) -> None:
        ready = ready_steps(self.state)
        step = ready[pick % len(ready)]
        started = self._start(step)
        self.ledger.fail(step, f"{step}: tool timed out", started_seq=started)
        del self.running[step]
        if step in ready_steps(self.state):
            self._start(step)

    @precondition(lambda self: bool(in_doubt(self.state)))
    @rule(pick=st.integers(min_value=0, max_value=9), kind=st.sampled_from(["complete", "fail", "block"]))
    def result(self, pick: int, kind: str) -> None:
        running = in_doubt(self.state)
        step = running[pick % len(running)].id
        finished = self.state.finished
        before = self.state
        worker = self.running.pop(step, None)  # None: its worker reported once already, after the run finished
        fence = {} if worker is None else {"started_seq": worker.started_seq}
        if kind == "complete":
            ack = self.ledger.complete(step, [f"{step} evidence"], **fence)
        elif kind == "fail":
            ack = self.ledger.fail(step, f"{step} error", **fence)
        else:
            ack = self.ledger.block(step, f"{step} reason", **fence)
        if worker is None and self.cut.get(step):  # named nothing, and a cut-off attempt could be its own too
            assert ack.orphan == "AMBIGUOUS_ATTEMPT"
        else:
            assert ack.orphan == ("RUN_FINISHED" if finished else None)
        if finished:
            assert _plan_part(self.state) == _plan_part(before)

    @precondition(lambda self: not self.state.finished)
    @rule(pick=st.integers(min_value=0, max_value=9), passed=st.booleans())
    def verify_criterion(self, pick: int, passed: bool) -> None:
        ids = list(self.state.criteria)
        self.ledger.verify_criterion(ids[pick % len(ids)], passed, "suite output")

    @precondition(lambda self: not self.state.finished)
    @rule(data=st.data())
    def replan_whole_draft(self, data: st.DataObject) -> None:
        assert self.state.plan is not None
        steps = [_step_json(s) for s in self.state.plan.steps]
        for step in steps:
            change = data.draw(st.sampled_from(["keep", "keep", "title", "evidence", "budget"]))
            if change == "title":
                step["title"] += "'"
            elif change == "evidence":
                step["completion_evidence"] += " (current revision)"
            elif change == "budget":
                step["max_attempts"] += 1
        if len(steps) > 1 and data.draw(st.booleans()):
            gone = steps.pop(data.draw(st.integers(0, len(steps) - 1)))["id"]
            for step in steps:
                step["depends_on"] = [d for d in step["depends_on"] if d != gone]
        if data.draw(st.booleans()):
            deps = data.draw(st.lists(st.sampled_from([s["id"] for s in steps]), max_size=2, unique=True))
            steps.append({"id": self._new_id(), "title": "Added", "depends_on": deps, "completion_evidence": "out"})
        criteria = [{"id": c.id, "description": c.description} for c in self.state.plan.acceptance_criteria]
        if data.draw(st.booleans()):
            criteria[0]["description"] += " and logout"
        self._replan({"acceptance_criteria": criteria, "steps": steps}, None)

    @precondition(lambda self: not self.state.finished)
    @rule(data=st.data())
    def replan_patch(self, data: st.DataObject) -> None:
        assert self.state.plan is not None
        plan = self.state.plan
        leaves = [s.id for s in plan.steps if not any(s.id in t.depends_on for t in plan.steps)]
        kinds = ["replace_step", "add_step", "replace_criterion"] + (["remove_step"] if len(plan.steps) > 1 else [])
        kind = data.draw(st.sampled_from(kinds))
        if kind == "replace_step":
            old = data.draw(st.sampled_from(plan.steps))
            op: dict[str, Any] = {"op": kind, "step_id": old.id, "step": _step_json(old) | {"title": old.title + "!"}}
        elif kind == "add_step":
            deps = data.draw(st.lists(st.sampled_from([s.id for s in plan.steps]), max_size=2, unique=True))
            op = {
                "op": kind,
                "step": {"id": self._new_id(), "title": "Added", "depends_on": deps, "completion_evidence": "out"},
            }
        elif kind == "remove_step":
            op = {"op": kind, "step_id": data.draw(st.sampled_from(leaves))}
        else:
            old_criterion = data.draw(st.sampled_from(plan.acceptance_criteria))
            op = {
                "op": kind,
                "criterion_id": old_criterion.id,
                "criterion": {"id": old_criterion.id, "description": old_criterion.description + "!"},
            }
        self._replan(None, {"base_version": self.state.version, "operations": [op]})

    def _replan(self, plan: dict[str, Any] | None, patch: dict[str, Any] | None) -> None:
        before = self.state
        self.before_replan[before.version] = before
        self.ledger.replan("agent_revision", "a random revision", plan=plan, patch=patch, causes=[before.last_seq])
        for step, attempt in self.running.items():  # a replan supersedes every step in progress
            self.cut.setdefault(step, []).append(attempt)
        self.running.clear()
        self._check_reconcile(before, self.state)
        assert self.state.adopted is not None
        changes = self.state.adopted.changes
        assert changes is not None
        event("replan kept completed work" if changes.kept else "replan kept no completed work")
        if any(c.cause == "upstream_invalidated" for c in changes.reset):
            event("replan invalidated work by lineage")

    @staticmethod
    def _check_reconcile(before: PlanState, after: PlanState) -> None:
        """Kept work kept its contract and lineage; lost work says why; verdicts stand only over intact work."""
        assert before.plan is not None and after.plan is not None
        assert after.adopted is not None
        changes = after.adopted.changes
        assert changes is not None
        old_specs = {s.id: s for s in before.plan.steps}
        new_specs = {s.id: s for s in after.plan.steps}
        reset = {c.step: c for c in changes.reset}
        for kept in changes.kept:
            assert before.steps[kept].status == "completed"
            assert old_specs[kept].contract() == new_specs[kept].contract()
            assert set(new_specs[kept].depends_on) <= set(changes.kept)
            assert after.steps[kept] == before.steps[kept]._replace(
                max_attempts=new_specs[kept].max_attempts, reset=None, invalidated_by=None
            )
        for step in new_specs:
            was = before.steps.get(step)
            if was is not None and was.status == "completed" and step not in changes.kept:
                change = reset[step]
                assert change.cause in ("contract_changed", "upstream_invalidated")
                if change.cause == "upstream_invalidated":
                    assert change.upstream in _ancestors(after.plan, step)
                    assert reset[change.upstream].cause == "contract_changed"
        lost = any(c.was == "completed" for c in (*changes.reset, *changes.removed))
        for criterion in changes.criteria_kept:
            assert after.criteria[criterion] == before.criteria[criterion]
            assert not lost or before.criteria[criterion].status == "unverified"

    # ----------------------------------------------------------- late results

    @precondition(lambda self: self.state.version > 1)
    @rule(data=st.data(), kind=st.sampled_from(["complete", "fail", "block"]))
    def late_result_for_a_superseded_version(self, data: st.DataObject, kind: str) -> None:
        version = data.draw(st.integers(1, self.state.version - 1))
        superseded = self.before_replan[
            version
        ].plan  # the plan of a version is the one in force just before its replan
        assert superseded is not None
        step = data.draw(st.sampled_from(superseded.steps)).id
        cut = [c for c in self.cut.get(step, ()) if c.version == version]
        seq = self._late(kind, step, "SUPERSEDED_VERSION", plan_version=version)
        if cut:  # the one attempt of that version cut off in flight: this result is its own, and closes it
            self._closed(step, cut[0], seq, kind)

    @precondition(lambda self: any(s.attempt > 1 for s in self.state.steps.values_in_order()))
    @rule(data=st.data(), kind=st.sampled_from(["complete", "fail", "block"]))
    def late_result_for_a_stale_attempt(self, data: st.DataObject, kind: str) -> None:
        retried = [s for s in self.state.steps.values_in_order() if s.attempt > 1]
        step = data.draw(st.sampled_from(retried))
        attempt = data.draw(st.integers(1, step.attempt - 1))
        self._late(kind, step.id, "STALE_ATTEMPT", attempt=attempt, plan_version=self.state.version)

    @precondition(lambda self: any(self.cut.values()))
    @rule(data=st.data(), kind=st.sampled_from(["complete", "fail", "block"]), named=st.booleans())
    def cut_off_worker_reports(self, data: st.DataObject, kind: str, named: bool) -> None:
        """A worker whose attempt a replan cut off reports, naming its start or nothing: named, or the one
        attempt it can be, it lands as that attempt's (closing it); else it is kept as AMBIGUOUS_ATTEMPT."""
        step = data.draw(st.sampled_from(sorted(s for s, cut in self.cut.items() if cut)))
        attempt = data.draw(st.sampled_from(self.cut[step]))
        current = self.state.steps.get(step)
        candidates = len(self.cut[step]) + (current is not None and current.attempt > 0)
        if named or candidates == 1:
            fence = {"started_seq": attempt.started_seq} if named else {}
            seq = self._late(kind, step, "SUPERSEDED_VERSION", **fence)
            assert self.state.orphans[-1][3:5] == (attempt.version, attempt.attempt) or not named
            self._closed(step, attempt if named else self.cut[step][0], seq, kind)
        else:
            self._late(kind, step, "AMBIGUOUS_ATTEMPT")
            assert self.state.orphans[-1][3:5] == (self.state.version, 0)
            event("late result: ambiguous")

    def _closed(self, step: str, attempt: CutOff, seq: int, kind: str) -> None:
        """The model's cut-off ``attempt`` of ``step`` got its result, at ``seq``."""
        orphan = self.state.orphans[-1]
        assert (orphan.seq, orphan.plan_version, orphan.attempt) == (seq, attempt.version, attempt.attempt)
        self.cut[step].remove(attempt)
        if kind == "complete":
            self.own_late[seq] = (step, attempt.version)

    @precondition(lambda self: bool(self.state.orphans))
    @rule(data=st.data())
    def adopt_a_late_result(self, data: st.DataObject) -> None:
        """adopt takes a late completion into the plan exactly when it is its attempt's own, its step pending
        with its dependencies completed, and the step's contract the one of its version; else ADOPT_REFUSED and
        nothing is written."""
        orphan = data.draw(st.sampled_from(self.state.orphans))
        before, size = self.state, self.path.stat().st_size
        assert before.plan is not None
        known = self.own_late.get(orphan.seq)
        now = {s.id: s for s in before.plan.steps}.get(orphan.step)
        step = before.steps.get(orphan.step)
        then = None if known is None else {s.id: s for s in self._plan_of(known[1]).steps}.get(orphan.step)
        expected = (
            known is not None
            and orphan.adopted is None
            and not before.finished
            and now is not None
            and step is not None
            and step.status == "pending"
            and then is not None
            and then.contract() == now.contract()
            and all(before.steps[d].status == "completed" for d in now.depends_on)
        )
        try:
            ack = self.ledger.adopt(orphan.seq)
        except PlantrailError as refused:
            assert not expected, refused
            assert refused.code in ("ADOPT_REFUSED", "RUN_FINISHED")
            assert self.path.stat().st_size == size and self.state == before
            return
        assert expected
        adopted = self.state.steps[orphan.step]
        assert (adopted.status, adopted.attempt, adopted.evidence) == ("completed", step.attempt + 1, orphan.evidence)
        assert self.state.orphans[before.orphans.index(orphan)].adopted == ack.seq
        event("late result adopted")

    def _plan_of(self, version: int) -> PlanSpec:
        """The plan of ``version`` (the active one, or the one in force just before its replan)."""
        state = self.state if version == self.state.version else self.before_replan[version]
        assert state.plan is not None
        return state.plan

    def _late(self, kind: str, step: str, why: str, **fence: int) -> int:
        before = self.state
        if kind == "complete":
            ack = self.ledger.complete(step, ["late evidence"], **fence)
        elif kind == "fail":
            ack = self.ledger.fail(step, "late error", **fence)
        else:
            ack = self.ledger.block(step, "late reason", **fence)
        assert ack.orphan == why
        assert _plan_part(self.state) == _plan_part(before)
        assert self.state.orphans[-1].seq == ack.seq
        event(f"late result: {why}")
        return ack.seq

    # ----------------------------------------------------------- finishing

    @precondition(lambda self: not self.state.finished)
    @rule()
    def pause(self) -> None:
        self.ledger.finish("paused", "the user went for lunch")

    @precondition(lambda self: not self.state.finished)
    @rule(outcome=st.sampled_from(["failed", "cancelled"]), now=st.integers(0, 3))
    def give_up(self, outcome: str, now: int) -> None:
        if now == 0:  # rarely: most runs should go on
            self.ledger.finish(outcome, "the user stopped the run")  # type: ignore[arg-type]

    @rule()
    def restart_the_writer(self) -> None:
        seen = self.state
        self.ledger.close()
        self.ledger = Ledger.open(self.path, clock=Clock())
        assert self.state == seen

    # ----------------------------------------------------------- invariants

    @invariant()
    def replay_gives_back_what_the_writer_saw(self) -> None:
        records = read_records(self.path)
        state = fold(records)
        assert state == self.state
        assert state_hash(fold(records)) == state_hash(state)
        late = {o.seq for o in state.orphans if o.adopted is None}  # an adopted one reached the plan by adopt
        assert _plan_part(fold(r for r in records if r.seq not in late)) == _plan_part(state)
        for version, seen in self.before_replan.items():
            assert replay_version(records, version).state == seen
        report = verify_log(self.path)
        assert (report.orphans, report.state_hash) == (len(state.orphans), state_hash(state))


ReplayMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestReplayMachine = ReplayMachine.TestCase
