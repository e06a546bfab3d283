"""The command line records a command in the W3C trace context of ``--traceparent`` / ``--tracestate`` (or
``$TRACEPARENT`` / ``$TRACESTATE``), refuses an invalid one with the log unchanged, and shows it (``show``,
``log --json``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


@pytest.fixture
def log(tmp_path: Path, write_json: Callable[[str, Any], Path], draft: dict[str, Any], run_cli: Any) -> Path:
    path = tmp_path / "run.jsonl"
    assert run_cli("create", path, "--plan", write_json("plan.json", draft), "--traceparent", PARENT).code == 0
    return path


def _traces(run_cli: Callable[..., CliResult], log: Path) -> list[Any]:
    return [entry.get("trace") for entry in run_cli("log", log, "--json").json()]


def test_a_command_stores_the_traceparent_it_is_given(
    log: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--traceparent`` (with ``--tracestate``) and ``$TRACEPARENT`` (with ``$TRACESTATE``) are stored on the
    command's event, the option winning over the environment; ``log --json`` and ``show --json`` show them."""
    assert run_cli("start", log, "reproduce", "--traceparent", OTHER, "--tracestate", "congo=t61rcWkgMzE").code == 0
    monkeypatch.setenv("TRACEPARENT", PARENT)
    monkeypatch.setenv("TRACESTATE", "rojo=00f067aa0ba902b7")
    assert run_cli("complete", log, "reproduce", "--evidence", "1 failed").code == 0
    assert run_cli("start", log, "diagnose", "--traceparent", OTHER, "--tracestate", "").code == 0
    monkeypatch.delenv("TRACEPARENT")
    monkeypatch.delenv("TRACESTATE")
    assert run_cli("complete", log, "diagnose", "--evidence", "auth returns 500").code == 0
    assert _traces(run_cli, log) == [
        None,
        {"traceparent": PARENT, "tracestate": None},
        {"traceparent": OTHER, "tracestate": "congo=t61rcWkgMzE"},
        {"traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"},
        {"traceparent": OTHER, "tracestate": None},
        None,
    ]
    shown = run_cli("show", log, "2", "--json").json()
    assert shown["trace"] == {"traceparent": OTHER, "tracestate": "congo=t61rcWkgMzE"}
    text = run_cli("show", log, "2").out
    assert f"trace: {OTHER} (congo=t61rcWkgMzE)" in text
    assert "trace" not in run_cli("show", log, "5", "--json").json()
    assert "trace:" not in run_cli("show", log, "5").out


@pytest.mark.parametrize(
    ("options", "env"),
    [
        (["--traceparent", PARENT.upper()], {}),
        (["--traceparent", "00-" + "0" * 32 + "-b7ad6b7169203331-01"], {}),
        (["--traceparent", PARENT, "--tracestate", ",".join(f"k{i}=v" for i in range(33))], {}),
        ([], {"TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"}),
        ([], {"TRACEPARENT": PARENT, "TRACESTATE": "a=" + "b" * 256 + ",c=" + "d" * 252}),
        (["--tracestate", "congo=t61rcWkgMzE"], {}),  # a tracestate needs its traceparent
    ],
)
def test_an_invalid_trace_context_is_refused_and_the_log_unchanged(
    log: Path,
    run_cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    env: dict[str, str],
) -> None:
    """An invalid traceparent or tracestate, given or from the environment, is INVALID_TRACE_CONTEXT (exit 2)
    and the log keeps its bytes."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = log.read_bytes()
    result = run_cli("start", log, "reproduce", *options)
    assert result.code == 2 and result.err.startswith("error[INVALID_TRACE_CONTEXT]: "), result.err
    assert log.read_bytes() == before


def test_a_retry_with_another_traceparent_is_the_same_command(log: Path, run_cli: Callable[..., CliResult]) -> None:
    """A command retried under its idempotency key with another traceparent answers the original's seq as a
    duplicate and writes nothing."""
    first = run_cli("start", log, "reproduce", "--idempotency-key", "k1", "--traceparent", PARENT, "--json").json()
    before = log.read_bytes()
    again = run_cli("start", log, "reproduce", "--idempotency-key", "k1", "--traceparent", OTHER, "--json").json()
    assert (again["seq"], again["duplicate"]) == (first["seq"], True)
    assert log.read_bytes() == before
