"""The CLI records a run end to end through the real entry point."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CliResult


def test_create_start_complete_status_round_trip(
    tmp_path: Path, run_cli: Callable[..., CliResult], write_json: Callable[[str, Any], Path], draft: dict[str, Any]
) -> None:
    """A run created, started and completed from the CLI shows up in status --json."""
    log = tmp_path / "run.jsonl"
    assert run_cli("create", log, "--plan", write_json("d.json", draft)).code == 0
    assert run_cli("start", log, "reproduce").code == 0
    assert run_cli("complete", log, "reproduce", "--evidence", "login.test.ts fails with 401").code == 0
    status = run_cli("status", log, "--json").json()
    assert [(s["id"], s["status"], s["ready"]) for s in status["steps"]] == [
        ("reproduce", "completed", False),
        ("diagnose", "pending", True),
    ]
