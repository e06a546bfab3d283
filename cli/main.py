"""The ``plantrail`` command: the click group, and the one place errors become exit codes.

Library errors print ``error[CODE]: message`` on stderr and exit with the error's class code (1 refused,
2 usage, 3 damaged log, 4 cannot read or write); with ``--json`` the error also goes to stdout as JSON.
No Python traceback ever reaches a user: anything unexpected is ``error[INTERNAL]`` with exit 70.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from cli.inspect import inspect_commands
from cli.maintain import maintain_commands
from cli.record import record_commands

__all__ = ["main", "plantrail"]

EXIT_INTERNAL = 70


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


for _command in (*record_commands, *inspect_commands, *maintain_commands):
    plantrail.add_command(_command)


def _one_line(text: str) -> str:
    """The message with control characters escaped: one line, and nothing a terminal would act on."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _report(code: str, message: str, exit_code: int, as_json: bool, fields: dict[str, object] | None = None) -> int:
    click.echo(f"error[{code}]: {_one_line(message)}", err=True)
    if as_json:
        import orjson

        body = {"ok": False, "error": {"code": code, "message": message, "exit_code": exit_code, **(fields or {})}}
        click.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2, default=str).decode())
    return exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
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
    except Exception as exc:  # noqa: BLE001 - the edge where every error becomes a message and a code
        from ledger.errors import PlantrailError

        if isinstance(exc, PlantrailError):
            return _report(exc.code, exc.message, exc.exit_code, as_json, dict(exc.fields))
        return _report("INTERNAL", f"{type(exc).__name__}: {exc} (a bug in plantrail; please report it)",
                       EXIT_INTERNAL, as_json)
    return result if isinstance(result, int) else 0  # click returns ctx.exit(code)'s code here


if __name__ == "__main__":
    sys.exit(main())
