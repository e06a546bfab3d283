"""Commands for an attempt's lease: heartbeat and abandon (the rules are in :mod:`ledger.rules.leases`).

Each parses its arguments, calls one library function, and renders the acknowledgement as the recording
commands do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import click

from plantrail.cli.common import log_argument
from plantrail.cli.record import _attempt_option, _help, _number, _plan_version_option, _run, _write_options
from plantrail.ledger.rules.leases import ABANDON, HEARTBEAT

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Actor

__all__ = ["abandon", "heartbeat", "lease_commands"]


@click.command(help=HEARTBEAT.cli["heartbeat"].text)
@log_argument
@click.argument("step")
@click.option(
    "--lease",
    "lease_s",
    type=_number(HEARTBEAT.field("lease_s"), float),
    metavar=HEARTBEAT.field("lease_s").metavar,
    help=_help(HEARTBEAT, "lease_s"),
)
@_plan_version_option(HEARTBEAT)
@_attempt_option(HEARTBEAT)
@_write_options(HEARTBEAT)
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


@click.command(help=ABANDON.cli["abandon"].text)
@log_argument
@click.argument("step")
@click.option("--reason", required=True, metavar=ABANDON.field("reason").metavar, help=_help(ABANDON, "reason"))
@_plan_version_option(ABANDON)
@_attempt_option(ABANDON)
@_write_options(ABANDON)
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
