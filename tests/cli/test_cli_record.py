"""The recording commands through the real entry point: evidence from files and stdin, anchors, help."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.cli.record import record_commands
from plantrail.ledger.verify import parse_anchor
from plantrail.ledger.vocabulary.codec import MAX_LINE_BYTES
from tests.conftest import CliResult
from tests.logs import read_records

Cli = Callable[..., CliResult]
ANCHOR = re.compile(r"^anchor: (\d+:[0-9a-f]{64})$", re.MULTILINE)


@pytest.fixture
def log(tmp_path: Path, run_cli: Cli, write_json: Callable[[str, Any], Path], draft: dict[str, Any]) -> Path:
    path = tmp_path / "run.jsonl"
    assert run_cli("create", path, "--plan", write_json("draft.json", draft)).code == 0
    assert run_cli("start", path, "reproduce").code == 0
    return path


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _last_data(log: Path) -> Any:
    return read_records(log)[-1].data


def test_evidence_from_a_file_is_recorded_whole(log: Path, tmp_path: Path, run_cli: Cli) -> None:
    """--evidence-file records the file's text as one item, multi-line and unabridged, after any -e items."""
    output = "".join(f"tests/test_{i}.py::test_case PASSED\n" for i in range(2000))
    (tmp_path / "pytest.log").write_text(output)
    result = run_cli("complete", log, "reproduce", "-e", "pytest -q", "--evidence-file", tmp_path / "pytest.log")
    assert result.code == 0, result.err
    assert _last_data(log).evidence == ("pytest -q", output.strip())


