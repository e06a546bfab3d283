"""Invalidation by digest (format v2): which steps an input's change makes ``stale``.

A step that declares ``inputs`` (:mod:`ledger.vocabulary.artifacts`) records, when it completes, the digest of each
input current then (``StepState.consumed``). An input's *current* digest is:

- ``STEP/OUTPUT``: the artifact of that name the producer's completion recorded, while the producer is
  completed in the active version (else the input is not current: the consumer cannot start);
- ``initial:NAME``: the digest the task declares for it (None when it declares none);
- ``observation:KEY``: the latest ``observation.recorded`` version of KEY, else the version the plan was made
  from (``observed``), else None.

When an input's digest changes (the producer completes again with another digest, a replan replaces the
producer or changes an initial input's digest, a new observation version is recorded), each consumer is
judged by these rules:

1. a pending consumer becomes ``stale``;
2. a consumer in progress is marked for cancellation (``cancel``): ``abandon`` ends it (it becomes stale), a
   result it still sends lands on the orphan path (``STALE_ATTEMPT``);
3. a completed consumer whose consumed digest differs from the new one becomes ``stale``; one whose digest
   is unchanged keeps its work (even when the producer ran again);
4. steps that consume nothing of the change are untouched.

A stale step never satisfies a dependency; it can start again once every input it declares is current and
its dependencies are completed. Its attempts reset: the ones it had are no longer charged
(``StepState.reset_at``), but their numbers stay taken, so fencing holds. Only steps that declare inputs
become stale, so a plan without inputs folds exactly as before. Pure; :mod:`projections.state` calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from plantrail.ledger.vocabulary.artifacts import Artifact, InputRef, input_key
from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec
from plantrail.projections.model import Changes, Consumed, CriterionState, Observed, StepChange, StepState

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = [
    "GONE",
    "Lineage",
    "consumed_now",
    "current_digest",
    "input_changed",
    "invalidated_verdicts",
    "lineage_of",
    "missing_inputs",
    "observed_changes",
    "produced_changes",
    "replan_changes",
    "require_inputs",
]

#: The digest of an input whose producer a replan replaced: it matches no consumed digest.
GONE: Final = "\x00gone"


class Lineage:
    """A plan's lineage index: each step's declared inputs, and each input key's consumers (draft order)."""

    __slots__ = ("consumers", "inputs", "producers")

    def __init__(self, plan: PlanSpec) -> None:
        self.inputs: dict[str, tuple[InputRef, ...]] = {s.id: s.inputs for s in plan.steps if s.inputs}
        self.consumers: dict[str, list[str]] = {}
        self.producers: dict[str, list[str]] = {}  # producer step -> its consumed output keys
        for step_id, refs in self.inputs.items():
            for ref in refs:
                self.consumers.setdefault(input_key(ref), []).append(step_id)
                if ref.step is not None:
                    self.producers.setdefault(ref.step, []).append(input_key(ref))


#: The last plan indexed and its index (one plan is active at a time).
_INDEXED: list[tuple[PlanSpec, Lineage | None]] = []


def lineage_of(plan: PlanSpec | None) -> Lineage | None:
    """The plan's lineage index, or None when no step declares inputs (the common case)."""
    if plan is None:
        return None
    entry = _INDEXED[0] if _INDEXED else None
    if entry is None or entry[0] is not plan:
        index = Lineage(plan) if any(s.terms is not None and s.terms.inputs for s in plan.steps) else None
        entry = (plan, index)
        _INDEXED[:] = [entry]
    return entry[1]


def _artifact(step: StepState | None, name: str | None) -> Artifact | None:
    if step is None:
        return None
    return next((a for a in step.artifacts if a.name == name), None)


def _observed_version(plan: PlanSpec, observations: tuple[Observed, ...], key: str) -> str | None:
    for seen in reversed(observations):
        if seen.key == key:
            return seen.version
    task = plan.artifacts
    for made in () if task is None else task.observed:
        if made.key == key:
            return made.version
    return None


def current_digest(
    plan: PlanSpec, steps: Mapping[str, StepState], observations: tuple[Observed, ...], ref: InputRef
) -> tuple[bool, str | None]:
    """Whether ``ref`` is current (available to consume) and its digest (module docstring)."""
    if ref.step is not None:
        producer = steps.get(ref.step)
        if producer is None or producer.status != "completed":
            return False, None
        found = _artifact(producer, ref.output)
        return found is not None, None if found is None else found.digest
    if ref.initial is not None:
        task = plan.artifacts
        declared = None if task is None else next((i for i in task.inputs if i.name == ref.initial), None)
        return True, None if declared is None else declared.digest
    return True, _observed_version(plan, observations, ref.observation or "")


