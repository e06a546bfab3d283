"""Commands on approvals: request-approval, approve, deny; and the lines status and next print about them.

Each parses its arguments, calls one library function, and renders the acknowledgement (as the recording
commands do, :mod:`cli.record`).
"""

from __future__ import annotations

from typing import cast

import click

from plantrail.cli.common import log_argument
from plantrail.cli.record import _help, _plan_version_option, _run, _write_options
from plantrail.ledger.rules.approvals import DECIDE, REQUEST_APPROVAL

__all__ = ["approval_commands", "approve", "deny", "request_approval"]

_ASK = REQUEST_APPROVAL


@click.command("request-approval", help=_ASK.cli["request-approval"].text)
@log_argument
@click.argument("request")
@click.option("--question", required=True, metavar=_ASK.field("question").metavar, help=_help(_ASK, "question"))
@click.option("--steps", "steps", required=True, metavar=_ASK.field("steps").metavar, help=_help(_ASK, "steps"))
@click.option("--writes", "writes", multiple=True, metavar=_ASK.field("writes").metavar, help=_help(_ASK, "writes"))
@click.option("--tool", "tools", multiple=True, metavar=_ASK.field("tools").metavar, help=_help(_ASK, "tools"))
@_plan_version_option(_ASK)
@_write_options(_ASK)
def request_approval(
    log: str,
    request: str,
    question: str,
    steps: str,
    writes: tuple[str, ...],
    tools: tuple[str, ...],
    plan_version: int | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.approvals import RequestApproval
    from plantrail.ledger.vocabulary.events import Actor

    command = RequestApproval(
        request=request,
        question=question,
        steps=tuple(s.strip() for s in steps.split(",") if s.strip()),
        writes=writes,
        tools=tools,
        plan_version=plan_version,
        key=key,
        actor=cast(Actor, actor),
    )
    _run(log, command, expected_seq, as_json)


def _decision(granted: bool) -> click.Command:
    name = "approve" if granted else "deny"

    @click.command(name, help=DECIDE.cli[name].text)
    @log_argument
    @click.argument("request")
    @click.option(
        "--by", default="user", show_default=True, metavar=DECIDE.field("by").metavar, help=_help(DECIDE, "by")
    )
    @click.option("--why", default="", metavar=DECIDE.field("why").metavar, help=_help(DECIDE, "why"))
    @_plan_version_option(DECIDE)
    @_write_options(DECIDE)
    def command(
        log: str,
        request: str,
        by: str,
        why: str,
        plan_version: int | None,
        expected_seq: int | None,
        key: str | None,
        actor: str,
        as_json: bool,
    ) -> None:
        from plantrail.ledger.rules.approvals import Decide
        from plantrail.ledger.vocabulary.events import Actor

        decided = Decide(
            request=request,
            granted=granted,
            by=by,
            why=why,
            plan_version=plan_version,
            key=key,
            actor=cast(Actor, actor),
        )
        _run(log, decided, expected_seq, as_json)

    return command


approve = _decision(True)
deny = _decision(False)
approval_commands = (request_approval, approve, deny)
