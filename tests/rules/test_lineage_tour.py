"""The lineage-tour sample (samples/record_lineage_tour.sh, docs/lineage-tour.md): artifacts by digest, an
observation that moves under the run, a stale producer and consumer, unrelated work kept, a consumer in progress
cancelled and its late result on the orphan path, a side effect in doubt, and a fork that releases through a
staging registry and finishes complete."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.stores.jsonl.reads import read_state
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.artifacts import input_key
from tests.conftest import SAMPLES, CliResult
from tests.logs import read_records

Cli = Callable[..., CliResult]
SAMPLE = SAMPLES / "lineage-tour.jsonl"
FORK = SAMPLES / "lineage-tour-staging.jsonl"
DRAFT = SAMPLES / "lineage-tour.draft.json"


def _prefix(tmp_path: Path, last_seq: int) -> Path:
    """A copy of the sample up to and including ``last_seq`` (a log's prefix is a log)."""
    out = tmp_path / "prefix.jsonl"
    out.write_bytes(b"".join(SAMPLE.read_bytes().splitlines(keepends=True)[: last_seq + 1]))
    return out


def _statuses(log: Path) -> dict[str, str]:
    return {s.id: s.status for s in read_state(log).state.steps.values_in_order()}


def test_the_tour_draft_declares_outputs_inputs_of_each_kind_and_validates(run_cli: Cli) -> None:
    """snapshot consumes the repository observation, config the task's initial input, generate both outputs;
    `plantrail check` accepts the draft."""
    plan = read_records(SAMPLE)[1].data.plan
    inputs = {s.id: [input_key(i) for i in s.terms.inputs] for s in plan.steps if s.terms and s.terms.inputs}
    assert inputs == {
        "snapshot": ["observation:repo"],
        "config": ["initial:style-guide"],
        "generate": ["snapshot/schema", "config/config"],
        "test": ["generate/client"],
        "publish": ["generate/client"],
    }
    assert run_cli("check", DRAFT).code == 0


def test_the_observation_makes_the_completed_producer_stale_and_the_plan_possibly_stale(
    tmp_path: Path, run_cli: Cli
) -> None:
    """After `observe repo 4b7d0a1` (seq 9) snapshot, which consumed 9c1e4f2, is stale and ready; generate keeps
    its completion until snapshot's digest changes; next flags the plan possibly stale."""
    log = _prefix(tmp_path, 9)
    assert _statuses(log) == {
        "snapshot": "stale",
        "config": "completed",
        "generate": "completed",
        "test": "in_progress",
        "publish": "pending",
    }
    result = run_cli("next", log, "--json")
    assert result.code == 0
    doc = json.loads(result.out)
    assert doc["possibly_stale"] is True and doc["ready"] == ["snapshot"]


def test_a_new_schema_digest_stales_generate_and_keeps_config(tmp_path: Path, run_cli: Cli) -> None:
    """snapshot's second completion (seq 11) has another digest: generate is stale (its reason names the input),
    config, which consumed nothing that changed, stays completed; the status table shows snapshot's one charged
    attempt and its attempt number."""
    log = _prefix(tmp_path, 11)
    state = read_state(log).state
    assert (state.steps["generate"].status, state.steps["config"].status) == ("stale", "completed")
    assert (state.steps["generate"].reason or "").startswith("input snapshot/schema changed: sha256:1a2b")
    out = run_cli("status", log).out
    assert "1/3 (attempt 2)" in out.split("snapshot ", 1)[1].splitlines()[0]


def test_the_cancelled_consumer_is_abandoned_and_its_late_result_is_an_orphan(tmp_path: Path, run_cli: Cli) -> None:
    """generate's new client (seq 13) marks test, in progress on the old one, for cancellation: resume exits 10
    and says to abandon it (started at seq 8); after the abandon, w1's result is an orphan (STALE_ATTEMPT)."""
    log = _prefix(tmp_path, 13)
    result = run_cli("resume", log)
    assert result.code == 10
    assert "next: an input changed under test: stop its worker and abandon it" in result.out
    assert "test  attempt 1  started at seq 8" in result.out
    state = read_state(SAMPLE).state
    [orphan] = state.orphans
    assert (orphan.seq, orphan.step, orphan.attempt, orphan.why) == (15, "test", 1, "STALE_ATTEMPT")
    assert [r.type for r in read_records(SAMPLE)[14:16]] == ["step.abandoned", "step.completed"]


def test_the_sample_ends_with_publishs_effect_in_doubt(run_cli: Cli) -> None:
    """The sample verifies; resume exits 10 and lists the release's effect as in doubt (check the registry)."""
    report = verify_log(SAMPLE)
    assert (report.last_seq, report.torn, report.orphans) == (19, None, 1)
    result = run_cli("resume", SAMPLE, "--json")
    assert result.code == 10
    doc = json.loads(result.out)
    assert [(e["key"], e["step"], e["status"]) for e in doc["effects"]["in_doubt"]] == [
        ("release-acme-client-1.4.0", "publish", "in_doubt")
    ]


def test_the_brief_text_says_the_plan_is_possibly_stale(run_cli: Cli) -> None:
    """brief's text, like status, next and resume, ends with the possibly-stale line when the repository moved
    since the plan was made."""
    out = run_cli("brief", SAMPLE).out
    assert out.rstrip().endswith("possibly stale: the plan was made from other observations (repo 9c1e4f2 -> 4b7d0a1)")


def test_the_fork_verifies_against_its_parent_and_finishes_complete(run_cli: Cli) -> None:
    """lineage-tour-staging names its parent at seq 17, verifies with --parent, replans from the current
    repository (no longer possibly stale), commits both effects and finishes complete."""
    records = read_records(FORK)
    forked = records[1].data
    assert (records[1].type, forked.parent, forked.seq) == ("run.forked", "lineage-tour", 17)
    assert run_cli("verify", FORK, "--parent", SAMPLE).code == 0
    doc = json.loads(run_cli("status", FORK, "--json").out)
    assert doc["outcome"] == "complete" and doc["possibly_stale"] is False
    assert [e["key"] for e in doc["effects"]["committed"]] == ["stage-acme-client-1.4.0", "release-acme-client-1.4.0"]
    assert doc["effects"]["in_doubt"] == []


def test_the_tour_script_records_the_same_runs(tmp_path: Path, full: bool) -> None:
    """Under --full, re-recording with the script gives the committed logs' events (times, hashes and the fork's
    copy of them aside)."""
    if not full:
        pytest.skip("runs about 45 CLI processes; use --full")
    out, fork = tmp_path / "lineage-tour.jsonl", tmp_path / "lineage-tour-staging.jsonl"
    env = os.environ | {"PLANTRAIL": f"{sys.executable} -m plantrail"}
    subprocess.run(
        ["bash", str(SAMPLES / "record_lineage_tour.sh"), str(out), str(fork)],
        check=True,
        env=env,
        capture_output=True,
    )

    def events(path: Path) -> list[tuple[object, ...]]:
        return [
            (r.seq, r.type, r.actor, r.plan_version, r.data) for r in read_records(path)[1:] if r.type != "run.forked"
        ]

    assert events(out) == events(SAMPLE)
    assert events(fork) == events(FORK)
