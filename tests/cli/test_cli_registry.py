"""Every click command defined in cli/ is reachable from the plantrail group (commands load lazily)."""

from __future__ import annotations

import importlib

import click

from plantrail.cli.main import COMMANDS, all_commands


def test_every_command_module_is_registered() -> None:
    """No command defined in a cli module is missing from the lazy registry, and every entry resolves."""
    defined, nested = set(), set()
    for module_name in {target.partition(":")[0] for target in COMMANDS.values()}:
        module = importlib.import_module(module_name)
        commands = [c for c in vars(module).values() if isinstance(c, click.Command) and c.name]
        defined |= {c.name for c in commands}
        nested |= {sub for c in commands if isinstance(c, click.Group) for sub in c.commands}  # e.g. store init
    assert defined - nested <= set(all_commands())
    assert set(all_commands()) == set(COMMANDS)
