"""Coverage of the task criteria (ledger/vocabulary/coverage.py), at both levels of criteria: the task's and the
steps'."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.coverage import coverage_view, coverage_warnings
from plantrail.ledger.vocabulary.draft_check import check_draft
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.logs import read_records

COVERED: dict[str, Any] = {
    "goal": "Fix the login failure",
    "acceptance_criteria": [
        {"id": "reproduced", "description": "the failure is reproduced"},
        {"id": "login-passes", "description": "the login test passes"},
        {
            "id": "suite-green",
            "description": "the whole suite passes",
            "checks": [{"id": "suite", "kind": "command_exit", "command": "pytest -q", "expected_exit_code": 0}],
        },
    ],
    "steps": [
        {
            "id": "reproduce",
            "title": "Reproduce",
            "depends_on": [],
            "completion_evidence": "output",
            "covers": ["reproduced"],
        },
        {
            "id": "fix",
            "title": "Fix",
            "depends_on": ["reproduce"],
            "completion_evidence": "diff",
            "covers": ["login-passes"],
        },
    ],
}


def _draft(**changes: Any) -> dict[str, Any]:
    draft = copy.deepcopy(COVERED)
    draft.update(changes)
    return draft


def _without_covers(draft: dict[str, Any], step: str) -> dict[str, Any]:
    draft = copy.deepcopy(draft)
    for s in draft["steps"]:
        if s["id"] == step:
            del s["covers"]
    return draft


def test_the_coverage_matrix_names_the_steps_and_checks_that_cover_each_criterion() -> None:
    """Each criterion lists the steps that cover it and its own typed checks; a plan covered in full has no gap."""
    view = coverage_view(build_plan(parse_draft(COVERED)))
    assert view == {
        "declared": True,
        "criteria": [
            {"id": "reproduced", "steps": ["reproduce"], "checks": [], "covered": True},
            {"id": "login-passes", "steps": ["fix"], "checks": [], "covered": True},
            {"id": "suite-green", "steps": [], "checks": ["suite"], "covered": True},
        ],
        "uncovered": [],
    }


def test_every_required_success_condition_has_a_source_of_evidence() -> None:
    """Every required success condition has a source of evidence: a criterion no step and no check covers is named."""
    draft = _without_covers(COVERED, "fix")
    found = check_draft(draft)
    assert found.ok and [(w.code, w.fields["criterion"]) for w in found.warnings] == [("COVERAGE_GAP", "login-passes")]
    strict = check_draft(draft, strict=True)
    assert not strict.ok and [p.fields["criterion"] for p in strict.problems] == ["login-passes"]


def test_a_step_covering_an_unknown_criterion_is_refused_naming_both() -> None:
    """covers naming a criterion the plan does not have is UNKNOWN_COVERED_CRITERION, with the step and the id."""
    draft = copy.deepcopy(COVERED)
    draft["steps"][1]["covers"] = ["login-passes", "logout-passes"]
    found = check_draft(draft)
    [problem] = found.problems
    assert problem.code == "UNKNOWN_COVERED_CRITERION"
    assert problem.fields["step"] == "fix" and problem.fields["ids"] == ["logout-passes"]


def test_check_lists_every_problem_at_once() -> None:
    """A draft with several problems gets them all in one check, structural and coverage alike."""
    draft = copy.deepcopy(COVERED)
    draft["steps"][1]["covers"] = "login-passes"
    draft["steps"][0]["depends_on"] = ["ghost"]
    codes = sorted(p.code for p in check_draft(draft).problems)
    assert codes == ["DRAFT_INVALID", "UNKNOWN_DEPENDENCY"]


def test_a_plan_that_declares_no_coverage_is_warned_only_when_strict() -> None:
    """A v1 plan (no covers, no typed criterion checks) gets no warning; --strict refuses its gaps."""
    plan = build_plan(parse_draft(LOGIN_DRAFT))
    assert coverage_warnings(plan) == []
    assert coverage_view(plan)["declared"] is False  # type: ignore[index]
    assert [p.fields["criterion"] for p in check_draft(LOGIN_DRAFT, strict=True).problems] == ["login-test-passes"]


def test_create_strict_refuses_a_gap_and_writes_nothing(tmp_path: Path) -> None:
    """Ledger.create(strict=True) raises COVERAGE_GAP for every gap and leaves no file."""
    with pytest.raises(PlantrailError) as caught:
        Ledger.create(tmp_path / "run.jsonl", _without_covers(COVERED, "reproduce"), strict=True)
    assert caught.value.code == "COVERAGE_GAP" and caught.value.exit_code == 1
    assert not (tmp_path / "run.jsonl").exists()


def test_replan_strict_refuses_a_gap_and_leaves_the_log_unchanged(tmp_path: Path) -> None:
    """Ledger.replan(strict=True) refuses a new plan with a gap; the log keeps its bytes."""
    path = tmp_path / "run.jsonl"
    with Ledger.create(path, COVERED, fsync="none", strict=True) as ledger:
        before = path.read_bytes()
        patch = {
            "base_version": 1,
            "operations": [{"op": "add_criterion", "criterion": {"id": "docs", "description": "docs updated"}}],
        }
        with pytest.raises(PlantrailError) as caught:
            ledger.replan("new_constraint", "docs too", patch=patch, strict=True)
        assert caught.value.code == "COVERAGE_GAP" and caught.value.fields["criterion"] == "docs"
        assert path.read_bytes() == before
        ledger.replan("new_constraint", "docs too", patch=patch)  # without strict: accepted, with a warning
        assert coverage_view(ledger.state.plan)["uncovered"] == ["docs"]  # type: ignore[index]


def test_covers_is_a_v2_term_and_a_v1_log_keeps_its_bytes_and_hash(tmp_path: Path) -> None:
    """A step's covers makes the plan line v2; a plan without covers is written as v1 wrote it (the samples'
    pinned hashes are tests/vocabulary/test_format_v2.py's)."""
    with Ledger.create(tmp_path / "v2.jsonl", COVERED, fsync="none") as ledger:
        assert ledger.state.plan is not None and ledger.state.plan.steps[0].covers == ("reproduced",)
    assert b'"covers":["reproduced"]' in (tmp_path / "v2.jsonl").read_bytes()
    assert read_records(tmp_path / "v2.jsonl")[1].v == 2
    with Ledger.create(tmp_path / "v1.jsonl", LOGIN_DRAFT, fsync="none"):
        pass
    assert b'"covers"' not in (tmp_path / "v1.jsonl").read_bytes()
    assert [r.v for r in read_records(tmp_path / "v1.jsonl")] == [1, 1]


