"""Coverage of the goal, the task's criteria against the steps' work: every task criterion
should be covered by at least one step (a step lists the criteria it ``covers``, format v2) or by a typed check
of its own (:mod:`ledger.vocabulary.contract`). The coverage matrix says, per criterion, what covers it.

A criterion nothing covers is a gap. A plan that declares coverage (some step ``covers`` something, or some
criterion has a typed check) is warned about its gaps; ``strict`` refuses them (``create --strict``,
``replan --strict``, ``check --strict``). A plan that declares none (every v1 plan) is warned about nothing
unless ``strict`` asks. :func:`check_draft` validates a draft without a log (``plantrail check``).

Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plantrail.ledger.vocabulary.errors import PlanInvalid, PlantrailError, Problems, error

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec

__all__ = [
    "coverage_gaps",
    "coverage_view",
    "coverage_warnings",
    "declares_coverage",
    "reference_problems",
    "require_coverage",
]


def declares_coverage(plan: PlanSpec) -> bool:
    """Whether the plan says anything about coverage: a step's ``covers`` or a criterion's typed checks."""
    return any(s.covers for s in plan.steps) or any(c.checks for c in plan.acceptance_criteria)


def _matrix(plan: PlanSpec) -> dict[str, tuple[list[str], list[str]]]:
    """Each criterion id, in the plan's order: the steps that cover it (plan order) and its typed checks."""
    matrix: dict[str, tuple[list[str], list[str]]] = {
        c.id: ([], [check.id for check in c.checks]) for c in plan.acceptance_criteria
    }
    for step in plan.steps:
        for criterion in dict.fromkeys(step.covers):
            if criterion in matrix:
                matrix[criterion][0].append(step.id)
    return matrix


def coverage_view(plan: PlanSpec | None) -> dict[str, Any] | None:
    """The coverage matrix (``status --json``'s ``coverage``; None before a plan): ``declared`` (whether the
    plan declares coverage), ``criteria`` (each ``{"id", "steps", "checks", "covered"}``) and ``uncovered``
    (the ids nothing covers)."""
    if plan is None:
        return None
    rows = [
        {"id": cid, "steps": steps, "checks": checks, "covered": bool(steps or checks)}
        for cid, (steps, checks) in _matrix(plan).items()
    ]
    return {
        "declared": declares_coverage(plan),
        "criteria": rows,
        "uncovered": [row["id"] for row in rows if not row["covered"]],
    }


def reference_problems(plan: PlanSpec) -> list[PlantrailError]:
    """A step that covers a criterion the plan does not have (UNKNOWN_COVERED_CRITERION, naming both)."""
    known = {c.id for c in plan.acceptance_criteria}
    problems: list[PlantrailError] = Problems()
    for step in plan.steps:
        covers = step.covers
        if not covers or known.issuperset(covers):  # most steps cover nothing or only known criteria
            continue
        missing = sorted(set(covers) - known)
        if missing:
            problems.append(
                error(
                    "UNKNOWN_COVERED_CRITERION",
                    f"step {step.id} covers unknown criteria: {', '.join(missing)}",
                    step=step.id,
                    ids=missing,
                )
            )
    return problems


def coverage_gaps(plan: PlanSpec) -> list[PlantrailError]:
    """One COVERAGE_GAP per task criterion that no step and no typed check covers, in the plan's order."""
    return [
        error(
            "COVERAGE_GAP",
            f"criterion {cid} is covered by no step (covers) and no typed check",
            criterion=cid,
        )
        for cid, (steps, checks) in _matrix(plan).items()
        if not (steps or checks)
    ]


def coverage_warnings(plan: PlanSpec) -> list[PlantrailError]:
    """The gaps to warn about without ``strict``: those of a plan that declares coverage (none otherwise)."""
    return coverage_gaps(plan) if declares_coverage(plan) else []


def require_coverage(plan: PlanSpec) -> None:
    """Raise every gap at once (a PlanInvalid COVERAGE_GAP listing them all in ``errors``), or return."""
    gaps = coverage_gaps(plan)
    if gaps:
        first = gaps[0]
        assert isinstance(first, PlanInvalid)
        first.errors = tuple(gaps)
        raise first