def missing_inputs(state: StateView, spec: StepSpec) -> list[str]:
    """The keys of the step's inputs that are not current (their producer is not completed)."""
    if not spec.inputs or state.plan is None:
        return []
    observations = state.observations
    return [input_key(r) for r in spec.inputs if not current_digest(state.plan, state.steps, observations, r)[0]]


def require_inputs(state: StateView, spec: StepSpec) -> None:
    """Refuse a start while an input the step declares is not current (STEP_NOT_READY, the inputs named)."""
    waiting = missing_inputs(state, spec)
    if waiting:
        from plantrail.ledger.vocabulary.errors import error

        raise error(
            "STEP_NOT_READY",
            f"step {spec.id} waits for inputs that are not current: {', '.join(waiting)}",
            step=spec.id,
            plan_version=state.version,
            waiting=waiting,
        )


def consumed_now(state: StateView, spec: StepSpec) -> tuple[Consumed, ...]:
    """The digest of each of the step's inputs its completion consumed: the one current now, or, for an output
    whose producer went stale while the step ran, the producer's last artifact, the one the step started on
    (a producer that completed since with another digest marked the step for cancellation)."""
    assert state.plan is not None
    return tuple(Consumed(input_key(r), _consumed_digest(state, r)) for r in spec.inputs)


def _consumed_digest(state: StateView, ref: InputRef) -> str | None:
    assert state.plan is not None
    current, digest = current_digest(state.plan, state.steps, state.observations, ref)
    if current or ref.step is None:
        return digest
    found = _artifact(state.steps.get(ref.step), ref.output)
    return None if found is None else found.digest


def _short(digest: str | None) -> str:
    if digest is None:
        return "none"
    if digest == GONE:
        return "replaced"
    return digest if len(digest) <= 23 else digest[:23] + "…"


def _judged(step: StepState, key: str, new: str | None, source: str, seq: int, moved: bool = True) -> StepState | None:
    """The consumer ``step`` after input ``key``'s digest became ``new`` (None: untouched); ``moved`` False when
    the new digest is the one the input had before (only a completed consumer is judged then, by what it
    consumed)."""
    consumed = next((c.digest for c in step.consumed if c.input == key), None)
    if step.status == "completed":
        if any(c.input == key for c in step.consumed) and consumed == new:
            return None  # completed work whose input did not change is kept
        why = f"input {key} changed: {_short(consumed)} -> {_short(new)}"
        return _stale(step, why, source, seq)
    if not moved:
        return None
    if step.status == "in_progress":
        # a mark on the attempt, as a heartbeat is: the step last changed when the attempt started
        return step._replace(cancel=f"input {key} changed to {_short(new)}: abandon this attempt")
    if step.status in ("pending", "stale"):
        return _stale(step, f"input {key} changed to {_short(new)}", source, seq)
    return None  # a blocked step stays blocked (a replan or approval decides it)


def _stale(step: StepState, why: str, source: str, seq: int) -> StepState:
    """``step`` stale: its attempts reset, its old work kept only in the audit (its consumed digests stay, so
    ``why`` can say which digest changed)."""
    return step._replace(
        status="stale",
        reset_at=step.attempt,
        evidence=(),
        reason=why,
        error=None,
        exhausted=False,
        last_seq=seq,
        reset="input_changed",
        invalidated_by=source,
        lease=None,
        abandoned=(),
        cancel=None,
    )


def input_changed(
    lineage: Lineage,
    steps: Mapping[str, StepState],
    changed: Mapping[str, tuple[bool, str | None]],
    source: str,
    seq: int,
) -> dict[str, StepState]:
    """Every consumer of the ``changed`` input keys (key -> whether the digest moved, and the new digest),
    judged; only the steps that change."""
    result: dict[str, StepState] = {}
    for key, (moved, new) in changed.items():
        for consumer in lineage.consumers.get(key, ()):
            step = result.get(consumer) or steps.get(consumer)
            if step is None:
                continue
            judged = _judged(step, key, new, source, seq, moved)
            if judged is not None:
                result[consumer] = judged
    return result


