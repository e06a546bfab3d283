"""Modules that moved keep their old names for this release: the old name gives the very module of the new one."""

from __future__ import annotations

import importlib
import importlib.machinery
import subprocess
import sys

import pytest

from plantrail._moved import MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_name_gives_the_new_module(old: str, new: str) -> None:
    """``import`` of the old name is the new module itself (one set of classes, one place to patch), which
    keeps its own name and spec; every public name of it is there under the old name too."""
    moved = importlib.import_module(old)
    assert moved is importlib.import_module(new)
    assert (moved.__name__, moved.__spec__.name) == (new, new)
    for name in getattr(moved, "__all__", ()):
        assert getattr(importlib.import_module(old), name) is getattr(moved, name)


def test_no_old_name_is_a_module_of_its_own() -> None:
    """Nothing is left at an old name: each resolves through the alias only (a file left behind would shadow it)."""
    for old in MOVED:
        package = old.rpartition(".")[0]
        paths = importlib.import_module(package).__path__
        assert importlib.machinery.PathFinder.find_spec(old, paths) is None, f"{old} is still a file of {package}"


def test_an_old_name_works_in_a_fresh_process() -> None:
    """A program that imports only an old name (and ``from … import``) works as before."""
    code = (
        "from plantrail.ledger.decide import Start\n"
        "import plantrail.ledger.plan as plan\n"
        "from plantrail.ledger.stores.cache import load_snapshot\n"
        "import plantrail.ledger.vocabulary.plan as new\n"
        "assert plan is new and Start.__module__ == 'plantrail.ledger.rules.attempts' and callable(load_snapshot)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
