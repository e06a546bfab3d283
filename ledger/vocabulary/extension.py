"""An extension of a plan version in place (``plan.extended``): what an extension document adds, and the plan it
gives. Whether a version may still be extended is the rule's (:mod:`plantrail.ledger.rules.extension`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanPatch, PlanSpec, StepSpec, parse_draft, parse_patch

__all__ = ["Additions", "additions", "extended_plan", "parse_additions"]


def extended_plan(plan: PlanSpec, steps: tuple[StepSpec, ...], criteria: tuple[CriterionSpec, ...]) -> PlanSpec:
    """``plan`` with ``steps`` and ``criteria`` appended (not validated)."""
    return replace(plan, steps=(*plan.steps, *steps), acceptance_criteria=(*plan.acceptance_criteria, *criteria))


def additions(patch: PlanPatch) -> tuple[tuple[StepSpec, ...], tuple[CriterionSpec, ...]]:
    """The steps and criteria a patch adds; PATCH_INVALID for any operation but ``add_step`` and ``add_criterion``
    (an extension only adds: anything else changes the version, which is a replan)."""
    steps: list[StepSpec] = []
    criteria: list[CriterionSpec] = []
    for i, op in enumerate(patch.operations):
        if op.op == "add_step" and op.step is not None:
            steps.append(op.step)
        elif op.op == "add_criterion" and op.criterion is not None:
            criteria.append(op.criterion)
        else:
            raise error(
                "PATCH_INVALID",
                f"operations[{i}] ({op.op}): an extension only adds steps and criteria (add_step, add_criterion); "
                "anything else is a replan",
                path=f"operations[{i}]",
            )
    return tuple(steps), tuple(criteria)


class Additions(NamedTuple):
    """What an extension document adds, and the plan version it was written against (a patch's
    ``base_version``; None when the document does not say)."""

    steps: tuple[StepSpec, ...]
    criteria: tuple[CriterionSpec, ...]
    base_version: int | None = None


def parse_additions(raw: Any) -> Additions:
    """An extension document's JSON value: a patch (``{"base_version": N, "operations": [...]}`` with only
    ``add_step`` and ``add_criterion``), or the steps and criteria alone (``{"steps": [...],
    "acceptance_criteria": [...]}``, the draft's shapes; a goal or policy is DRAFT_INVALID: an extension
    changes neither)."""
    if isinstance(raw, Mapping) and ("operations" in raw or "base_version" in raw or "baseVersion" in raw):
        patch = parse_patch(raw)
        steps, criteria = additions(patch)
        return Additions(steps, criteria, patch.base_version)
    if isinstance(raw, Mapping):
        extra = sorted(k for k in ("goal", "policy") if k in raw)
        if extra:
            raise error(
                "DRAFT_INVALID",
                f"an extension adds steps and criteria only; it cannot set {' or '.join(extra)}",
                path="draft",
                ids=extra,
            )
    draft = parse_draft(raw)
    return Additions(draft.steps, draft.acceptance_criteria)
