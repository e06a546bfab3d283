"""A plan draft checked as ``create`` would check it, without a log: every problem at once, and the gaps in its
coverage of the goal as problems or as warnings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from plantrail.ledger.vocabulary.coverage import coverage_gaps, coverage_view, coverage_warnings
from plantrail.ledger.vocabulary.errors import PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft

__all__ = ["DraftCheck", "check_draft"]


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
        """The ``check --json`` document: ``ok``, ``problems`` and ``warnings`` (each an error's ``as_dict``),
        ``coverage``."""
        return {
            "ok": self.ok,
            "problems": [p.as_dict() for p in self.problems],
            "warnings": [w.as_dict() for w in self.warnings],
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
