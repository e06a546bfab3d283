"""Every ``$ plantrail ...`` example in README.md and docs/*.md runs: each page's console blocks are run in
order, in a scratch folder that holds a copy of the samples, and what each command prints is compared with what
the page shows (tests/helpers/console.py says how). A block that cannot run here is marked
``<!-- not run: REASON -->`` and says why. The tutorial pages are run by tests/project/test_tutorial.py, in a
fresh virtual environment."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers.console import Example, Write, matches, normalised, not_run, shell, steps, updated

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
TUTORIAL = [page for page in DOCS if page.name.startswith("tutorial")]
PAGES = [page for page in [README, *DOCS] if page not in TUTORIAL and steps(page.read_text())]
#: The programs a page's example may run here (anything else, pip say, is marked not run); truncate cuts a
#: log's last line short, as a crash in the middle of an append does.
RUNNABLE = {"plantrail", "echo", "printf", "cat", "truncate"}
#: A fenced block that shows a plantrail command at a prompt.
_PROMPTED = re.compile(r"^```(?P<lang>[a-z]*)[ \t]*\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_pages_examples_run_as_shown(page: Path, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    wrong = []
    for step in steps(page.read_text()):
        if isinstance(step, Write):
            (tmp_path / step.name).write_text(step.text)
            continue
        assert isinstance(step, Example)
        programs = {part.split()[0] for part in re.split(r"\||;|&&", step.command) if part.split()}
        if not programs <= RUNNABLE:
            wrong.append(f"{page.name}:{step.line}: runs {sorted(programs - RUNNABLE)}: mark the block not run")
            continue
        code, printed = shell(step.command, tmp_path, Path(sys.executable).parent)
        if code != 0 and "$?" not in step.command:
            wrong.append(f"{page.name}:{step.line}: {step.command}: exit {code}\n{printed}")
        elif not matches(step.shown, printed):
            wrong.append(f"{page.name}:{step.line}: {step.command}: printed\n{normalised(printed)}")
    assert wrong == []


def test_every_prompted_plantrail_command_is_run_or_says_why_not() -> None:
    """A block that shows ``$ plantrail`` is a console block (run above), or is marked not run with a reason."""
    unmarked = []
    for page in [README, *DOCS]:
        text = page.read_text()
        for block in _PROMPTED.finditer(text):
            if not re.search(r"^\$ plantrail ", block.group("body"), flags=re.MULTILINE):
                continue
            marked = (
                text[: block.start()].endswith("-->\n")
                and "<!-- not run: " in text[: block.start()].rsplit("\n", 2)[-2]
            )
            if block.group("lang") != "console" and not marked:
                line = text.count("\n", 0, block.start()) + 1
                unmarked.append(f"{page.name}:{line}: a ```{block.group('lang')} block")
    assert unmarked == []
    reasons = [reason for page in [README, *DOCS] for reason in not_run(page.read_text())]
    assert all(len(reason.split()) >= 3 for reason in reasons), reasons


def test_every_page_opens_with_who_it_is_for() -> None:
    """The first paragraph of every page in docs/ says who it is for (and then what they will do there)."""
    openings = {page.name: page.read_text().split("\n\n")[1] for page in DOCS}
    assert {name: text[:60] for name, text in openings.items() if not text.startswith("For ")} == {}


def test_the_updater_rewrites_only_output_that_no_longer_matches() -> None:
    """tests/helpers/update_docs.py replaces a stale output, keeps one that matches (``...`` included) and one
    of a command it does not run, and writes the page's files first."""
    page = (
        "<!-- write a.toml -->\n```toml\nx = 1\n```\n\n```console\n$ pip install .\n...\nDone\n"
        "$ plantrail one\nseq 3...\n$ plantrail two\nold line\n```\n"
        "\n```console\npython3 -m venv .venv\n```\n"  # no prompt: nothing to run, left as it is
    )
    printed = {"plantrail one": "seq 3: recorded\n", "plantrail two": "new line\nand more\n"}
    written: list[tuple[str, str]] = []
    after = updated(page, printed.get, lambda name, text: written.append((name, text)))
    assert written == [("a.toml", "x = 1\n")]
    assert after == page.replace("old line\n", "new line\nand more\n")