def test_dash_reads_evidence_from_standard_input(log: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """-e - takes the evidence from standard input, as UTF-8 text."""
    _stdin(monkeypatch, "npm test: 1 failed\n登录失败 ✗\n".encode())
    assert run_cli("complete", log, "reproduce", "-e", "-").code == 0
    assert _last_data(log).evidence == ("npm test: 1 failed\n登录失败 ✗",)


def test_fail_block_criterion_and_replan_take_text_from_files(
    log: Path, tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch, write_json: Callable[[str, Any], Path]
) -> None:
    """--error-file, --reason -, --evidence-file (criterion) and --observation-file all record the text whole."""
    (tmp_path / "err.txt").write_text("Traceback (most recent call last):\n  ...\nOSError: boom\n")
    assert run_cli("fail", log, "reproduce", "--error-file", tmp_path / "err.txt").code == 0
    assert _last_data(log).error == "Traceback (most recent call last):\n  ...\nOSError: boom"
    assert run_cli("start", log, "reproduce").code == 0
    _stdin(monkeypatch, b"staging is down\n")
    assert run_cli("block", log, "reproduce", "--reason", "-").code == 0
    assert _last_data(log).reason == "staging is down"
    (tmp_path / "verdict.txt").write_text("6 passed")
    result = run_cli("criterion", log, "login-test-passes", "--failed", "--evidence-file", tmp_path / "verdict.txt")
    assert result.code == 0 and _last_data(log).evidence == "6 passed"
    (tmp_path / "obs.txt").write_text("staging has no seed data\n")
    draft = json.loads((tmp_path / "draft.json").read_text())
    args = ["--reason", "no_ready_step", "--why", "staging is down", "--observation-file", tmp_path / "obs.txt"]
    assert run_cli("replan", log, "--plan", write_json("v2.json", draft), *args).code == 0
    assert _last_data(log).observations == ("staging has no seed data",)


def test_evidence_larger_than_one_event_is_refused_never_cut(log: Path, tmp_path: Path, run_cli: Cli) -> None:
    """A file larger than the event limit is EVENT_TOO_LARGE, exit 1, and the log is byte-for-byte unchanged."""
    big = tmp_path / "huge.log"
    with big.open("wb") as f:
        f.truncate(MAX_LINE_BYTES + 1)  # a sparse file: no need to write 16 MiB
    before = log.read_bytes()
    result = run_cli("complete", log, "reproduce", "--evidence-file", big, "--json")
    assert result.code == 1
    assert result.json()["error"]["code"] == "EVENT_TOO_LARGE"
    assert result.err.startswith("error[EVENT_TOO_LARGE]: the evidence from ")
    assert log.read_bytes() == before


def test_bad_text_inputs_are_refused_with_a_code_and_leave_the_log_alone(
    log: Path, tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Non-UTF-8 bytes are INVALID_TEXT, a missing file FILE_NOT_FOUND, stdin read twice or text and file both
    given USAGE; none of them writes a byte."""
    before = log.read_bytes()
    (tmp_path / "bin.log").write_bytes(b"ok \xff\xfe")
    cases = [
        (("complete", log, "reproduce", "--evidence-file", tmp_path / "bin.log"), 1, "INVALID_TEXT"),
        (("complete", log, "reproduce", "--evidence-file", tmp_path / "none.log"), 4, "FILE_NOT_FOUND"),
        (("complete", log, "reproduce", "-e", "-", "-e", "-"), 2, "USAGE"),
        (("fail", log, "reproduce", "--error", "x", "--error-file", tmp_path / "bin.log"), 2, "USAGE"),
        (("fail", log, "reproduce"), 2, "USAGE"),
    ]
    for args, code, name in cases:
        _stdin(monkeypatch, b"some output")
        result = run_cli(*args)
        assert (result.code, result.err.split("]")[0]) == (code, f"error[{name}"), args
    assert log.read_bytes() == before


def test_every_recording_ack_gives_a_pasteable_anchor(log: Path, run_cli: Cli) -> None:
    """--json acks carry anchor SEQ:HASH with the full hash; text acks print it on a line of their own, and
    verify --anchor accepts it."""
    data = run_cli("complete", log, "reproduce", "-e", "saved output", "--json").json()
    assert data["anchor"] == f"{data['seq']}:{data['hash']}" and len(data["hash"]) == 64
    text = run_cli("start", log, "diagnose").out
    [pasted] = ANCHOR.findall(text)
    assert parse_anchor(pasted)[0] == data["seq"] + 1
    assert run_cli("verify", log, "--anchor", pasted).code == 0
    assert run_cli("verify", log, "--anchor", data["anchor"]).code == 0


def test_create_prints_the_anchor_and_what_can_start(
    tmp_path: Path, run_cli: Cli, write_json: Callable[[str, Any], Path], draft: dict[str, Any]
) -> None:
    """create's --json has anchor and can_start; its text prints both on lines of their own."""
    data = run_cli("create", tmp_path / "a.jsonl", "--plan", write_json("d.json", draft), "--json").json()
    assert (data["anchor"], data["can_start"]) == (f"1:{data['hash']}", ["reproduce"])
    text = run_cli("create", tmp_path / "b.jsonl", "--plan", tmp_path / "d.json").out
    assert ANCHOR.search(text) and "\ncan start now: reproduce" in text


@pytest.mark.parametrize("command", ["start", "criterion", "finish", "replan"])
def test_plan_version_help_says_a_superseded_version_is_refused(command: str) -> None:
    """start, criterion, finish and replan document that a superseded --plan-version is refused (no orphan)."""
    [option] = [p for p in next(c for c in record_commands if c.name == command).params if p.name == "plan_version"]
    text = option.help or ""
    assert "refused (STALE_PLAN_VERSION)" in text and "orphan" not in text


def test_criterion_help_says_a_late_verdict_is_not_recorded() -> None:
    """criterion's --plan-version help says a verdict on a superseded version is kept nowhere."""
    [option] = [p for p in next(c for c in record_commands if c.name == "criterion").params if p.name == "plan_version"]
    assert "not kept anywhere" in (option.help or "")


@pytest.mark.parametrize("command", ["complete", "block", "fail"])
def test_plan_version_help_of_results_names_the_orphan_path(command: str) -> None:
    """complete, block and fail document that a result for a superseded version lands on the orphan path."""
    [option] = [p for p in next(c for c in record_commands if c.name == command).params if p.name == "plan_version"]
    assert "orphan path" in (option.help or "")


def test_a_late_criterion_verdict_is_refused_and_not_recorded(
    log: Path, run_cli: Cli, write_json: Callable[[str, Any], Path], draft: dict[str, Any]
) -> None:
    """As the help says: a verdict stamped with a superseded version is STALE_PLAN_VERSION and writes nothing."""
    assert (
        run_cli("replan", log, "--plan", write_json("v2.json", draft), "--reason", "user_request", "--why", "x").code
        == 0
    )
    before = log.read_bytes()
    result = run_cli("criterion", log, "login-test-passes", "--passed", "-e", "ok", "--plan-version", "1")
    assert (result.code, result.err.split("]")[0]) == (1, "error[STALE_PLAN_VERSION")
    assert log.read_bytes() == before


def test_the_file_options_state_the_real_size_limit() -> None:
    """Every --*-file option's help names the event limit the code enforces."""
    limit = f"{MAX_LINE_BYTES // 2**20} MiB"
    helps = [p.help or "" for c in record_commands for p in c.params if p.name and p.name.endswith(("_file", "_files"))]
    assert len(helps) == 5 and all(limit in h for h in helps)
