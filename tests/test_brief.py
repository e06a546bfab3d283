"""The replan brief (projections/brief.py, audit.brief, plantrail brief): seed 002 重规划上下文."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger import audit
from plantrail.ledger.api import Ledger
from plantrail.ledger.events import PlanCreated, PlanReplanned
from plantrail.ledger.plan import apply_patch, topo_order
from plantrail.projections.brief import brief_view
from plantrail.projections.state import fold
from tests.conftest import SAMPLES, CliResult, Clock
from tests.logs import read_records

SIX: dict[str, Any] = {
    "goal": "Upgrade the app and prove it still runs",
    "acceptance_criteria": [
        {"id": "builds", "description": "the app builds"},
        {"id": "runs", "description": "the app runs on a device"},
    ],
    "steps": [
        {"id": "clone", "title": "Clone and check the version", "depends_on": [], "completion_evidence": "git log"},
        {"id": "analyse", "title": "Analyse the sources", "depends_on": ["clone"], "completion_evidence": "report"},
        {"id": "configure", "title": "Configure the build", "depends_on": ["clone"], "completion_evidence": "env"},
        {
            "id": "bundle",
            "title": "Check the JS bundle loads",
            "depends_on": ["analyse", "configure"],
            "completion_evidence": "bundle log",
            "max_attempts": 2,
            "covers": ["builds"],
        },
        {
            "id": "device",
            "title": "Run on a device",
            "depends_on": ["bundle"],
            "completion_evidence": "device log",
            "covers": ["runs"],
        },
        {"id": "docs", "title": "Write the upgrade notes", "depends_on": ["device"], "completion_evidence": "notes"},
    ],
}


@pytest.fixture
def three_done_one_failed(tmp_path: Path, clock: Clock) -> Iterator[Ledger]:
    """A six-step run: clone, analyse and configure completed; bundle failed once (one attempt left)."""
    with Ledger.create(tmp_path / "run.jsonl", SIX, fsync="none", clock=clock) as ledger:
        for step, evidence in [
            ("clone", "v0.71 at 3f2a"),
            ("analyse", "report at reports/analysis.md"),
            ("configure", "env in .env.build"),
        ]:
            ledger.start(step)
            ledger.complete(step, evidence)
        ledger.start("bundle")
        ledger.fail("bundle", "JS bundle loading failure: index.android.bundle missing")
        yield ledger


def test_the_brief_sorts_the_steps_by_what_became_of_them(three_done_one_failed: Ledger, tmp_path: Path) -> None:
    """Completed steps with evidence, the failed one with its error, the steps not run with what they wait on."""
    doc = audit.brief(tmp_path / "run.jsonl")
    assert [(s["id"], s["evidence"]) for s in doc["completed"]] == [
        ("clone", ["v0.71 at 3f2a"]),
        ("analyse", ["report at reports/analysis.md"]),
        ("configure", ["env in .env.build"]),
    ]
    [failed] = doc["failed"]
    assert failed["id"] == "bundle" and failed["status"] == "pending" and failed["attempt"] == 1
    assert failed["error"] == "JS bundle loading failure: index.android.bundle missing" and not failed["exhausted"]
    assert [(s["id"], s["waiting_on"]) for s in doc["not_run"]] == [("device", ["bundle"]), ("docs", ["device"])]
    assert [c["id"] for c in doc["unmet_criteria"]] == ["builds", "runs"]
    assert doc["remaining"] == {"steps": ["bundle", "device", "docs"], "criteria": ["builds", "runs"]}
    assert doc["round"] == 0 and doc["plan_version"] == 1
    assert doc["budget"]["steps"]["bundle"]["attempts"]["left"] == 1


def test_seed_002_a_patch_written_from_the_brief_alone_keeps_the_completed_work(
    three_done_one_failed: Ledger, tmp_path: Path
) -> None:
    """From 3 of 6 steps completed and 1 failed, a patch built only from the brief that adds a repair step keeps
    the 3 completed steps under their ids with their evidence (seed 002's 已完成步骤复用原则, without renumbering)."""
    ledger = three_done_one_failed
    path = tmp_path / "run.jsonl"
    doc = audit.brief(path)
    [failed] = doc["failed"]
    repair = {
        "id": "repair-bundle",
        "title": f"Repair: {failed['error']}",
        "depends_on": failed["step"]["depends_on"],
        "completion_evidence": "the bundle is generated",
    }
    retried = failed["step"] | {"depends_on": [*failed["step"]["depends_on"], "repair-bundle"]}
    patch = {
        "base_version": doc["plan_version"],
        "operations": [
            {"op": "add_step", "step": repair},
            {"op": "replace_step", "step_id": failed["id"], "step": retried},
        ],
    }
    ledger.replan("failed_assumption", failed["error"], patch=patch, causes=[ledger.state.last_seq])
    after = audit.brief(path)
    assert [(s["id"], s["evidence"], s["attempt"]) for s in after["completed"]] == [
        (s["id"], s["evidence"], s["attempt"]) for s in doc["completed"]
    ]
    assert after["round"] == 1 and [s["id"] for s in after["not_run"]][:1] == ["repair-bundle"]
    assert ledger.state.steps["repair-bundle"].status == "pending" and ledger.state.steps["bundle"].attempt == 0


def test_seed_001_12_3_a_patch_replayed_from_the_log_gives_the_same_task_graph(
    three_done_one_failed: Ledger, tmp_path: Path, clock: Clock
) -> None:
    """Seed 001 12.3 (PlanPatch 可从 trace 重放并得到相同任务图): the patch the log records, applied to the plan the
    log records, gives the recorded plan and the same step order; replayed into a new run, the same graph."""
    ledger = three_done_one_failed
    patch = {
        "base_version": 1,
        "operations": [
            {
                "op": "add_step",
                "step": {
                    "id": "cache",
                    "title": "Clear the bundler cache",
                    "depends_on": ["configure"],
                    "completion_evidence": "cache cleared",
                },
            },
            {"op": "remove_step", "step_id": "docs"},
        ],
    }
    ledger.replan("failed_assumption", "the bundler cache is stale", patch=patch)
    records = read_records(tmp_path / "run.jsonl")
    created = next(r.data for r in records if isinstance(r.data, PlanCreated))
    replanned = next(r.data for r in records if isinstance(r.data, PlanReplanned))
    assert replanned.patch is not None
    rebuilt = apply_patch(created.plan, replanned.patch)
    assert rebuilt == replanned.plan
    assert topo_order(rebuilt.steps) == tuple(fold(records).steps)
    with Ledger.create(tmp_path / "again.jsonl", created.plan, fsync="none", clock=clock) as again:
        again.replan(replanned.reason, replanned.why, patch=replanned.patch)
        assert again.state.plan == replanned.plan
        assert tuple(again.state.steps) == tuple(fold(records).steps)
        assert {s.id: s.depends_on for s in again.state.plan.steps} == {s.id: s.depends_on for s in rebuilt.steps}  # type: ignore[union-attr]


def test_the_brief_is_derived_from_the_log_only(three_done_one_failed: Ledger, tmp_path: Path) -> None:
    """A copy of the log without its cache gives the same brief, equal to the view of the log's fold."""
    path = tmp_path / "run.jsonl"
    three_done_one_failed.close()
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    assert audit.brief(copy) | {"run": "run"} == audit.brief(path)
    assert audit.brief(path) == brief_view(fold(read_records(path)))


def test_a_blocked_step_and_a_step_in_progress_have_their_places(tmp_path: Path, clock: Clock) -> None:
    """A blocked step is failed with its reason; a started step without a result is in progress."""
    with Ledger.create(tmp_path / "run.jsonl", SIX, fsync="none", clock=clock) as ledger:
        ledger.start("clone")
        started = brief_view(ledger.state)
        ledger.block("clone", "no network")
        doc = brief_view(ledger.state)
    assert [(s["id"], s["attempt"]) for s in started["in_progress"]] == [("clone", 1)] and not started["failed"]
    assert [(s["id"], s["status"], s["reason"]) for s in doc["failed"]] == [("clone", "blocked", "no network")]
    replans = brief_view(fold(read_records(SAMPLES / "login-fix-replans.jsonl")))
    assert replans["round"] == 2 and len(replans["orphans"]) == 1


def test_the_brief_command_prints_the_document(
    three_done_one_failed: Ledger, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """`plantrail brief --json` prints the library's document; the text names each part."""
    path = tmp_path / "run.jsonl"
    three_done_one_failed.close()
    shown = run_cli("brief", path, "--json")
    assert shown.code == 0 and shown.json() == audit.brief(path)
    text = run_cli("brief", path).out
    assert "bundle: Check the JS bundle loads · JS bundle loading failure" in text
    assert "device: Run on a device · waits on bundle" in text