def invalidated_verdicts(
    criteria: Mapping[str, CriterionState], seq: int
) -> tuple[dict[str, CriterionState], tuple[StepChange, ...]]:
    """Every criterion with a verdict back to ``unverified`` (``work_invalidated``): completed work went stale,
    so evidence is no longer current (as a replan that invalidates completed work does)."""
    changed: dict[str, CriterionState] = {}
    dropped: list[StepChange] = []
    for criterion in criteria.values():
        if criterion.status != "unverified":
            changed[criterion.id] = CriterionState(id=criterion.id, last_seq=seq, reset="work_invalidated")
            dropped.append(StepChange(step=criterion.id, cause="work_invalidated", was=criterion.status))
    return changed, tuple(dropped)


def observed_changes(
    plan: PlanSpec, observations: tuple[Observed, ...], key: str, version: str
) -> dict[str, tuple[bool, str | None]]:
    """The input keys an observation of ``key`` at ``version`` changes (none when the version is current)."""
    if _observed_version(plan, observations, key) == version:
        return {}
    return {f"observation:{key}": (True, version)}


def produced_changes(
    lineage: Lineage, before: StepState, step: str, artifacts: tuple[Artifact, ...]
) -> dict[str, tuple[bool, str | None]]:
    """The input keys a completion of ``step`` producing ``artifacts`` touches: each consumed output, with
    whether its digest moved from the one the step's previous completion recorded (``before``)."""
    keys = lineage.producers.get(step)
    if not keys:
        return {}
    changed: dict[str, tuple[bool, str | None]] = {}
    for artifact in artifacts:
        key = f"{step}/{artifact.name}"
        if key in keys:
            old = _artifact(before, artifact.name)
            changed[key] = (old is not None and old.digest != artifact.digest, artifact.digest)
    return changed


def replan_changes(
    old_plan: PlanSpec,
    old_steps: Mapping[str, StepState],
    new_plan: PlanSpec,
    new_steps: Mapping[str, StepState],
    changes: Changes,
    observations: tuple[Observed, ...],
    seq: int,
) -> tuple[dict[str, StepState], tuple[StepChange, ...]]:
    """What a replan does by lineage to the new version's steps (after reconcile): producers reset to run again
    keep their last artifacts (their next completion is compared with them); a consumer of a producer the
    replan replaced, or of an initial input or observation whose digest the replan changed, is judged by the
    rules above. Returns the changed steps and one ``input_changed`` change per consumer made stale."""
    lineage = lineage_of(new_plan)
    if lineage is None:
        return {}, ()
    replaced = {c.step for c in changes.reset if c.cause == "contract_changed"}
    result: dict[str, StepState] = {}
    for producer in lineage.producers:
        old = old_steps.get(producer)
        new = new_steps.get(producer)
        if old is not None and new is not None and old.artifacts and not new.artifacts and producer not in replaced:
            result[producer] = new._replace(artifacts=old.artifacts)  # it runs again: compare its next digests
    changed: dict[str, str | None] = {}
    for key in lineage.consumers:
        ref = _ref_of(lineage, key)
        if ref.step is not None:
            if ref.step in replaced:
                changed[key] = GONE
            continue
        was = current_digest(old_plan, old_steps, observations, ref)[1]
        now = current_digest(new_plan, new_steps, observations, ref)[1]
        if was != now:
            changed[key] = now
    merged = {**new_steps, **result}
    stale: list[StepChange] = []
    for key, new_digest in changed.items():
        for consumer in lineage.consumers[key]:
            step = merged.get(consumer)
            if step is None or step.status not in ("completed", "pending", "stale"):
                continue
            if step.status == "pending" and step.reset == "added":
                continue  # a step the replan added consumes whatever is current when it runs
            judged = _judged(step, key, new_digest, key.split("/")[0] if "/" in key else key, seq)
            if judged is not None:
                had = next((c.digest for c in step.consumed if c.input == key), None)
                merged[consumer] = result[consumer] = judged
                previous = old_steps.get(consumer)
                stale.append(
                    StepChange(
                        consumer,
                        "input_changed",
                        None if previous is None else previous.status,
                        0 if previous is None else previous.attempt,
                        judged.invalidated_by,
                        (f"{key}: {_short(had)} -> {_short(new_digest)}",),
                    )
                )
    return result, tuple(stale)


def _ref_of(lineage: Lineage, key: str) -> InputRef:
    for refs in lineage.inputs.values():
        for ref in refs:
            if input_key(ref) == key:
                return ref
    raise KeyError(key)
