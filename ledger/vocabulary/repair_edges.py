"""Repair edges: a step may name the step that repairs it when it fails (``on_failure``, format v2).

After a failure with attempts left, the failed step is pending but waits until its repair step completes; the
repair step is ready only while a failed step waits for it (it has no entry identity: only a failure calls
it, so it never starts as an entry step). A step that names itself is retried directly, as a step
that names none. The readiness rules live in :mod:`projections.repair_edges`; this module validates the edges of a
plan, every problem at once, each with a stable code naming the steps (the graph's rules for
``depends_on`` and ``on_failure`` edges, docs/semantics.md "Repair edges"):

- ``UNKNOWN_REPAIR_STEP``: an ``on_failure`` names a step the plan does not have (every edge names a step);
- ``REPAIR_CYCLE``: failure chains loop (A is repaired by B, B by A); a step repairing itself is allowed
  (a failure chain must end; a step's own retries are bounded by its attempts);
- ``REPAIR_STEP_HAS_DEPENDENCIES``: a repair step lists ``depends_on``: it runs only after a failure of a step
  it repairs, whose own dependencies were met by then (a repair step has no dependency of its own);
- ``DEPENDS_ON_REPAIR_STEP``: a step depends on a repair step: it would wait on work that runs only after a
  failure, so the success path never reaches it (every step must be reachable);
- ``REPAIR_STEP_UNREACHABLE``: no failure can ever call a repair step, because every step it repairs has one
  attempt (its failure exhausts it, and an exhausted step is blocked: nothing retries after a repair) or is
  itself such an unreachable repair step (every step must be reachable: it would never run).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from plantrail.ledger.vocabulary.errors import PlantrailError, Problems, error

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import StepSpec

__all__ = ["partial_repair_problems", "repair_edges", "repair_problems"]


def repair_edges(steps: Sequence[StepSpec]) -> dict[str, str]:
    """Each step that names another step as its repair step, with that step's id (self-repair left out)."""
    edges: dict[str, str] = {}
    for step in steps:
        target = None if step.terms is None else step.terms.on_failure
        if target is not None and target != step.id:
            edges[step.id] = target
    return edges


def _unknown(edges: Mapping[str, str], ids: set[str]) -> list[PlantrailError]:
    return [
        error(
            "UNKNOWN_REPAIR_STEP",
            f"step {step} names an unknown repair step: on_failure {target}",
            step=step,
            ids=[target],
        )
        for step, target in edges.items()
        if target not in ids
    ]


def _cycles(edges: Mapping[str, str]) -> list[list[str]]:
    """Every loop of the failure chains (each step has at most one repair step, so a walk finds each loop once),
    each rotated to start at its smallest id, in the order of their smallest ids."""
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    loops: list[list[str]] = []
    for start in edges:
        path: list[str] = []
        node: str | None = start
        while node is not None and node not in state:
            state[node] = 1
            path.append(node)
            node = edges.get(node)
        if node is not None and state[node] == 1:
            loop = path[path.index(node) :]
            first = loop.index(min(loop))
            loops.append(loop[first:] + loop[:first])
        for visited in path:
            state[visited] = 2
    return sorted(loops, key=lambda loop: loop[0])


def _cycle_problems(edges: Mapping[str, str]) -> list[PlantrailError]:
    return [
        error(
            "REPAIR_CYCLE",
            f"the failure chain loops: {' -> '.join([*loop, loop[0]])} (only a step may repair itself)",
            step=loop[0],
            ids=loop,
        )
        for loop in _cycles(edges)
    ]


def _dependency_problems(steps: Sequence[StepSpec], repairs: set[str]) -> list[PlantrailError]:
    problems: list[PlantrailError] = Problems()
    for step in steps:
        if step.id in repairs and step.depends_on:
            deps = list(dict.fromkeys(step.depends_on))
            problems.append(
                error(
                    "REPAIR_STEP_HAS_DEPENDENCIES",
                    f"repair step {step.id} depends on {', '.join(deps)}: a repair step starts only after a "
                    "failure of a step it repairs, so it takes no depends_on",
                    step=step.id,
                    ids=deps,
                )
            )
        on_repair = [d for d in dict.fromkeys(step.depends_on) if d in repairs]
        if on_repair:
            problems.append(
                error(
                    "DEPENDS_ON_REPAIR_STEP",
                    f"step {step.id} depends on repair step {', '.join(on_repair)}, which runs only after a "
                    "failure: the success path never reaches it",
                    step=step.id,
                    ids=on_repair,
                )
            )
    return problems


def _unreachable(steps: Sequence[StepSpec], edges: Mapping[str, str], looping: set[str]) -> list[str]:
    """The repair steps no failure can call, in plan order (steps on a failure loop are left to REPAIR_CYCLE).

    A repair step is called when a step it repairs fails with attempts left, so that step needs more than one
    attempt and must itself run: a step that is no repair step runs (the dependency rules see to that), a
    repair step runs when it is called. Walked from the steps that are no repair step, up each chain."""
    attempts = {s.id: s.max_attempts for s in steps}
    repairs = set(edges.values())
    called: set[str] = set()
    walk = [s for s in edges if s not in repairs]
    while walk:
        step = walk.pop()
        target = edges.get(step)
        if target is None or attempts.get(step) == 1 or target in called:
            continue
        called.add(target)
        walk.append(target)
    return [s.id for s in steps if s.id in repairs and s.id not in called and s.id not in looping]


def repair_problems(steps: Sequence[StepSpec]) -> list[PlantrailError]:
    """Every problem of the plan's repair edges (none for a plan that names no repair step), in a fixed order:
    unknown repair steps, failure loops, dependencies of and on repair steps, unreachable repair steps."""
    edges = repair_edges(steps)
    if not edges:
        return []
    ids = {s.id for s in steps}
    problems = _unknown(edges, ids)
    known = {step: target for step, target in edges.items() if target in ids}
    loops = _cycle_problems(known)
    problems += loops
    repairs = set(known.values())
    problems += _dependency_problems(steps, repairs)
    looping = {s for p in loops for s in (p.fields.get("ids") or ())}
    for repair in _unreachable(steps, known, looping):
        problems.append(
            error(
                "REPAIR_STEP_UNREACHABLE",
                f"repair step {repair} can never run: every step it repairs has one attempt (its failure exhausts "
                "it) or is itself never called",
                step=repair,
                ids=[repair],
            )
        )
    return problems


def partial_repair_problems(steps: Sequence[StepSpec], known: Collection[str]) -> list[PlantrailError]:
    """The repair problems the parsed steps of a draft that does not parse already show (``known``: every step
    id the draft holds, parsed or not): an edge to a step the draft lacks, loops, dependencies of and on
    repair steps. Reachability waits for the whole draft (a step that did not parse may call a repair step)."""
    return [
        p
        for p in repair_problems(steps)
        if p.code != "REPAIR_STEP_UNREACHABLE"
        and not (p.code == "UNKNOWN_REPAIR_STEP" and set(p.fields.get("ids", ())) <= set(known))
    ]
