"""Leases: which attempts carry one, and which have expired at a given time.

A lease is state (:class:`~projections.model.Lease`: set by a start when the step declares ``timeout_s``,
renewed by each ``step.heartbeat``); whether it has *expired* is derived, judged at ``now``, the time of the
command that asks (``status``, ``next``, ``resume``), never in the reducer or the state hash. A lease has
expired when ``now`` is past its ``since`` plus its ``seconds``. A lease whose end would fall after the last time
a timestamp can say (only an old or hand-made log holds one: :mod:`ledger.vocabulary.durations` bounds the
numbers at the input) ends at that last time, so it never expires.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from plantrail.ledger.vocabulary.contract import parse_ts
from plantrail.ledger.vocabulary.durations import seconds_after
from plantrail.ledger.vocabulary.plan import steps_by_id
from plantrail.projections.model import Lease, StepState

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec
    from plantrail.projections.model import PlanState

__all__ = ["expired_leases", "expires_at", "lease_view", "start_lease"]


def start_lease(plan: PlanSpec | None, step: str, ts: str, seq: int) -> Lease | None:
    """The lease a start at ``ts`` (seq ``seq``) gives ``step``: its ``timeout_s`` from then; None without one."""
    spec = None if plan is None else steps_by_id(plan).get(step)
    timeout = None if spec is None else spec.timeout_s
    return None if timeout is None else Lease(ts, timeout, seq)


def expires_at(lease: Lease) -> datetime | None:
    """When ``lease`` runs out, in UTC, at the latest the last time a timestamp can say; None when its
    timestamp or its seconds are no such thing (a hand-made log)."""
    since = parse_ts(lease.since)
    return None if since is None else seconds_after(since, lease.seconds)


def _is_expired(lease: Lease, moment: datetime | None) -> bool | None:
    end = expires_at(lease)
    if end is None or moment is None:
        return None
    return moment > end


def _leased(state: PlanState) -> list[tuple[StepState, Lease]]:
    return [(s, s.lease) for s in state.steps.values_in_order() if s.status == "in_progress" and s.lease is not None]


def _entry(step: StepState, lease: Lease, moment: datetime | None) -> dict[str, Any]:
    end = expires_at(lease)
    return {
        "step": step.id,
        "attempt": step.attempt,
        "since": lease.since,
        "since_seq": lease.seq,
        "lease_s": lease.seconds,
        "expires_at": None if end is None else end.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "expired": _is_expired(lease, moment),
    }


def lease_view(state: PlanState, now: str | None) -> list[dict[str, Any]]:
    """Every in-progress attempt that carries a lease, in step order: ``step``, ``attempt``, ``since`` (the
    start's or last heartbeat's timestamp), ``since_seq``, ``lease_s``, ``expires_at`` and ``expired`` (at
    ``now``; None when ``now`` is not given)."""
    moment = None if now is None else parse_ts(now)
    return [_entry(step, lease, moment) for step, lease in _leased(state)]


def expired_leases(state: PlanState, now: str | None) -> list[dict[str, Any]]:
    """The entries of :func:`lease_view` whose lease has expired at ``now`` (none when ``now`` is None)."""
    return [entry for entry in lease_view(state, now) if entry["expired"]]
