"""Reconcile on replan: what work a new version keeps.

A completed step keeps its status, attempt and evidence only if its contract (title, completion evidence,
dependencies as a set) is unchanged **and** every dependency was itself kept: invalidation follows lineage,
and each reset step names the upstream step whose change started the chain. Everything else starts
pending at attempt 0; a step in progress at the replan is superseded. A kept step carries its work, not the
reason it restarted in an earlier version (``reset`` and ``invalidated_by`` describe this replan only). A
criterion keeps its verdict only if its description is unchanged and the replan invalidated no completed
work (evidence must be current).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec, carried_order, steps_by_id, topo_order
from plantrail.projections.model import Changes, CriterionState, StepChange, StepState
from plantrail.projections.table import Table

__all__ = ["contract_changes", "reconcile"]


def _changed_fields(old: StepSpec, new: StepSpec) -> tuple[str, ...]:
    if old is new:  # the reducer shares unchanged specs between versions (projections.state.share_unchanged)
        return ()
    diffs = []
    if old.title != new.title:
        diffs.append("title")
    if old.completion_evidence != new.completion_evidence:
        diffs.append("completion_evidence")
    if old.depends_on != new.depends_on and set(old.depends_on) != set(new.depends_on):
        diffs.append("depends_on")
    if old.terms is not new.terms and old.checks != new.checks:
        diffs.append("checks")
    if old.terms is not new.terms and old.inputs != new.inputs:  # format v2 lineage (ledger.vocabulary.artifacts)
        diffs.append("inputs")
    if old.terms is not new.terms and old.outputs != new.outputs:
        diffs.append("outputs")
    return tuple(diffs)


def contract_changes(old: StepSpec, new: StepSpec) -> tuple[str, ...]:
    """The contract fields of a step that differ from ``old`` to ``new`` (title, completion evidence,
    dependencies as a set, checks, inputs, outputs): empty when a replan would keep its completed work."""
    return _changed_fields(old, new)


def _order(old_plan: PlanSpec, old_order: tuple[str, ...], new_plan: PlanSpec) -> tuple[str, ...]:
    """The stable topological order of ``new_plan``, carried over from the old one when it can be."""
    order = carried_order(old_plan.steps, old_order, new_plan.steps)
    return topo_order(new_plan.steps) if order is None else order


def _unchanged(old: StepState, spec: StepSpec) -> bool:
    """True when a step's state can be carried over as the very same object."""
    return old.reset is None and old.invalidated_by is None and old.max_attempts == spec.max_attempts


def _kept(old: StepState, spec: StepSpec) -> StepState:
    """A kept completed step: its work, the new attempt budget, and no reason from an earlier version."""
    return StepState(
        old.id,
        old.status,
        old.attempt,
        old.evidence,
        old.reason,
        old.error,
        old.exhausted,
        spec.max_attempts,
        old.last_seq,
        None,
        None,
        old.usage,
        None,
        old.abandoned,
        old.artifacts,  # format v2: its artifacts and what it consumed (projections.lineage_digest)
        old.consumed,
        None,
        old.reset_at,
        None,
        old.started,
    )


def _restarted(step_id: str, spec: StepSpec, seq: int, reset: str | None, upstream: str | None) -> StepState:
    """A step that starts again, pending at attempt 0, every other field at its default (built from a tuple of
    every field: most steps of a replan land here)."""
    return _new_tuple(
        StepState,
        (step_id, "pending", 0, (), None, None, False, spec.max_attempts, seq, reset, upstream, *_RESTARTED_REST),
    )


#: The fields of StepState after ``invalidated_by``, at their defaults (a restarted step has none of them).
_RESTARTED_REST: Final = tuple(StepState._field_defaults[name] for name in StepState._fields[11:])
_new_tuple: Final = tuple.__new__


