"""Side effects: the commands that record them and their rules, checked before a byte is
written.

A step's attempt that acts outside the log (a deploy, a payment, a message sent) records the effect in two
steps: ``effect.requested`` before it acts (the idempotency key the target deduplicates by, the target, a
summary of the target's state before) and ``effect.committed`` once it knows the effect happened (a summary of
the result). What was only requested and what is known committed are kept apart: an effect
requested and never committed is *in doubt*, and after a crash the runtime checks its target before doing the
work again (``resume`` says so).

Rules.

- **Request**: the step is in progress in its current attempt of the active version (the request is fenced
  like a result by plan version, step and attempt, each defaulting to the step's current one); the key is
  a non-blank token (``INVALID_ID``) and the target is not blank (``REASON_REQUIRED``). A step whose scope sets
  ``effects_require_approval`` needs a granted approval bound to the active version that covers it
  (``APPROVAL_REQUIRED``, the approval gate of :mod:`ledger.rules.approvals`; the approval that let a
  ``requires_approval`` step start covers its effects too).
- **One effect per key** (a repeated request meets an explicit conflict contract). A key names
  one effect of one step and target in the run: a request of a key that names another step or target is
  ``EFFECT_KEY_CONFLICT``; a request of a key already committed, or already requested by the same attempt, is
  ``EFFECT_DUPLICATE`` (nothing is written: the conflict is told, never silently absorbed; a command retried
  after a lost acknowledgement carries the envelope's idempotency key and gets the original seq back). A
  later attempt of the same step may request the same key and target again, once the earlier attempt is
  over: that is the retry of an effect the runtime found did not happen, and the effect moves to the new
  attempt (the earlier request's seq is kept).
- **Commit**: a request of the key is recorded and not yet committed (``EFFECT_NOT_REQUESTED``,
  ``EFFECT_DUPLICATE``); the commit names its request's step and, by default, its request's plan version and
  attempt (the key already names the request; a commit that names another is ``EFFECT_MISMATCH``).
- **Late effects are recorded, never refused** (as results are): a request stamped with a superseded plan
  version, a stale (later-started or abandoned) attempt, or after the run finished is appended and kept beside
  the orphans with why (``SUPERSEDED_VERSION``, ``STALE_ATTEMPT``, ``RUN_FINISHED``; the ack's ``orphan``);
  it authorises nothing (no approval is judged) and changes no step. A commit whose request's attempt is over
  is recorded too, and the effect is committed: it happened, whatever became of the attempt.

Pure: judged against a :class:`~projections.state.StateView`, nothing read from a clock or a file.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, Unpack

import msgspec

from plantrail.ledger.rules.commands import Attempted, Field, Help, declare, fields, timeless
from plantrail.ledger.rules.guards import require_open, require_plan, require_step
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Actor, EffectCommitted, EffectRequested, Source
from plantrail.ledger.vocabulary.items import as_text
from plantrail.ledger.vocabulary.plan import check_id, did_you_mean, steps_by_id
from plantrail.projections.approvals import needs_approval, pending_for
from plantrail.projections.effects import Effect, find_effect
from plantrail.projections.state import orphan_reason

if TYPE_CHECKING:
    from plantrail.projections.model import OrphanWhy
    from plantrail.projections.state import StateView

__all__ = [
    "COMMIT_EFFECT",
    "REQUEST_EFFECT",
    "CommitEffect",
    "EffectEvent",
    "RequestEffect",
    "build_effect",
    "check_effect",
    "check_effect_key",
    "commit_effect",
    "effect_lateness",
    "request_effect",
]

EffectEvent = EffectRequested | EffectCommitted

#: An idempotency key: printable, no whitespace, at most 256 characters (``/``, ``=`` and the like allowed:
#: keys are often paths, URLs or UUIDs the target chose).
_KEY: Final = re.compile(r"[!-~]{1,256}")


class RequestEffect(msgspec.Struct, frozen=True, kw_only=True):
    """A step's attempt is about to perform a side effect: its idempotency key, target and a summary of the
    target's state before (may be empty)."""

    step: str
    effect: str
    target: str
    before: str = ""
    plan_version: int | None = None
    attempt: int | None = None
    actor: Actor = "runtime"
    source: Source | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        as_text(self.effect, "the effect's key")
        as_text(self.target, "target")
        as_text(self.before, "before")


