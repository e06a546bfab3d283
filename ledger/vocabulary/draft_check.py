"""A plan draft checked as ``create`` would check it, without a log: every problem at once, and the gaps in its
coverage of the goal as problems or as warnings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from plantrail.ledger.vocabulary.coverage import coverage_gaps, coverage_view, coverage_warnings
from plantrail.ledger.vocabulary.errors import PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft

__all__ = ["FIXES", "DraftCheck", "check_draft", "fix_for"]


#: What to change in a draft about each problem ``check`` can find, in words for whoever edits the draft.
FIXES: Final[Mapping[str, str]] = {
    "INVALID_ID": "write the id with letters, digits and . _ : - only (no spaces), and not too long",
    "DRAFT_INVALID": "give the field named the shape the draft format asks for (docs/format.md)",
    "EMPTY_PLAN": "add at least one step to steps",
    "NO_ACCEPTANCE_CRITERIA": "add at least one criterion to acceptance_criteria, with an id and a description",
    "DUPLICATE_STEP_ID": "rename one of the two steps (and the depends_on, covers and inputs that mean it)",
    "DUPLICATE_CRITERION_ID": "rename one of the two criteria (and the covers that mean it)",
    "DUPLICATE_CHECK_ID": "give each check of a step or criterion an id of its own",
    "UNKNOWN_DEPENDENCY": "add the step it names, or take the name out of depends_on (ids are case-sensitive)",
    "SELF_DEPENDENCY": "take the step's own id out of its depends_on",
    "DEPENDENCY_CYCLE": "drop one depends_on between the steps named, so that one of them can start first",
    "BLANK_FIELD": "write something in the field, or leave the field out when it is optional",
    "GOAL_CHANGED": "keep the goal as it is; a new goal is a new run",
    "UNKNOWN_COVERED_CRITERION": "add the criterion to acceptance_criteria, or take it out of the step's covers",
    "COVERAGE_GAP": "add the criterion's id to covers of the step whose work makes it pass, or give the criterion a "
    "typed check",
    "SCOPE_INVALID": "write the glob relative to the task's root, without an empty, . or .. segment",
    "SCOPE_OUTSIDE_TASK": "narrow the step's glob to within the task's scope, or widen the task's scope",
    "UNKNOWN_REPAIR_STEP": "name a step of the plan in on_failure, or add the step it names",
    "REPAIR_CYCLE": "end the chain: the last repair step of it names no on_failure (or only itself)",
    "REPAIR_STEP_HAS_DEPENDENCIES": "take depends_on out of the repair step: it starts when the step it repairs fails",
    "DEPENDS_ON_REPAIR_STEP": "depend on the step the repair step repairs instead",
    "REPAIR_STEP_UNREACHABLE": "give the step it repairs more than one attempt (max_attempts), or drop the repair step",
    "INPUT_DANGLING": "name an output the producing step declares, of a step upstream by depends_on (add the "
    "depends_on if needed), or declare it as an initial input",
    "ARTIFACT_UNKNOWN": "declare the output on the step that produces it, or correct the name",
    "DUPLICATE_ARTIFACT": "declare each output, input or artifact once",
    "DIGEST_INVALID": "write the digest as ALGO:HEX in lower case (sha256: and 64 hex digits)",
}


def fix_for(problem: PlantrailError) -> str:
    """What to change in the draft about ``problem``: its entry in :data:`FIXES`, else its command-line advice,
    else where the code is explained."""
    if problem.code == "DRAFT_INVALID" and problem.fields.get("ids"):  # keys the draft format does not have
        return "take out or correct the keys named (a plan patch goes to replan --patch; check takes a whole draft)"
    return FIXES.get(problem.code) or problem.advice("cli") or f"see {problem.code} in docs/errors.md"


class DraftCheck(NamedTuple):
    """What :func:`check_draft` found: ``problems`` (refusals; empty when the draft would be accepted),
    ``warnings`` (gaps a non-strict create accepts), and the coverage matrix of the plan when it built."""

    problems: tuple[PlantrailError, ...]
    warnings: tuple[PlantrailError, ...]
    coverage: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        """True when the draft has no problem (warnings allowed)."""
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        """The ``check --json`` document: ``ok``, ``problems`` and ``warnings`` (each an error's ``as_dict`` with
        its ``fix``, see :func:`fix_for`), ``coverage``."""
        return {
            "ok": self.ok,
            "problems": [p.as_dict() | {"fix": fix_for(p)} for p in self.problems],
            "warnings": [w.as_dict() | {"fix": fix_for(w)} for w in self.warnings],
            "coverage": self.coverage,
        }


def check_draft(raw: Mapping[str, Any] | Any, *, strict: bool = False) -> DraftCheck:
    """Validate a plan draft (its JSON value) as ``create`` would, without a log: every problem at once, and
    with ``strict`` every coverage gap as a problem; without it, the gaps of a plan that declares coverage
    are warnings."""
    try:
        plan = build_plan(parse_draft(raw))
    except PlanInvalid as exc:
        return DraftCheck(tuple(exc.errors), (), None)
    if strict:
        return DraftCheck(tuple(coverage_gaps(plan)), (), coverage_view(plan))
    return DraftCheck((), tuple(coverage_warnings(plan)), coverage_view(plan))
