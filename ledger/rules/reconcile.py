"""A plan version adopted: the plan's creation (version 1) and a replan (the next version), their commands and
rules, checked before a byte is written; what work a new version keeps is :mod:`plantrail.projections.reconcile`.

- **Create**: the log has no plan yet; the draft validates (and, with ``strict``, leaves no coverage gap).
- **Replan**: the run is open; a whole draft or a patch of the active version (never both), with a reason
  code, why in words, and causes that are seqs of the log (and, in a forked run, parent causes: seqs of the
  run it was forked from, up to the fork); the goal never changes; the new plan validates
  against the version it replaces (and, with ``strict``, leaves no coverage gap). A draft's policy, scope and
  task artifacts default to the active plan's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from msgspec.structs import force_setattr

from plantrail.ledger.rules.commands import LATE_REFUSED, Envelope, Field, Help, Issued, declare, fields, timeless
from plantrail.ledger.rules.guards import issued_version, not_stale, require_open
from plantrail.ledger.vocabulary.contract import validate_seconds
from plantrail.ledger.vocabulary.coverage import require_coverage
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import REASON_CODES, Actor, PlanCreated, PlanReplanned, ReasonCode
from plantrail.ledger.vocabulary.items import as_items, as_text
from plantrail.ledger.vocabulary.plan import (
    Draft,
    PlanPatch,
    PlanSpec,
    apply_patch,
    build_plan,
    parse_draft,
    parse_patch,
    validate_plan,
)

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = ["CREATE", "REPLAN", "Create", "Replan", "replan"]

#: The --strict option of create and replan.
_STRICT = Field(
    help="Refuse (COVERAGE_GAP) a plan with a task criterion that no step covers and no typed check covers."
)


class Create(Issued, frozen=True, kw_only=True):
    """Create the plan (version 1) from a validated-on-use draft or plan; ``strict`` refuses a coverage gap
    (:mod:`ledger.vocabulary.coverage`)."""

    plan: Draft | PlanSpec
    actor: Actor = "planner"
    strict: bool = False


class Replan(Issued, frozen=True, kw_only=True):
    """Adopt a new plan version from a whole draft or a patch, with a reason code, why and causes (a bare
    ``int`` is one cause, a bare ``str`` one observation)."""

    reason: ReasonCode
    why: str
    plan: Draft | PlanSpec | None = None
    patch: PlanPatch | None = None
    causes: Sequence[int] = ()
    observations: Sequence[str] = ()
    plan_version: int | None = None
    actor: Actor = "planner"
    strict: bool = False  # refuse a coverage gap in the new plan (ledger.vocabulary.coverage)
    parent_causes: Sequence[int] = ()  # a fork's: seqs of the run it was forked from, up to the fork

    def __post_init__(self) -> None:
        as_text(self.why, "why")
        force_setattr(self, "causes", as_items(self.causes, int, "causes"))
        force_setattr(self, "parent_causes", as_items(self.parent_causes, int, "parent_causes"))
        force_setattr(self, "observations", as_items(self.observations, str, "observations"))


# --------------------------------------------------------------------------- create


def _build_create(state: StateView, command: Create) -> tuple[PlanCreated, int]:
    if state.plan is not None:
        raise _created_already(state)
    created = _as_plan(command.plan)
    if command.strict:
        require_coverage(created)
    return PlanCreated(plan=created), 1


def _check_created(state: StateView, data: PlanCreated, plan_version: int) -> None:
    if state.plan is not None:
        raise _created_already(state)
    validate_plan(data.plan)
    validate_seconds(data.plan.steps)


def _created_already(state: StateView) -> Exception:
    return error("PLAN_ALREADY_CREATED", "the log already has a plan", plan_version=state.version)


def _as_plan(
    plan: Draft | PlanSpec,
    *,
    goal: str | None = None,
    base: PlanSpec | None = None,
    previous: tuple[PlanSpec, tuple[str, ...]] | None = None,
) -> PlanSpec:
    """The plan a draft (or a whole plan) makes, validated; ``previous``: the plan it replaces and its order (the
    state's steps), which a replan that keeps its steps' dependencies carries over instead of sorting again."""
    if isinstance(plan, PlanSpec):
        validate_plan(plan, previous)
        return plan
    if base is None:
        return build_plan(plan, goal=goal, previous=previous)
    return build_plan(
        plan, goal=goal, policy=base.policy, scope=base.scope, artifacts=base.artifacts, previous=previous
    )


# --------------------------------------------------------------------------- replan


def _build_replan(state: StateView, command: Replan) -> tuple[PlanReplanned, int]:
    version = issued_version(state, command.plan_version)
    assert state.plan is not None  # guarded by issued_version
    require_open(state)  # before the draft is judged: no draft can continue a finished run
    if (command.plan is None) == (command.patch is None):
        raise error("USAGE", "a replan takes either a whole plan or a patch, not both or neither")
    if command.patch is not None:
        if command.patch.base_version > state.version:
            raise error(
                "UNKNOWN_PLAN_VERSION",
                f"the patch is based on version {command.patch.base_version}, which does not exist; "
                f"the active version is {state.version}",
                plan_version=command.patch.base_version,
                expected=state.version,
            )
        if command.patch.base_version != state.version:
            raise error(
                "STALE_PLAN_VERSION",
                f"the patch is based on version {command.patch.base_version}; the active version is {state.version}",
                expected=state.version,
                actual=command.patch.base_version,
                plan_version=command.patch.base_version,
            )
        plan = apply_patch(state.plan, command.patch)
    else:
        assert command.plan is not None
        if isinstance(command.plan, Draft) and command.plan.goal not in (None, state.plan.goal):
            raise _goal_changed(state.plan.goal, command.plan.goal)
        plan = _as_plan(command.plan, goal=state.plan.goal, base=state.plan, previous=(state.plan, tuple(state.steps)))
    if command.strict:
        require_coverage(plan)
    replanned = PlanReplanned(
        new_version=state.version + 1,
        reason=command.reason,
        why=command.why.strip(),
        causes=tuple(command.causes),
        observations=tuple(o.strip() for o in command.observations if o.strip()),
        plan=plan,
        patch=command.patch,
        parent_causes=tuple(command.parent_causes),
    )
    return replanned, version


def _goal_changed(old: str, new: str | None) -> Exception:
    return error("GOAL_CHANGED", f"a replan cannot change the goal (was {old!r}, draft says {new!r})")


def _check_replan(state: StateView, data: PlanReplanned, plan_version: int) -> None:
    assert state.plan is not None
    not_stale(state, plan_version, "the replan")
    require_open(state)
    if data.reason not in REASON_CODES:
        raise error("UNKNOWN_REASON_CODE", f"reason must be one of {', '.join(REASON_CODES)}", actual=data.reason)
    if not data.why.strip():
        raise error("REASON_REQUIRED", "a replan needs a why: what was observed and why the plan changes")
    unknown = sorted(c for c in set(data.causes) if not 1 <= c <= state.last_seq)
    if unknown:
        raise error(
            "UNKNOWN_CAUSE",
            f"causes must be seqs of events in the log (1..{state.last_seq}); unknown: {', '.join(map(str, unknown))}"
            + (" (a cause in the run this one was forked from is a parent cause)" if state.lineage else ""),
            causes=unknown,
        )
    _check_parent_causes(state, data.parent_causes)
    if data.new_version != state.version + 1:
        raise error(
            "INVALID_TRANSITION",
            f"a replan of version {state.version} creates version {state.version + 1}, not {data.new_version}",
            expected=state.version + 1,
            actual=data.new_version,
        )
    if data.plan.goal != state.plan.goal:
        raise _goal_changed(state.plan.goal, data.plan.goal)
    validate_plan(data.plan, (state.plan, tuple(state.steps)))  # the order the fold adopting it carries over
    validate_seconds(data.plan.steps)
    if data.patch is not None and apply_patch(state.plan, data.patch) != data.plan:
        raise error("PATCH_INVALID", "the recorded plan is not the patch applied to its base version")


def _check_parent_causes(state: StateView, causes: Sequence[int]) -> None:
    """A parent cause is a seq of an event of the run this one was forked from, up to the fork (the parent's
    own seqs: the fork carries the parent's state there); a run that was never forked has none."""
    if not causes:
        return
    if not state.lineage:
        raise error(
            "UNKNOWN_CAUSE",
            "parent causes name events of the run this one was forked from, and this run was never forked",
            causes=sorted(set(causes)),
        )
    parent = state.lineage[-1]
    unknown = sorted(c for c in set(causes) if not 1 <= c <= parent.seq)
    if unknown:
        raise error(
            "UNKNOWN_CAUSE",
            f"parent causes must be seqs of events of run {parent.run} up to the fork (1..{parent.seq}); "
            f"unknown: {', '.join(map(str, unknown))}",
            causes=unknown,
        )


# --------------------------------------------------------------------------- declarations

#: What a draft that does not validate is refused with (beside the codes of each of its problems).
_PLAN_REFUSALS = ("DRAFT_INVALID", "COVERAGE_GAP", "USAGE")

CREATE = declare(
    Create,
    build=_build_create,
    rules={PlanCreated: timeless(_check_created)},
    planned=False,
    fields={
        "plan": Field(
            help="The plan draft: a JSON file, a TOML file (*.toml, as plantrail new writes), or - for JSON on stdin.",
            metavar="DRAFT",
        ),
        "strict": _STRICT,
    },
    refusals=("PLAN_ALREADY_CREATED", "LOG_EXISTS", *_PLAN_REFUSALS),
    cli={
        "create": Help(
            "Create LOG with a validated plan draft as version 1 (never overwrites a file). A task criterion that "
            'no\nstep covers (a step\'s "covers") and no typed check covers is a warning on stderr ("warnings" '
            "in JSON), or\nwith --strict a refusal (COVERAGE_GAP); a plan that declares no coverage at all is "
            "warned only by --strict.",
            examples=(
                "plantrail create run.jsonl --plan samples/cli-name-flag.draft.json",
                "plantrail create run.jsonl --plan draft.json --strict",
            ),
        )
    },
)

REPLAN = declare(
    Replan,
    build=_build_replan,
    rules={PlanReplanned: timeless(_check_replan)},
    fields={
        "reason": Field(help="Why, as a code."),
        "why": Field(help="Why, in words: what was observed.", metavar="TEXT"),
        "plan": Field(
            help="The whole new draft: a JSON file, a TOML file (*.toml), or - for JSON on stdin.", metavar="DRAFT"
        ),
        "patch": Field(
            help='A patch {"base_version": N, "operations": [...]} instead of a whole draft.', metavar="PATCH"
        ),
        "causes": Field(
            help="Seq of an event in the log that caused the replan (repeatable); any other seq is UNKNOWN_CAUSE.",
            metavar="SEQ",
            minimum=0,
        ),
        "observations": Field(
            help="A free-text observation behind the replan (repeatable; - reads standard input).", metavar="TEXT"
        ),
        "strict": _STRICT,
        "parent_causes": Field(
            help="In a forked run: seq of an event of the run it was forked from, up to the fork, that caused the "
            "replan (repeatable; format v2); any other seq is UNKNOWN_CAUSE.",
            metavar="SEQ",
            minimum=0,
        ),
    },
    trailing=("strict",),
    superseded=f"{LATE_REFUSED}: read the active version and replan from it.",
    refusals=(
        "PLAN_NOT_CREATED",
        "UNKNOWN_PLAN_VERSION",
        "STALE_PLAN_VERSION",
        "RUN_FINISHED",
        "UNKNOWN_REASON_CODE",
        "REASON_REQUIRED",
        "UNKNOWN_CAUSE",
        "GOAL_CHANGED",
        "PATCH_INVALID",
        *_PLAN_REFUSALS,
    ),
    cli={
        "replan": Help(
            "Adopt a new plan version; completed work is kept only where its contract and lineage are unchanged.\n"
            "Coverage gaps of the new plan are warnings on stderr, or with --strict a refusal (see create).",
            examples=(
                "plantrail replan run.jsonl --plan v2.json --reason failed_assumption \\\n"
                '    --why "auth service returns 500, not 401" --caused-by 6',
            ),
        )
    },
)


@REPLAN.method
def replan(
    reason: ReasonCode,
    why: str,
    *,
    plan: Draft | PlanSpec | Mapping[str, Any] | None = None,
    patch: PlanPatch | Mapping[str, Any] | None = None,
    causes: int | Sequence[int] = (),
    observations: str | Sequence[str] = (),
    strict: bool = False,
    parent_causes: int | Sequence[int] = (),
    **envelope: Unpack[Envelope],
) -> Replan:
    """Adopt a new plan version from a whole ``plan`` or a ``patch`` (parsed from JSON-like mappings if need
    be), with ``causes`` (seqs; ``--caused-by``) and ``observations`` (one ``str`` is one item) (``plantrail
    replan``); ``strict`` refuses a new plan with a coverage gap (COVERAGE_GAP). In a forked run,
    ``parent_causes`` are seqs of the run it was forked from, up to the fork (``--caused-by-parent``)."""
    return Replan(
        reason=reason,
        why=why,
        plan=parse_draft(plan) if isinstance(plan, Mapping) else plan,
        patch=parse_patch(patch) if isinstance(patch, Mapping) else patch,
        causes=as_items(causes, int, "causes"),
        observations=as_items(observations, str, "observations"),
        strict=strict,
        parent_causes=as_items(parent_causes, int, "parent_causes"),
        **fields(envelope),
    )
