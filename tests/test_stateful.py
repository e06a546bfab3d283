"""A hypothesis state machine drives the real ledger with random commands, legal and illegal, beside a plain
model of the rules written independently of ``ledger.decide``; it runs against every store (the JSONL file
and PostgreSQL), so a behaviour is claimed once and must hold in both."""

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
from plantrail.projections.canonical import canonical_bytes
from plantrail.projections.state import fold
from tests.helpers.stores import JsonlTarget, PostgresTarget, postgres_url, unique_run

STEPS = {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c"), "e": (), "f": ()}
ATTEMPTS = {"a": 2, "b": 1, "c": 3, "d": 2, "e": 1, "f": 1}
CRITERIA = ("works", "documented")
PLAN = {
    "goal": "exercise the rules",
    "acceptance_criteria": [{"id": c, "description": c} for c in CRITERIA],
    "policy": {"max_in_progress": 2},
    "steps": [
        {"id": s, "title": s, "depends_on": list(d), "completion_evidence": "e", "max_attempts": ATTEMPTS[s]}
        for s, d in STEPS.items()
    ],
}
LIMIT = 2
step_ids = st.sampled_from([*STEPS, "ghost"])
texts = st.sampled_from(["ok", "exit 1", "saw 401", "  ", ""])
# Final outcomes end a run (everything after is refused), so they are drawn rarely; paused is not final.
outcomes = st.sampled_from(["paused", "paused", "paused", "paused", "complete", "complete", "failed", "cancelled"])


@dataclass
class Model:
    """The rules as plainly as they can be written: statuses, attempts, verdicts and the outcome."""

    status: dict[str, str] = field(default_factory=lambda: dict.fromkeys(STEPS, "pending"))
    attempt: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STEPS, 0))
    verdict: dict[str, str] = field(default_factory=lambda: dict.fromkeys(CRITERIA, "unverified"))
    outcome: str | None = None
    orphans: int = 0

    def ready(self) -> list[str]:
        return [
            s
            for s, deps in STEPS.items()
            if self.status[s] == "pending" and all(self.status[d] == "completed" for d in deps)
        ]

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
        self.status[step], self.attempt[step] = "in_progress", self.attempt[step] + 1
        if self.outcome == "paused":
            self.outcome = None
        return True

    def result(self, kind: str, step: str, text: str) -> bool:
        if not text.strip() or step not in STEPS:
            return False
        if self.status[step] != "in_progress":
            return False
        if self.final:
            self.orphans += 1
            return True
        if kind == "complete":
            self.status[step] = "completed"
        elif kind == "block":
            self.status[step] = "blocked"
        else:
            self.status[step] = "pending" if self.attempt[step] < ATTEMPTS[step] else "blocked"
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
    @rule(data=st.data(), kind=st.sampled_from(["complete"] * 6 + ["fail", "block"]))
    def report_a_running_step(self, data: st.DataObject, kind: str) -> None:
        self.result(kind, data.draw(st.sampled_from(self.model.running())), "ok")

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
            self.result(data.draw(kinds), data.draw(step_ids), data.draw(texts))
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

    def result(self, kind: str, step: str, text: str) -> None:
        expected = self.model.result(kind, step, text)
        calls = {
            "complete": lambda: self.ledger.complete(step, [text]),
            "block": lambda: self.ledger.block(step, text),
            "fail": lambda: self.ledger.fail(step, text),
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
