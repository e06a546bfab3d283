"""A hypothesis state machine drives the real ledger with random commands, legal and illegal, beside a plain
model of the rules written independently of ``ledger.decide``; it runs against every store (the JSONL file
and PostgreSQL), so a behaviour is claimed once and must hold in both.

The plan uses the v2 contract: step ``e`` has a typed check (a reproduction that must exit 1), ``f`` ranks
first, and the stop policy's no-progress rule (the same failure twice in a row stops new starts) applies."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from plantrail.ledger.api import Ledger
from plantrail.ledger.errors import PlantrailError
from plantrail.ledger.evidence import Observation, Report
from plantrail.projections.canonical import canonical_bytes
from plantrail.projections.state import fold
from plantrail.projections.stop import stop_decision
from plantrail.projections.views import ready_steps
from tests.helpers.stores import JsonlTarget, PostgresTarget, postgres_url, unique_run

STEPS = {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c"), "e": (), "f": ()}
ATTEMPTS = {"a": 2, "b": 1, "c": 3, "d": 2, "e": 1, "f": 1}
CRITERIA = ("works", "documented")
PRIORITY = {"f": 5}
CHECKED = "e"  # its check: command_exit, expected exit code 1
PLAN = {
    "goal": "exercise the rules",
    "acceptance_criteria": [{"id": c, "description": c} for c in CRITERIA],
    "policy": {"max_in_progress": 2},
    "steps": [
        {"id": s, "title": s, "depends_on": list(d), "completion_evidence": "e", "max_attempts": ATTEMPTS[s]}
        | ({"priority": PRIORITY[s]} if s in PRIORITY else {})
        | (
            {"checks": [{"id": "fails", "kind": "command_exit", "command": "t", "expected_exit_code": 1}]}
            if s == CHECKED
            else {}
        )
        for s, d in STEPS.items()
    ],
}
LIMIT = 2
step_ids = st.sampled_from([*STEPS, "ghost"])
texts = st.sampled_from(["ok", "exit 1", "saw 401", "  ", ""])
# Final outcomes end a run (everything after is refused), so they are drawn rarely; paused is not final.
outcomes = st.sampled_from(["paused", "paused", "paused", "paused", "complete", "complete", "failed", "cancelled"])
# An evidence record: none, or one observation of the check with an exit code, maybe truncated.
reports = st.one_of(
    st.none(),
    st.builds(
        lambda code, truncated: Report(
            exit_code=code, observations=(Observation("fails", exit_code=code, truncated=truncated),)
        ),
        st.sampled_from([0, 1, 2]),
        st.booleans(),
    ),
)


def check_met(report: Report | None) -> bool:
    """The model's reading of step e's check: an observation of exit 1, not truncated."""
    if report is None:
        return False
    seen = [o for o in report.observations if o.check == "fails"]
    return bool(seen) and seen[-1].exit_code == 1 and not seen[-1].truncated and not report.truncated


@dataclass
class Model:
    """The rules as plainly as they can be written: statuses, attempts, verdicts and the outcome."""

    status: dict[str, str] = field(default_factory=lambda: dict.fromkeys(STEPS, "pending"))
    attempt: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STEPS, 0))
    verdict: dict[str, str] = field(default_factory=lambda: dict.fromkeys(CRITERIA, "unverified"))
    outcome: str | None = None
    orphans: int = 0
    last_failure: tuple[object, ...] | None = None
    repeats: int = 0

    def ready(self) -> list[str]:
        """Ready steps, highest priority first, then by id (the plan's ids are already a valid order)."""
        ready = [
            s
            for s, deps in STEPS.items()
            if self.status[s] == "pending" and all(self.status[d] == "completed" for d in deps)
        ]
        return sorted(ready, key=lambda s: (-PRIORITY.get(s, 0), s))

    @property
    def no_progress(self) -> bool:
        """The stop policy's rule 6: the same failure twice in a row (unless everything is already done)."""
        done = all(v == "completed" for v in self.status.values()) and all(v == "passed" for v in self.verdict.values())
        return self.repeats >= 2 and not done

    def running(self) -> list[str]:
        return [s for s in STEPS if self.status[s] == "in_progress"]

    @property
    def final(self) -> bool:
        return self.outcome in ("complete", "failed", "cancelled")

    def start(self, step: str) -> bool:
        running = sum(s == "in_progress" for s in self.status.values())
        if self.final or step not in STEPS or self.status[step] != "pending" or running >= LIMIT:
            return False
        if any(self.status[d] != "completed" for d in STEPS[step]):
            return False
        if self.no_progress:
            return False
        self.status[step], self.attempt[step] = "in_progress", self.attempt[step] + 1
        if self.outcome == "paused":
            self.outcome = None
        return True

    def result(self, kind: str, step: str, text: str, report: Report | None = None) -> bool:
        if not text.strip() or step not in STEPS:
            return False
        if self.status[step] != "in_progress":
            return False
        if self.final:
            self.orphans += 1
            return True
        if kind == "complete":
            if step == CHECKED and not check_met(report):
                return False
            self.status[step] = "completed"
            self.last_failure, self.repeats = None, 0
        elif kind == "block":
            self.status[step] = "blocked"
        else:
            self.status[step] = "pending" if self.attempt[step] < ATTEMPTS[step] else "blocked"
            failing = [] if report is None or step != CHECKED or check_met(report) else ["fails"]
            seen = (step, tuple(failing), None if report is None else report.exit_code, text.strip().lower())
            self.repeats = self.repeats + 1 if seen == self.last_failure else 1
            self.last_failure = seen
        return True

    def verify(self, criterion: str, passed: bool) -> bool:
        if self.final:
            return False
        self.verdict[criterion] = "passed" if passed else "failed"
        return True

    def finish(self, outcome: str) -> bool:
        if self.final:
            return False
        if outcome == "complete" and (
            any(s != "completed" for s in self.status.values()) or any(v != "passed" for v in self.verdict.values())
        ):
            return False
        self.outcome = outcome
        return True


class LedgerMachine(RuleBasedStateMachine):
    """Random command sequences against a real log file, checked against the model after every step."""

    url: ClassVar[str | None] = None  # the PostgreSQL server, for the database store's machine

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.target = JsonlTarget(self.dir) if self.url is None else PostgresTarget(self.url)
        self.log = self.target.location(unique_run())
        self.ledger = Ledger.create(self.log, PLAN, fsync="none")
        self.model = Model()

    def teardown(self) -> None:
        self.ledger.close()
        shutil.rmtree(self.dir)

    def _apply(self, expected: bool, action: object) -> None:
        before = self.target.lines(self.log)
        try:
            action()  # type: ignore[operator]
        except PlantrailError:
            assert not expected, "the ledger refused what the model accepts"
            assert self.target.lines(self.log) == before, "a refused command changed the log"
            return
        assert expected, "the ledger accepted what the model refuses"

    # Progress rules keep runs long enough to reach deep states; the mixed rule adds everything else,
    # legal or not. (Hypothesis picks rules uniformly, so noise is one rule, not seven.)

    @precondition(lambda self: self.model.ready())
    @rule(data=st.data())
    def start_a_ready_step(self, data: st.DataObject) -> None:
        self.start(data.draw(st.sampled_from(self.model.ready())))

    @precondition(lambda self: self.model.running())
    @rule(data=st.data(), kind=st.sampled_from(["complete"] * 6 + ["fail", "block"]), report=reports)
    def report_a_running_step(self, data: st.DataObject, kind: str, report: Report | None) -> None:
        self.result(kind, data.draw(st.sampled_from(self.model.running())), "ok", report)

    @precondition(lambda self: self.model.ready() == [] and self.model.running() == [] and not self.model.final)
    @rule(passed=st.lists(st.booleans(), min_size=len(CRITERIA), max_size=len(CRITERIA)))
    def verify_every_criterion_then_finish_complete(self, passed: list[bool]) -> None:
        for criterion, verdict in zip(CRITERIA, passed, strict=True):
            self.verify(criterion, verdict)
        self.finish("complete")

    @rule(data=st.data(), kind=st.sampled_from(["start", "result", "verify", "finish", "stale", "retry", "reopen"]))
    def anything_else(self, data: st.DataObject, kind: str) -> None:
        if kind == "start":
            self.start(data.draw(step_ids))
        elif kind == "result":
            kinds = st.sampled_from(["complete", "block", "fail"])
            self.result(data.draw(kinds), data.draw(step_ids), data.draw(texts), data.draw(reports))
        elif kind == "verify":
            self.verify(data.draw(st.sampled_from(CRITERIA)), data.draw(st.booleans()))
        elif kind == "finish":
            self.finish(data.draw(outcomes))
        elif kind == "stale":
            stale = self.ledger.state.last_seq - 1
            self._apply(False, lambda: self.ledger.finish("paused", "x", expected_seq=stale))
        elif kind == "retry":
            self.keyed_retry_writes_once(data.draw(step_ids))
        else:
            self.ledger.close()
            self.ledger = Ledger.open(self.log, fsync="none")

    def start(self, step: str) -> None:
        expected = self.model.start(step)
        self._apply(expected, lambda: self.ledger.start(step))

    def result(self, kind: str, step: str, text: str, report: Report | None = None) -> None:
        expected = self.model.result(kind, step, text, report)
        calls = {
            "complete": lambda: self.ledger.complete(step, [text], report=report),
            "block": lambda: self.ledger.block(step, text, report=report),
            "fail": lambda: self.ledger.fail(step, text, report=report),
        }
        self._apply(expected, calls[kind])

    def verify(self, criterion: str, passed: bool) -> None:
        expected = self.model.verify(criterion, passed)
        self._apply(expected, lambda: self.ledger.verify_criterion(criterion, passed, "checked"))

    def finish(self, outcome: str) -> None:
        expected = self.model.finish(outcome)
        self._apply(expected, lambda: self.ledger.finish(outcome, "because"))  # type: ignore[arg-type]

    def keyed_retry_writes_once(self, step: str) -> None:
        expected = self.model.start(step)
        key = f"retry-{self.ledger.state.last_seq}-{step}"
        self._apply(expected, lambda: self.ledger.start(step, idempotency_key=key))
        if expected:
            before = self.target.lines(self.log)
            assert self.ledger.start(step, idempotency_key=key).duplicate
            assert self.target.lines(self.log) == before

    @invariant()
    def state_matches_the_model(self) -> None:
        state = self.ledger.state
        assert {s.id: s.status for s in state.steps.values()} == self.model.status
        assert {s.id: s.attempt for s in state.steps.values()} == self.model.attempt
        assert {c.id: c.status for c in state.criteria.values()} == self.model.verdict
        assert (state.outcome, len(state.orphans)) == (self.model.outcome, self.model.orphans)

    @invariant()
    def next_follows_the_model(self) -> None:
        """ready_steps is the model's ready list in priority order; the stop policy stops for no progress
        exactly when the model says so."""
        assert ready_steps(self.ledger.state) == ([] if self.model.final else self.model.ready())
        decision = stop_decision(self.ledger.state)
        assert (decision.rule == "no_progress") == (self.model.no_progress and not self.model.final)

    @invariant()
    def policy_and_evidence_hold(self) -> None:
        steps = list(self.ledger.state.steps.values())
        assert sum(s.status == "in_progress" for s in steps) <= LIMIT
        assert all(s.evidence for s in steps if s.status == "completed")

    @invariant()
    def the_file_folds_to_the_state_kept_step_by_step(self) -> None:
        records = self.target.records(self.log)
        assert canonical_bytes(fold(records)) == canonical_bytes(self.ledger.state)
        cut = len(records) // 2
        assert fold(records[cut:], fold(records[:cut])) == fold(records)


TestLedgerMachine = LedgerMachine.TestCase
TestLedgerMachine.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)


class PostgresLedgerMachine(LedgerMachine):
    """The same machine against a run in PostgreSQL."""


class TestPostgresLedgerMachine(PostgresLedgerMachine.TestCase):  # type: ignore[name-defined,misc]
    """The machine on the database store (fewer examples: each command is a round trip to the server)."""

    settings = settings(max_examples=40, stateful_step_count=40, deadline=None)

    def setUp(self) -> None:
        PostgresLedgerMachine.url = postgres_url()  # skips, or fails on CI, without a server
