"""docs/library.md stays true: every Python example in it runs, in order, and it covers the whole API."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pytest

import plantrail
from plantrail import Ledger, audit

LIBRARY = Path(__file__).resolve().parents[2] / "docs" / "library.md"
TEXT = LIBRARY.read_text(encoding="utf-8")
EXAMPLES = re.findall(r"^```python\n(.*?)^```$", TEXT, flags=re.MULTILINE | re.DOTALL)


def test_the_reference_has_examples() -> None:
    """The reference holds a good number of Python examples (a regex that found none would prove nothing)."""
    assert len(EXAMPLES) >= 10


def test_every_example_runs_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ```python block runs without raising, in one namespace, in a fresh directory, in the page's order."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_library"}
    for number, source in enumerate(EXAMPLES, start=1):
        code = compile(source, f"{LIBRARY.name}, example {number}", "exec")
        try:
            exec(code, namespace)
        except Exception as exc:
            pytest.fail(f"example {number} raised {type(exc).__name__}: {exc}\n{source}")
    assert os.path.exists(tmp_path / "run.jsonl")


def _public_methods(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def test_every_public_ledger_method_and_audit_function_is_documented() -> None:
    """Each public Ledger method, each audit function and each exported name appears in the reference."""
    names = _public_methods(Ledger) | set(audit.__all__) | {n for n in plantrail.__all__ if n != "__version__"}
    missing = sorted(n for n in names if not re.search(rf"\b{re.escape(n)}\b", TEXT))
    assert missing == []


@pytest.mark.parametrize(
    "method", ["start", "complete", "block", "fail", "verify_criterion", "finish", "replan", "extend"]
)
def test_every_keyword_option_of_a_recording_method_is_documented(method: str) -> None:
    """Each keyword-only option of the recording methods has its row in the options table."""
    parameters = inspect.signature(getattr(Ledger, method)).parameters.values()
    for parameter in parameters:
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            assert f"| `{parameter.name}` |" in TEXT or f"{parameter.name}=" in TEXT, parameter.name


@pytest.mark.parametrize("method", ["create", "open"])
def test_every_option_of_create_and_open_is_documented(method: str) -> None:
    """Each keyword argument of Ledger.create and Ledger.open is named in the reference."""
    for parameter in inspect.signature(getattr(Ledger, method)).parameters.values():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            assert f"`{parameter.name}`" in TEXT, parameter.name
