"""The CLI: help with examples on every command, --json everywhere, errors as error[CODE] with documented exits."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

from plantrail.cli.main import all_commands
from tests.conftest import CliResult

Run = Callable[..., CliResult]
COMMANDS = sorted(all_commands())


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_with_an_example(name: str, run_cli: Run) -> None:
    """Each command's --help prints a description and an Example block that uses the command itself."""
    result = run_cli(name, "--help")
    assert result.code == 0
    assert "Example:" in result.out
    assert f"plantrail {name}" in result.out.split("Example:", 1)[1]


def test_every_command_offers_json() -> None:
    """--json is an option of every subcommand, schema included (the README and docs/cli.md promise it); the one
    exception is `mcp`, a server whose whole output is MCP's JSON-RPC on stdout."""

    def options(command: click.Command) -> set[str]:
        return {o for p in command.params if isinstance(p, click.Option) for o in p.opts}

    def leaves(name: str, command: click.Command) -> list[tuple[str, click.Command]]:
        if isinstance(command, click.Group):  # a group's subcommands each take --json (e.g. store init)
            return [leaf for sub, c in command.commands.items() for leaf in leaves(f"{name} {sub}", c)]
        return [(name, command)]

    commands = [leaf for name, c in all_commands().items() for leaf in leaves(name, c)]
    relays = ("mcp", "acp")  # each speaks JSON-RPC on stdio to a program: stdout is the program's stream
    missing = [n for n, c in commands if n not in relays and "--json" not in options(c)]
    assert missing == [] and "store init" in dict(commands)


@pytest.fixture
def log(tmp_path: Path, run_cli: Run, write_json: Callable[[str, Any], Path], draft: dict[str, Any]) -> Path:
    path = tmp_path / "run.jsonl"
    assert run_cli("create", path, "--plan", write_json("draft.json", draft)).code == 0
    return path


def test_a_refused_command_prints_its_code_exits_1_and_leaves_the_log_alone(log: Path, run_cli: Run) -> None:
    """A rule refusal is `error[CODE]: message` on stderr, exit 1, no traceback, and the log byte-for-byte unchanged."""
    before = log.read_bytes()
    result = run_cli("start", log, "diagnose")
    assert result.code == 1
    assert result.err.startswith("error[STEP_NOT_READY]: ")
    assert "Traceback" not in result.err and result.out == ""
    assert log.read_bytes() == before


def test_json_errors_are_machine_readable_too(log: Path, run_cli: Run) -> None:
    """With --json a refusal also prints {"ok": false, "error": {...}} on stdout."""
    result = run_cli("complete", log, "reproduce", "--evidence", "x", "--json")
    assert result.code == 1
    body = result.json()
    assert (body["ok"], body["error"]["code"], body["error"]["current"]) == (False, "INVALID_TRANSITION", "pending")


def test_usage_errors_exit_2(log: Path, run_cli: Run) -> None:
    """A missing required option or an unknown choice is a usage error: exit 2, error[USAGE]."""
    for args in (("complete", log, "reproduce"), ("finish", log, "--outcome", "done", "--reason", "x")):
        result = run_cli(*args)
        assert result.code == 2
        assert "error[USAGE]" in result.err
        assert "Traceback" not in result.err


def test_a_damaged_log_exits_3_and_an_unreadable_one_exits_4(log: Path, tmp_path: Path, run_cli: Run) -> None:
    """Exit codes tell a damaged log (3) from a file that cannot be read (4)."""
    log.write_bytes(log.read_bytes().replace(b'"title":"Reproduce', b'"title":"Reprodvce'))
    damaged = run_cli("status", log)
    assert (damaged.code, damaged.err.split("]")[0]) == (3, "error[HASH_MISMATCH")
    missing = run_cli("status", tmp_path / "nope.jsonl")
    assert (missing.code, missing.err.split("]")[0]) == (4, "error[LOG_NOT_FOUND")


def test_status_prints_the_valid_part_then_reports_a_torn_tail(log: Path, run_cli: Run) -> None:
    """A torn tail is reported as TORN_TAIL (exit 3) after the state of the valid part is shown."""
    log.write_bytes(log.read_bytes() + b'{"v":1,"seq":2,"ts"')
    result = run_cli("status", log, "--json")
    assert result.code == 3
    assert result.json()["steps"][0]["id"] == "reproduce"
    assert "error[TORN_TAIL]" in result.err


def test_status_json_has_the_documented_fields(log: Path, run_cli: Run) -> None:
    """status --json carries run, goal, plan_version, outcome, steps, criteria, orphans, last_seq and head_hash."""
    run_cli("start", log, "reproduce")
    status = run_cli("status", log, "--json").json()
    for key in ("run", "goal", "plan_version", "outcome", "steps", "criteria", "orphans", "last_seq", "head_hash"):
        assert key in status
    step = status["steps"][0]
    assert {k: step[k] for k in ("id", "status", "ready", "attempt", "depends_on", "evidence", "reason")} == {
        "id": "reproduce",
        "status": "in_progress",
        "ready": False,
        "attempt": 1,
        "depends_on": [],
        "evidence": [],
        "reason": None,
    }
    assert status["criteria"][0] | {"evidence": None} == {
        "id": "login-test-passes",
        "description": "the login test passes",
        "status": "unverified",
        "evidence": None,
        "reset": None,
        "checks": [],
    }


