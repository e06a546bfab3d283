"""What a new user reads: the right message for each mistake, anchors to paste, did-you-mean, every error."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from tests.conftest import SAMPLES, CliResult

Cli = Callable[..., CliResult]
HEX64 = re.compile(r"\b\d+:[0-9a-f]{64}\b")
SHORT_HEAD = re.compile(r"\b(\d+:)?[0-9a-f]{6,63}\b")  # a hash cut short, with or without its seq


@pytest.fixture
def log(tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> Path:
    """A run with three plan versions."""
    ledger = make_ledger(draft)
    for why in ("first look", "second look"):
        ledger.replan("user_request", why, plan=draft)
    return tmp_path / "run.jsonl"


def test_diff_beyond_the_last_version_names_the_version_asked_for(log: Path, run_cli: Cli) -> None:
    """diff LOG 1 9 on a three-version log says version 9 is not in the log, not version 4."""
    result = run_cli("diff", log, "1", "9")
    assert result.code == 1
    assert result.err == "error[UNKNOWN_PLAN_VERSION]: plan version 9 is not in the log (it has versions 1 to 3)\n"


def test_create_in_a_missing_folder_says_the_folder_is_missing(
    tmp_path: Path, run_cli: Cli, write_json: Callable[[str, Any], Path], draft: dict[str, Any]
) -> None:
    """create into a folder that does not exist is FOLDER_NOT_FOUND naming the folder (exit 4), and no file appears."""
    result = run_cli("create", tmp_path / "nope" / "run.jsonl", "--plan", write_json("d.json", draft), "--json")
    assert result.code == 4
    body = result.json()["error"]
    assert (body["code"], body["folder"]) == ("FOLDER_NOT_FOUND", str(tmp_path / "nope"))
    assert f"the folder {tmp_path / 'nope'} does not exist" in body["message"]
    assert not (tmp_path / "nope").exists()


def test_import_into_a_missing_folder_names_the_log_not_a_temporary_file(tmp_path: Path, run_cli: Cli) -> None:
    """import -o into a missing folder is FOLDER_NOT_FOUND about the log the user named."""
    target = tmp_path / "nope" / "session.jsonl"
    result = run_cli("import", SAMPLES / "claude-session.jsonl", "-o", target)
    assert result.code == 4
    assert result.err == (
        f"error[FOLDER_NOT_FOUND]: cannot create log {target}: the folder {tmp_path / 'nope'} does not exist "
        "(create it first)\n"
    )
    assert ".tmp" not in result.err


def test_verify_of_a_torn_log_never_says_ok(log: Path, run_cli: Cli) -> None:
    """verify on a torn log prints NOT ok for the valid part, then TORN_TAIL, and exits 3."""
    with log.open("ab") as f:
        f.write(b'{"v":1,"seq":4')
    result = run_cli("verify", log)
    assert result.code == 3
    assert not result.out.startswith("ok") and result.out.startswith("NOT ok: a torn tail follows the valid part")
    assert result.err.startswith("error[TORN_TAIL]")
    assert run_cli("verify", log, "--json").json()["ok"] is False


def test_a_patch_on_a_version_that_does_not_exist_is_unknown_not_stale(
    log: Path, run_cli: Cli, write_json: Callable[[str, Any], Path]
) -> None:
    """A patch based on version 7 of a three-version log is UNKNOWN_PLAN_VERSION; one on version 1 is STALE."""
    before = log.read_bytes()
    op = {"op": "set_policy", "policy": {"max_in_progress": 2}}
    args = ["--reason", "budget_change", "--why", "more workers"]
    future = run_cli("replan", log, "--patch", write_json("p7.json", {"base_version": 7, "operations": [op]}), *args)
    assert (future.code, future.err.split("]")[0]) == (1, "error[UNKNOWN_PLAN_VERSION")
    past = run_cli("replan", log, "--patch", write_json("p1.json", {"base_version": 1, "operations": [op]}), *args)
    assert (past.code, past.err.split("]")[0]) == (1, "error[STALE_PLAN_VERSION")
    assert log.read_bytes() == before


def test_unknown_steps_criteria_and_commands_suggest_the_closest(log: Path, run_cli: Cli) -> None:
    """A mistyped step, criterion or command keeps its code and names the closest real one."""
    before = log.read_bytes()
    step = run_cli("start", log, "reprodce")
    assert step.err == "error[STEP_NOT_FOUND]: no step reprodce in plan version 3 (did you mean reproduce?)\n"
    criterion = run_cli("criterion", log, "login-test", "--passed", "-e", "ok")
    assert criterion.err.startswith("error[CRITERION_NOT_FOUND]: ")
    assert criterion.err.endswith("(did you mean login-test-passes?)\n")
    command = run_cli("stauts", log)
    assert command.code == 2
    assert "error[USAGE]: No such command 'stauts' (did you mean status?)." in command.err
    assert "did you mean" not in run_cli("start", log, "zzzzzz").err
    assert log.read_bytes() == before


def test_a_draft_reports_every_problem_in_text_and_json(
    tmp_path: Path, run_cli: Cli, write_json: Callable[[str, Any], Path]
) -> None:
    """create with a bad draft prints one error line per problem; --json lists them under errors, the first
    also as error; no log is written."""
    draft = {
        "goal": "g",
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "steps": [
            {"id": "a", "title": "", "completion_evidence": "x"},
            {"id": "b", "title": "B", "depends_on": ["ghost"], "completion_evidence": "y"},
        ],
    }
    path = write_json("bad.json", draft)
    text = run_cli("create", tmp_path / "run.jsonl", "--plan", path)
    assert text.code == 1
    assert text.err.splitlines() == [
        "error[BLANK_FIELD]: steps[0].title is blank",
        "error[UNKNOWN_DEPENDENCY]: step b depends on unknown steps: ghost",
    ]
    body = run_cli("create", tmp_path / "run.jsonl", "--plan", path, "--json").json()
    assert [e["code"] for e in body["errors"]] == ["BLANK_FIELD", "UNKNOWN_DEPENDENCY"]
    assert body["error"] == body["errors"][0]
    assert not (tmp_path / "run.jsonl").exists()


def test_a_single_error_is_also_listed_under_errors(log: Path, run_cli: Cli) -> None:
    """Every --json error document has errors, a list holding at least the error itself."""
    body = run_cli("start", log, "diagnose", "--json").json()
    assert body["errors"] == [body["error"]] and body["error"]["code"] == "STEP_NOT_READY"


def test_status_verify_and_import_print_full_anchors_and_no_short_head(log: Path, tmp_path: Path, run_cli: Cli) -> None:
    """status, verify and import give anchor SEQ:HASH (64 hex) in --json and on an `anchor:` line of text, and
    print no 12-hex head that looks usable but is not."""
    status = run_cli("status", log)
    verify = run_cli("verify", log)
    imported = run_cli("import", SAMPLES / "claude-session.jsonl", "-o", tmp_path / "s.jsonl")
    for result in (status, verify, imported):
        [line] = [x for x in result.out.splitlines() if x.startswith("anchor: ")]
        assert HEX64.fullmatch(line.removeprefix("anchor: "))
        assert not SHORT_HEAD.search(result.out.replace(line, "").replace("3f2a9c1e-7b4d-4e8a-9c2f-5d1e8b7a6c40", ""))
    status_json = run_cli("status", log, "--json").json()
    assert status_json["anchor"] == f"{status_json['last_seq']}:{status_json['head_hash']}"
    verify_json = run_cli("verify", log, "--json").json()
    assert (verify_json["anchor"], verify_json["anchor_checked"]) == (status_json["anchor"], None)
    checked = run_cli("verify", log, "--anchor", status_json["anchor"], "--json").json()
    assert checked["anchor_checked"] == status_json["anchor"]
    import_json = run_cli("import", SAMPLES / "claude-session.jsonl", "-o", tmp_path / "t.jsonl", "--json").json()
    assert import_json["anchor"] == f"{import_json['last_seq']}:{import_json['head_hash']}"
    assert run_cli("verify", tmp_path / "t.jsonl", "--anchor", import_json["anchor"]).code == 0


def test_json_output_of_every_new_field_parses(log: Path, run_cli: Cli) -> None:
    """status --json and next --json parse with json.loads and carry the can-start fields."""
    status = json.loads(run_cli("status", log, "--json").out)
    assert {"can_start", "capacity"} <= status.keys()
    assert all({"can_start", "wait_reasons"} <= s.keys() for s in status["steps"])
    nxt = json.loads(run_cli("next", log, "--json").out)
    assert {"can_start", "waiting", "capacity"} <= nxt.keys()


def _big_plan(n: int) -> dict[str, Any]:
    return {
        "goal": "Audit many modules",
        "acceptance_criteria": [{"id": f"c{i:02d}", "description": f"criterion {i}"} for i in range(n)],
        "policy": {"max_in_progress": "unlimited"},
        "steps": [{"id": f"s{i:02d}", "title": f"审计模块 {i}", "completion_evidence": "notes"} for i in range(n)],
    }


def test_resume_summarises_a_big_plan_and_all_lists_everything(
    tmp_path: Path, make_ledger: Callable[..., Ledger], run_cli: Cli
) -> None:
    """resume shows counts and the first five of each kind with how many more; --all lists every one."""
    ledger = make_ledger(_big_plan(40))
    for i in range(12):
        ledger.start(f"s{i:02d}")
        ledger.complete(f"s{i:02d}", [f"notes {i}"])
    log = tmp_path / "run.jsonl"
    short = run_cli("resume", log).out
    assert "done (12)" in short and "  ... and 7 more (--all shows every one)" in short
    assert "ready (28): s12, s13, s14, s15, s16, ... 23 more" in short
    assert "criteria unverified (40): c00, c01, c02, c03, c04, ... 35 more" in short
    assert "s05" not in short.split("done (12)", 1)[1].split("in doubt", 1)[0]
    full = run_cli("resume", log, "--all").out
    assert "more" not in full and all(f"s{i:02d}" in full for i in range(40))
    assert len(run_cli("resume", log, "--json").json()["ready"]) == 28


def test_status_columns_line_up_with_cjk_titles_and_multi_line_evidence(
    tmp_path: Path, make_ledger: Callable[..., Ledger], run_cli: Cli
) -> None:
    """With CJK and emoji titles and evidence over several lines, every status row is one line and each
    column starts at the same terminal column."""
    from plantrail.cli.tables import display_width

    plan = _big_plan(3)
    plan["steps"][1]["title"] = "修复 ✅"
    plan["steps"][2]["title"] = "plain title"
    ledger = make_ledger(plan)
    ledger.start("s00")
    ledger.complete("s00", ["pytest -q\n3 passed\n登录成功"])
    lines = run_cli("status", tmp_path / "run.jsonl", "--width", "120").out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("  STEP "))
    table_lines = [lines[header], *lines[header + 2 : header + 5]]
    assert [line.split()[0] for line in table_lines] == ["STEP", "s00", "s01", "s02"]
    for word_by_row in (["STATUS", "completed", "pending", "pending"], ["ATTEMPT", "1/3", "0/3", "0/3"]):
        starts = {
            display_width(line[: line.index(f"  {word}") + 2])
            for line, word in zip(table_lines, word_by_row, strict=True)
        }
        assert len(starts) == 1, word_by_row
    assert "pytest -q\\n3 passed\\n登录成功" in table_lines[1]
