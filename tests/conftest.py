"""Shared fixtures: the example plan drafts, a ledger factory, a CLI runner, and the --full size switch."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest

from plantrail.ledger.api import Ledger

SAMPLES = Path(__file__).resolve().parents[1] / "samples"

#: The login-failure example, as a draft.
LOGIN_DRAFT: dict[str, Any] = {
    "goal": "Fix the login failure and run the tests",
    "acceptanceCriteria": [{"id": "login-test-passes", "description": "the login test passes"}],
    "steps": [
        {
            "id": "reproduce",
            "title": "Reproduce the login failure",
            "dependsOn": [],
            "completionEvidence": "saved failing test output",
        },
        {
            "id": "diagnose",
            "title": "Find the cause of the failure",
            "dependsOn": ["reproduce"],
            "completionEvidence": "root cause and the code location",
        },
    ],
}

#: The offline example: add a --name flag to a CLI.
NAME_FLAG_DRAFT: dict[str, Any] = {
    "goal": "Add a --name flag to the example CLI and test it",
    "acceptanceCriteria": [
        {"id": "name-success", "description": "--name Lin prints Lin"},
        {"id": "name-missing", "description": "a missing value fails clearly"},
        {"id": "cli-regression", "description": "existing CLI behaviour still passes"},
    ],
    "steps": [
        {
            "id": "inspect",
            "title": "Read the CLI, its tests and package.json",
            "dependsOn": [],
            "completionEvidence": "read_file observations of the three files",
        },
        {
            "id": "implement",
            "title": "Change the CLI and add success and error tests",
            "dependsOn": ["inspect"],
            "completionEvidence": "a controlled patch to the implementation and tests",
        },
        {
            "id": "validate",
            "title": "Run the narrowest relevant tests",
            "dependsOn": ["implement"],
            "completionEvidence": "the CLI tests pass at the current revision",
        },
    ],
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run slow stress tests (crash trials, concurrency, tampering) at their full size",
    )


@pytest.fixture
def full(request: pytest.FixtureRequest) -> bool:
    """True under --full: stress tests use their published sizes instead of the small CI ones."""
    return bool(request.config.getoption("--full"))


_FIGURES = pytest.StashKey[list[str]]()


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Record one line of figures (trials, events, detections); they are printed at the end of the run."""
    return request.config.stash.setdefault(_FIGURES, []).append


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_FIGURES, [])
    if lines:
        terminalreporter.section("reliability figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True, scope="session")
def _no_trace_context() -> Iterator[None]:
    """No test (nor any process it starts) records in a trace context the shell running the suite was in
    ($TRACEPARENT, $TRACESTATE): a test that wants one sets it."""
    old = {name: os.environ.pop(name) for name in ("TRACEPARENT", "TRACESTATE") if name in os.environ}
    yield
    os.environ.update(old)


@pytest.fixture(autouse=True, scope="session")
def _cache_key_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test (and every process it starts) keeps its cache key in a temporary state folder, not in ~."""
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield
    if old is None:
        del os.environ["XDG_STATE_HOME"]
    else:
        os.environ["XDG_STATE_HOME"] = old


@pytest.fixture
def draft() -> dict[str, Any]:
    """A fresh copy of the login-failure draft."""
    return copy.deepcopy(LOGIN_DRAFT)


@pytest.fixture
def name_draft() -> dict[str, Any]:
    """A fresh copy of the --name flag draft."""
    return copy.deepcopy(NAME_FLAG_DRAFT)


class Clock:
    """A deterministic clock: one microsecond per reading."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> str:
        self.ticks += 1
        return f"2026-01-01T00:00:00.{self.ticks:06d}Z"


@pytest.fixture
def clock() -> Clock:
    """A deterministic clock for byte-for-byte reproducible logs."""
    return Clock()


@pytest.fixture
def make_ledger(tmp_path: Path, clock: Clock) -> Iterator[Callable[..., Ledger]]:
    """Create ledgers under tmp_path (fsync none: durability has its own tests); closes them afterwards."""
    opened: list[Ledger] = []

    def make(plan: dict[str, Any] | None = None, name: str = "run.jsonl", **options: Any) -> Ledger:
        options.setdefault("fsync", "none")
        options.setdefault("nonce", "0" * 32)
        ledger = Ledger.create(tmp_path / name, copy.deepcopy(plan or LOGIN_DRAFT), clock=clock, **options)
        opened.append(ledger)
        return ledger

    yield make
    for ledger in opened:
        ledger.close()


class CliResult(NamedTuple):
    """What one CLI invocation printed and returned."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return orjson.loads(self.out)


@pytest.fixture
def run_cli(capfd: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``plantrail ARGS`` in-process through the real entry point; return exit code, stdout, stderr."""
    from plantrail.cli.main import main

    def run(*args: str | os.PathLike[str]) -> CliResult:
        capfd.readouterr()
        code = main([os.fspath(a) for a in args])
        captured = capfd.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def write_json(tmp_path: Path) -> Callable[[str, Any], Path]:
    """Write a JSON file under tmp_path and return its path."""

    def write(name: str, value: Any) -> Path:
        path = tmp_path / name
        path.write_bytes(orjson.dumps(value))
        return path

    return write
