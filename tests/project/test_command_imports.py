"""A write command and ``status`` import only what they use: each loads no module beyond its checked-in list
(tests/project/command_imports/COMMAND.txt)."""

from __future__ import annotations

import subprocess
import sys
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


def test_a_command_loads_msgspec_without_typing_extensions_and_it_still_imports_later(tmp_path: Path) -> None:
    """A recording command loads msgspec with typing_extensions left out, and the same process imports
    typing_extensions (and pydantic, which needs it) afterwards as usual."""
    from plantrail.ledger.api import Ledger

    log = tmp_path / "run.jsonl"
    Ledger.create(log, _DRAFT).close()
    script = (
        "import sys\n"
        "from plantrail.cli.entry import main\n"
        "code = main(['start', sys.argv[1], 's0'])\n"
        "before = 'typing_extensions' in sys.modules, 'msgspec' in sys.modules\n"
        "import pydantic, typing_extensions\n"
        "print(code, before, typing_extensions.get_type_hints is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(log)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.split("\n")[-2] == "0 (False, True) True", done.stdout + done.stderr


_DRAFT = {
    "goal": "g",
    "acceptance_criteria": [{"id": "c", "description": "d"}],
    "steps": [{"id": "s0", "title": "step", "depends_on": [], "completion_evidence": "output"}],
}
