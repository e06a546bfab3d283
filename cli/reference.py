"""docs/cli.md, generated from the command declarations: every command and sub-command, its usage, every option
(with what it takes, its default and its help, as ``--help`` prints them), the error codes its refusals carry
with their exit codes, and its examples.

``python -m plantrail.cli.reference > docs/cli.md`` regenerates the page; tests/project/test_cli_reference.py
fails when the page differs from what :func:`render` gives now, so the reference cannot drift from the code.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Final

import click

__all__ = ["JOBS", "command_paths", "render"]

#: The commands by job, in the order the page shows them; a command in none of these is under "Other commands".
JOBS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("Starting a plan", ("new", "check", "create")),
    (
        "Recording what happens",
        ("start", "complete", "block", "fail", "criterion", "finish", "heartbeat", "abandon", "adopt", "observe"),
    ),
    ("Changing the plan", ("replan", "extend", "fork", "brief")),
    ("Approvals and side effects", ("request-approval", "approve", "deny", "effect")),
    ("Reading the current state", ("status", "next", "log", "show")),
    ("Replay and audit", ("versions", "replay", "diff", "why", "orphans", "resume")),
    ("Pictures of a run", ("graph", "report", "watch")),
    ("Integrity and repair", ("verify", "checkpoint", "keygen", "repair", "salvage", "schema")),
    ("Stores", ("runs", "copy", "store")),
    ("Agents and importing", ("mcp", "hook", "install", "uninstall", "import")),
)

_INTRO: Final = """\
# The command line: every command

For anyone running `plantrail` from a shell or a script: this page lists every command with its options,
defaults, exit codes and examples. New to plantrail? Start with the [tutorial](tutorial.md).

This page is generated from the command declarations (`python -m plantrail.cli.reference > docs/cli.md`), and
a test fails when it differs from what the code declares: it says exactly what `plantrail COMMAND --help` says.

## What every command shares

- **The run.** A command about one run takes it as `LOG` first: a path (`run.jsonl`; a name with a path
  separator or ending in `.jsonl` is always a path), `postgresql://user@host/DATABASE#RUN_ID`, or a run id with
  `--store URL` (a database or a runs folder; `PLANTRAIL_STORE` gives it when the option is absent). A run id
  that names no file, with no store, is `<runs folder>/<run id>.jsonl` (`$PLANTRAIL_HOME/runs`, else
  `.plantrail/runs`). A symbolic link, a folder or a FIFO where a run's file goes is refused with `NOT_A_FILE`
  ([scaling](scaling.md) has the database store).
- **Output.** Every command that reports something takes `--json` and then prints exactly one JSON document on
  stdout. A recording command prints the seq it recorded, the anchor `SEQ:HASH` of the log's new head (paste
  it into `verify --anchor`) and which steps can start now.