def test_a_replan_that_changes_only_what_a_step_covers_keeps_its_work(tmp_path: Path) -> None:
    """covers is no part of a step's contract: a completed step whose covers changed stays completed."""
    with Ledger.create(tmp_path / "run.jsonl", COVERED, fsync="none") as ledger:
        ledger.start("reproduce")
        ledger.complete("reproduce", "failing output")
        draft = copy.deepcopy(COVERED)
        draft["steps"][0]["covers"] = ["reproduced", "login-passes"]
        ledger.replan("agent_revision", "reproduce also shows the login", plan=draft)
        assert ledger.state.steps["reproduce"].status == "completed"


def test_the_check_command_exits_1_on_problems_and_prints_the_matrix(
    write_json: Callable[[str, Any], Path], run_cli: Callable[..., CliResult]
) -> None:
    """`plantrail check` prints the matrix and warnings (exit 0), and with --strict lists the gaps (exit 1)."""
    draft = write_json("draft.json", _without_covers(COVERED, "fix"))
    loose = run_cli("check", draft)
    assert loose.code == 0 and "login-passes" in loose.out and "warning[COVERAGE_GAP]" in loose.out
    strict = run_cli("check", draft, "--strict", "--json")
    assert strict.code == 1 and strict.json()["ok"] is False
    assert [p["criterion"] for p in strict.json()["problems"]] == ["login-passes"]
    assert "error[COVERAGE_GAP]" in strict.err


