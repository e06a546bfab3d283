"""The tutorial runs as written: a fresh virtual environment, the checkout pip-installed into it, and every
command of every tutorial page run in order, its output compared with what the page shows.

The environment is made without network: pip installs the checkout with ``--no-deps --no-build-isolation
--no-index``, and the running interpreter's site-packages (click, pydantic, setuptools ...) are on the new
environment's path through a ``.pth`` line (which does not load the running checkout's own install: a ``.pth``
file in a folder added that way is not read). The plantrail the pages run is the one pip installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from plantrail.ledger.vocabulary.draft_template import TEMPLATE
from tests.helpers.console import Example, Write, matches, normalised, not_run, shell, steps

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FIRST = DOCS / "tutorial.md"
JOBS = ["tutorial-replay.md", "tutorial-audit.md", "tutorial-resume.md", "tutorial-live-agent.md"]
#: What the package's build needs from the checkout.
PACKAGE = ("pyproject.toml", "README.md", "src", "ledger", "projections", "cli")


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtual environment, without pip, that sees the running interpreter's packages."""
    home = tmp_path_factory.mktemp("tutorial")
    env_dir = home / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    (purelib / "zz_running_interpreter.pth").write_text(
        "\n".join(dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])) + "\n"
    )
    yield env_dir


def _checkout(into: Path) -> None:
    """The files the package is built from, copied to ``into/plantrail`` (the build never writes in the repo)."""
    target = into / "plantrail"
    target.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in PACKAGE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)


def _run(example: Example, env_dir: Path, folder: Path) -> tuple[int, str]:
    """Run one command of a page in ``folder``, as the reader's shell would, with the environment's plantrail."""
    if example.command.startswith("pip install "):
        pip = [sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install"]
        offline = ["--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check"]
        done = subprocess.run(
            [*pip, *offline, *example.command.split()[2:]], cwd=folder, capture_output=True, text=True
        )
        return done.returncode, done.stdout
    return shell(example.command, folder, env_dir / "bin")


def _play(page: Path, env_dir: Path, folder: Path) -> list[str]:
    """Run the page's steps in order in ``folder``; one line per command whose output or exit differs."""
    wrong = []
    for step in steps(page.read_text()):
        if isinstance(step, Write):
            (folder / step.name).write_text(step.text)
            continue
        code, printed = _run(step, env_dir, folder)
        if code != 0 and "$?" not in step.command:
            wrong.append(f"{page.name}:{step.line}: {step.command}: exit {code}\n{printed}")
        elif not matches(step.shown, printed):
            wrong.append(f"{page.name}:{step.line}: {step.command}: printed\n{normalised(printed)}")
    return wrong


def _installed(env_dir: Path, folder: Path) -> None:
    """Install the checkout into the environment when a page after the first needs it."""
    if not (env_dir / "bin" / "plantrail").exists():
        _checkout(folder)
        code, printed = _run(Example("pip install ./plantrail", "", 0), env_dir, folder)
        assert code == 0, printed


def _first_part(page: str) -> list[Example]:
    """The commands of the tutorial's first part: from the install to the verified run (before "Finish")."""
    first = page.split("\n## 5.")[0]
    return [step for step in steps(first) if isinstance(step, Example)]


def test_the_first_page_runs_as_written(environment: Path, tmp_path: Path) -> None:
    """From pip install to a verified run of the reader's own plan: every command's output as the page shows."""
    _checkout(tmp_path)
    assert _play(FIRST, environment, tmp_path) == []
    assert (tmp_path / "run.jsonl").is_file()


def test_the_first_part_reaches_a_verified_run_of_the_readers_plan_in_eight_commands() -> None:
    """The first part: pip install, new, the reader's edit of the draft new wrote, create ... verify: <= 8."""
    page = FIRST.read_text()
    commands = [example.command for example in _first_part(page)]
    assert len(commands) <= 8
    assert commands[0].startswith("pip install ")
    assert commands[1] == "plantrail new plan.toml"
    assert commands[2] == "plantrail create run.jsonl --plan plan.toml"
    assert commands[-1] == "plantrail verify run.jsonl"
    assert _first_part(page)[-1].shown.startswith("ok: ")
    writes = [step for step in steps(page.split("\n## 5.")[0]) if isinstance(step, Write)]
    assert [write.name for write in writes] == ["plan.toml"]  # the draft new wrote, as the reader edited it
    edited, written = tomllib.loads(writes[0].text), tomllib.loads(TEMPLATE)
    assert set(edited) == set(written)  # the same terms, said of the reader's own plan
    assert [len(edited[key]) for key in ("acceptance_criteria", "steps")] == [1, 2]
    assert all(set(step) <= set(written["steps"][1]) for step in edited["steps"])
    assert edited != written
    assert len(page.splitlines()) <= 150


@pytest.mark.parametrize("name", JOBS)
def test_each_job_page_runs_as_written(name: str, environment: Path, tmp_path: Path) -> None:
    """Each job page runs in a folder of its own that holds the samples, with the installed plantrail."""
    (tmp_path / "install").mkdir()
    _installed(environment, tmp_path / "install")
    folder = tmp_path / "page"
    folder.mkdir()
    shutil.copytree(ROOT / "samples", folder / "samples")
    page = DOCS / name
    assert [step for step in steps(page.read_text()) if isinstance(step, Example)] != []
    assert not_run(page.read_text()) == []
    assert _play(page, environment, folder) == []
