"""Every refusal the executable plan contract added, reached through the CLI on one v2 run: exit 1 (2 for a
malformed report, a usage error), its stable code printed as ``error[CODE]``, and the log byte for byte
unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]

DRAFT: dict[str, Any] = {
    "goal": "Reject expired sessions",
    "scope": {"writes": ["src/**", "test/**"]},
    "acceptance_criteria": [{"id": "works", "description": "an expired session gets 401"}],
    "steps": [
        {
            "id": "a",
            "title": "Fix",
            "completion_evidence": "the test passes",
            "writes": ["src/session.js"],
            "checks": [{"id": "t", "kind": "command_exit", "command": "npm test", "expected_exit_code": 0}],
        },
        {"id": "b", "title": "Refactor", "completion_evidence": "it reads well", "writes": ["src/**"]},
        {"id": "g", "title": "Ship", "completion_evidence": "released", "writes": [], "requires_approval": True},
    ],
    "policy": {"max_in_progress": 2, "max_turns": 5},
}
PASSED = {"exit_code": 0, "observations": [{"check": "t", "exit_code": 0}]}
OUTSIDE = PASSED | {"changed_paths": ["package.json"]}
SPENT = {"exit_code": 1, "observations": [{"check": "t", "exit_code": 1}], "usage": {"turns": 5}}
ASK = ["request-approval", "LOG", "r", "--steps", "g", "--question", "May we ship?"]

# code -> (the commands that lead there, the refused command); LOG and REPORT:name are filled in.
CASES: dict[str, tuple[list[list[str]], list[str]]] = {
    "CHECK_NOT_MET": ([["start", "LOG", "a"]], ["complete", "LOG", "a", "-e", "all green, trust me"]),
    "REPORT_INVALID": ([["start", "LOG", "a"]], ["complete", "LOG", "a", "-e", "x", "--report", "REPORT:bad"]),
    "STOP_POLICY": (
        [["start", "LOG", "a"], ["fail", "LOG", "a", "--error", "red", "--report", "REPORT:spent"]],
        ["start", "LOG", "b"],
    ),
    "LEASE_REQUIRED": ([["start", "LOG", "b"]], ["heartbeat", "LOG", "b"]),
    "STALE_ATTEMPT": (
        [["start", "LOG", "b"], ["abandon", "LOG", "b", "--reason", "gone"], ["start", "LOG", "b"]],
        ["heartbeat", "LOG", "b", "--attempt", "1", "--lease", "5"],
    ),
    "PARTIAL_NOT_ALLOWED": ([], ["finish", "LOG", "--outcome", "partial", "--reason", "enough"]),
    "PAUSED_SCOPE_VIOLATION": (
        [["start", "LOG", "a"], ["complete", "LOG", "a", "-e", "fixed", "--report", "REPORT:outside"]],
        ["start", "LOG", "b"],
    ),
    "PAUSED_APPROVAL_DENIED": ([ASK, ["deny", "LOG", "r", "--why", "not today"]], ["start", "LOG", "a"]),
    "APPROVAL_REQUIRED": ([], ["start", "LOG", "g"]),
    "WRITE_SCOPE_CONFLICT": ([["start", "LOG", "a"]], ["start", "LOG", "b"]),
    "APPROVAL_NOT_FOUND": ([], ["approve", "LOG", "nope"]),
    "APPROVAL_DECIDED": ([ASK, ["approve", "LOG", "r"]], ["deny", "LOG", "r", "--why", "changed my mind"]),
    "DUPLICATE_APPROVAL_ID": ([ASK], ASK),
}

USAGE = {"REPORT_INVALID"}  # exit 2, as every usage error


def _args(argv: list[str], log: Path, reports: dict[str, Path]) -> list[str]:
    return [str(log) if a == "LOG" else str(reports[a[7:]]) if a.startswith("REPORT:") else a for a in argv]


@pytest.mark.parametrize("code", sorted(CASES))
def test_every_new_contract_refusal_leaves_the_log_byte_identical(code: str, tmp_path: Path, run_cli: Cli) -> None:
    """Each refusal of scopes, approvals, checks, leases, budgets and outcomes exits with its code and writes no
    byte."""
    draft, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    draft.write_text(json.dumps(DRAFT))
    reports = {"bad": {"exit_code": "one"}, "spent": SPENT, "outside": OUTSIDE}
    paths = {name: tmp_path / f"{name}.json" for name in reports}
    for name, body in reports.items():
        paths[name].write_text(json.dumps(body))
    assert run_cli("create", log, "--plan", draft).code == 0
    setup, refused = CASES[code]
    for argv in setup:
        done = run_cli(*_args(argv, log, paths))
        assert done.code == 0, done.err
    before = log.read_bytes()
    result = run_cli(*_args(refused, log, paths))
    assert (result.code, result.err.splitlines()[0].split(":")[0]) == (2 if code in USAGE else 1, f"error[{code}]")
    assert log.read_bytes() == before