class CommitEffect(msgspec.Struct, frozen=True, kw_only=True):
    """The side effect requested under ``effect`` (its idempotency key) happened, with a summary of its
    result (may be empty); its plan version and attempt default to its request's."""

    step: str
    effect: str
    result: str = ""
    plan_version: int | None = None
    attempt: int | None = None
    actor: Actor = "runtime"
    source: Source | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        as_text(self.effect, "the effect's key")
        as_text(self.result, "result")


def build_effect(state: StateView, command: RequestEffect | CommitEffect) -> tuple[EffectEvent, int]:
    """The event an effect command produces and the plan version it is issued against (no rule judged here:
    :func:`check_effect` does). A request defaults to the step's current attempt in the active version, a
    commit to its request's."""
    effect = command.effect.strip()
    if isinstance(command, RequestEffect):
        version = state.version if command.plan_version is None else command.plan_version
        attempt = command.attempt
        if attempt is None:
            current = state.steps.get(command.step)
            attempt = 0 if current is None else current.attempt
        requested = EffectRequested(
            step=command.step, attempt=attempt, key=effect, target=command.target.strip(), before=command.before.strip()
        )
        return requested, version
    known = find_effect(state.effects, effect)
    fence = (state.version, 0) if known is None else (known.plan_version, known.attempt)
    version_of = fence[0] if command.plan_version is None else command.plan_version
    attempt_of = fence[1] if command.attempt is None else command.attempt
    committed = EffectCommitted(step=command.step, attempt=attempt_of, key=effect, result=command.result.strip())
    return committed, version_of


def check_effect_key(value: str) -> str:
    """``value`` when it is an effect's idempotency key (printable, no whitespace, 1 to 256 characters), else
    INVALID_ID."""
    if not _KEY.fullmatch(value):
        shown = repr(value)[:80]
        raise error(
            "INVALID_ID",
            f"effect key {shown} is not a valid idempotency key (printable characters, no spaces, at most 256)",
            path="effect",
        )
    return value


def effect_lateness(state: StateView, data: EffectEvent, plan_version: int) -> OrphanWhy | None:
    """Why an effect event is recorded late, beside the orphans (None: it applies to the running attempt)."""
    return orphan_reason(state, plan_version, data.step, data.attempt)


def check_effect(state: StateView, data: EffectEvent, plan_version: int) -> None:
    """Judge an effect event against the state before it (the caller checked the plan and that the version
    exists); see the module's docstring for the rules."""
    check_effect_key(data.key)
    check_id(data.step, "step")
    known = find_effect(state.effects, data.key)
    if isinstance(data, EffectRequested):
        _check_request(state, data, plan_version, known)
    else:
        _check_commit(state, data, plan_version, known)


def _check_request(state: StateView, data: EffectRequested, plan_version: int, known: Effect | None) -> None:
    if not data.target:
        raise error("REASON_REQUIRED", f"an effect request of {data.step} needs its target", step=data.step)
    late = effect_lateness(state, data, plan_version)
    if known is not None:
        _check_known(state, data, known, late)
    if late == "SUPERSEDED_VERSION":
        return
    step = require_step(state, data.step)
    if late == "STALE_ATTEMPT":
        if not (1 <= data.attempt < step.attempt or data.attempt in step.abandoned):
            raise _never_started(state, data, step.attempt)
        return
    if step.status != "in_progress":
        if late == "RUN_FINISHED":
            require_open(state)
        raise error(
            "INVALID_TRANSITION",
            f"step {step.id} is {step.status}; it must be in_progress (attempt {step.attempt}) to request an effect",
            step=step.id,
            plan_version=state.version,
            current=step.status,
            expected="in_progress",
            target="in_progress",
        )
    if late is None:
        _check_gate(state, data.step)


