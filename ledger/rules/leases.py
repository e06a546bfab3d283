"""Leases, heartbeats and abandon: the commands and their rules, checked before a byte is written.

An attempt carries a lease when its step declares ``timeout_s`` (the lease runs from the start) or when its
worker sends heartbeats (``step.heartbeat``: each renews the lease for ``lease_s`` seconds, by default the
step's ``timeout_s``). Whether a lease has expired is judged at a command's time (:mod:`projections.leases`),
never by the reducer.

Fencing. A heartbeat is fenced like a result by (plan version, step, attempt), but it carries no work, so a
late one is **refused**, not put on the orphan path: a heartbeat for a superseded version is
``STALE_PLAN_VERSION``, one for an attempt that is not the step's current one (or that was abandoned) is
``STALE_ATTEMPT``; the refusal tells the worker to stop. ``abandon`` is fenced the same way.

``abandon`` ends an attempt whose worker is gone: the step returns to pending and the attempt is not
charged to ``max_attempts``. It is allowed at any time with a reason (``resume`` proposes it only for an
expired lease); a result the gone worker still sends is late (``STALE_ATTEMPT``, the orphan path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

import msgspec

from plantrail.ledger.rules.commands import LATE_REFUSED, Attempted, Field, Help, declare, fields, timeless
from plantrail.ledger.rules.guards import issued_version, require_open, require_step
from plantrail.ledger.vocabulary.durations import MAX_SECONDS, is_seconds
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Actor, Source, StepAbandoned, StepHeartbeat
from plantrail.ledger.vocabulary.items import as_text
from plantrail.ledger.vocabulary.plan import steps_by_id

if TYPE_CHECKING:
    from plantrail.projections.model import StepState
    from plantrail.projections.state import StateView

__all__ = [
    "ABANDON",
    "HEARTBEAT",
    "Abandon",
    "Heartbeat",
    "abandon",
    "build_abandon",
    "build_heartbeat",
    "check_abandon",
    "check_heartbeat",
    "heartbeat",
]


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True):
    """The worker of a step's attempt is alive: renew its lease for ``lease_s`` seconds (default: the step's
    ``timeout_s``)."""

    step: str
    lease_s: float | None = None
    plan_version: int | None = None
    attempt: int | None = None
    actor: Actor = "runtime"
    source: Source | None = None
    key: str | None = None


class Abandon(msgspec.Struct, frozen=True, kw_only=True):
    """End a step's attempt whose worker is gone, without charging the attempt; the step returns to pending."""

    step: str
    reason: str
    plan_version: int | None = None
    attempt: int | None = None
    actor: Actor = "runtime"
    source: Source | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        as_text(self.reason, "reason")


def _current_attempt(state: StateView, step: str, attempt: int | None) -> int:
    if attempt is not None:
        return attempt
    current = state.steps.get(step)
    return 0 if current is None else current.attempt


def build_heartbeat(state: StateView, command: Heartbeat) -> StepHeartbeat:
    """The heartbeat event: the attempt defaults to the step's current one, the lease to its ``timeout_s``
    (0 when neither is there: :func:`check_heartbeat` refuses it, after naming a missing step)."""
    lease = command.lease_s
    if lease is None and state.plan is not None:
        spec = steps_by_id(state.plan).get(command.step)
        lease = None if spec is None else spec.timeout_s
    if isinstance(lease, bool) or not isinstance(lease, int | float):
        lease = 0.0
    return StepHeartbeat(
        step=command.step, attempt=_current_attempt(state, command.step, command.attempt), lease_s=float(lease)
    )


def build_abandon(state: StateView, command: Abandon) -> StepAbandoned:
    """The abandon event: the attempt defaults to the step's current one."""
    attempt = _current_attempt(state, command.step, command.attempt)
    return StepAbandoned(step=command.step, attempt=attempt, reason=command.reason.strip())


def _fenced(state: StateView, step_id: str, attempt: int, plan_version: int, what: str) -> StepState:
    """The step a heartbeat or abandon applies to: in the active version, in progress, on its current attempt."""
    if plan_version < state.version:
        raise error(
            "STALE_PLAN_VERSION",
            f"{what} {step_id} was issued against plan version {plan_version}; version {state.version} "
            "superseded it (the worker's attempt is over: stop it)",
            step=step_id,
            plan_version=plan_version,
            expected=state.version,
            actual=plan_version,
        )
    require_open(state)
    step = require_step(state, step_id)
    if attempt != step.attempt or attempt in step.abandoned:
        state_now = "abandoned" if attempt in step.abandoned else f"the step's attempt is {step.attempt}"
        raise error(
            "STALE_ATTEMPT",
            f"{what} {step_id} names attempt {attempt}, which is not running ({state_now}; the worker's "
            "attempt is over: stop it)",
            step=step_id,
            plan_version=state.version,
            expected=step.attempt,
            actual=attempt,
        )
    if step.status != "in_progress":
        raise error(
            "INVALID_TRANSITION",
            f"step {step_id} is {step.status}; it must be in_progress for {what}",
            step=step_id,
            plan_version=state.version,
            current=step.status,
            expected="in_progress",
            target="in_progress" if what == "heartbeat" else "pending",
        )
    return step


