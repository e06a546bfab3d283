"""The replan brief (projections/brief.py, audit.brief, plantrail brief): the context a replan is written from."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger import audit
from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.draft_writer import step_draft
from plantrail.ledger.vocabulary.events import PlanCreated, PlanReplanned
from plantrail.ledger.vocabulary.plan import apply_patch, build_plan, parse_draft, topo_order
from plantrail.projections.brief import brief_view
from plantrail.projections.state import fold
from plantrail.projections.views import next_view
from tests.conftest import SAMPLES, CliResult, Clock
from tests.logs import read_records

SIX: dict[str, Any] = {
    "goal": "Upgrade the app and prove it still runs",
    "acceptance_criteria": [
        {"id": "builds", "description": "the app builds"},
        {"id": "runs", "description": "the app runs on a device"},
    ],
    "steps": [
        {
            "id": "clone",
            "title": "Clone and check the version",
            "depends_on": [],
            "completion_evidence": "git log",
            "outputs": ["checkout"],
        },
        {
            "id": "analyse",
            "title": "Analyse the sources",
            "depends_on": ["clone"],
            "completion_evidence": "report",
            "outputs": [{"name": "analysis", "media_type": "text/markdown"}],
        },
        {
            "id": "configure",
            "title": "Configure the build",
            "depends_on": ["clone"],
            "completion_evidence": "env",
            "outputs": ["env"],
        },
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


#: The artifact each of the three steps that complete produces (name=digest@uri, as --artifact takes it).
ARTIFACTS = {
    "clone": "checkout=sha256:" + "1" * 64,
    "analyse": "analysis=sha256:" + "2" * 64 + "@reports/analysis.md",
    "configure": "env=sha256:" + "3" * 64 + "@.env.build",
}


@pytest.fixture
def three_done_one_failed(tmp_path: Path, clock: Clock) -> Iterator[Ledger]:
    """A six-step run: clone, analyse and configure completed with their artifacts; bundle failed once (one
    attempt left)."""
    with Ledger.create(tmp_path / "run.jsonl", SIX, fsync="none", clock=clock) as ledger:
        for step, evidence in [
            ("clone", "v0.71 at 3f2a"),
            ("analyse", "report at reports/analysis.md"),
            ("configure", "env in .env.build"),
        ]:
            ledger.start(step)
            ledger.complete(step, evidence, artifacts=[ARTIFACTS[step]])
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


def test_a_patch_written_from_the_brief_alone_adds_a_repair_edge_and_keeps_the_completed_work(
    three_done_one_failed: Ledger, tmp_path: Path
) -> None:
    """From 3 of 6 steps completed and 1 failed, a patch built only from the brief adds a repair step named by
    the failed step's ``on_failure``; the 3 completed steps keep their ids, evidence and artifacts (completed work
    is reused, without renumbering), and when the step fails again ``next`` proposes the repair step."""
    ledger = three_done_one_failed
    path = tmp_path / "run.jsonl"
    doc = audit.brief(path)
    [failed] = doc["failed"]
    repair = {"id": "repair-bundle", "title": f"Repair: {failed['error']}", "completion_evidence": "bundle built"}
    patch = {
        "base_version": doc["plan_version"],
        "operations": [
            {"op": "add_step", "step": repair},
            {"op": "replace_step", "step_id": failed["id"], "step": failed["step"] | {"on_failure": repair["id"]}},
        ],
    }
    ledger.replan("failed_assumption", failed["error"], patch=patch, causes=[ledger.state.last_seq])
    after = audit.brief(path)
    kept = [(s["id"], s["evidence"], s["attempt"], s["artifacts"], s["step"]) for s in after["completed"]]
    assert kept == [(s["id"], s["evidence"], s["attempt"], s["artifacts"], s["step"]) for s in doc["completed"]]
    assert [a["uri"] for s in after["completed"] for a in s["artifacts"] if "uri" in a] == [
        "reports/analysis.md",
        ".env.build",
    ]
    assert after["round"] == 1 and ledger.state.plan is not None
    bundle = next(s for s in ledger.state.plan.steps if s.id == "bundle")
    assert bundle.on_failure == "repair-bundle" and bundle.depends_on == ("analyse", "configure")
    assert next_view(ledger.state)["ready"] == ["bundle"]  # the replan gave bundle a fresh attempt first
    ledger.start("bundle")
    ledger.fail("bundle", "JS bundle loading failure again")
    proposed = next_view(ledger.state)
    assert proposed["ready"] == ["repair-bundle"] and proposed["can_start"] == ["repair-bundle"]
    assert [(r["step"], r["waiting"], r["needed"]) for r in proposed["repairs"]] == [
        ("repair-bundle", ["bundle"], True)
    ]
    final = audit.brief(path)
    assert [s["id"] for s in final["completed"]] == ["clone", "analyse", "configure"]
    assert [(s["id"], s["step"].get("on_failure")) for s in final["failed"]] == [("bundle", "repair-bundle")]


def test_a_patch_replayed_from_the_log_gives_the_same_task_graph(
    three_done_one_failed: Ledger, tmp_path: Path, clock: Clock
) -> None:
    """A plan patch replays from the log to the same task graph: the patch the log records, applied to the plan the
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


