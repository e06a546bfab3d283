"""Bring the output a page shows up to date: ``python -m tests.helpers.update_docs docs/PAGE.md README.md ...``.

Each page's console blocks are run in order (tests/helpers/console.py), in a scratch folder holding a copy of
the samples, with the plantrail of the running environment; the output under a command is replaced only when
it no longer matches what the command prints (``...`` and the normalised hashes and times still match). A
``pip install`` is not run, and its output is kept. Review the diff: the page then says what the code does.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from tests.helpers.console import shell, updated

ROOT = Path(__file__).resolve().parents[2]


def update(page: Path) -> bool:
    """Rewrite ``page`` with its commands' output as they print it now; True when it changed."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        shutil.copytree(ROOT / "samples", folder / "samples")

        def run(command: str) -> str | None:
            return None if command.startswith("pip ") else shell(command, folder, Path(sys.executable).parent)[1]

        before = page.read_text()
        after = updated(before, run, lambda name, text: (folder / name).write_text(text))
    if after != before:
        page.write_text(after)
    return after != before


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"{name}: {'updated' if update(Path(name)) else 'unchanged'}")
