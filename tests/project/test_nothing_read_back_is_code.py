"""Nothing plantrail reads back from a file is unpickled: what it keeps between calls (live capture's mapping
state, the caches) is data, decoded with its types checked, so a planted file can at worst fail to decode."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("ledger", "projections", "cli", "src")
#: Modules that turn bytes into code or objects by name: none of them may read a file.
UNSAFE = frozenset({"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "jsonpickle"})
#: The modules allowed one, and why: none reads a file with it.
ALLOWED = {
    # the read-ahead's forked child sends an error of its read back to its parent through a pipe the two share
    "ledger/stores/jsonl/read_ahead.py": "an error sent by its own forked child through a pipe",
}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & UNSAFE


def test_no_module_of_the_package_unpickles_what_it_reads() -> None:
    """No module of the package imports pickle, marshal, shelve or the like, but those listed with a reason
    that is not a file (a new one fails here, naming it)."""
    users = {
        str(path.relative_to(ROOT)): sorted(found)
        for folder in PACKAGE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (found := _imports(path))
    }

    assert {name: found for name, found in users.items() if name not in ALLOWED} == {}
    assert set(ALLOWED) <= set(users)  # an entry no longer needed is taken off the list