def check_heartbeat(state: StateView, data: StepHeartbeat, plan_version: int) -> None:
    """Refuse a heartbeat that is late (STALE_PLAN_VERSION, STALE_ATTEMPT; also for an attempt marked for
    cancellation because an input changed), for a step not in progress (INVALID_TRANSITION) or with a lease that
    is not a positive number of seconds (LEASE_REQUIRED)."""
    step = _fenced(state, data.step, data.attempt, plan_version, "heartbeat")
    if step.cancel is not None:  # format v2: an input changed under the attempt (projections.lineage_digest)
        raise error(
            "STALE_ATTEMPT",
            f"heartbeat {data.step}: the attempt is to be cancelled ({step.cancel}); stop its worker",
            step=data.step,
            plan_version=state.version,
            expected=step.attempt,
            actual=data.attempt,
        )
    if data.lease_s == 0:
        raise error(
            "LEASE_REQUIRED",
            f"step {data.step} declares no timeout_s: give the heartbeat a lease",
            step=data.step,
        )
    if not is_seconds(data.lease_s):
        raise error(
            "LEASE_REQUIRED",
            f"a heartbeat's lease must be a number of seconds > 0 and at most {MAX_SECONDS:,}, not {data.lease_s:g}",
            step=data.step,
        )


def check_abandon(state: StateView, data: StepAbandoned, plan_version: int) -> None:
    """Refuse an abandon that is late (STALE_PLAN_VERSION, STALE_ATTEMPT), for a step not in progress
    (INVALID_TRANSITION) or without a reason (REASON_REQUIRED)."""
    if not data.reason.strip():
        raise error("REASON_REQUIRED", f"abandoning {data.step} needs a reason", step=data.step)
    _fenced(state, data.step, data.attempt, plan_version, "abandon")


def _build_heartbeat(state: StateView, command: Heartbeat) -> tuple[StepHeartbeat, int]:
    version = issued_version(state, command.plan_version)
    return build_heartbeat(state, command), version


def _build_abandon(state: StateView, command: Abandon) -> tuple[StepAbandoned, int]:
    version = issued_version(state, command.plan_version)
    return build_abandon(state, command), version


#: What a heartbeat and an abandon refuse with.
_REFUSALS = (
    "PLAN_NOT_CREATED",
    "UNKNOWN_PLAN_VERSION",
    "STALE_PLAN_VERSION",
    "STALE_ATTEMPT",
    "RUN_FINISHED",
    "STEP_NOT_FOUND",
    "INVALID_TRANSITION",
)

HEARTBEAT = declare(
    Heartbeat,
    build=_build_heartbeat,
    rules={StepHeartbeat: timeless(check_heartbeat)},
    fields={
        "lease_s": Field(
            help="How long the lease runs from now (default: the step's timeout_s; LEASE_REQUIRED without either).",
            metavar="SECONDS",
            minimum=0,
            maximum=MAX_SECONDS,
            open_minimum=True,
        )
    },
    superseded=f"{LATE_REFUSED}: a late heartbeat tells its worker to stop (STALE_ATTEMPT for an attempt that is not "
    "running).",
    refusals=(*_REFUSALS, "LEASE_REQUIRED"),
    cli={
        "heartbeat": Help(
            "Renew the lease of STEP's running attempt: its worker is alive. Format v2 (step.heartbeat).",
            "The lease expires when a command's time is past the last start or heartbeat plus the lease; status,\n"
            "next and resume show expired leases, and resume proposes abandon for them.",
            examples=(
                "plantrail heartbeat run.jsonl implement",
                "plantrail heartbeat run.jsonl implement --lease 300 --attempt 2",
            ),
        )
    },
)

ABANDON = declare(
    Abandon,
    build=_build_abandon,
    rules={StepAbandoned: timeless(check_abandon)},
    fields={"reason": Field(help="Why the attempt is abandoned (its worker is gone).", metavar="TEXT")},
    superseded=f"{LATE_REFUSED}.",
    refusals=(*_REFUSALS, "REASON_REQUIRED", "USAGE"),
    cli={
        "abandon": Help(
            "End STEP's running attempt whose worker is gone (after kill -9, say) without charging it to\n"
            "max_attempts: the step returns to pending. Format v2 (step.abandoned).",
            "A result the gone worker still sends afterwards lands on the orphan path (STALE_ATTEMPT). Allowed at "
            "any\ntime with a reason; resume proposes it for an attempt whose lease expired.",
            examples=('plantrail abandon run.jsonl implement --reason "worker w1 was killed; its lease expired"',),
        )
    },
)


@HEARTBEAT.method
def heartbeat(step: str, *, lease_s: float | None = None, **envelope: Unpack[Attempted]) -> Heartbeat:
    """Renew the lease of ``step``'s running attempt for ``lease_s`` seconds (default: its ``timeout_s``);
    a late heartbeat is refused, STALE_PLAN_VERSION or STALE_ATTEMPT (``plantrail heartbeat``)."""
    return Heartbeat(step=step, lease_s=lease_s, **fields(envelope))


@ABANDON.method
def abandon(step: str, reason: str, **envelope: Unpack[Attempted]) -> Abandon:
    """End ``step``'s running attempt whose worker is gone, without charging the attempt: the step returns
    to pending (``plantrail abandon``)."""
    return Abandon(step=step, reason=reason, **fields(envelope))
