"""Every CLI command that reads or writes a run takes ``--store`` (and so ``PLANTRAIL_STORE``): a new command
that forgets it fails here, with how to adopt it."""

from __future__ import annotations

import click

from plantrail.cli.main import all_commands

#: Commands that name no run, and why: they need no store.
EXEMPT: dict[str, str] = {
    "schema": "prints the log's JSON Schema; reads no run",
    "check": "validates a plan draft file; reads no run",
    "new": "writes a plan draft file; names no run",
    "keygen": "writes a signing key pair; names no run",
    "store init": "takes the database URL it initialises as its argument",
    "install claude": "edits an agent's settings file; reads no run",
    "uninstall claude": "edits an agent's settings file; reads no run",
    "install codex": "edits an agent's configuration file; reads no run",
    "uninstall codex": "edits an agent's configuration file; reads no run",
    "install cursor": "edits an agent's configuration file; reads no run",
    "uninstall cursor": "edits an agent's configuration file; reads no run",
    "install gemini": "edits an agent's configuration file; reads no run",
    "uninstall gemini": "edits an agent's configuration file; reads no run",
    "install opencode": "edits an agent's configuration file; reads no run",
    "uninstall opencode": "edits an agent's configuration file; reads no run",
    "hook errors": "shows the hooks' local error file, which stays under .plantrail whatever the store",
}


def _leaves(name: str, command: click.Command) -> dict[str, click.Command]:
    """``command`` and, for a group, every subcommand, by their full names (``hook claude``)."""
    if not isinstance(command, click.Group):
        return {name: command}
    found: dict[str, click.Command] = {}
    for sub_name, sub in command.commands.items():
        found |= _leaves(f"{name} {sub_name}", sub)
    return found


def _every_command() -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in all_commands().items():
        found |= _leaves(name, command)
    return found


def _takes_store(command: click.Command) -> bool:
    return any(
        isinstance(p, click.Option) and "--store" in p.opts and p.envvar == "PLANTRAIL_STORE" for p in command.params
    )


def test_every_command_about_a_run_takes_store() -> None:
    """Each command (groups' subcommands included) that is not listed as exempt takes --store with
    PLANTRAIL_STORE as its default."""
    commands = _every_command()
    missing = sorted(name for name, command in commands.items() if name not in EXEMPT and not _takes_store(command))
    assert not missing, (
        f"{', '.join(missing)}: a command about a run takes --store URL / PLANTRAIL_STORE. Name its run with "
        "`log: str` and decorate it with `@log_argument` (or `@new_log_argument` for one that creates the run) "
        "from plantrail.cli.common; a run named by an option (`-o NEW`) goes through `locate_log(name, store)` "
        "with `@store_option`. A command that names no run goes in EXEMPT in tests/cli/test_cli_store_option.py, "
        "with why."
    )


def test_the_exempt_commands_exist_and_take_no_store() -> None:
    """Every exempt command is a real command, and none of them takes --store (else it is not exempt)."""
    commands = _every_command()
    assert set(EXEMPT) <= set(commands), sorted(set(EXEMPT) - set(commands))
    assert not [name for name in EXEMPT if _takes_store(commands[name])]


def test_the_walk_sees_the_groups_subcommands() -> None:
    """The walk reaches into groups: hook's agents and store init are among the commands it checks."""
    commands = _every_command()
    assert {"hook claude", "hook gemini", "hook opencode", "store init", "status", "import", "mcp"} <= set(commands)
    assert {"export otel", "export pack"} <= set(commands)
    assert "hook" not in commands
    bare = click.Command("bare", params=[click.Argument(["log"]), click.Option(["--store"])])
    assert not _takes_store(bare), "an option named --store without PLANTRAIL_STORE is not the shared one"