def test_check_shows_coverage_only_for_a_plan_that_declares_it(
    write_json: Callable[[str, Any], Path], run_cli: Callable[..., CliResult]
) -> None:
    """A draft that declares no coverage checks ok with no coverage table (no column of NO); one that declares
    it shows the matrix."""
    v1 = write_json("v1.json", LOGIN_DRAFT)
    plain = run_cli("check", v1)
    assert plain.code == 0 and plain.out.splitlines() == [f"ok: {v1} validates"]
    assert "COVERED" not in plain.out and "NO" not in plain.out.split()
    covered = run_cli("check", write_json("covered.json", COVERED))
    assert covered.code == 0 and covered.out.startswith("coverage\n") and "COVERED" in covered.out
    assert run_cli("check", v1, "--json").json()["coverage"]["declared"] is False


def test_check_explains_each_problem_with_its_fix(
    write_json: Callable[[str, Any], Path], run_cli: Callable[..., CliResult]
) -> None:
    """Every problem is printed with the fix for it (in --json too); stderr names how many and the first; a
    code of a draft problem has a fix of its own, never the fallback."""
    from plantrail.ledger.vocabulary.draft_check import FIXES, fix_for
    from plantrail.ledger.vocabulary.errors import CODES, PlanInvalid, error

    draft = copy.deepcopy(LOGIN_DRAFT)
    draft["steps"][0]["depends_on"] = ["ghost"]
    draft["steps"].append(copy.deepcopy(draft["steps"][1]))
    path = write_json("bad.json", draft)
    found = run_cli("check", path)
    assert found.code == 1
    lines = found.out.splitlines()
    problems = [i for i, line in enumerate(lines) if line.startswith("problem[")]
    assert [lines[i].split("]")[0] for i in problems] == ["problem[DUPLICATE_STEP_ID", "problem[UNKNOWN_DEPENDENCY"]
    assert [lines[i + 1] for i in problems] == [
        f"  fix: {FIXES['DUPLICATE_STEP_ID']}",
        f"  fix: {FIXES['UNKNOWN_DEPENDENCY']}",
    ]
    assert lines[-1] == f"NOT ok: {path} has 2 problem(s), each above with its fix"
    assert found.err.startswith("error[DUPLICATE_STEP_ID]: ") and "2 problem(s)" in found.err
    assert len(found.err.splitlines()) == 1
    as_json = run_cli("check", path, "--json").json()
    assert [p["fix"] for p in as_json["problems"]] == [FIXES["DUPLICATE_STEP_ID"], FIXES["UNKNOWN_DEPENDENCY"]]
    drafts = [code for code, (kind, _) in CODES.items() if kind is PlanInvalid and code != "PATCH_INVALID"]
    assert [code for code in drafts if code not in FIXES] == []
    assert fix_for(error("TORN_TAIL", "torn", path="x.jsonl")) == "run `plantrail repair x.jsonl`"


def test_create_and_replan_warn_on_stderr_and_refuse_with_strict(
    tmp_path: Path, write_json: Callable[[str, Any], Path], run_cli: Callable[..., CliResult]
) -> None:
    """create warns about a gap (warnings in its JSON) and --strict refuses it; status --json has the matrix."""
    draft = write_json("draft.json", _without_covers(COVERED, "fix"))
    refused = run_cli("create", tmp_path / "strict.jsonl", "--plan", draft, "--strict")
    assert refused.code == 1 and "error[COVERAGE_GAP]" in refused.err and not (tmp_path / "strict.jsonl").exists()
    made = run_cli("create", tmp_path / "run.jsonl", "--plan", draft, "--json")
    assert made.code == 0 and [w["criterion"] for w in made.json()["warnings"]] == ["login-passes"]
    assert "warning[COVERAGE_GAP]" in made.err
    status = run_cli("status", tmp_path / "run.jsonl", "--json").json()
    assert status["coverage"]["uncovered"] == ["login-passes"]
    plain = run_cli("create", tmp_path / "v1.jsonl", "--plan", write_json("v1.json", LOGIN_DRAFT), "--json")
    assert "warnings" not in plain.json() and plain.err == ""
