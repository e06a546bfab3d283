"""The replay commands through the real entry point: versions, replay, diff, why, orphans, resume."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

from plantrail.cli.main import all_commands
from plantrail.cli.replay import replay_commands
from plantrail.ledger.api import Ledger
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


def _retitle(plan: dict[str, Any], step: str, title: str) -> dict[str, Any]:
    new = copy.deepcopy(plan)
    next(s for s in new["steps"] if s["id"] == step)["title"] = title
    return new


@pytest.fixture
def log(tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> Path:
    """A login-fix run: v1 reproduces; v2 retitles diagnose while it runs; its v1 result then lands late."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts: expected 200, got 500"])
    ledger.start("diagnose")  # seq 4
    ledger.replan(
        "failed_assumption",
        "the 500 comes from the auth service",
        causes=[3],
        plan=_retitle(draft, "diagnose", "Check what the auth service returns"),
    )  # seq 5
    ledger.complete("diagnose", ["token check looks fine"], plan_version=1)  # seq 6: late
    return tmp_path / "run.jsonl"


def test_versions_json_lists_each_version_with_its_changes(log: Path, run_cli: Cli) -> None:
    """versions --json gives both versions, the replan's causes, and what it kept and reset."""
    result = run_cli("versions", log, "--json")

    assert result.code == 0
    data = result.json()
    assert (data["active_version"], [v["version"] for v in data["versions"]]) == (2, [1, 2])
    v2 = data["versions"][1]
    assert (v2["reason"], v2["causes"], v2["changes"]["kept"]) == ("failed_assumption", [3], ["reproduce"])
    assert v2["changes"]["reset"][0]["step"] == "diagnose"


def test_versions_human_output_is_a_table_and_the_changes(log: Path, run_cli: Cli) -> None:
    """The human versions output has the version table and one block per replan."""
    out = run_cli("versions", log).out
    assert "VERSION  SEQ  ADOPTED (UTC)" in out
    assert "v2: what the replan at seq 5 changed" in out
    assert "superseded while in progress" in out


def test_replay_version_json_is_the_status_document_of_that_version(log: Path, run_cli: Cli) -> None:
    """replay --version 1 shows diagnose in progress, as it stood when v2 superseded it at seq 5."""
    data = run_cli("replay", log, "--version", "1", "--json").json()

    assert (data["plan_version"], data["last_seq"]) == (1, 4)
    assert data["replay"] == {"version": 1, "at_seq": None, "superseded_at": 5}
    assert [s["status"] for s in data["steps"]] == ["completed", "in_progress"]


def test_replay_at_seq_and_now_agree_with_status(log: Path, run_cli: Cli) -> None:
    """replay --at-seq of the last seq and replay without options both give status's state hash."""
    status = run_cli("status", log, "--json").json()
    at_end = run_cli("replay", log, "--at-seq", str(status["last_seq"]), "--json").json()
    now = run_cli("replay", log, "--json").json()
    assert status["state_hash"] == at_end["state_hash"] == now["state_hash"]


@pytest.mark.parametrize(
    ("args", "code", "error"),
    [
        (("replay", "--version", "1", "--at-seq", "2"), 2, "error[USAGE]"),
        (("replay", "--version", "7"), 1, "error[UNKNOWN_PLAN_VERSION]"),
        (("replay", "--at-seq", "70"), 1, "error[UNKNOWN_SEQ]"),
        (("diff", "2", "1"), 2, "error[USAGE]"),
        (("why", "--version", "3"), 1, "error[UNKNOWN_PLAN_VERSION]"),
    ],
)
def test_impossible_requests_are_refused_with_a_code(
    log: Path, run_cli: Cli, args: tuple[str, ...], code: int, error: str
) -> None:
    """Both --version and --at-seq, a missing version or seq, or a backwards diff exit non-zero with a code."""
    result = run_cli(args[0], log, *args[1:])
    assert (result.code, result.err.startswith(error)) == (code, True)
    assert "Traceback" not in result.err


def test_diff_json_shows_changed_fields_kept_work_and_resets(log: Path, run_cli: Cli) -> None:
    """diff 1 2 --json names diagnose's changed title, reproduce kept with evidence, diagnose superseded."""
    data = run_cli("diff", log, "1", "2", "--json").json()

    assert data["changed"][0]["fields"]["title"]["to"] == "Check what the auth service returns"
    assert data["kept"][0]["evidence"] == ["login.test.ts: expected 200, got 500"]
    assert [(r["step"], r["cause"]) for r in data["reset"]] == [("diagnose", "superseded")]


def test_why_quotes_the_cause_and_the_late_result(log: Path, run_cli: Cli) -> None:
    """why names the reason, quotes seq 3 in full, and lists diagnose's late v1 result."""
    result = run_cli("why", log)

    assert result.code == 0
    assert "why v2: failed_assumption" in result.out
    assert '{"step":"reproduce","attempt":1,"evidence":["login.test.ts: expected 200, got 500"]}' in result.out
    assert "seq 6 · step.completed diagnose attempt 1 · SUPERSEDED_VERSION · token check looks fine" in result.out
    data = run_cli("why", log, "--json").json()
    assert [c["seq"] for c in data["causes"]] == [3]