def reconcile(
    old_plan: PlanSpec,
    old_steps: Mapping[str, StepState],
    old_criteria: Mapping[str, CriterionState],
    new_plan: PlanSpec,
    seq: int,
    *,
    order: tuple[str, ...] | None = None,
) -> tuple[Table[StepState], Table[CriterionState], Changes]:
    """The new version's step and criterion states, and the record of what changed, at replan ``seq``
    (``order``: the new plan's topological order, when the caller already has it)."""
    old_specs = steps_by_id(old_plan)
    new_specs = steps_by_id(new_plan)
    if order is None:
        order = _order(old_plan, tuple(old_steps), new_plan)
    kept: set[str] = set()
    roots: dict[str, str] = {}  # reset step -> the upstream step whose change invalidated it
    resets: list[StepChange] = []
    added: list[str] = []
    kept_in_order: list[str] = []
    states: list[StepState] = []
    lost_work = False  # whether completed work is reset or removed
    for step_id in order:  # dependencies come first, so lineage is known when a dependent is judged
        spec = new_specs[step_id]
        old = old_steps.get(step_id)
        old_spec = old_specs.get(step_id)
        upstream = None
        if old is None or old_spec is None:
            if old_spec is None:
                added.append(step_id)
            roots[step_id] = step_id
            states.append(_restarted(step_id, spec, seq, "added", None))
            continue
        status = old.status
        # (a spec the reducer shared is unchanged: projections.state.share_unchanged)
        fields = () if old_spec is spec else _changed_fields(old_spec, spec)
        if status == "in_progress":
            cause = "superseded"
        elif fields:
            cause = "contract_changed"
        elif status == "completed":
            # kept while its dependencies are; one that declares inputs follows what it consumed instead
            # (projections.lineage_digest)
            if spec.inputs or kept.issuperset(spec.depends_on):
                kept.add(step_id)
                kept_in_order.append(step_id)
                states.append(old if _unchanged(old, spec) else _kept(old, spec))
                continue
            broken = min([d for d in spec.depends_on if d not in kept])
            cause, upstream = "upstream_invalidated", roots.get(broken, broken)
        elif status == "blocked":
            cause = "unblocked"
        else:  # pending (or stale): nothing to say, but a step on a later attempt starts again at 0
            if old.attempt == 0 and _unchanged(old, spec):
                states.append(old)
            else:
                states.append(_restarted(step_id, spec, old.last_seq, None, None))
            continue
        roots[step_id] = upstream or step_id
        resets.append(_new_tuple(StepChange, (step_id, cause, status, old.attempt, upstream, fields)))
        if status == "completed":
            lost_work = True
        states.append(_restarted(step_id, spec, seq, cause, upstream))
    if len(new_specs) - len(added) == len(old_specs):
        removed: tuple[StepChange, ...] = ()
    else:
        removed = tuple(
            StepChange(step=s.id, cause="removed", was=old_steps[s.id].status, attempt=old_steps[s.id].attempt)
            for s in old_plan.steps
            if s.id not in new_specs
        )
        lost_work = lost_work or any(c.was == "completed" for c in removed)
    criteria, criteria_changes = _reconcile_criteria(old_plan, old_criteria, new_plan, lost_work, seq)
    changes = Changes(
        kept=tuple(kept_in_order),
        reset=tuple(resets),
        added=tuple(added),
        removed=removed,
        criteria_kept=criteria_changes[0],
        criteria_reset=criteria_changes[1],
        criteria_added=criteria_changes[2],
        criteria_removed=tuple(c.id for c in old_plan.acceptance_criteria if c.id not in criteria),
        policy_changed=old_plan.policy != new_plan.policy,
    )
    return Table(order, states), criteria, changes


def _reconcile_criteria(
    old_plan: PlanSpec, old_criteria: Mapping[str, CriterionState], new_plan: PlanSpec, lost_work: bool, seq: int
) -> tuple[Table[CriterionState], tuple[tuple[str, ...], tuple[StepChange, ...], tuple[str, ...]]]:
    old_descriptions = {c.id: c.description for c in old_plan.acceptance_criteria}
    old_checks = {c.id: c.checks for c in old_plan.acceptance_criteria}
    states: list[CriterionState] = []
    kept: list[str] = []
    reset: list[StepChange] = []
    added: list[str] = []
    for spec in new_plan.acceptance_criteria:
        old = old_criteria.get(spec.id)
        if old is None:
            added.append(spec.id)
            states.append(CriterionState(id=spec.id, last_seq=seq, reset="added"))
            continue
        cause = "description_changed" if old_descriptions[spec.id] != spec.description else None
        if cause is None and old_checks[spec.id] != spec.checks:
            cause = "checks_changed"
        if cause is None and lost_work and old.status != "unverified":
            cause = "work_invalidated"
        if cause is None:
            kept.append(spec.id)
            states.append(old)
            continue
        reset.append(StepChange(step=spec.id, cause=cause, was=old.status))
        states.append(CriterionState(id=spec.id, last_seq=seq, reset=cause))
    ids = tuple(c.id for c in new_plan.acceptance_criteria)
    return Table(ids, states), (tuple(kept), tuple(reset), tuple(added))
