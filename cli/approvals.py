"""Commands on approvals: request-approval, approve, deny; and the lines status and next print about them.

Each parses its arguments, calls one library function, and renders the acknowledgement (as the recording
commands do, :mod:`cli.record`).
"""

from __future__ import annotations

from typing import cast

import click

from plantrail.cli.common import log_argument
from plantrail.cli.record import _plan_version_option, _run, _write_options

__all__ = ["approval_commands", "approve", "deny", "request_approval"]

_STALE = "A superseded version is refused (STALE_PLAN_VERSION) and nothing is recorded."


@click.command("request-approval")
@log_argument
@click.argument("request")
@click.option("--question", required=True, metavar="TEXT", help="The one bounded question the approver answers.")
@click.option("--steps", "steps", required=True, metavar="IDS", help="The steps the approval covers, comma-separated.")
@click.option(
    "--writes",
    "writes",
    multiple=True,
    metavar="GLOB",
    help="A write glob the approval adds to their scope (repeatable).",
)
@click.option("--tool", "tools", multiple=True, metavar="NAME", help="A tool the approval allows them (repeatable).")
@_plan_version_option(_STALE)
@_write_options("agent")
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
    """Ask for approval REQUEST (an id): a bounded question about some steps, with the scope change asked for.

    The request is bound to the active plan version: a replan makes it stale (ask again). A step with
    requires_approval, or whose scope a replan widened, waits until a granted approval covers it; a grant's
    --writes and --tool widen the steps' scope for that version (ending a scope violation's pause they cover).

    \b
    Example:
      plantrail request-approval run.jsonl lockfile --steps implement --writes package-lock.json \\
          --question "May implement update package-lock.json?"
    """
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

    @click.command(name)
    @log_argument
    @click.argument("request")
    @click.option("--by", default="user", show_default=True, metavar="WHO", help="Who decided.")
    @click.option("--why", default="", metavar="TEXT", help="Why.")
    @_plan_version_option(_STALE)
    @_write_options("user")
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

    command.help = (
        "Grant approval REQUEST: the steps it covers may start in the plan version it was asked for, with the "
        "scope change it asked for.\n\n\b\nExample:\n  plantrail approve run.jsonl lockfile --by ana --why ok"
        if granted
        else "Deny approval REQUEST: the run pauses until a replan removes or changes the steps it covers.\n\n"
        '\b\nExample:\n  plantrail deny run.jsonl lockfile --by ana --why "no new dependencies"'
    )
    return command


approve = _decision(True)
deny = _decision(False)
approval_commands = (request_approval, approve, deny)
