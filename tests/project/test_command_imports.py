"""A write command and ``status`` import only what they use: each loads no module beyond its checked-in list
(tests/project/command_imports/COMMAND.txt)."""

from __future__ import annotations

from pathlib import Path

from tests.project.command_imports import COMMANDS, LISTS, listed, loaded


def test_each_command_loads_nothing_beyond_its_list(tmp_path: Path) -> None:
    """`plantrail start`, `complete` and `status` each import only the plantrail modules and the packages their
    list names."""
    grown = {}
    for command, modules in loaded(tmp_path).items():
        beyond = modules - listed(command)
        if beyond:
            grown[command] = sorted(beyond)
    assert not grown, (
        f"these commands now import more than their lists in {LISTS}: {grown}. Every module costs each call of "
        "the command its import: import it where it is used (inside the function that needs it) when the command "
        "does not need it; when it does, run `python -m tests.project.command_imports` to write the lists again "
        "and commit them (measure the cost first: `python -m bench.imports COMMAND ...`)."
    )


def test_every_listed_command_has_a_list() -> None:
    """Each command held to a list has its file, and each file is a command's."""
    assert sorted(p.stem for p in LISTS.glob("*.txt")) == sorted(COMMANDS)
