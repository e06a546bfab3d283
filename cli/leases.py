"""Commands for an attempt's lease: heartbeat and abandon (the rules are in :mod:`ledger.leases`).

Each parses its arguments, calls one library function, and renders the acknowledgement as the recording
commands do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import click

from plantrail.cli.common import log_argument
from plantrail.cli.record import _LATE_REFUSED, _attempt_option, _plan_version_option, _run, _write_options

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Actor

__all__ = ["abandon", "heartbeat", "lease_commands"]

_LATE_HEARTBEAT = (
    f"{_LATE_REFUSED}: a late heartbeat tells its worker to stop (STALE_ATTEMPT for an attempt that is not running)."
)


@click.command()
@log_argument
@click.argument("step")
@click.option(
    "--lease",
    "lease_s",
    type=click.FloatRange(min=0, min_open=True, max=1e15, max_open=True),
    metavar="SECONDS",
    help="How long the lease runs from now (default: the step's timeout_s; LEASE_REQUIRED without either).",
)
@_plan_version_option(_LATE_HEARTBEAT)
@_attempt_option
@_write_options("runtime")
def heartbeat(
    log: str,
    step: str,
    lease_s: float | None,
    plan_version: int | None,
    attempt: int | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    """Renew the lease of STEP's running attempt: its worker is alive. Format v2 (step.heartbeat).

    The lease expires when a command's time is past the last start or heartbeat plus the lease; status,
    next and resume show expired leases, and resume proposes abandon for them.

    \b
    Example:
      plantrail heartbeat run.jsonl implement
      plantrail heartbeat run.jsonl implement --lease 300 --attempt 2
    """
    from plantrail.ledger.rules.leases import Heartbeat

    command = Heartbeat(
        step=step,
        lease_s=lease_s,
        plan_version=plan_version,
        attempt=attempt,
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command()
@log_argument
@click.argument("step")
@click.option("--reason", required=True, metavar="TEXT", help="Why the attempt is abandoned (its worker is gone).")
@_plan_version_option(f"{_LATE_REFUSED}.")
@_attempt_option
@_write_options("runtime")
def abandon(
    log: str,
    step: str,
    reason: str,
    plan_version: int | None,
    attempt: int | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    """End STEP's running attempt whose worker is gone (after kill -9, say) without charging it to
    max_attempts: the step returns to pending. Format v2 (step.abandoned).

    A result the gone worker still sends afterwards lands on the orphan path (STALE_ATTEMPT). Allowed at any
    time with a reason; resume proposes it for an attempt whose lease expired.

    \b
    Example:
      plantrail abandon run.jsonl implement --reason "worker w1 was killed; its lease expired"
    """
    from plantrail.ledger.rules.leases import Abandon

    command = Abandon(
        step=step,
        reason=reason,
        plan_version=plan_version,
        attempt=attempt,
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


lease_commands = (heartbeat, abandon)