def _never_started(state: StateView, data: EffectEvent, attempt: int) -> Exception:
    return error(
        "INVALID_TRANSITION",
        f"step {data.step} never started attempt {data.attempt} (its attempt is {attempt})",
        step=data.step,
        plan_version=state.version,
        expected="in_progress",
        target="in_progress",
    )


def _check_known(state: StateView, data: EffectRequested, known: Effect, late: OrphanWhy | None) -> None:
    """A request of a key the run already has: a conflict, a duplicate, or a later attempt's retry."""
    if known.step != data.step or known.target != data.target:
        raise error(
            "EFFECT_KEY_CONFLICT",
            f"effect key {data.key} names step {known.step}'s effect on {known.target!r} (seq {known.seq}); one key "
            "names one effect: use another key for another effect",
            step=data.step,
            seq=known.seq,
            key=data.key,
        )
    if known.committed_seq is not None:
        raise error(
            "EFFECT_DUPLICATE",
            f"effect {data.key} of step {data.step} was committed at seq {known.committed_seq}: it happened, do not "
            "perform it again",
            step=data.step,
            seq=known.committed_seq,
            key=data.key,
        )
    if late is not None or (known.plan_version, known.attempt) == (state.version, data.attempt):
        raise error(
            "EFFECT_DUPLICATE",
            f"effect {data.key} of step {data.step} was already requested by attempt {known.attempt} of plan "
            f"version {known.plan_version} (seq {known.seq}) and never committed: check its target, then commit it "
            "or, from a later attempt, request it again",
            step=data.step,
            seq=known.seq,
            key=data.key,
        )


def _check_gate(state: StateView, step: str) -> None:
    """APPROVAL_REQUIRED for a step whose effects need an approval that no grant for the active version gives."""
    plan = state.plan
    assert plan is not None
    spec = steps_by_id(plan)[step]
    why = needs_approval(spec, state.authority, state.version, effect=True)
    if why is not None:
        raise error(
            "APPROVAL_REQUIRED",
            f"step {step}'s effects need approval ({why.replace('_', ' ')}): no granted approval for plan version "
            f"{state.version} covers it",
            step=step,
            plan_version=state.version,
            because=why,
            requests=pending_for(state, step),
        )


def _check_commit(state: StateView, data: EffectCommitted, plan_version: int, known: Effect | None) -> None:
    if known is None:
        keys = [e.key for e in state.effects]
        raise error(
            "EFFECT_NOT_REQUESTED",
            f"no effect {data.key} was requested{did_you_mean(data.key, keys)}: request it before it happens, "
            "commit it after",
            step=data.step,
            key=data.key,
        )
    if known.committed_seq is not None:
        raise error(
            "EFFECT_DUPLICATE",
            f"effect {data.key} was already committed at seq {known.committed_seq}",
            step=data.step,
            seq=known.committed_seq,
            key=data.key,
        )
    if (known.step, known.plan_version, known.attempt) != (data.step, plan_version, data.attempt):
        raise error(
            "EFFECT_MISMATCH",
            f"effect {data.key} was requested by step {known.step}, attempt {known.attempt} of plan version "
            f"{known.plan_version} (seq {known.seq}); its commit names step {data.step}, attempt {data.attempt} of "
            f"version {plan_version}",
            step=data.step,
            seq=known.seq,
            key=data.key,
            expected=known.attempt,
            actual=data.attempt,
        )


# --------------------------------------------------------------------------- declarations


def _build(state: StateView, command: RequestEffect | CommitEffect) -> tuple[EffectEvent, int]:
    if state.plan is None:
        require_plan(state)
    return build_effect(state, command)


