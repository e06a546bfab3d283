"""A realistic long agent run, recorded through the real ledger: the benchmark's logs and append workloads.

A 40-step plan in five layers (each step depends on one or two steps of the layer before), up to four steps
in progress, evidence of realistic length. Workers start ready steps and report results: most complete, some
fail and retry, a few block. Every so often the planner replans (rewording a few steps, which resets them and
their dependents by lineage, adding one, dropping one), citing the event that caused it; some workers of the
superseded version report late, and their results land on the orphan path. Seeded: the same size gives the
same commands (timestamps come from a fixed clock too, so the same bytes).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Block, Command, Complete, Fail, Replan, Start
from plantrail.projections.model import PlanState
from plantrail.projections.views import ready_steps

__all__ = ["Clock", "commands_for", "record_run", "scripted"]

LAYERS = 5
WIDTH = 8
TOOLS = (
    "pytest tests/test_{m}.py",
    "rg -n '{m}' src/",
    "apply_patch src/{m}.py",
    "mypy src/{m}.py",
    "read_file docs/{m}.md",
    "npm test -- {m}.test.ts",
)
VERBS = ("Inspect", "Change", "Test", "Review", "Ship")
MODULES = ("auth", "session", "billing", "search", "cli", "export", "cache", "router", "schema", "worker")


class Clock:
    """Deterministic timestamps: 137 ms apart."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> str:
        self.ms += 137
        s, ms = divmod(self.ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return f"2026-03-{1 + h // 24:02d}T{h % 24:02d}:{m:02d}:{s:02d}.{ms:03d}000Z"


def _draft(rng: random.Random, generation: int) -> dict[str, Any]:
    steps = []
    for layer in range(LAYERS):
        for i in range(WIDTH):
            sid = f"L{layer}-s{i}"
            deps = sorted({f"L{layer - 1}-s{rng.randrange(WIDTH)}" for _ in range(rng.randint(1, 2))}) if layer else []
            module = MODULES[(layer * WIDTH + i) % len(MODULES)]
            steps.append(
                {
                    "id": sid,
                    "title": f"{VERBS[layer]} the {module} module (pass {generation})",
                    "depends_on": deps,
                    "completion_evidence": f"observable output of the {module} work: command, exit code, files touched",
                    "max_attempts": 3,
                }
            )
    criteria = [
        {"id": f"c{i}", "description": d}
        for i, d in enumerate(
            ("the full test suite passes", "mypy --strict is clean", "the changelog names every user-visible change")
        )
    ]
    return {
        "goal": "Refactor the service layer without changing behaviour",
        "acceptance_criteria": criteria,
        "steps": steps,
        "policy": {"max_in_progress": 4},
    }


def _evidence(rng: random.Random, step: str) -> list[str]:
    module = rng.choice(MODULES)
    tool = rng.choice(TOOLS).format(m=module)
    return [
        f"{tool}: exit 0 in {rng.uniform(0.2, 9.0):.2f}s; {rng.randint(3, 120)} passed, 0 failed; "
        f"touched src/{module}/{step.lower()}.py (+{rng.randint(1, 80)} -{rng.randint(0, 40)}); "
        f"output saved to artifacts/{step}-{rng.randrange(10**6):06d}.log"
    ]


def _reworded(state: PlanState, rng: random.Random, share: float) -> dict[str, Any]:
    """The active plan with a share of its steps reworded (resetting them and their dependents), one added."""
    assert state.plan is not None
    steps = [
        {
            "id": s.id,
            "title": s.title,
            "depends_on": list(s.depends_on),
            "completion_evidence": s.completion_evidence,
            "max_attempts": s.max_attempts,
        }
        for s in state.plan.steps
    ]
    for step in rng.sample(steps, k=max(1, int(len(steps) * share))):
        step["title"] = step["title"].rsplit(" (pass", 1)[0] + f" (pass {state.version + 1})"
    extra = [s for s in steps if s["id"].startswith("extra-")]  # nothing depends on a follow-up step
    if len(extra) > 3:
        steps.remove(extra[0])
    core = [s for s in steps if not s["id"].startswith("extra-")]
    steps.append(
        {
            "id": f"extra-{state.version}",
            "title": f"Follow up on finding {state.version}",
            "depends_on": [rng.choice(core)["id"]],
            "completion_evidence": "a note in docs/findings.md",
        }
    )
    return {
        "acceptance_criteria": [{"id": c.id, "description": c.description} for c in state.plan.acceptance_criteria],
        "steps": steps,
    }


def _results(state: PlanState, rng: random.Random) -> list[Command]:
    commands: list[Command] = []
    for step in state.steps.values_in_order():
        if step.status != "in_progress" or rng.random() < 0.5:  # workers finish at different times
            continue
        roll = rng.random()
        # A worker names the attempt it reports on, as its start's acknowledgement told it: a result naming
        # nothing, for a step a replan cut off in flight and that started again since, could be either attempt's
        # and lands on the orphan path as ambiguous (about half of all events, before results named theirs).
        mine = {"plan_version": state.version, "attempt": step.attempt}
        if roll < 0.915:
            commands.append(Complete(step=step.id, evidence=_evidence(rng, step.id), **mine))
        elif roll < 0.995:
            error = f"exit 1: {rng.choice(MODULES)} test failed (flaky fixture)"
            commands.append(Fail(step=step.id, error=error, **mine))
        else:
            commands.append(Block(step=step.id, reason="needs credentials for the staging database", **mine))
    return commands


def _replan(state: PlanState, rng: random.Random, share: float) -> Replan:
    reason = rng.choice(
        [
            "failed_assumption",
            "new_constraint",
            "coverage_gap",
            "agent_revision",
            "no_ready_step" if not ready_steps(state) else "user_request",
        ]
    )
    return Replan(
        reason=reason,  # type: ignore[arg-type]
        why=f"review of seq {state.last_seq} showed the plan missed a dependency between modules",
        plan=_as_draft(_reworded(state, rng, share)),
        causes=(state.last_seq,),
        observations=(f"observed at seq {state.last_seq}",),
    )


def _as_draft(raw: dict[str, Any]) -> Any:
    from plantrail.ledger.vocabulary.plan import parse_draft

    return parse_draft(raw)


def commands_for(ledger: Ledger, n: int, seed: int = 7) -> Iterator[list[Command]]:
    """Batches of commands that drive ``ledger`` to about ``n`` events (each batch legal against the state)."""
    rng = random.Random(seed)
    next_replan = rng.randint(1500, 3000)
    while ledger.state.last_seq < n:
        state = ledger.state
        running = [s for s in state.steps.values_in_order() if s.status == "in_progress"]
        stalled = not running and not ready_steps(state)
        if state.last_seq >= next_replan or stalled:
            done = all(s.status == "completed" for s in state.steps.values_in_order())
            yield [_replan(state, rng, 0.6 if done else 0.08)]
            if not stalled:
                next_replan = state.last_seq + rng.randint(1500, 3000)
            late = [
                Complete(step=s.id, evidence=_evidence(rng, s.id), plan_version=state.version, attempt=s.attempt)
                for s in running
                if rng.random() < 0.5
            ]
            if late:
                yield late
            continue
        limit = state.plan.policy.max_in_progress if state.plan else 1
        starts = [Start(step=s) for s in ready_steps(state)[: max((limit or 4) - len(running), 0)]]
        if starts:
            yield starts
        results = _results(ledger.state, rng)
        if results:
            yield results


def record_run(path: Path, n: int, *, seed: int = 7) -> Path:
    """Record a run of about ``n`` events (at least n) at ``path`` (fsync none: this builds a fixture)."""
    scripted(path, n, seed=seed)
    return path


def scripted(path: Path, n: int, *, seed: int = 7) -> tuple[dict[str, Any], list[Command], list[bytes]]:
    """Record a run of about ``n`` events at ``path``; return its draft, every command in order, and the lines
    they appended (replaying the commands on a fresh log with the same clock and nonce writes the same bytes)."""
    rng = random.Random(seed)
    draft = _draft(rng, 1)
    commands: list[Command] = []
    clock = Clock()
    # The header promises fsync "always" (as the benchmark's durable appends use); recording skips the fsyncs.
    Ledger.create(path, draft, run="bench", fsync="always", nonce=f"{seed:032x}", clock=clock, cache=False).close()
    with Ledger.open(path, fsync="none", clock=clock) as ledger:
        for batch in commands_for(ledger, n, seed):
            # One append per command: a group commit adds its begin and end records, so a script recorded in
            # batches would name causes (seqs) that a replay one command at a time has not reached yet.
            for command in batch:
                ledger.execute(command)
            commands.extend(batch)
    lines = path.read_bytes().splitlines(keepends=True)[2:]
    return draft, commands, lines
