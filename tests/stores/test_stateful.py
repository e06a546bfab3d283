"""A hypothesis state machine drives the real ledger with random commands, legal and illegal, beside a plain
model of the rules written independently of ``ledger.decide``; it runs against every store (the JSONL file
and PostgreSQL), so a behaviour is claimed once and must hold in both.

The plan uses the v2 contract: step ``e`` has a typed check (a reproduction that must exit 1), ``f`` ranks
first, ``a`` declares a timeout (its attempts' lease), the run has a turn budget, and the stop policy applies in
its documented order (finished, complete, no progress: the same failure twice in a row, the turn budget spent).
Heartbeats and abandons are drawn beside the results, and the partial and budget_exhausted finishes beside v1's
outcomes. Every step declares its writes inside the task's scope (``b`` and ``c``, ``e`` and ``f`` overlap, so
they never run at once; ``d`` is read-only), ``f`` allows only the Edit tool, and ``c`` needs an approval: results
report changed paths and tools, some outside the scope (recorded as a blocked attempt that pauses the run), and
approvals are requested, granted (widening the scope, which can end the pause) or denied (a pause for good: the
machine never replans). Side effects are requested and committed under a few keys, by running and stale
attempts (``e``'s effects need an approval): the model keeps one effect per key, requested, in doubt, superseded
or committed. The model judges all of it from its own tables, not from ``ledger.scope`` or ``ledger.effects``.

Step ``a`` names a repair step, ``r`` (``on_failure``): after a failure with attempts left ``a`` waits until ``r``
completes, ``r`` is ready only while ``a`` waits for it (an idle ``r`` holds up no completion), a second failure
runs ``r`` again (its earlier runs not charged to it), and a repair's completion ends no failure streak."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.stores.values import Ack
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Trace
from plantrail.ledger.vocabulary.evidence import Observation, Report, Usage
from plantrail.projections.canonical import canonical_bytes
from plantrail.projections.effects import effects_view
from plantrail.projections.state import fold
from plantrail.projections.stop import stop_decision
from plantrail.projections.views import ready_steps
from tests.helpers.stores import JsonlTarget, PostgresTarget, postgres_url, unique_run
from tests.strategies import TRACES

#: The trace context a keyed retry is sent in: another than its original's, and still the same command.
RETRY_TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

STEPS = {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c"), "e": (), "f": (), "r": ()}
ATTEMPTS = {"a": 3, "b": 1, "c": 3, "d": 2, "e": 1, "f": 1, "r": 2}
REPAIR = ("a", "r")  # a's on_failure: r repairs it
CRITERIA = ("works", "documented")
PRIORITY = {"f": 5}
CHECKED = "e"  # its check: command_exit, expected exit code 1
WRITE_GLOBS = {
    "a": ["src/a.py"],
    "b": ["src/**"],
    "c": ["src/c.py"],
    "d": [],
    "e": ["docs/e.md"],
    "f": ["docs/**"],
    "r": ["src/a.py"],
}
PATHS = ("src/a.py", "src/c.py", "docs/e.md", "docs/f.md", "package.json")
#: The model's own reading of WRITE_GLOBS: the paths of PATHS each step may change.
WRITES = {
    "a": {"src/a.py"},
    "b": {"src/a.py", "src/c.py"},
    "c": {"src/c.py"},
    "d": set(),
    "e": {"docs/e.md"},
    "f": {"docs/e.md", "docs/f.md"},
    "r": {"src/a.py"},
}
#: Steps whose writes overlap.
CONFLICTS = {frozenset("ab"), frozenset("bc"), frozenset("ef"), frozenset("ar"), frozenset("br")}
TOOLS = {"f": {"Edit"}}  # allowed_tools (the others allow any tool)
APPROVED_ONLY = "c"  # requires_approval
TIMEOUT = {"a": 60.0}  # its attempts carry a lease from their start
EFFECTS_GATED = "e"  # effects_require_approval
EFFECT_KEYS = ("k1", "k2", "k3")
TIGHT_TURNS = 3
LOOSE_TURNS = 1000


def plan(max_turns: int) -> dict[str, object]:
    """The machine's plan, with a run turn budget (tight: the stop rules fire; loose: runs get deep)."""
    return {
        "goal": "exercise the rules",
        "scope": {"writes": ["src/**", "docs/**"]},
        "acceptance_criteria": [{"id": c, "description": c} for c in CRITERIA],
        "policy": {"max_in_progress": 2, "max_turns": max_turns, "allowed_partial": True},
        "steps": [
            {"id": s, "title": s, "depends_on": list(d), "completion_evidence": "e", "max_attempts": ATTEMPTS[s]}
            | {"writes": WRITE_GLOBS[s]}
            | ({"allowed_tools": sorted(TOOLS[s])} if s in TOOLS else {})
            | ({"requires_approval": True} if s == APPROVED_ONLY else {})
            | ({"effects_require_approval": True} if s == EFFECTS_GATED else {})
            | ({"priority": PRIORITY[s]} if s in PRIORITY else {})
            | ({"timeout_s": TIMEOUT[s]} if s in TIMEOUT else {})
            | ({"on_failure": REPAIR[1]} if s == REPAIR[0] else {})
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
outcomes = st.sampled_from(
    ["paused"] * 8 + ["complete", "complete", "failed", "cancelled", "partial", "budget_exhausted"]
)
# An evidence record: none, or one observation of the check with an exit code, maybe truncated, the turns the
# attempt spent, the paths it changed and the tools it used (most often none, so that runs progress).
changed = st.one_of(st.just(()), st.just(()), st.lists(st.sampled_from(PATHS), max_size=2).map(tuple))
used = st.one_of(st.just(()), st.just(()), st.lists(st.sampled_from(["Edit", "Bash"]), max_size=2).map(tuple))
reports = st.one_of(
    st.none(),
    st.builds(
        lambda code, truncated, turns, paths, tools: Report(
            exit_code=code,
            observations=(Observation("fails", exit_code=code, truncated=truncated),),
            usage=Usage(turns=turns),
            changed_paths=paths,
            tools=tools,
        ),
        st.sampled_from([0, 1, 2]),
        st.booleans(),
        st.sampled_from([0, 1, 2]),
        changed,
        used,
    ),
)
leases = st.sampled_from([None, None, 30.0])


def check_met(report: Report | None) -> bool:
    """The model's reading of step e's check: an observation of exit 1, not truncated."""
    if report is None:
        return False
    seen = [o for o in report.observations if o.check == "fails"]
    return bool(seen) and seen[-1].exit_code == 1 and not seen[-1].truncated and not report.truncated


@dataclass
class ModelEffect:
    """One side effect: the step, the attempt of its latest request, its target, whether that request was late,
    and whether it is committed."""

    step: str
    attempt: int
    target: str
    late: bool
    committed: bool = False


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
    turns: int = 0
    max_turns: int = LOOSE_TURNS
    abandoned: dict[str, list[int]] = field(default_factory=lambda: {s: [] for s in STEPS})
    lease: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(STEPS))
    approved: set[str] = field(default_factory=set)
    extra_writes: dict[str, set[str]] = field(default_factory=lambda: {s: set() for s in STEPS})
    extra_tools: dict[str, set[str]] = field(default_factory=lambda: {s: set() for s in STEPS})
    violation: tuple[str, tuple[str, ...], tuple[str, ...]] | None = None  # step, paths, tools
    denied: set[str] = field(default_factory=set)
    requests: dict[str, tuple[str, ...]] = field(default_factory=dict)  # pending request -> its steps
    effects: dict[str, ModelEffect] = field(default_factory=dict)  # key -> its latest request and its commit
    awaiting: bool = False  # the repaired step failed and waits for its repair step
    spent: int = 0  # the repair step's attempts in its earlier runs

    @property
    def idle(self) -> bool:
        """The repair step is pending and nothing waits for it: not ready, and no open work."""
        return self.status[REPAIR[1]] == "pending" and not self.awaiting

    def charged(self, step: str) -> int:
        """The attempts charged to the step's budget (the repair step's earlier runs are not)."""
        spent = self.spent if step == REPAIR[1] else 0
        return self.attempt[step] - spent - sum(1 for a in self.abandoned[step] if a > spent)

    def outside(self, step: str, report: Report | None) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """The changed paths and tools of ``report`` outside ``step``'s scope and grants (None: inside)."""
        if report is None:
            return None
        paths = tuple(p for p in dict.fromkeys(report.changed_paths) if p not in self.writes(step))
        allowed = TOOLS.get(step)
        tools = (
            ()
            if allowed is None
            else tuple(t for t in dict.fromkeys(report.tools) if t not in allowed | self.extra_tools[step])
        )
        return (paths, tools) if paths or tools else None

    def writes(self, step: str) -> set[str]:
        """The paths of PATHS ``step`` may change now: two steps' globs overlap exactly when these meet."""
        return WRITES[step] | self.extra_writes[step]

    def ready(self) -> list[str]:
        """Ready steps, highest priority first, then by id (the plan's ids are already a valid order)."""
        ready = [
            s
            for s, deps in STEPS.items()
            if self.status[s] == "pending" and all(self.status[d] == "completed" for d in deps)
        ]
        failed, repair = REPAIR
        ready = [s for s in ready if not (s == failed and self.awaiting) and not (s == repair and self.idle)]
        return sorted(ready, key=lambda s: (-PRIORITY.get(s, 0), s))

    @property
    def done(self) -> bool:
        steps_done = all(v == "completed" or (s == REPAIR[1] and self.idle) for s, v in self.status.items())
        return steps_done and all(v == "passed" for v in self.verdict.values())

    @property
    def no_progress(self) -> bool:
        """The stop policy's rule 6: the same failure twice in a row (unless everything is already done)."""
        return self.repeats >= 2 and not self.done

    def stop(self) -> tuple[str, str]:
        """The stop policy in its documented order, as (outcome, rule): a final outcome; a scope violation
        pauses; everything done is complete; a denial pauses; the same failure twice is failed; the turn
        budget spent is budget_exhausted; else continue."""
        if self.final:
            return str(self.outcome), "finished"
        if self.violation is not None:
            return "paused", "scope_violation"
        if self.done:
            return "complete", "checks_passed"
        if self.denied:
            return "paused", "approval_denied"
        if self.repeats >= 2:
            return "failed", "no_progress"
        if self.turns >= self.max_turns:
            return "budget_exhausted", "budget"
        return "continue", "continue"

    def running(self) -> list[str]:
        return [s for s in STEPS if self.status[s] == "in_progress"]

    @property
    def final(self) -> bool:
        return self.outcome in ("complete", "failed", "cancelled", "partial", "budget_exhausted")

    def start(self, step: str) -> bool:
        running = sum(s == "in_progress" for s in self.status.values())
        if self.final or step not in STEPS or self.status[step] != "pending" or running >= LIMIT:
            return False
        if any(self.status[d] != "completed" for d in STEPS[step]):
            return False
        if (step == REPAIR[0] and self.awaiting) or (step == REPAIR[1] and self.idle):
            return False
        if self.stop()[0] in ("failed", "budget_exhausted", "paused"):
            return False
        if step == APPROVED_ONLY and step not in self.approved:
            return False
        if any(self.writes(step) & self.writes(other) for other in self.running()):
            return False  # their write scopes overlap (a grant's writes widen a step's)
        self.status[step], self.attempt[step] = "in_progress", self.attempt[step] + 1
        self.lease[step] = TIMEOUT.get(step)
        if self.outcome == "paused":
            self.outcome = None
        return True

    def result(self, kind: str, step: str, text: str, report: Report | None = None) -> bool:
        if not text.strip() or step not in STEPS:
            return False
        if self.attempt[step] in self.abandoned[step] or (self.status[step] == "in_progress" and self.final):
            self.orphans += 1  # a late result: the gone worker's (STALE_ATTEMPT), or after the run finished
            self.spend(report)
            return True
        if self.status[step] != "in_progress":
            return False
        found = self.outside(step, report)
        if found is not None:  # recorded as the blocked attempt scope_violation; the run pauses
            self.spend(report)
            self.status[step] = "blocked"
            self.violation = (step, *found)
            return True
        if kind == "complete":
            if step == CHECKED and not check_met(report):
                return False
            self.spend(report)
            self.status[step] = "completed"
            if step == REPAIR[1] and self.awaiting:
                self.awaiting = False  # the repaired step may retry; its failure streak goes on
            else:
                self.last_failure, self.repeats = None, 0
        elif kind == "block":
            self.spend(report)
            self.status[step] = "blocked"
        else:
            self.spend(report)
            self.status[step] = "pending" if self.charged(step) < ATTEMPTS[step] else "blocked"
            if step == REPAIR[0] and self.status[step] == "pending":
                self.awaiting = True  # the failure calls the repair step: a completed one runs again
                if self.status[REPAIR[1]] == "completed":
                    self.status[REPAIR[1]], self.spent = "pending", self.attempt[REPAIR[1]]
            failing = [] if report is None or step != CHECKED or check_met(report) else ["fails"]
            paths = () if report is None else tuple(sorted(report.changed_paths))
            seen = (step, tuple(failing), None if report is None else report.exit_code, text.strip().lower(), paths)
            self.repeats = self.repeats + 1 if seen == self.last_failure else 1
            self.last_failure = seen
        return True

    def spend(self, report: Report | None) -> None:
        if report is not None and report.usage is not None:
            self.turns += report.usage.turns

    def live(self, step: str, stale: bool) -> bool:
        """Whether a heartbeat or abandon for the step's current attempt (or a stale one) applies."""
        return not self.final and step in STEPS and self.status[step] == "in_progress" and not stale

    def heartbeat(self, step: str, lease: float | None, stale: bool) -> bool:
        if not self.live(step, stale) or (lease is None and step not in TIMEOUT):
            return False
        self.lease[step] = TIMEOUT[step] if lease is None else lease
        return True

    def abandon(self, step: str, reason: str, stale: bool) -> bool:
        if not self.live(step, stale) or not reason.strip():
            return False
        self.status[step] = "pending"
        self.abandoned[step].append(self.attempt[step])
        self.lease[step] = None
        return True

    def late(self, text: str, report: Report | None) -> bool:
        """A gone worker's result, naming its abandoned attempt: kept on the orphan path whatever stands now."""
        if not text.strip():
            return False
        self.orphans += 1
        self.spend(report)
        return True

    def adopt(self, step: str) -> bool:
        """A gone worker's late completion taken in: its step pending, startable but for the focus limit and the
        stop policy (dependencies, the repair edge, approvals, no pause, no overlapping writes in progress), and
        without typed checks; the step completes as a new attempt."""
        if self.final or self.status[step] != "pending" or step == CHECKED:
            return False
        if any(self.status[d] != "completed" for d in STEPS[step]):
            return False
        if (step == REPAIR[0] and self.awaiting) or (step == REPAIR[1] and self.idle):
            return False
        if self.violation is not None or self.denied or (step == APPROVED_ONLY and step not in self.approved):
            return False
        if any(self.writes(step) & self.writes(other) for other in self.running()):
            return False
        self.status[step], self.attempt[step] = "completed", self.attempt[step] + 1
        if step == REPAIR[1] and self.awaiting:
            self.awaiting = False  # as a repair's completion: its failed step may retry; no streak ends
        else:
            self.last_failure, self.repeats = None, 0
        return True

    def request(self, request: str, steps: tuple[str, ...]) -> bool:
        if self.final:
            return False
        self.requests[request] = steps
        return True

    def decide(self, request: str, granted: bool, writes: tuple[str, ...], tools: tuple[str, ...]) -> bool:
        if self.final or request not in self.requests:
            return False
        steps = self.requests.pop(request)
        if not granted:
            self.denied |= set(steps)
            return True
        for step in steps:
            self.approved.add(step)
            self.extra_writes[step] |= set(writes)
            self.extra_tools[step] |= set(tools)
        if self.violation is not None and self.violation[0] in steps:
            step, paths, used_tools = self.violation
            allowed = TOOLS.get(step)
            tools_ok = allowed is None or set(used_tools) <= allowed | self.extra_tools[step]
            if set(paths) <= self.writes(step) and tools_ok:
                self.violation = None
                self.status[step] = "pending"
        return True

    def request_effect(self, step: str, key: str, target: str, attempt: int | None) -> bool:
        """A request of ``key`` by ``attempt`` (None: the current one): late for a stale attempt or a finished
        run; one key, one effect; a later attempt may ask again; ``d`` needs a granted approval."""
        if step not in STEPS:
            return False
        current = self.attempt[step]
        named = current if attempt is None else attempt
        stale = named != current or named in self.abandoned[step]
        late = stale or self.final
        known = self.effects.get(key)
        if known is not None and (
            known.step != step or known.target != target or known.committed or late or known.attempt == named
        ):
            return False
        if stale:
            if not (1 <= named < current or named in self.abandoned[step]):
                return False
        elif self.status[step] != "in_progress":
            return False
        if not late and step == EFFECTS_GATED and step not in self.approved:
            return False
        self.effects[key] = ModelEffect(step, named, target, late)
        return True

    def commit_effect(self, step: str, key: str, attempt: int | None) -> bool:
        """A commit of ``key``'s request (its attempt by default), late or not: the effect happened."""
        known = self.effects.get(key)
        if known is None or known.committed or known.step != step:
            return False
        if attempt is not None and attempt != known.attempt:
            return False
        known.committed = True
        return True

    def standing(self, effect: ModelEffect) -> str:
        """committed; in_doubt (its request is the step's current attempt's); else superseded."""
        if effect.committed:
            return "committed"
        current = effect.attempt == self.attempt[effect.step] and effect.attempt not in self.abandoned[effect.step]
        return "in_doubt" if current and not effect.late else "superseded"

    def verify(self, criterion: str, passed: bool) -> bool:
        if self.final:
            return False
        self.verdict[criterion] = "passed" if passed else "failed"
        return True

    def finish(self, outcome: str) -> bool:
        if self.final:
            return False
        if outcome == "complete" and not self.done:
            return False
        if outcome in ("partial", "budget_exhausted") and self.done:
            return False  # nothing is left to do: it is complete
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
        self.model = Model()
        self.tight = False
        self.asked = 0  # approval requests so far (their ids)
        self.widths: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # request -> writes, tools
        self.payloads: dict[str, bytes] = {}  # digest -> bytes: what the run's writer stored beside its records
        self.starts: dict[str, int] = {}  # step -> the seq its latest start was acknowledged with
        self.gone: dict[str, int] = {}  # step -> the start seq of an abandoned attempt whose worker still reports

    @initialize(tight=st.booleans())
    def create(self, tight: bool) -> None:
        """A tight run has a small turn budget and draws repeated failures (the stop rules fire); a loose run
        reaches the end of its plan."""
        self.tight = tight
        self.model.max_turns = TIGHT_TURNS if tight else LOOSE_TURNS
        self.ledger = Ledger.create(self.log, plan(self.model.max_turns), fsync="none")

    def teardown(self) -> None:
        try:
            with as_run(self.log) as run:
                for digest, data in self.payloads.items():
                    assert run.payload(digest) == data, "a stored payload changed or went missing"
        finally:
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

    @rule(data=st.binary(max_size=2048))
    def store_a_payload(self, data: bytes) -> None:
        """A payload stored between appends appends nothing and reads back at once from a fresh run object."""
        before = self.target.lines(self.log)
        writer = as_run(self.log).open_writer()
        try:
            stored = writer.store_payload(data)
        finally:
            writer.close()
        assert stored.digest not in self.payloads and stored.size == len(data)
        self.payloads[stored.digest] = data
        assert self.target.lines(self.log) == before, "storing a payload changed the log"
        with as_run(self.log) as run:
            assert run.payload(stored.digest) == data

    # Progress rules keep runs long enough to reach deep states; the mixed rule adds everything else,
    # legal or not. (Hypothesis picks rules uniformly, so noise is one rule, not seven.)

    @precondition(lambda self: self.model.ready())
    @rule(data=st.data(), trace=TRACES)
    def start_a_ready_step(self, data: st.DataObject, trace: Trace | None) -> None:
        """A ready step starts, in a trace context or none, which its record keeps."""
        self.start(data.draw(st.sampled_from(self.model.ready())), trace)

    @precondition(lambda self: self.model.running())
    @rule(data=st.data(), kind=st.sampled_from(["complete"] * 6 + ["fail", "block"]), report=reports)
    def report_a_running_step(self, data: st.DataObject, kind: str, report: Report | None) -> None:
        self.result(kind, data.draw(st.sampled_from(self.model.running())), "ok", report)

    @precondition(lambda self: self.model.status[REPAIR[0]] == "in_progress")
    @rule(error=st.sampled_from(["exit 1", "saw 401", "timeout"]), report=reports)
    def fail_the_repaired_step(self, error: str, report: Report | None) -> None:
        """The step with a repair step fails (often enough that the repair runs, and runs again)."""
        self.result("fail", REPAIR[0], error, report)

    @precondition(lambda self: self.model.ready() == [] and self.model.running() == [] and not self.model.final)
    @rule(passed=st.lists(st.booleans(), min_size=len(CRITERIA), max_size=len(CRITERIA)))
    def verify_every_criterion_then_finish_complete(self, passed: list[bool]) -> None:
        for criterion, verdict in zip(CRITERIA, passed, strict=True):
            self.verify(criterion, verdict)
        self.finish("complete")

    @precondition(lambda self: self.model.running())
    @rule(data=st.data(), report=reports)
    def fail_a_running_step_twice_alike(self, data: st.DataObject, report: Report | None) -> None:
        """The same failure, then (when attempts remain) a new start and the same failure again: the stop
        policy's no-progress rule (in a tight run, one time in two: it stops the run)."""
        if not self.tight or data.draw(st.integers(0, 1)):
            return
        step = data.draw(st.sampled_from(self.model.running()))
        self.result("fail", step, "same error", report)
        if step in self.model.ready():
            self.start(step)
            if step in self.model.running():
                self.result("fail", step, "same error", report)

    @rule(
        data=st.data(),
        writes=st.lists(st.sampled_from(PATHS), max_size=2).map(tuple),
        tools=st.lists(st.sampled_from(["Edit", "Bash"]), max_size=1).map(tuple),
        granted=st.sampled_from([True] * 5 + [False]),
    )
    def ask_and_decide_an_approval(
        self, data: st.DataObject, writes: tuple[str, ...], tools: tuple[str, ...], granted: bool
    ) -> None:
        """An approval for one step (the one a violation paused on, most often), granted or (rarely) denied."""
        held = self.model.violation
        if held is not None and data.draw(st.booleans()):
            step, writes, tools = held  # the grant that ends the pause
        else:
            step = data.draw(st.sampled_from(list(STEPS)))
        request = self.ask(step, writes, tools)
        self.decide(request, granted)

    def ask(self, step: str, writes: tuple[str, ...], tools: tuple[str, ...]) -> str:
        self.asked += 1
        request = f"r{self.asked}"
        expected = self.model.request(request, (step,))
        self.widths[request] = (writes, tools)
        question = f"may {step} go on?"
        self._apply(expected, lambda: self.ledger.request_approval(request, question, step, writes=writes, tools=tools))
        return request

    def decide(self, request: str, granted: bool) -> None:
        writes, tools = self.widths.get(request, ((), ()))
        expected = self.model.decide(request, granted, writes, tools)
        call = self.ledger.approve if granted else self.ledger.deny
        self._apply(expected, lambda: call(request, by="tester"))

    @rule(
        data=st.data(),
        kind=st.sampled_from(["request", "request", "commit"]),
        key=st.sampled_from(EFFECT_KEYS),
        on=st.sampled_from(["prod", "prod", "staging"]),
    )
    def request_or_commit_an_effect(self, data: st.DataObject, kind: str, key: str, on: str) -> None:
        """An effect of a running step most often (else any step, or a ghost), by its current attempt, an
        earlier one or one never started."""
        running = self.model.running()
        step = data.draw(st.sampled_from(running)) if running and data.draw(st.booleans()) else data.draw(step_ids)
        current = self.model.attempt.get(step, 0)
        attempt = data.draw(st.sampled_from([None, None, None, current - 1, current + 1]))
        attempt = None if attempt is not None and attempt < 1 else attempt
        if kind == "request":
            expected = self.model.request_effect(step, key, on, attempt)
            self._apply(expected, lambda: self.ledger.request_effect(step, key, on, attempt=attempt))
        else:
            expected = self.model.commit_effect(step, key, attempt)
            self._apply(expected, lambda: self.ledger.commit_effect(step, key, attempt=attempt))

    @precondition(lambda self: self.model.running())
    @rule(data=st.data(), kind=st.sampled_from(["heartbeat", "heartbeat", "heartbeat", "abandon"]), lease=leases)
    def heartbeat_or_abandon_a_running_step(self, data: st.DataObject, kind: str, lease: float | None) -> None:
        step = data.draw(st.sampled_from(self.model.running()))
        if kind == "heartbeat":
            self.heartbeat(step, lease, stale=False)
        else:
            self.abandon(step, "worker gone", stale=False)

    @rule(
        data=st.data(),
        kind=st.sampled_from(["start", "result", "verify", "finish", "stale", "retry", "reopen", "lease"]),
    )
    def anything_else(self, data: st.DataObject, kind: str) -> None:
        if kind == "lease":
            step, stale = data.draw(step_ids), data.draw(st.booleans())
            if data.draw(st.booleans()):
                self.heartbeat(step, data.draw(leases), stale)
            else:
                self.abandon(step, data.draw(texts), stale)
        elif kind == "start":
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

    def start(self, step: str, trace: Trace | None = None) -> None:
        expected = self.model.start(step)
        acks: list[Ack] = []
        self._apply(expected, lambda: acks.append(self.ledger.start(step, trace=trace)))
        if acks:
            self.starts[step] = acks[0].seq
            with as_run(self.log) as run:
                record = run.record_at(acks[0].seq)
            assert record.trace == trace, "a start's trace context was not kept"

    @precondition(lambda self: bool(self.gone))
    @rule(data=st.data(), text=texts, report=reports)
    def a_gone_worker_reports_and_its_completion_is_adopted(
        self, data: st.DataObject, text: str, report: Report | None
    ) -> None:
        """A worker whose attempt was abandoned reports, naming the attempt by its start: the result is kept on
        the orphan path (the step may have started again since), and adopt takes it into the plan exactly when
        the model says the step could take it."""
        step = data.draw(st.sampled_from(sorted(self.gone)))
        started = self.gone[step]
        acks: list[Ack] = []
        call = lambda: acks.append(self.ledger.complete(step, [text], report=report, started_seq=started))  # noqa: E731
        self._apply(self.model.late(text, report), call)
        if not acks:
            return
        del self.gone[step]
        assert acks[0].orphan == "STALE_ATTEMPT"
        expected = self.model.adopt(step)
        self._apply(expected, lambda: self.ledger.adopt(acks[0].seq))
        event("a gone worker's completion adopted" if expected else "a gone worker's completion not adoptable")

    def result(self, kind: str, step: str, text: str, report: Report | None = None) -> None:
        expected = self.model.result(kind, step, text, report)
        calls = {
            "complete": lambda: self.ledger.complete(step, [text], report=report),
            "block": lambda: self.ledger.block(step, text, report=report),
            "fail": lambda: self.ledger.fail(step, text, report=report),
        }
        self._apply(expected, calls[kind])

    def _attempt(self, step: str, stale: bool) -> int | None:
        """The attempt to name: the current one (None: the default), or one that is not running."""
        current = self.model.attempt.get(step, 0)
        return current + 1 if stale else None

    def heartbeat(self, step: str, lease: float | None, stale: bool) -> None:
        expected = self.model.heartbeat(step, lease, stale)
        attempt = self._attempt(step, stale)
        self._apply(expected, lambda: self.ledger.heartbeat(step, lease_s=lease, attempt=attempt))

    def abandon(self, step: str, reason: str, stale: bool) -> None:
        expected = self.model.abandon(step, reason, stale)
        attempt = self._attempt(step, stale)
        self._apply(expected, lambda: self.ledger.abandon(step, reason, attempt=attempt))
        if expected:
            self.gone[step] = self.starts[step]

    def verify(self, criterion: str, passed: bool) -> None:
        expected = self.model.verify(criterion, passed)
        self._apply(expected, lambda: self.ledger.verify_criterion(criterion, passed, "checked"))

    def finish(self, outcome: str) -> None:
        expected = self.model.finish(outcome)
        self._apply(expected, lambda: self.ledger.finish(outcome, "because"))  # type: ignore[arg-type]

    def keyed_retry_writes_once(self, step: str) -> None:
        expected = self.model.start(step)
        key = f"retry-{self.ledger.state.last_seq}-{step}"
        acks: list[Ack] = []
        self._apply(expected, lambda: acks.append(self.ledger.start(step, idempotency_key=key)))
        if acks:
            self.starts[step] = acks[0].seq
        if expected:
            before = self.target.lines(self.log)
            assert self.ledger.start(step, idempotency_key=key, trace=RETRY_TRACE).duplicate
            assert self.target.lines(self.log) == before

    @invariant()
    def state_matches_the_model(self) -> None:
        state = self.ledger.state
        assert {s.id: s.status for s in state.steps.values()} == self.model.status
        assert {s.id: s.attempt for s in state.steps.values()} == self.model.attempt
        assert {c.id: c.status for c in state.criteria.values()} == self.model.verdict
        assert (state.outcome, len(state.orphans)) == (self.model.outcome, self.model.orphans)
        assert {s.id: list(s.abandoned) for s in state.steps.values()} == self.model.abandoned
        running = {s.id: None if s.lease is None else s.lease.seconds for s in state.steps.values()}
        assert {s: running[s] for s in self.model.running()} == {s: self.model.lease[s] for s in self.model.running()}
        assert (0 if state.usage is None else state.usage.turns) == self.model.turns
        effects = {e.key: (e.step, e.attempt, e.target, e.committed_seq is not None) for e in state.effects}
        assert effects == {k: (e.step, e.attempt, e.target, e.committed) for k, e in self.model.effects.items()}
        standing = {e["key"]: e["status"] for group in effects_view(state).values() for e in group}
        assert standing == {k: self.model.standing(e) for k, e in self.model.effects.items()}

    @invariant()
    def next_follows_the_model(self) -> None:
        """ready_steps is the model's ready list in priority order; the stop policy stops for no progress
        exactly when the model says so."""
        assert ready_steps(self.ledger.state) == ([] if self.model.final else self.model.ready())
        decision = stop_decision(self.ledger.state)
        outcome, rule_name = self.model.stop()
        assert decision.outcome == outcome
        if rule_name != "finished":  # the ledger names a final outcome's rule after the outcome
            assert decision.rule == rule_name

    @invariant()
    def policy_and_evidence_hold(self) -> None:
        steps = list(self.ledger.state.steps.values())
        assert sum(s.status == "in_progress" for s in steps) <= LIMIT
        assert all(s.evidence for s in steps if s.status == "completed")
        running = {s.id for s in steps if s.status == "in_progress"}
        assert not any(pair <= running for pair in CONFLICTS), "two steps whose writes overlap ran at once"

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
