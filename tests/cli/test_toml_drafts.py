"""``plantrail new`` writes a commented TOML draft; ``create``, ``replan`` and ``check`` take TOML drafts as they
take JSON ones: the same plan, wrong types refused (never coerced), a syntax error named by its line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from plantrail.ledger.vocabulary.draft_template import TEMPLATE
from tests.conftest import CliResult

TOML_DRAFT = """\
goal = "Ship the feature"

[[acceptance_criteria]]
id = "works"
description = "the feature works"

[[steps]]
id = "build"
title = "Build it"
completion_evidence = "the build output"
max_attempts = 2

[[steps]]
id = "test"
title = "Test it"
depends_on = ["build"]
completion_evidence = "the test output"
"""

JSON_DRAFT = {
    "goal": "Ship the feature",
    "acceptance_criteria": [{"id": "works", "description": "the feature works"}],
    "steps": [
        {"id": "build", "title": "Build it", "completion_evidence": "the build output", "max_attempts": 2},
        {"id": "test", "title": "Test it", "depends_on": ["build"], "completion_evidence": "the test output"},
    ],
}


def _plan(run_cli: Callable[..., CliResult], log: Path) -> object:
    shown = run_cli("brief", log, "--json")
    assert shown.code == 0, shown.err
    return shown.json()["draft"]


def test_new_writes_the_template_and_never_overwrites(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    draft = tmp_path / "plan.toml"
    result = run_cli("new", draft)
    assert (result.code, result.err) == (0, "")
    assert result.out == f"wrote {draft}: edit it, then plantrail create run.jsonl --plan {draft}\n"
    assert draft.read_text() == TEMPLATE
    draft.write_text("# mine\n")
    again = run_cli("new", draft)
    assert again.code == 1
    assert again.err.startswith("error[DRAFT_EXISTS]: ")
    assert draft.read_text() == "# mine\n"


def test_new_takes_only_a_toml_name(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    result = run_cli("new", tmp_path / "plan.json")
    assert result.code == 2
    assert result.err.startswith("error[USAGE]: new writes a TOML draft")
    assert list(tmp_path.iterdir()) == []


def test_new_answers_in_json(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    result = run_cli("new", tmp_path / "p.toml", "--json")
    assert result.json() == {"ok": True, "draft": str(tmp_path / "p.toml")}


def test_the_draft_new_wrote_creates_a_run(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    assert run_cli("new", tmp_path / "plan.toml").code == 0
    created = run_cli("create", tmp_path / "run.jsonl", "--plan", tmp_path / "plan.toml")
    assert (created.code, created.err) == (0, "")
    assert "plan v1 with 2 steps" in created.out


def test_a_toml_draft_gives_the_plan_its_json_twin_gives(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "d.toml").write_text(TOML_DRAFT)
    (tmp_path / "d.json").write_bytes(orjson.dumps(JSON_DRAFT))
    assert run_cli("create", tmp_path / "a.jsonl", "--plan", tmp_path / "d.toml").code == 0
    assert run_cli("create", tmp_path / "b.jsonl", "--plan", tmp_path / "d.json").code == 0
    assert _plan(run_cli, tmp_path / "a.jsonl") == _plan(run_cli, tmp_path / "b.jsonl")


def test_replan_takes_a_toml_draft(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "d.json").write_bytes(orjson.dumps(JSON_DRAFT))
    log = tmp_path / "run.jsonl"
    assert run_cli("create", log, "--plan", tmp_path / "d.json").code == 0
    (tmp_path / "v2.toml").write_text(TOML_DRAFT.replace('title = "Test it"', 'title = "Test it twice"'))
    replanned = run_cli(
        "replan", log, "--plan", tmp_path / "v2.toml", "--reason", "agent_revision", "--why", "test twice"
    )
    assert (replanned.code, replanned.err) == (0, ""), replanned.err
    steps = _plan(run_cli, log)["steps"]  # type: ignore[index]
    assert [step["title"] for step in steps] == ["Build it", "Test it twice"]


def test_check_takes_a_toml_draft(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "d.toml").write_text(TOML_DRAFT)
    result = run_cli("check", tmp_path / "d.toml", "--json")
    assert result.code == 0
    assert result.json()["ok"] is True


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("max_attempts = 2", 'max_attempts = "2"'),  # a text where a whole number goes: not read as 2
        ('goal = "Ship the feature"', "goal = 1979-05-27"),  # a TOML date is no type a draft takes
        ("max_attempts = 2", "max_attempts = 2.0"),
    ],
    ids=["text-for-number", "date-for-text", "float-for-int"],
)
def test_wrong_types_in_toml_are_refused_never_coerced(
    change: str, message: str, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    (tmp_path / "d.toml").write_text(TOML_DRAFT.replace(change, message))
    log = tmp_path / "run.jsonl"
    result = run_cli("create", log, "--plan", tmp_path / "d.toml")
    assert result.code == 1
    assert result.err.startswith("error[DRAFT_INVALID]: "), result.err
    assert not log.exists()


def test_a_toml_syntax_error_names_its_line(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    broken = TOML_DRAFT.replace('depends_on = ["build"]', 'depends_on = ["build" "x"]')
    (tmp_path / "d.toml").write_text(broken)
    line = broken.splitlines().index('depends_on = ["build" "x"]') + 1
    for args in (("check", tmp_path / "d.toml"), ("create", tmp_path / "run.jsonl", "--plan", tmp_path / "d.toml")):
        result = run_cli(*args, "--json")
        assert result.code == 1
        error = result.json()["error"]
        assert (error["code"], error["line"]) == ("DRAFT_INVALID", line)
        assert f"is not valid TOML at line {line}, column " in error["message"]
    assert not (tmp_path / "run.jsonl").exists()


def test_a_toml_syntax_error_at_the_end_names_the_last_line(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "d.toml").write_text('goal = "x"\nsteps = [\n')
    result = run_cli("check", tmp_path / "d.toml")
    assert (
        result.err
        == f"error[DRAFT_INVALID]: draft {tmp_path / 'd.toml'} is not valid TOML at line 3, column 1: Invalid value\n"
    )


def test_a_toml_draft_that_is_not_utf8_is_refused(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "d.toml").write_bytes(b'goal = "\xff"\n')
    result = run_cli("check", tmp_path / "d.toml")
    assert result.code == 1
    assert result.err.startswith("error[DRAFT_INVALID]: ")
    assert "not UTF-8" in result.err


def test_new_never_writes_through_a_link_nor_into_a_missing_folder(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    (tmp_path / "link.toml").symlink_to(tmp_path / "elsewhere.toml")
    through = run_cli("new", tmp_path / "link.toml")
    assert (through.code, through.err.split("]")[0]) == (1, "error[DRAFT_EXISTS")
    assert not (tmp_path / "elsewhere.toml").exists()
    missing = run_cli("new", tmp_path / "nowhere" / "plan.toml")
    assert missing.code == 4
    assert not (tmp_path / "nowhere").exists()
