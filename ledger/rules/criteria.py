"""Acceptance criteria: the verdict command and its rules, checked before a byte is written.

A verdict names a criterion of the active version, with evidence; a verdict issued against a superseded
version is refused (it is kept nowhere: verify the criterion again in the active version), as is one after the
run finished. A ``passed`` verdict on a criterion with typed checks needs a report whose observations satisfy
every one (CHECK_NOT_MET). The reducer keeps each criterion's verdict in :mod:`plantrail.projections.state`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Unpack

from plantrail.ledger.rules.commands import (
    LATE_REFUSED,
    REPORT,
    Envelope,
    Field,
    Help,
    Issued,
    declare,
    fields,
    timeless,
)
from plantrail.ledger.rules.guards import checks_met, issued_version, not_stale, require_open
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import CriterionVerified
from plantrail.ledger.vocabulary.evidence import Report, parse_report
from plantrail.ledger.vocabulary.items import as_text
from plantrail.ledger.vocabulary.plan import did_you_mean

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = ["VERIFY_CRITERION", "VerifyCriterion", "verify_criterion"]


class VerifyCriterion(Issued, frozen=True, kw_only=True):
    """Record an acceptance criterion's verdict with evidence."""

    criterion: str
    passed: bool
    evidence: str
    plan_version: int | None = None
    report: Report | None = None

    def __post_init__(self) -> None:
        as_text(self.evidence, "a criterion's evidence")


def _build(state: StateView, command: VerifyCriterion) -> tuple[CriterionVerified, int]:
    version = issued_version(state, command.plan_version)
    verdict: Literal["passed", "failed"] = "passed" if command.passed else "failed"
    data = CriterionVerified(
        criterion=command.criterion, verdict=verdict, evidence=command.evidence.strip(), report=command.report
    )
    return data, version


def _check_criterion(state: StateView, data: CriterionVerified, plan_version: int) -> None:
    not_stale(state, plan_version, f"criterion {data.criterion}")
    require_open(state)
    if data.criterion not in state.criteria:
        raise error(
            "CRITERION_NOT_FOUND",
            f"no acceptance criterion {data.criterion} in plan version {state.version}"
            f"{did_you_mean(data.criterion, state.criteria)}",
            criterion=data.criterion,
            plan_version=state.version,
        )
    if not data.evidence.strip():
        raise error("EVIDENCE_REQUIRED", f"a verdict on {data.criterion} needs evidence", criterion=data.criterion)
    if data.verdict == "passed":
        assert state.plan is not None
        spec = next(c for c in state.plan.acceptance_criteria if c.id == data.criterion)
        checks_met(spec.checks, data.report, f"criterion {data.criterion}", criterion=data.criterion)


VERIFY_CRITERION = declare(
    VerifyCriterion,
    build=_build,
    rules={CriterionVerified: timeless(_check_criterion)},
    fields={
        "passed": Field(help="The verdict."),
        "evidence": Field(help="What shows the verdict (- reads standard input).", metavar="TEXT"),
        "report": REPORT,
    },
    trailing=("report",),
    superseded=f"{LATE_REFUSED}: a verdict on a superseded version is not kept anywhere; verify the criterion "
    "again in the active version.",
    refusals=(
        "PLAN_NOT_CREATED",
        "UNKNOWN_PLAN_VERSION",
        "STALE_PLAN_VERSION",
        "RUN_FINISHED",
        "CRITERION_NOT_FOUND",
        "EVIDENCE_REQUIRED",
        "CHECK_NOT_MET",
        "USAGE",
    ),
    cli={
        "criterion": Help(
            "Record that acceptance CRITERION passed or failed, with evidence.",
            examples=(
                'plantrail criterion run.jsonl name-success --passed --evidence "node cli.js --name Lin printed Lin"',
            ),
        )
    },
    tools={"criterion_verdict": "Record whether an acceptance criterion passed, with the evidence that shows it."},
)


@VERIFY_CRITERION.method
def verify_criterion(
    criterion: str,
    passed: bool,
    evidence: str,
    *,
    report: Report | Mapping[str, Any] | None = None,
    **envelope: Unpack[Envelope],
) -> VerifyCriterion:
    """Record an acceptance criterion's verdict with evidence (``plantrail criterion``)."""
    parsed = parse_report(report) if isinstance(report, Mapping) else report
    return VerifyCriterion(criterion=criterion, passed=passed, evidence=evidence, report=parsed, **fields(envelope))
