"""What a command loads: the plantrail modules and the other distributions' packages a whole ``plantrail`` process
imports to run it (the standard library is left out: its own modules differ between Python versions).

``python -m tests.project.command_imports`` runs each listed command and writes its list to
``tests/project/command_imports/COMMAND.txt`` (one module a line), for when a command needs a module it did
not load before.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["COMMANDS", "LISTS", "kept", "listed", "loaded", "write_lists"]

#: The lists, one file per command.
LISTS = Path(__file__).resolve().parent / "command_imports"

#: The commands whose imports are held to a list, with their arguments after the log (run in this order on one
#: log: a start, the completion of that step, then the state read back).
COMMANDS: dict[str, tuple[str, ...]] = {
    "start": ("s0",),
    "complete": ("s0", "-e", "pytest: 12 passed"),
    "status": (),
}

_SCRIPT = """
import sys
from plantrail.cli.entry import main
try:
    code = main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""


def kept(name: str) -> str | None:
    """A loaded module as the lists name it: a plantrail module by its dotted name, another distribution's by its
    top-level package; None for the standard library and the interpreter's or installer's private modules."""
    top = name.partition(".")[0]
    if top == "plantrail":
        return name
    if top in sys.stdlib_module_names or top.startswith("_") or top in ("sitecustomize", "usercustomize"):
        return None
    return top


def _draft() -> dict[str, object]:
    steps = [{"id": f"s{i}", "title": f"step {i}", "depends_on": [], "completion_evidence": "output"} for i in range(3)]
    return {"goal": "g", "acceptance_criteria": [{"id": "c", "description": "d"}], "steps": steps}


def loaded(folder: Path) -> dict[str, set[str]]:
    """Each command of :data:`COMMANDS`, run as a whole process on a fresh log in ``folder``: the modules it
    loaded (:func:`kept`). A command that fails raises AssertionError with its output."""
    from plantrail.ledger.api import Ledger

    log = folder / "run.jsonl"
    Ledger.create(log, _draft()).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANTRAIL_")}
    found: dict[str, set[str]] = {}
    for command, args in COMMANDS.items():
        out = folder / f"{command}.modules"
        argv = [sys.executable, "-c", _SCRIPT, str(out), command, str(log), *args]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=folder, timeout=120, check=False)
        assert done.returncode == 0, f"plantrail {command} failed: {done.stdout}{done.stderr}"
        found[command] = {k for k in map(kept, out.read_text().split()) if k is not None}
    return found


def listed(command: str) -> set[str]:
    """The checked-in list of ``command``."""
    return set((LISTS / f"{command}.txt").read_text().split())


def write_lists() -> None:
    """Write every command's list from what it loads now."""
    with tempfile.TemporaryDirectory() as folder:
        for command, modules in loaded(Path(folder)).items():
            (LISTS / f"{command}.txt").write_text("".join(f"{m}\n" for m in sorted(modules)))
            print(f"{command}: {len(modules)} modules -> {LISTS / f'{command}.txt'}")


if __name__ == "__main__":
    write_lists()
