"""The contract-tour sample (samples/record_contract_tour.sh, docs/contract-tour.md): an expected failure that
passes, a lease that expires, an abandoned attempt whose late result is an orphan, and a budget_exhausted end."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.stores.reads import read_state
from plantrail.ledger.verify import verify_log
from tests.conftest import SAMPLES, CliResult
from tests.logs import read_records

Cli = Callable[..., CliResult]
SAMPLE = SAMPLES / "contract-tour.jsonl"


def test_the_tour_sample_verifies_and_ends_budget_exhausted(run_cli: Cli) -> None:
    """The sample verifies; it finished budget_exhausted listing verify and the criterion as unmet, and resume
    exits 15."""
    assert verify_log(SAMPLE).records == 14
    finish = read_records(SAMPLE)[-1]
    assert (finish.type, finish.v, finish.data.outcome) == ("run.finished", 2, "budget_exhausted")
    assert finish.data.unmet == ("step:verify", "criterion:expired-gets-401")
    result = run_cli("resume", SAMPLE, "--json")
    assert (result.code, result.json()["verdict"]) == (15, "budget_exhausted")


def test_the_tour_sample_abandons_an_attempt_without_charging_it() -> None:
    """implement allows one attempt: the abandoned first is not charged, the second completes, and the gone
    worker's result is the one orphan (STALE_ATTEMPT)."""
    state = read_state(str(SAMPLE), use_cache=False).state
    implement = state.steps["implement"]
    assert (implement.status, implement.attempt, implement.abandoned, implement.charged) == ("completed", 2, (1,), 1)
    [orphan] = state.orphans
    assert (orphan.step, orphan.attempt, orphan.why) == ("implement", 1, "STALE_ATTEMPT")
    types = [r.type for r in read_records(SAMPLE)]
    assert types.count("step.heartbeat") == 2 and types.count("step.abandoned") == 1


def test_the_tour_script_records_the_same_run(tmp_path: Path, full: bool) -> None:
    """Under --full, re-recording with the script gives the committed log's events (times and hashes aside)."""
    if not full:
        pytest.skip("runs about 20 CLI processes and sleeps for a lease to expire; use --full")
    out = tmp_path / "again.jsonl"
    env = os.environ | {"PLANTRAIL": f"{sys.executable} -m plantrail"}
    subprocess.run(
        ["bash", str(SAMPLES / "record_contract_tour.sh"), str(out)], check=True, env=env, capture_output=True
    )

    def events(path: Path) -> list[tuple[object, ...]]:
        return [(r.seq, r.type, r.actor, r.plan_version, r.data) for r in read_records(path)[1:]]

    assert events(out) == events(SAMPLE)