def test_orphans_lists_the_late_result_and_the_step_now(log: Path, run_cli: Cli) -> None:
    """orphans --json shows the v1 result and that diagnose is pending in v2."""
    data = run_cli("orphans", log, "--json").json()
    [orphan] = data["orphans"]
    assert (orphan["seq"], orphan["why"], orphan["status_now"]) == (6, "SUPERSEDED_VERSION", "pending")
    assert "none applied to the plan" in run_cli("orphans", log).out


def test_resume_exit_codes_follow_the_run(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any], run_cli: Cli
) -> None:
    """resume exits 0 when a step is ready, 10 with a step in doubt, 12 paused, 11 stuck, 13 finished."""
    ledger = make_ledger(draft)
    log = tmp_path / "run.jsonl"
    assert run_cli("resume", log).code == 0
    ledger.start("reproduce")
    assert run_cli("resume", log).code == 10
    ledger.block("reproduce", "staging is down")
    assert run_cli("resume", log).code == 11
    ledger.finish("paused", "waiting for staging")
    assert run_cli("resume", log).code == 12
    ledger.finish("cancelled", "staging will not come back")
    result = run_cli("resume", log, "--json")
    assert (result.code, result.json()["verdict"], result.json()["exit_code"]) == (13, "finished", 13)


def test_resume_in_doubt_names_the_step_and_its_attempt(log: Path, run_cli: Cli) -> None:
    """After v2 restarts diagnose and the writer dies, resume lists diagnose in doubt at attempt 1."""
    with Ledger.open(log) as ledger:
        ledger.start("diagnose")
    result = run_cli("resume", log)
    assert result.code == 10
    assert "verdict: in_doubt (exit 10)" in result.out
    assert "diagnose  attempt 1  started at seq 7" in result.out


def test_resume_reports_a_torn_tail_after_the_receipt(log: Path, run_cli: Cli) -> None:
    """A torn last line gives exit 3, one JSON receipt of the valid part, and error[TORN_TAIL] on stderr."""
    with log.open("ab") as f:
        f.write(b'{"v":1,"seq":7,"ts":"2026-')

    result = run_cli("resume", log, "--json")

    assert result.code == 3
    receipt = result.json()
    assert (receipt["verdict"], receipt["last_seq"], receipt["damage"]["code"]) == ("damaged", 6, "TORN_TAIL")
    assert result.err.startswith("error[TORN_TAIL]")


def test_resume_reports_damage_inside_the_log_after_the_valid_part(log: Path, run_cli: Cli) -> None:
    """A tampered replan (seq 5) gives exit 3 and the receipt of the records before it."""
    lines = log.read_bytes().split(b"\n")
    assert b"the 500 comes" in lines[5]
    lines[5] = lines[5].replace(b"the 500 comes", b"the 501 comes")
    log.write_bytes(b"\n".join(lines))

    result = run_cli("resume", log)

    assert result.code == 3
    assert "run run · plan v1 · open · last seq 4" in result.out
    assert result.err.startswith("error[HASH_MISMATCH]") or result.err.startswith("error[CORRUPT_LINE]")


def test_resume_of_a_missing_log_exits_4(tmp_path: Path, run_cli: Cli) -> None:
    """A log that does not exist cannot be read: exit 4."""
    result = run_cli("resume", tmp_path / "nope.jsonl")
    assert (result.code, result.err.startswith("error[LOG_NOT_FOUND]")) == (4, True)


def test_replan_cli_refuses_a_blank_why_and_an_unknown_cause(
    log: Path, run_cli: Cli, write_json: Callable[[str, Any], Path], draft: dict[str, Any]
) -> None:
    """replan exits 1 with REASON_REQUIRED for a blank why and UNKNOWN_CAUSE for --caused-by 0."""
    plan = write_json("v3.json", draft)
    blank = run_cli("replan", log, "--plan", plan, "--reason", "agent_revision", "--why", "  ")
    header = run_cli("replan", log, "--plan", plan, "--reason", "agent_revision", "--why", "x", "--caused-by", "0")
    assert (blank.code, blank.err.split(":")[0]) == (1, "error[REASON_REQUIRED]")
    assert (header.code, header.err.split(":")[0]) == (1, "error[UNKNOWN_CAUSE]")


@pytest.mark.parametrize("command", [c.name for c in replay_commands])
def test_every_replay_command_documents_its_json_and_an_example(command: str) -> None:
    """Each command's help shows an Example block and the shape of its --json output."""
    cmd = all_commands()[command]
    with click.Context(cmd, info_name=command) as ctx:
        help_text = cmd.get_help(ctx)
    assert "Example:" in help_text
    assert "JSON:" in help_text
