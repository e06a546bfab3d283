"""Extending a plan version in place (format v2, ``plan.extended``): the rule, and the plan it gives.

A plan version that no work has touched since it was adopted can gain steps and acceptance criteria without a
replan: nothing of it was started, reported or verified, so there is no work to keep, reset or invalidate,
and a replan's reason and why would describe nothing that happened (an agent that writes its task list one
task at a time, before it starts any, is still writing one plan). The version keeps its number; the event
records only what it adds; the reducer appends it to the version's plan, and every view of the version (its
spec, ``versions``, ``diff``, ``why``, the history index) sees the version with its extensions.

*Touched* means: since the version was adopted (or last extended), a step started or reported a result, a
criterion got a verdict, or the run finished or paused. Each of those moves a step's, a criterion's or the
run's seq past the version's mark (the seq of its adopting record or of its latest extension), so
:func:`touched` is a pure function of the state. Late results for earlier versions do not touch the active
one: they never read it. A forked run (``run.forked``) counts as touched throughout: the state it carries
holds the parent's seqs, which the fork's own seqs do not continue, so no mark can be compared.

Refusals (nothing is written): VERSION_TOUCHED once the version has been touched (replan instead),
STEP_EXISTS / CRITERION_EXISTS for an id the version already holds, STALE_PLAN_VERSION for an extension
issued against an older version, RUN_FINISHED after a final outcome, USAGE for an extension that adds
nothing, and the draft codes (UNKNOWN_DEPENDENCY, DEPENDENCY_CYCLE, ...) when the extended plan does not
validate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from msgspec.structs import force_setattr

from plantrail.ledger.rules.commands import Envelope, Help, Issued, declare, fields, timeless
from plantrail.ledger.rules.guards import issued_version, require_open
from plantrail.ledger.vocabulary.contract import validate_seconds
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Actor, PlanExtended
from plantrail.ledger.vocabulary.extension import Additions, extended_plan, parse_additions
from plantrail.ledger.vocabulary.items import as_items
from plantrail.ledger.vocabulary.plan import CriterionSpec, StepSpec, validate_plan

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = ["EXTEND", "Extend", "check_extension", "extend", "mark", "touched"]


class Extend(Issued, frozen=True, kw_only=True):
    """Add steps and criteria to the active plan version in place, while no work has touched it (format v2,
    :mod:`ledger.rules.extension`); a bare StepSpec is one step."""

    steps: Sequence[StepSpec]
    criteria: Sequence[CriterionSpec] = ()
    observations: Sequence[str] = ()
    plan_version: int | None = None
    actor: Actor = "planner"

    def __post_init__(self) -> None:
        force_setattr(self, "steps", _specs(self.steps, StepSpec, "steps"))
        force_setattr(self, "criteria", _specs(self.criteria, CriterionSpec, "criteria"))
        force_setattr(self, "observations", as_items(self.observations, str, "observations"))


def _specs(value: Any, kind: type[Any], what: str) -> tuple[Any, ...]:
    """``value`` as a tuple of ``kind`` (a bare one is a tuple of one); USAGE for anything else."""
    items = (value,) if isinstance(value, kind) else tuple(value) if isinstance(value, (tuple, list)) else None
    if items is None or not all(isinstance(item, kind) for item in items):
        raise error("USAGE", f"{what} must be a {kind.__name__} or a list of them")
    return items


def mark(state: StateView) -> int:
    """The seq after which work on the active version counts: its adopting record's, or its latest extension's."""
    adopted = state.adopted
    if adopted is None:
        return state.last_seq
    return max(adopted.seq, *adopted.extended) if adopted.extended else adopted.seq


def touched(state: StateView) -> bool:
    """Whether any work read the active version since it was adopted or last extended (see the module). A forked
    run's versions count as touched: the fork carries the parent's seqs, which its own do not continue."""
    if state.lineage:
        return True
    since = mark(state)
    if state.outcome_seq is not None and state.outcome_seq > since:
        return True
    return any(s.last_seq > since for s in state.steps.values()) or any(
        c.last_seq > since for c in state.criteria.values()
    )


def check_extension(state: StateView, data: PlanExtended, plan_version: int) -> None:
    """Refuse an extension the rule forbids (see the module); the caller has checked the plan version exists."""
    plan = state.plan
    assert plan is not None  # the caller requires a plan
    if plan_version < state.version:
        raise error(
            "STALE_PLAN_VERSION",
            f"the extension was issued against plan version {plan_version}; version {state.version} superseded it",
            plan_version=plan_version,
            expected=state.version,
            actual=plan_version,
        )
    require_open(state)
    if not data.steps and not data.criteria:
        raise error("USAGE", "an extension adds at least one step or acceptance criterion")
    if touched(state):
        raise error(
            "VERSION_TOUCHED",
            f"plan version {state.version} has been worked on since seq {mark(state)}; "
            "only an untouched version is extended in place (replan instead)",
            plan_version=state.version,
            seq=mark(state),
        )
    have = {s.id for s in plan.steps}
    for step in data.steps:
        if step.id in have:
            raise error(
                "STEP_EXISTS",
                f"step {step.id} is already in plan version {state.version}; an extension only adds steps",
                step=step.id,
                plan_version=state.version,
            )
    known = {c.id for c in plan.acceptance_criteria}
    for criterion in data.criteria:
        if criterion.id in known:
            raise error(
                "CRITERION_EXISTS",
                f"criterion {criterion.id} is already in plan version {state.version}; an extension only adds",
                criterion=criterion.id,
                plan_version=state.version,
            )
    validate_plan(extended_plan(plan, data.steps, data.criteria))
    validate_seconds(data.steps)


def _build(state: StateView, command: Extend) -> tuple[PlanExtended, int]:
    version = issued_version(state, command.plan_version)
    observations = tuple(o.strip() for o in command.observations if o.strip())
    extended = PlanExtended(steps=tuple(command.steps), criteria=tuple(command.criteria), observations=observations)
    return extended, version


EXTEND = declare(
    Extend,
    build=_build,
    rules={PlanExtended: timeless(check_extension)},
    superseded="An older version is refused (STALE_PLAN_VERSION); a patch's base_version says the same when given.",
    refusals=(
        "PLAN_NOT_CREATED",
        "UNKNOWN_PLAN_VERSION",
        "STALE_PLAN_VERSION",
        "RUN_FINISHED",
        "VERSION_TOUCHED",
        "STEP_EXISTS",
        "CRITERION_EXISTS",
        "DRAFT_INVALID",
        "USAGE",
    ),
    cli={
        "extend": Help(
            "Add steps and criteria to the active plan version in place, while no work has touched it.",
            'ADDITIONS is a JSON file (- for stdin): a patch {"base_version": N, "operations": [...]} of add_step '
            'and\nadd_criterion operations only, or {"steps": [...], "acceptance_criteria": [...]} in the draft\'s '
            "shapes.\nThe version keeps its number; once a step of it has started, reported a result or a criterion "
            "has a\nverdict (or the run finished or paused) it is VERSION_TOUCHED: replan instead. A step or "
            "criterion id the\nversion already has is STEP_EXISTS / CRITERION_EXISTS.",
            examples=("plantrail extend run.jsonl more-steps.json",),
        )
    },
    tools={
        "plan_extend": "Add steps and criteria to the current plan version in place, while no work has touched it "
        "(replan with plan_set after)."
    },
)


@EXTEND.method
def extend(
    additions: Additions | Mapping[str, Any] | None = None,
    *,
    steps: StepSpec | Sequence[StepSpec] = (),
    criteria: CriterionSpec | Sequence[CriterionSpec] = (),
    observations: str | Sequence[str] = (),
    **envelope: Unpack[Envelope],
) -> Extend:
    """Add steps and criteria to the active plan version in place while no work has touched it (format v2,
    ``plantrail extend``): from an extension document (a JSON-like mapping, :func:`parse_additions`) or the
    specs themselves. VERSION_TOUCHED once the version was worked on (replan instead)."""
    added: tuple[StepSpec, ...] = _given(steps)
    criteria_added: tuple[CriterionSpec, ...] = _given(criteria)
    if additions is not None:
        parsed = parse_additions(additions) if isinstance(additions, Mapping) else additions
        added, criteria_added = (*added, *parsed.steps), (*criteria_added, *parsed.criteria)
        if envelope.get("plan_version") is None:
            envelope["plan_version"] = parsed.base_version
    return Extend(
        steps=added,
        criteria=criteria_added,
        observations=as_items(observations, str, "observations"),
        **fields(envelope),
    )


def _given(value: Any) -> tuple[Any, ...]:
    return (value,) if isinstance(value, (StepSpec, CriterionSpec)) else tuple(value)