#: What the ``--plan-version`` help says of an effect issued against a superseded version.
_LATE_EFFECT = (
    "An effect of a superseded version (or a stale attempt, or after the run finished) is still recorded, beside "
    "the orphans: never lost, never applied to a step."
)
#: The ``--attempt`` help of an effect.
_ATTEMPT = Field(
    help="The attempt the effect belongs to (default: a request's, the step's current one; a commit's, its request's).",
    metavar="N",
    minimum=1,
)
#: What every effect refuses with.
_REFUSALS = ("PLAN_NOT_CREATED", "UNKNOWN_PLAN_VERSION", "INVALID_ID", "EFFECT_DUPLICATE", "USAGE")

REQUEST_EFFECT = declare(
    RequestEffect,
    build=_build,
    rules={EffectRequested: timeless(check_effect)},
    late=effect_lateness,
    fields={
        "effect": Field(
            help="Record that STEP is about to perform the effect KEY (its idempotency key).", metavar="KEY"
        ),
        "target": Field(help="With --requested (required): what the effect acts on.", metavar="TARGET"),
        "before": Field(help="With --requested: a summary of the target's state before the effect.", metavar="TEXT"),
        "attempt": _ATTEMPT,
    },
    superseded=_LATE_EFFECT,
    refusals=(
        *_REFUSALS,
        "REASON_REQUIRED",
        "STEP_NOT_FOUND",
        "INVALID_TRANSITION",
        "RUN_FINISHED",
        "EFFECT_KEY_CONFLICT",
        "APPROVAL_REQUIRED",
    ),
    cli={
        "effect": Help(
            "Record a side effect of STEP's attempt: --requested KEY before it acts, --committed KEY once it knows "
            "the\neffect happened. Format v2 (effect.requested, effect.committed).",
            "An effect requested and never committed is in doubt: after a crash, resume says to check its target "
            "before\nthe step's work is done again. One key names one effect (EFFECT_KEY_CONFLICT for another step "
            "or target);\na key already committed, or requested again by the same attempt, is EFFECT_DUPLICATE; a "
            "later attempt may\nrequest it again. A step whose scope sets effects_require_approval needs a granted "
            "approval first\n(APPROVAL_REQUIRED).",
            examples=(
                'plantrail effect run.jsonl deploy --requested deploy-42 --target prod --before "v1.3 serving"',
                'plantrail effect run.jsonl deploy --committed deploy-42 --result "v1.4 serving"',
            ),
        )
    },
)

COMMIT_EFFECT = declare(
    CommitEffect,
    build=_build,
    rules={EffectCommitted: timeless(check_effect)},
    late=effect_lateness,
    fields={
        "effect": Field(help="Record that the effect KEY happened (it was requested before).", metavar="KEY"),
        "result": Field(help="With --committed: a summary of what the effect did.", metavar="TEXT"),
        "attempt": _ATTEMPT,
    },
    superseded=_LATE_EFFECT,
    refusals=(*_REFUSALS, "EFFECT_NOT_REQUESTED", "EFFECT_MISMATCH"),
)


@REQUEST_EFFECT.method
def request_effect(
    step: str, effect: str, target: str, *, before: str = "", **envelope: Unpack[Attempted]
) -> RequestEffect:
    """Record that ``step``'s attempt is about to perform the side effect ``effect`` (its idempotency key)
    on ``target``, with a summary of the target's state ``before`` (``plantrail effect --requested``; the
    rules are in :mod:`ledger.rules.effects`). A late request is recorded beside the orphans (``ack.orphan``)."""
    return RequestEffect(step=step, effect=effect, target=target, before=before, **fields(envelope))


@COMMIT_EFFECT.method
def commit_effect(step: str, effect: str, *, result: str = "", **envelope: Unpack[Attempted]) -> CommitEffect:
    """Record that the side effect ``effect`` of ``step`` happened, with a summary of its ``result``
    (``plantrail effect --committed``); its plan version and attempt default to its request's."""
    return CommitEffect(step=step, effect=effect, result=result, **fields(envelope))
