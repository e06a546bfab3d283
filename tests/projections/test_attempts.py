"""Each step's attempt history (projections.attempts) and `plantrail status --attempts`."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plantrail.ledger.api import Ledger
from plantrail.projections.attempts import Attempt, LateResult, attempts_view, fold
from plantrail.projections.canonical import state_hash
from plantrail.projections.state import fold as fold_state
from tests.conftest import CliResult
from tests.logs import read_records


def test_attempts_end_by_their_result_and_the_next_one_follows(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A failed attempt then a completed one are two entries, each with the seqs that started and ended it."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.fail("reproduce", "npm install: ETIMEDOUT")
    ledger.start("reproduce")
    ledger.complete("reproduce", ["saved the failing test output"])
    history = fold(read_records(tmp_path / "run.jsonl"))
    assert history.attempts["reproduce"] == (
        Attempt(1, 1, started_seq=2, result="failed", result_seq=3, reason="npm install: ETIMEDOUT"),
        Attempt(1, 2, started_seq=4, result="completed", result_seq=5, evidence=("saved the failing test output",)),
    )


def test_a_replan_supersedes_an_attempt_in_progress_and_its_late_result_is_listed_under_it(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """An attempt cut off by a replan ends 'superseded'; the result that arrives later sits under it, late."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    changed = copy.deepcopy(draft)
    changed["steps"][0]["title"] = "Reproduce the login failure locally"
    ledger.replan("failed_assumption", "staging differs from local", plan=changed)
    ledger.complete("reproduce", ["it failed on staging"], plan_version=1, attempt=1)
    ledger.start("reproduce")
    history = fold(read_records(tmp_path / "run.jsonl"))
    first, second = history.attempts["reproduce"]
    assert (first.plan_version, first.result, first.result_seq) == (1, "superseded", 3)
    assert first.late == (LateResult(4, "step.completed", "SUPERSEDED_VERSION", ("it failed on staging",)),)
    assert (second.plan_version, second.attempt, second.result) == (2, 1, None)
    assert attempts_view(history.attempts["reproduce"])[0]["late"][0]["why"] == "SUPERSEDED_VERSION"


def test_the_history_fold_ends_at_the_same_state_as_the_plan_fold(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """The attempt history's state is the plan state of the same records (same state hash)."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.block("reproduce", "staging is down")
    records = read_records(tmp_path / "run.jsonl")
    assert state_hash(fold(records).state) == state_hash(fold_state(records))


def test_status_attempts_prints_each_attempt_and_json_lists_them(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any], run_cli: Callable[..., CliResult]
) -> None:
    """status --attempts adds an attempts table; its --json adds attempts by step, removed steps included."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.fail("reproduce", "flaky network")
    ledger.start("reproduce")
    log = tmp_path / "run.jsonl"
    text = run_cli("status", log, "--attempts").out
    section = text.split("\nattempts\n", 1)[1]
    assert "failed (seq 3)" in section and "in progress" in section and "flaky network" in section
    data = run_cli("status", log, "--attempts", "--json").json()
    assert [a["result"] for a in data["attempts"]["reproduce"]] == ["failed", None]
    assert data["attempts"]["diagnose"] == []
    assert "attempts" not in run_cli("status", log, "--json").json()
