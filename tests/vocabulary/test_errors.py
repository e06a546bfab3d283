"""Errors say what is wrong in neutral words, and what to do in the words of the front door used."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import ADVICE, CODES, PlantrailError, error
from tests.conftest import CliResult

ROOT = Path(__file__).resolve().parents[2]
#: Words that only make sense at a command line: a plantrail command or a --option.
CLI_WORDS = re.compile(r"plantrail (repair|create|replan|verify|import|salvage|checkpoint)\b|(^|[\s(`])--[a-z]")


def _error_calls() -> Iterator[tuple[str, ast.Call]]:
    """Every ``error(...)`` call in the library (ledger and projections), with its file."""
    for folder in ("ledger", "projections"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "error":
                    yield path.name, node


def _text_of(node: ast.expr) -> str:
    """The literal text of a message expression (f-string parts joined, placeholders as {})."""
    parts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return "{}".join(parts)


def test_no_library_message_gives_command_line_advice() -> None:
    """No message raised by ledger or projections names a plantrail command or a --option: that is advice."""
    offending = [
        f"{name}:{call.lineno}: {_text_of(call.args[1])}"
        for name, call in _error_calls()
        if len(call.args) > 1 and CLI_WORDS.search(_text_of(call.args[1]))
    ]
    assert offending == []


def test_every_advice_a_raise_names_exists() -> None:
    """Each advice= given at a raise site is an entry of ADVICE."""
    named = {
        kw.value.value
        for _, call in _error_calls()
        for kw in call.keywords
        if kw.arg == "advice" and isinstance(kw.value, ast.Constant)
    }
    assert named and named <= set(ADVICE)


@pytest.mark.parametrize("name", sorted(ADVICE))
def test_each_advice_speaks_the_language_of_its_door(name: str) -> None:
    """Python advice names no command or --option; CLI advice names no keyword argument (name=True)."""
    advice = ADVICE[name]
    assert advice.python and advice.cli
    assert not CLI_WORDS.search(advice.python)
    assert not re.search(r"\w=\w", advice.cli)


def test_the_text_is_the_message_then_the_doors_advice() -> None:
    """str(exc) adds the Python advice, text("cli") the command's, both after the neutral message."""
    exc = error("TORN_TAIL", "run.jsonl ends with 3 bytes of an incomplete record", path="run.jsonl")
    assert exc.message == "run.jsonl ends with 3 bytes of an incomplete record"
    assert str(exc) == f"{exc.message}; {exc.advice('python')}"
    assert "Ledger.open('run.jsonl', repair=True)" in str(exc)
    assert exc.text("cli") == f"{exc.message}; run `plantrail repair run.jsonl`"


def test_an_error_without_advice_is_its_message() -> None:
    """A code with nothing more to say reads the same through every door."""
    exc = error("STEP_NOT_FOUND", "no step x in plan version 1", step="x")
    assert (exc.advice(), str(exc), exc.text("cli")) == (None, exc.message, exc.message)


def test_a_missing_field_reads_as_its_name() -> None:
    """Advice whose field the error lacks shows the field's name in capitals, never a KeyError."""
    assert error("TORN_TAIL", "torn").text("cli") == "torn; run `plantrail repair PATH`"


def test_every_code_builds_an_error_whose_text_renders() -> None:
    """Every code's error renders its text through both doors."""
    for code in CODES:
        exc = error(code, "m")
        assert exc.text("python").startswith("m") and exc.text("cli").startswith("m")


def _torn(make_ledger: Callable[..., Any], tmp_path: Path) -> Path:
    make_ledger().close()
    log = tmp_path / "run.jsonl"
    with log.open("ab") as f:
        f.write(b'{"v":1,"seq":2')
    return log


def test_a_torn_log_opened_in_python_advises_repair_true(make_ledger: Callable[..., Any], tmp_path: Path) -> None:
    """Ledger.open on a torn log raises TORN_TAIL whose str says repair=True, not the command."""
    log = _torn(make_ledger, tmp_path)
    with pytest.raises(PlantrailError) as caught:
        Ledger.open(log)
    assert caught.value.code == "TORN_TAIL"
    assert "repair=True" in str(caught.value) and "plantrail repair" not in str(caught.value)


def test_a_torn_log_at_the_command_line_advises_plantrail_repair(
    make_ledger: Callable[..., Any], tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """The CLI reports the same TORN_TAIL with `plantrail repair LOG`, not the Python keyword."""
    log = _torn(make_ledger, tmp_path)
    result = run_cli("start", log, "reproduce")
    assert result.code == 3
    assert f"run `plantrail repair {log}`" in result.err and "repair=True" not in result.err
