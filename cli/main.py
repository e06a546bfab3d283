"""The ``plantrail`` command: the click group, and the one place errors become exit codes.

Library errors print ``error[CODE]: message`` on stderr and exit with the error's class code (1 refused,
2 usage, 3 damaged log, 4 cannot read or write); with ``--json`` the error also goes to stdout as JSON when
the command printed nothing else (a torn tail is reported after the valid part's document): ``{"ok": false,
"error": {...}, "errors": [...]}``, where ``errors`` lists every problem found (a plan draft's validation
reports them all; ``error`` is the first) and text output prints each on its own line.
No Python traceback ever reaches a user: anything unexpected is ``error[INTERNAL]`` with exit 70.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from plantrail.cli.common import printed_output, reset_output
from plantrail.cli.terminal import printable

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.errors import PlantrailError

__all__ = ["all_commands", "failed", "main", "plantrail"]

EXIT_INTERNAL = 70

#: Where each command lives; a command's module is imported only when that command runs (fast start-up).
_RECORDING = ("create", "start", "complete", "block", "fail", "criterion", "finish", "replan", "adopt")
COMMANDS: dict[str, str] = {
    **dict.fromkeys(_RECORDING, "plantrail.cli.record"),
    **dict.fromkeys(("heartbeat", "abandon"), "plantrail.cli.leases"),
    "status": "plantrail.cli.inspect:status",
    "log": "plantrail.cli.timeline:log_command",
    "show": "plantrail.cli.timeline:show",
    "next": "plantrail.cli.inspect:next_command",
    **dict.fromkeys(("versions", "replay", "diff", "why", "orphans", "resume"), "plantrail.cli.replay"),
    **dict.fromkeys(("verify", "checkpoint", "repair", "salvage", "schema"), "plantrail.cli.maintain"),
    "keygen": "plantrail.cli.signing:keygen",
    "import": "plantrail.cli.importing:import_command",
    "extend": "plantrail.cli.extending:extend",
    "copy": "plantrail.cli.stores:copy_command",
    "store": "plantrail.cli.stores:store",
    "runs": "plantrail.cli.runs:runs",
    "serve": "plantrail.cli.serve:serve_command",
    "mcp": "plantrail.cli.mcp_server:mcp_command",
    "acp": "plantrail.cli.acp:acp_command",
    "hook": "plantrail.cli.hooks:hook",
    "install": "plantrail.cli.install:install",
    "uninstall": "plantrail.cli.install:uninstall",
    **dict.fromkeys(("graph", "report", "watch"), "plantrail.cli.pictures"),
    **dict.fromkeys(("fork", "check", "brief"), "plantrail.cli.lineage"),
    "request-approval": "plantrail.cli.approvals:request_approval",
    **dict.fromkeys(("approve", "deny"), "plantrail.cli.approvals"),
    "effect": "plantrail.cli.effects:effect",
    "observe": "plantrail.cli.observe:observe",
    "new": "plantrail.cli.starting:new",
    "export": "plantrail.cli.export:export",
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when the command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command named by ``args[0]``; an unknown name is a usage error that suggests the closest one."""
        name = args[0] if args else ""
        if name in COMMANDS or ctx.resilient_parsing or name.startswith("-"):
            return super().resolve_command(ctx, args)
        from plantrail.ledger.vocabulary.plan import did_you_mean

        raise click.UsageError(f"No such command {name!r}{did_you_mean(name, COMMANDS)}.", ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute or cmd_name)
        assert isinstance(command, click.Command)
        return command


def all_commands() -> dict[str, click.Command]:
    """Every command by name (imports them all)."""
    ctx = click.Context(plantrail)
    return {name: command for name in plantrail.list_commands(ctx) if (command := plantrail.get_command(ctx, name))}


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="plantrail", prog_name="plantrail")
def plantrail() -> None:
    """Record, replay and audit what an AI agent planned and did.

    Every create / start / complete / block / fail / replan is an append-only, hash-chained JSONL event;
    everything else is rebuilt from the log.

    \b
    Example:
      plantrail create run.jsonl --plan draft.json
      plantrail start run.jsonl inspect
      plantrail complete run.jsonl inspect --evidence "read cli.py and its tests"
      plantrail status run.jsonl
    """


def _report(
    code: str,
    message: str,
    exit_code: int,
    as_json: bool,
    fields: dict[str, object] | None = None,
    more: Sequence[PlantrailError] = (),
) -> int:
    """Print an error (and ``more`` problems found with it, each on its own line); return the exit code."""
    click.echo(f"error[{code}]: {printable(message)}", err=True)  # one line, nothing a terminal acts on
    for other in more:
        click.echo(f"error[{other.code}]: {printable(other.text('cli'))}", err=True)
    unlisted = (fields or {}).get("more_problems")
    if unlisted:
        click.echo(f"... and more problems, not listed (the first {1 + len(more)} are)", err=True)
    if as_json and not printed_output():  # stdout holds exactly one JSON document
        import orjson

        first = {"code": code, "message": message, "exit_code": exit_code, **(fields or {})}
        body = {"ok": False, "error": first, "errors": [first, *(other.as_dict() for other in more)]}
        click.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2, default=str).decode())
    return exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    reset_output()
    if not args:  # a bare `plantrail` shows its help, like --help
        args = ["--help"]
    try:
        result = plantrail.main(args=args, prog_name="plantrail", standalone_mode=False)
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError) and exc.ctx is not None and not as_json:
            click.echo(exc.ctx.get_usage(), err=True)
        return _report("USAGE", exc.format_message(), 2, as_json)
    except click.Abort:
        return _report("INTERRUPTED", "aborted", 130, as_json)
    except KeyboardInterrupt:
        return _report("INTERRUPTED", "interrupted", 130, as_json)
    except BrokenPipeError:
        return 0
    except Exception as exc:
        return failed(exc, as_json)
    return result if isinstance(result, int) else 0  # click returns ctx.exit(code)'s code here


def failed(exc: Exception | KeyboardInterrupt, as_json: bool) -> int:
    """Report what a command raised outside click (``error[CODE]``, never a traceback); its exit code."""
    if isinstance(exc, KeyboardInterrupt):
        return _report("INTERRUPTED", "interrupted", 130, as_json)
    from plantrail.ledger.vocabulary.errors import PlantrailError

    if isinstance(exc, PlantrailError):
        more = getattr(exc, "errors", (exc,))[1:]  # a PlanInvalid lists every problem validation found
        return _report(exc.code, exc.text("cli"), exc.exit_code, as_json, dict(exc.fields), more)
    return _report(
        "INTERNAL", f"{type(exc).__name__}: {exc} (a bug in plantrail; please report it)", EXIT_INTERNAL, as_json
    )


if __name__ == "__main__":
    sys.exit(main())