def test_status_shows_a_whole_60_column_title_in_a_160_column_terminal(
    tmp_path: Path,
    run_cli: Run,
    write_json: Callable[[str, Any], Path],
    draft: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A title of 60 characters is shown whole when the terminal (COLUMNS) has room, even beside long evidence
    and a long id; --width overrides COLUMNS, and at 60 columns the title gives way but no id does."""
    title = "Reproduce the login failure against the staging auth servers"
    long_id = "reproduce-login-on-staging"
    assert len(title) == 60
    steps = [{**draft["steps"][0], "title": title, "id": long_id}] + [
        {**s, "depends_on": [long_id if d == draft["steps"][0]["id"] else d for d in s.get("depends_on", [])]}
        for s in draft["steps"][1:]
    ]
    log = tmp_path / "run.jsonl"
    assert run_cli("create", log, "--plan", write_json("draft.json", {**draft, "steps": steps})).code == 0
    run_cli("start", log, long_id)
    run_cli("complete", log, long_id, "-e", "login.test.ts fails with 401 " * 8)
    monkeypatch.setenv("COLUMNS", "160")
    wide = run_cli("status", log).out
    assert title in wide
    assert max(len(line) for line in wide.splitlines() if long_id in line) <= 160
    narrow = run_cli("status", log, "--width", "60").out
    assert title not in narrow and long_id in narrow.split()
    wrapped = run_cli("status", log, "--width", "60", "--wrap").out
    assert "…" not in wrapped.split("acceptance criteria")[0]
    before = log.read_bytes()
    for bad in ("5", "wide", "-1"):
        refused = run_cli("status", log, "--width", bad)
        assert refused.code == 2 and "error[USAGE]: Invalid value for '--width'" in refused.err and refused.out == ""
    assert log.read_bytes() == before


def test_a_recorded_run_reads_as_a_table(log: Path, run_cli: Run) -> None:
    """Human status is a table of steps with their title (cut to fit 40 columns) and status, the ready step
    marked."""
    run_cli("start", log, "reproduce")
    run_cli("complete", log, "reproduce", "-e", "login.test.ts fails with 401")
    out = run_cli("status", log, "--width", "40").out
    rows = {
        cells[0]: cells[1:3]
        for line in out.splitlines()
        if (cells := re.split(r"\s{2,}", line.strip()))[0] in ("reproduce", "diagnose")
    }
    assert rows == {
        "reproduce": ["Reproduce t…", "completed"],
        "diagnose": ["Find the ca…", "pending (ready)"],
    }


def test_plan_version_and_attempt_fence_results_from_the_cli(
    log: Path, run_cli: Run, write_json: Callable[[str, Any], Path], draft: dict[str, Any]
) -> None:
    """A worker that passes its (old) plan version gets its result onto the orphan path, not refused."""
    run_cli("start", log, "reproduce")
    assert (
        run_cli(
            "replan",
            log,
            "--plan",
            write_json("v2.json", draft),
            "--reason",
            "new_constraint",
            "--why",
            "scope changed",
            "--caused-by",
            "2",
        ).code
        == 0
    )
    result = run_cli("complete", log, "reproduce", "-e", "late", "--plan-version", "1", "--json")
    assert (result.code, result.json()["orphan"]) == (0, "SUPERSEDED_VERSION")
    assert run_cli("status", log, "--json").json()["orphans"][0]["step"] == "reproduce"


def test_expected_seq_and_idempotency_keys_from_the_cli(log: Path, run_cli: Run) -> None:
    """--expected-seq refuses a stale view; --idempotency-key makes a retry return the original seq."""
    stale = run_cli("start", log, "reproduce", "--expected-seq", "0")
    assert (stale.code, stale.err.split("]")[0]) == (1, "error[STALE_EXPECTED_SEQ")
    first = run_cli("start", log, "reproduce", "--idempotency-key", "w1-start", "--json").json()
    again = run_cli("start", log, "reproduce", "--idempotency-key", "w1-start", "--json").json()
    assert (again["seq"], again["duplicate"]) == (first["seq"], True)


def test_the_timeline_lists_every_event(log: Path, run_cli: Run) -> None:
    """log --json lists each event with seq, time, actor, type, plan version and a summary."""
    run_cli("start", log, "reproduce")
    entries = run_cli("log", log, "--json").json()
    assert [(e["seq"], e["type"]) for e in entries] == [(0, "log.opened"), (1, "plan.created"), (2, "step.started")]
    assert entries[2]["summary"] == "reproduce attempt 1"


def test_schema_prints_the_json_schema(run_cli: Run) -> None:
    """schema prints a JSON Schema document."""
    result = run_cli("schema")
    assert result.code == 0 and '"discriminator"' in result.out


def test_schema_takes_json_like_every_command(run_cli: Run) -> None:
    """schema --json exits 0 and prints the same JSON Schema document, which json.loads parses."""
    result = run_cli("schema", "--json")
    assert result.code == 0 and result.err == ""
    assert json.loads(result.out) == json.loads(run_cli("schema").out)


def test_a_bad_draft_file_is_refused_clearly(tmp_path: Path, run_cli: Run) -> None:
    """A draft that is not JSON is DRAFT_INVALID; a missing draft is FILE_NOT_FOUND; no log is created."""
    (tmp_path / "bad.json").write_text("{not json")
    result = run_cli("create", tmp_path / "run.jsonl", "--plan", tmp_path / "bad.json")
    assert (result.code, result.err.split("]")[0]) == (1, "error[DRAFT_INVALID")
    missing = run_cli("create", tmp_path / "run.jsonl", "--plan", tmp_path / "none.json")
    assert (missing.code, missing.err.split("]")[0]) == (4, "error[FILE_NOT_FOUND")
    assert not (tmp_path / "run.jsonl").exists()


def test_a_bare_plantrail_shows_its_help(run_cli: Run) -> None:
    """`plantrail` with no arguments prints the help on stdout and exits 0, like --help."""
    result = run_cli()
    assert result.code == 0
    assert "Commands:" in result.out and result.err == ""
