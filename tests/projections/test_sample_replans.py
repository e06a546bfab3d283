"""The login-fix-replans sample: it verifies, and versions / why / orphans say what the README shows."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, CliResult
from tests.logs import read_records

Cli = Callable[..., CliResult]
SAMPLE = SAMPLES / "login-fix-replans.jsonl"


def test_the_sample_verifies(run_cli: Cli) -> None:
    """verify passes: three versions, one late result, none applied, the run complete."""
    result = run_cli("verify", SAMPLE)
    assert result.code == 0
    assert "plan versions: 3 · late results (orphans): 1, none applied · outcome: complete" in result.out


def test_versions_name_both_replans_and_their_causes(run_cli: Cli) -> None:
    """v2 is a failed assumption caused by diagnose's result; v3 a user's new constraint caused by the fix."""
    data = run_cli("versions", SAMPLE, "--json").json()
    assert [(v["version"], v["reason"], v["actor"], v["causes"]) for v in data["versions"]] == [
        (1, None, "planner", []),
        (2, "failed_assumption", "planner", [10]),
        (3, "new_constraint", "user", [20]),
    ]


def test_why_v2_shows_the_cause_lineage_and_the_late_result(run_cli: Cli) -> None:
    """why --version 2 quotes diagnose's result, shows the lineage reset and the late check-config result."""
    out = run_cli("why", SAMPLE, "--version", "2").out
    for line in (
        "why v2: failed_assumption · replan at seq 11",
        "  seq 10 · ",
        '{"step":"diagnose","attempt":1,"evidence":["auth-service POST /v1/token times out after 200 ms',
        "  kept     diagnose         attempt 1: auth-service POST /v1/token times out",
        "  reset    capture-fixture  contract changed (title, completion_evidence); was completed, attempt 1",
        "  reset    regression-test  invalidated by capture-fixture; was completed, attempt 1",
        "  removed  check-config     was in_progress, attempt 1",
        "  seq 12 · step.completed check-config attempt 1 · SUPERSEDED_VERSION · config/auth.yaml: token_secret",
    ):
        assert line in out


def test_why_v3_shows_the_patch_and_the_criterion_reset(run_cli: Cli) -> None:
    """The latest replan came from a patch by the user; redoing verify resets the login criterion."""
    data = run_cli("why", SAMPLE, "--json").json()
    assert (data["version"], data["actor"], data["causes"][0]["seq"]) == (3, "user", 20)
    assert [op["op"] for op in data["patch"]["operations"]] == ["add_step", "replace_step", "add_criterion"]
    changes = data["changes"]
    assert [k["step"] for k in changes["kept"]] == [
        "reproduce",
        "capture-fixture",
        "diagnose",
        "check-timeout",
        "regression-test",
        "fix",
    ]
    assert [(r["step"], r["cause"]) for r in changes["reset"]] == [("verify", "contract_changed")]
    assert changes["criteria"]["reset"] == [
        {"criterion": "login-test-passes", "cause": "work_invalidated", "was": "passed", "at_version": 3}
    ]
    assert data["late_results"] == []


def test_orphans_show_the_late_check_config_result(run_cli: Cli) -> None:
    """The one orphan is check-config's v1 completion, which arrived in v2 after the step was removed."""
    result = run_cli("orphans", SAMPLE)
    assert "12   check-config  completed  v1 attempt 1  v2       SUPERSEDED_VERSION  not in plan" in result.out
    [orphan] = run_cli("orphans", SAMPLE, "--json").json()["orphans"]
    assert (orphan["plan_version"], orphan["active_version"], orphan["status_now"]) == (1, 2, None)


def test_the_script_records_the_same_run(tmp_path: Path, full: bool) -> None:
    """Under --full, re-recording with the script gives the committed log's events (times and hashes aside)."""
    if not full:
        pytest.skip("runs about 30 CLI processes; use --full")
    out = tmp_path / "again.jsonl"
    env = os.environ | {"PLANTRAIL": f"{sys.executable} -m plantrail"}
    subprocess.run(
        ["bash", str(SAMPLES / "record_login_fix_replans.sh"), str(out)], check=True, env=env, capture_output=True
    )

    def events(path: Path) -> list[tuple[object, ...]]:
        return [(r.seq, r.type, r.actor, r.plan_version, r.data) for r in read_records(path)[1:]]

    assert events(out) == events(SAMPLE)
