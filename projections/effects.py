"""Side effects in the state: what the reducer keeps of ``effect.requested`` and
``effect.committed``, and how the views sort the effects into committed, in doubt and superseded.

``PlanState.effects`` holds one :class:`Effect` per idempotency key, in the order the keys were first
requested (empty until a run records one, and left out of the canonical state then). A request opens it; a
request of the same key by a later attempt of the same step (after the runtime checked the target) moves it
to that attempt and keeps the earlier request's seq in ``earlier``; a commit closes it.

How an effect stands is derived, never stored (so a replan or a new attempt needs no transition here):

- ``committed``: its commit is recorded (a late commit too: the effect happened);
- ``in_doubt``: requested and never known committed, by the step's current attempt in the active version;
  the runtime must check the target before doing it again;
- ``superseded``: requested and never known committed, by an attempt that is over (a superseded plan version,
  a later start or an abandon; or the request was recorded late): still unknown, so its target is checked
  too before the step's work is done again.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from plantrail.projections.model import OrphanWhy, PlanState, StepState

__all__ = [
    "Effect",
    "EffectStanding",
    "check_first",
    "committed",
    "effect_standing",
    "effect_view",
    "effects_for",
    "effects_view",
    "find_effect",
    "requested",
    "unresolved",
]

EffectStanding = Literal["committed", "in_doubt", "superseded"]


class Effect(NamedTuple):
    """One side effect, named by its idempotency key: the step, plan version and attempt of its latest request
    (seq ``seq``; ``late`` says why that request was recorded late, beside the orphans), the target and the
    summary of its state before, the seqs of earlier requests of the key, and its commit (seq and result)."""

    key: str
    step: str
    plan_version: int
    attempt: int
    target: str
    before: str
    seq: int
    late: OrphanWhy | None = None
    earlier: tuple[int, ...] = ()
    committed_seq: int | None = None
    result: str | None = None
    commit_late: OrphanWhy | None = None


def find_effect(effects: Iterable[Effect], key: str) -> Effect | None:
    """The effect requested under ``key`` (None: none)."""
    return next((e for e in effects if e.key == key), None)


# --------------------------------------------------------------------------- transitions


def requested(effects: tuple[Effect, ...], effect: Effect) -> tuple[Effect, ...]:
    """The effects with a request: a new key is appended; a known key's effect moves to the new request, with
    the previous request's seq kept in ``earlier``."""
    known = find_effect(effects, effect.key)
    if known is None:
        return (*effects, effect)
    moved = effect._replace(earlier=(*known.earlier, known.seq))
    return tuple(moved if e.key == effect.key else e for e in effects)


def committed(
    effects: tuple[Effect, ...], key: str, seq: int, result: str, late: OrphanWhy | None
) -> tuple[Effect, ...]:
    """The effects with ``key``'s commit recorded (unchanged when no request of it is open)."""
    return tuple(
        e._replace(committed_seq=seq, result=result, commit_late=late)
        if e.key == key and e.committed_seq is None
        else e
        for e in effects
    )


# --------------------------------------------------------------------------- views


def _current(steps: Mapping[str, StepState], version: int, effect: Effect) -> bool:
    """Whether ``effect``'s request belongs to the step's current attempt in the active version."""
    if effect.late is not None or effect.plan_version != version:
        return False
    step = steps.get(effect.step)
    return step is not None and step.attempt == effect.attempt and effect.attempt not in step.abandoned


def effect_standing(state: PlanState, effect: Effect) -> EffectStanding:
    """``committed``, ``in_doubt`` or ``superseded`` (see the module's docstring)."""
    if effect.committed_seq is not None:
        return "committed"
    return "in_doubt" if _current(state.steps, state.version, effect) else "superseded"


def unresolved(state: PlanState, step: str | None = None) -> list[Effect]:
    """The effects never known committed (in doubt or superseded), of ``step`` when given, oldest first."""
    return [e for e in state.effects if e.committed_seq is None and (step is None or e.step == step)]


def effects_for(state: PlanState, standing: EffectStanding) -> list[Effect]:
    """The effects that stand so, oldest first."""
    return [e for e in state.effects if effect_standing(state, e) == standing]


def effect_view(state: PlanState, effect: Effect) -> dict[str, Any]:
    """One effect as the JSON documents show it: its fields and ``status`` (its standing)."""
    return {
        "key": effect.key,
        "step": effect.step,
        "status": effect_standing(state, effect),
        "target": effect.target,
        "before": effect.before,
        "plan_version": effect.plan_version,
        "attempt": effect.attempt,
        "requested_seq": effect.seq,
        "late": effect.late,
        "earlier_seqs": list(effect.earlier),
        "committed_seq": effect.committed_seq,
        "result": effect.result,
        "commit_late": effect.commit_late,
    }


def effects_view(state: PlanState) -> dict[str, list[dict[str, Any]]]:
    """The run's effects sorted by standing: ``in_doubt``, ``superseded`` and ``committed`` (each oldest
    first, as :func:`effect_view` shows them)."""
    view: dict[str, list[dict[str, Any]]] = {"in_doubt": [], "superseded": [], "committed": []}
    for effect in state.effects:
        view[effect_standing(state, effect)].append(effect_view(state, effect))
    return view


def check_first(state: PlanState, step: str) -> str | None:
    """What resume says before ``step``'s work is done again while effects of it are never known committed
    (None: none): check each target first, then commit the effect if it happened, else request it again."""
    open_effects = unresolved(state, step)
    if not open_effects:
        return None
    shown = ", ".join(f"{e.key} on {e.target!r} (requested at seq {e.seq})" for e in open_effects)
    first = open_effects[0]
    return (
        f"check the target of {step}'s effects never known committed first: {shown}; if one happened, commit it "
        f"(plantrail effect LOG {step} --committed {first.key}), else request it again from the new attempt with "
        "the same key; never perform it blindly"
    )
