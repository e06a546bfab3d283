"""The README stays honest: its error table, its commands and its test command match the code."""

from __future__ import annotations

import re
from pathlib import Path

from plantrail.cli.main import all_commands
from plantrail.ledger.errors import CODES

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_every_error_code_is_documented_with_its_exit_code() -> None:
    """Each stable code has a row `| `CODE` | exit |` in the README, and no row names a code that does not exist."""
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (\d+) \|", README, flags=re.MULTILINE))
    assert {code: str(cls.exit_code) for code, (cls, _) in CODES.items()} == rows


def test_every_command_the_readme_mentions_exists() -> None:
    """Every `plantrail <command>` the README shows (at a prompt or in backticks) is a real command."""
    mentioned = set(re.findall(r"(?:\$ |`|bin/)plantrail ([a-z]+)", README))
    assert len(mentioned) > 10
    assert mentioned <= set(all_commands())


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs the README's test command, so CI tests exactly what a new user runs."""
    ci = (ROOT / ".ci" / "run").read_text()
    readme_command = "python3 -m venv .venv && .venv/bin/pip install '.[test]' && .venv/bin/python -m pytest"
    assert readme_command in README
    assert readme_command.replace("pip install", "pip install --quiet") in ci