FULL: dict[str, Any] = {
    "goal": "Migrate the schema and ship it",
    "acceptance_criteria": [
        {
            "id": "migrated",
            "description": "the schema is migrated",
            "checks": [{"id": "q", "kind": "state_predicate", "predicate": "schema_version", "expected": None}],
        }
    ],
    "steps": [
        {
            "id": "migrate",
            "title": "Write the migration",
            "completion_evidence": "the migration file",
            "max_attempts": 2,
            "priority": 2,
            "checks": [{"id": "t", "kind": "command_exit", "command": "pytest -q", "expected_exit_code": 0}],
            "timeout_s": 120.0,
            "max_tool_calls": 40,
            "max_cost_usd": 1.5,
            "notes": ["from the todo list: high"],
            "covers": ["migrated"],
            "writes": ["db/**"],
            "reads": ["src/**"],
            "allowed_tools": ["Bash", "Edit"],
            "effects_require_approval": True,
            "outputs": [{"name": "migration", "media_type": "text/x-sql"}],
            "inputs": [{"initial": "spec"}],
            "on_failure": "fix",
        },
        {"id": "fix", "title": "Fix the migration", "completion_evidence": "a patch", "max_attempts": "unlimited"},
        {
            "id": "ship",
            "title": "Ship it",
            "depends_on": ["migrate"],
            "completion_evidence": "the release",
            "writes": [],
            "requires_approval": True,
        },
    ],
    "policy": {"max_in_progress": "unlimited", "max_turns": 50, "soft_threshold": 0.5, "allowed_partial": True},
    "scope": {"reads": ["**"], "writes": ["db/**", "docs/**"]},
    "inputs": [{"name": "spec", "digest": "sha256:" + "4" * 64, "uri": "docs/spec.md"}],
    "required_artifacts": [{"step": "migrate", "output": "migration"}],
    "observed": [{"key": "repo", "version": "3f2a", "dirty": ["src/a.py"]}],
}


def test_each_step_in_the_brief_carries_its_whole_contract_and_the_plan_its_draft(
    make_ledger: Callable[..., Ledger], tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """Checks, budgets, notes, scope, lineage and on_failure are in each step's contract; the brief's ``draft``
    (read back from the CLI's JSON) rebuilds the active plan exactly, so a planner can start from it verbatim."""
    ledger = make_ledger(FULL)
    plan = ledger.state.plan
    assert plan is not None
    doc = brief_view(ledger.state)
    contracts = {s["id"]: s["step"] for s in doc["not_run"]}
    assert contracts == {s.id: step_draft(s) for s in plan.steps}
    assert contracts["migrate"] == FULL["steps"][0] | {"depends_on": []}
    assert contracts["ship"]["writes"] == [] and contracts["ship"]["requires_approval"] is True
    ledger.close()
    shown = run_cli("brief", tmp_path / "run.jsonl", "--json").json()
    assert build_plan(parse_draft(shown["draft"])) == plan
    assert shown["draft"]["policy"] == FULL["policy"] and shown["draft"]["observed"] == FULL["observed"]


SCOPED: dict[str, Any] = {
    "goal": "Tidy the docs",
    "acceptance_criteria": [{"id": "tidy", "description": "the docs are tidy"}],
    "steps": [
        {"id": step, "title": f"Tidy {step}", "completion_evidence": "a diff", "requires_approval": True}
        | ({"writes": ["docs/**"]} if step != "done" else {})
        for step in ("done", "granted", "asked", "refused", "free")
    ],
    "policy": {"max_in_progress": "unlimited"},
    "scope": {"reads": ["**"], "writes": ["docs/**"]},
}


def test_the_brief_gives_the_scope_left_and_the_approvals_that_bear_on_it(
    make_ledger: Callable[..., Ledger], tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """The task scope, the granted widenings and pending requests of the active version that cover an open
    step, the steps waiting for an approval and the denied ones, in JSON and in the text."""
    ledger = make_ledger(SCOPED)
    ledger.request_approval("r-done", "may done run?", "done")
    ledger.approve("r-done")
    ledger.start("done")
    ledger.complete("done", "tidied")
    ledger.request_approval("r-grant", "may it also write README.md?", "granted", writes="README.md", tools="Bash")
    ledger.approve("r-grant", why="fine")
    ledger.request_approval("r-ask", "may asked run?", "asked")
    ledger.request_approval("r-refuse", "may refused run?", "refused")
    ledger.deny("r-refuse", why="not now")
    scope = brief_view(ledger.state)["scope"]
    assert scope["task"] == {"reads": ["**"], "writes": ["docs/**"]}
    assert [(a["id"], a["steps"], a["writes"], a["tools"], a["why"]) for a in scope["granted"]] == [
        ("r-grant", ["granted"], ["README.md"], ["Bash"], "fine")
    ]
    assert [(a["id"], a["steps"], a["question"]) for a in scope["pending"]] == [("r-ask", ["asked"], "may asked run?")]
    assert [(w["step"], w["because"], w["requests"]) for w in scope["waiting_approval"]] == [
        ("asked", "requires_approval", ["r-ask"]),
        ("refused", "requires_approval", []),
        ("free", "requires_approval", []),
    ]
    assert scope["denied"] == ["refused"] and scope["violation"] is None
    ledger.close()
    path = tmp_path / "run.jsonl"
    assert run_cli("brief", path, "--json").json()["scope"] == scope
    text = run_cli("brief", path).out
    assert "scope left\n  task: writes docs/** · reads **\n" in text
    assert "  granted r-grant: steps granted · widens writes README.md; tools Bash\n" in text
    assert "  pending r-ask: steps asked · may asked run?\n" in text
    assert "  free: waits for an approval · requires_approval\n" in text
    assert "  free: Tidy free · waits for an approval\n" in text and "  granted: Tidy granted · ready\n" in text
    assert "  denied: refused (paused until a replan changes or removes them)" in text


def test_a_run_without_scope_or_approvals_has_an_empty_scope_left(three_done_one_failed: Ledger) -> None:
    """No task scope and no approvals: the scope left is empty and the text has no scope section."""
    doc = brief_view(three_done_one_failed.state)
    assert doc["scope"] == {
        "task": None,
        "granted": [],
        "pending": [],
        "waiting_approval": [],
        "denied": [],
        "violation": None,
    }
