"""``plantrail hook AGENT``: one agent hook call (payload on stdin); ``plantrail hook errors``: what went wrong.

The hook always exits 0 and prints nothing but the JSON the agent reads (on SessionStart, where the session's
run and plan stand, as ``additionalContext``; on PreCompact, what the summary must keep); its errors go to
``.plantrail/hook-errors.log`` (:mod:`plantrail.ledger.capture.hook`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from plantrail.cli.common import emit, json_option, store_option
from plantrail.cli.hook_call import agent_output, record

if TYPE_CHECKING:
    from plantrail.ledger.capture.hook import HookResult

__all__ = ["hook"]


@click.group()
def hook() -> None:
    """Record an agent's plan live from its own hooks (see docs/live-agents.md).

    \b
    Example:
      echo '{"session_id": "s1", "hook_event_name": "SessionStart", "cwd": "."}' | plantrail hook claude
      plantrail hook errors
    """


@hook.command(name="claude")
@store_option
@json_option
def claude_command(store: str | None, as_json: bool) -> None:
    """Take one Claude Code hook payload on stdin; append to .plantrail/runs/<session id>.jsonl (with --store or
    $PLANTRAIL_STORE: to the session's run in that store; the journal and error file stay in .plantrail).

    Always exits 0; prints only the JSON Claude Code reads (the resume receipt on SessionStart). With --json
    (for scripts, not for the agent's settings) it prints what the call did instead: the log and any errors.

    \b
    Example:
      plantrail install claude --project     # registers this command for the plan hooks
    """
    _call("claude", store, as_json)


@hook.command(name="gemini")
@store_option
@json_option
def gemini_command(store: str | None, as_json: bool) -> None:
    """Take one Gemini CLI hook payload on stdin (AfterTool on write_todos); append to the session's run.

    Always exits 0 and prints nothing (with --json, for scripts: the log and any errors).

    \b
    Example:
      gemini extensions install ./integrations/gemini-cli
    """
    _call("gemini", store, as_json)


@hook.command(name="opencode")
@store_option
@json_option
def opencode_command(store: str | None, as_json: bool) -> None:
    """Take OpenCode todo.updated events on stdin, one JSON line each; append to each session's run.

    Always exits 0 and prints nothing (with --json, for scripts: the log and any errors).

    \b
    Example:
      plantrail install opencode
    """
    _call("opencode", store, as_json)


def _call(agent: str, store: str | None, as_json: bool) -> None:
    """One hook call (:mod:`plantrail.cli.hook_call`, which also answers the option-less form without click);
    with --json, what it did instead of what the agent reads."""
    result = record(agent, store)
    if as_json:
        _report(result)
    elif (text := agent_output(result)) is not None:
        click.echo(text)


@hook.command(name="errors")
@click.option(
    "--dir", "folder", metavar="DIR", help="The .plantrail folder (default: $PLANTRAIL_HOME or ./.plantrail)."
)
@json_option
def errors_command(folder: str | None, as_json: bool) -> None:
    """Show the hooks' error file (one line per payload a hook could not record).

    \b
    Example:
      plantrail hook errors
    """
    from pathlib import Path

    from plantrail.cli.terminal import printable
    from plantrail.ledger.capture.hook import hook_errors, plantrail_folder

    place = Path(folder) if folder is not None else plantrail_folder(None)
    text = hook_errors(place)
    data = {"ok": True, "folder": str(place), "errors": text.splitlines()}
    emit(as_json, data, lambda: printable(text.rstrip("\n")) if text else f"no hook errors in {place}")


def _report(result: HookResult) -> None:
    """What one hook call did, as JSON (the exit status stays 0)."""
    log = None if result.log is None else str(result.log)
    emit(True, {"ok": not result.errors, "log": log, "errors": list(result.errors), "receipt": result.receipt}, str)