- **Trace context.** Every recording command takes `--traceparent` and `--tracestate` (default `$TRACEPARENT`,
  `$TRACESTATE`): the W3C trace context it was issued in, recorded on its event as `trace` and shown by `show`,
  `log --json` and the report ([format-v2](format-v2.md#trace-context)); an invalid one is
  `INVALID_TRACE_CONTEXT`, nothing written.
- **Text from files.** `-e -` (and `--reason -`, `--error -`, `--observation -`) reads standard input; the
  `--*-file F` options read a whole file as one item. An item larger than one event holds (16 MiB) is refused
  with `EVENT_TOO_LARGE`, never cut.
- **Drafts.** `--plan DRAFT` (of `create` and `replan`) and `check DRAFT` read TOML when the name ends in
  `.toml`, JSON otherwise; `plantrail new` writes a commented TOML draft to start from.
- **Errors.** An error is `error[CODE]: message` on stderr; a mistyped command, step or criterion gets a
  "did you mean". The codes are in [errors](errors.md); the rules the recording commands enforce are in
  [semantics](semantics.md).

| exit | meaning |
| --- | --- |
| 0 | done |
| 1 | refused by a rule; the log is unchanged byte for byte |
| 2 | usage: bad arguments or options |
| 3 | the log is damaged: corrupt, torn or tampered with |
| 4 | a file cannot be read or written |
| 70 | a bug in plantrail (`error[INTERNAL]`) |
| 130 | interrupted (Ctrl-C) |

`status --json` prints the **status document** (the MCP `plan_status` tool returns it too). Its core, in every
run: `run`, `goal`, `plan_version`, `outcome` (null while the run is open) with `outcome_reason`, `steps` (each
with `id`, `title`, `status`, `ready`, `attempt`, `depends_on`, `evidence` and `reason`, among others),
`criteria` (`id`, `description`, `status`, `evidence`), `orphans` (the late results), `last_seq` and
`head_hash`. Around it: what can start now (`ready`, `can_start`, `capacity`), `advice`, the stop policy's
decision (`stop`), `budget`, `leases`, `approvals`, `effects`, `coverage`, `lineage`, then `anchor` and
`state_hash`; the command adds `torn_tail` and `snapshot_seq`.
"""

_BLOCK: Final = "\b"


def command_paths() -> Iterator[tuple[str, click.Command]]:
    """Every command as ``plantrail NAME`` (and ``plantrail GROUP NAME`` for a group's commands), in name order."""
    from plantrail.cli.main import plantrail

    for name, command in _sub_commands(plantrail):
        yield f"plantrail {name}", command
        if isinstance(command, click.Group):
            for sub, subcommand in _sub_commands(command):
                yield f"plantrail {name} {sub}", subcommand


def _sub_commands(group: click.Group) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None:
            yield name, command


def _escaped(text: str) -> str:
    """Prose for Markdown: ``<`` and ``*`` shown as written, not taken as HTML or emphasis."""
    return text.replace("<", "&lt;").replace("*", r"\*")


def _help_parts(command: click.Command) -> tuple[list[str], list[str], list[str]]:
    """The command's help as (prose paragraphs, preformatted blocks such as its JSON shape, example lines)."""
    prose: list[str] = []
    blocks: list[str] = []
    examples: list[str] = []
    for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
        text = paragraph.strip("\n")
        if not text.startswith(_BLOCK):
            prose.append(" ".join(line.strip() for line in text.splitlines()))
            continue
        body = text[len(_BLOCK) :].strip("\n")
        if body.startswith("Example:"):
            examples.extend(line[2:] if line.startswith("  ") else line for line in body.splitlines()[1:])
        else:
            blocks.append(body)
    return prose, blocks, examples


def _root_context() -> click.Context:
    """The context every command runs under: the root's settings (``-h`` beside ``--help``) are inherited."""
    from plantrail.cli.main import plantrail

    return click.Context(plantrail, info_name="plantrail", **plantrail.context_settings)


def _option_rows(command: click.Command, ctx: click.Context) -> list[str]:
    """One table row per option: the option as ``--help`` writes it, its default and its help."""
    rows = []
    # The help option is made here, never read from the command: click caches a command's help option the first
    # time a context asks for it, with that context's names, and a context made without the root's (a test's
    # walk) would otherwise decide what this page says.
    help_names = command.get_help_option_names(ctx) if command.add_help_option else []
    helps = [click.Option(help_names, is_flag=True, expose_value=False, help="Show this message and exit.")]
    for param in [*command.params, *(helps if help_names else [])]:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, text = record
        rows.append(f"| `{names.replace('|', chr(92) + '|')}` | {_default(param)} | {_cell(text)} |")
    return rows


def _default(param: click.Option) -> str:
    """The option's default as a table cell (an environment variable it reads included); blank when none."""
    shown = []
    default = param.default
    if param.envvar:
        shown.append(f"`${param.envvar}`")
    if param.is_flag and not param.secondary_opts:
        pass  # a plain flag is off unless given
    elif default is not None and default != () and not callable(default) and not _unset(default):
        value = ("true" if default else "false") if isinstance(default, bool) else str(default)
        shown.append(f"`{value}`")
    return ", ".join(shown)


def _unset(value: object) -> bool:
    """True for click's marker of an option given no default (``Sentinel.UNSET`` in click 8.3)."""
    return type(value).__name__ == "Sentinel"


def _cell(text: str) -> str:
    """Help text for one table cell: on one line, with ``|`` escaped."""
    return _escaped(" ".join(text.split())).replace("|", r"\|")


def _exit_codes(path: str, refusals: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The lines that say the command's error codes (those its declaration names) by exit code."""
    codes = refusals.get(path.removeprefix("plantrail "))
    if not codes:
        return []
    by_exit: dict[int, list[str]] = {}
    for code, exit_code in sorted(codes.items()):
        by_exit.setdefault(exit_code, []).append(f"`{code}`")
    said = "; ".join(f"exit {exit_code}: {', '.join(names)}" for exit_code, names in sorted(by_exit.items()))
    return [f"Refused with: {said}.", ""]


def _declared_refusals() -> dict[str, dict[str, int]]:
    """Each recording command's refusal codes and their exit codes, by its command line name."""
    import plantrail.ledger.rules.decide  # noqa: F401  (declares every command)
    from plantrail.ledger.rules.commands import declarations

    found: dict[str, dict[str, int]] = {}
    for declaration in declarations():
        for name in declaration.cli:
            found.setdefault(name, {}).update(declaration.exit_codes())
    return found


def _section(path: str, command: click.Command, level: str, refusals: Mapping[str, Mapping[str, int]]) -> list[str]:
    ctx = click.Context(command, info_name=path.removeprefix("plantrail ").split(" ")[-1], parent=_root_context())
    usage = " ".join(command.collect_usage_pieces(ctx))
    prose, blocks, examples = _help_parts(command)
    lines = [f"{level} {path}", "", *(line for text in prose for line in (_escaped(text), ""))]
    lines += ["```text", f"Usage: {path} {usage}".rstrip(), "```", ""]
    for block in blocks:
        lines += ["```text", block, "```", ""]
    rows = _option_rows(command, ctx)
    if rows:
        lines += ["| option | default | meaning |", "| --- | --- | --- |", *rows, ""]
    lines += _exit_codes(path, refusals)
    if examples:
        lines += ["Examples (from `--help`; they name runs and files of their own):", "", "```sh", *examples, "```", ""]
    return lines


def render() -> str:
    """docs/cli.md as the commands declare it now."""
    paths = dict(command_paths())
    tops = {path.split(" ")[1]: command for path, command in paths.items() if path.count(" ") == 1}
    refusals = _declared_refusals()
    placed = {name for _, names in JOBS for name in names}
    jobs = [*((title, [n for n in names if n in tops]) for title, names in JOBS)]
    jobs.append(("Other commands", sorted(set(tops) - placed)))
    lines = [_INTRO]
    for title, names in jobs:
        if not names:
            continue
        lines += [f"## {title}", ""]
        for name in names:
            lines += _section(f"plantrail {name}", tops[name], "###", refusals)
            group = tops[name]
            if isinstance(group, click.Group):
                for sub, command in _sub_commands(group):
                    lines += _section(f"plantrail {name} {sub}", command, "####", refusals)
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
