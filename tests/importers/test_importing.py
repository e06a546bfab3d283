"""`plantrail import` through the real entry point, and the imported sample kept in samples/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.importers import import_transcript
from tests.conftest import SAMPLES, CliResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
SAMPLE = SAMPLES / "claude-session.jsonl"
SAMPLE_LOG = SAMPLES / "claude-session.plantrail.jsonl"


def test_import_prints_a_summary_and_the_log_reads_back(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """import prints what it read and wrote; status and verify then work on the log."""
    log = tmp_path / "session.plantrail.jsonl"

    result = run_cli("import", SAMPLE, "-o", log)

    assert (result.code, result.err) == (0, "")
    assert f"imported claude-code transcript {SAMPLE} -> {log}" in result.out
    for figure in (
        "plan updates seen  5",
        "items              5",
        "versions made      2",
        "extended in place  0",
        "steps completed    4",
        "events written     11 (1 inferred)",
        "max in progress    1",
        "lines read         29 (0 skipped)",
    ):
        assert figure in result.out
    assert run_cli("status", log).code == 0
    assert run_cli("verify", log).code == 0


def test_import_json_is_the_report(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """import --json prints the report as JSON, skipped lines by reason included."""
    log = tmp_path / "out.jsonl"

    report = run_cli("import", FIXTURES / "claude_old_schema.jsonl", "-o", log, "--json").json()

    assert report["ok"] is True
    assert (report["format"], report["log"], report["plan_updates"]) == ("claude-code", str(log), 3)
    assert report["skipped"] == {"invalid_json": 1, "unknown_record_type": 1}
    assert report["lines_skipped"] == 2


def test_import_names_subagent_files_it_did_not_merge(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """A lead imported alone says which subagent files lie beside it and how to merge them."""
    result = run_cli("import", FIXTURES / "claude_tasks_lead.jsonl", "-o", tmp_path / "lead.jsonl")

    assert "note: 1 subagent file(s) beside it were not imported; add --with-subagents" in result.out


def test_import_with_subagents_lists_the_merged_files(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """With --with-subagents the summary names each subagent file merged into the log."""
    result = run_cli("import", FIXTURES / "claude_tasks_lead.jsonl", "-o", tmp_path / "lead.jsonl", "--with-subagents")

    assert result.code == 0
    assert f"  with subagent file {FIXTURES / 'claude_tasks_lead__subagent-d4n4.jsonl'}" in result.out


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        (["not_a_transcript.jsonl"], "NOT_A_TRANSCRIPT", 1),
        (["claude_new_schema.jsonl", "--format", "aider"], "UNKNOWN_FORMAT", 2),
        (["missing.jsonl"], "TRANSCRIPT_UNREADABLE", 4),
        (["claude_tasks_lead__subagent-d4n4.jsonl"], "NO_PLAN_IN_TRANSCRIPT", 1),
        (["claude_new_schema.jsonl", "--run", "has spaces"], "INVALID_ID", 1),
    ],
)
def test_import_errors_are_codes_and_exit_codes(
    tmp_path: Path, run_cli: Callable[..., CliResult], args: list[str], code: str, exit_code: int
) -> None:
    """Each refusal prints error[CODE] on stderr with its class's exit code, and writes no log."""
    log = tmp_path / "out.jsonl"

    result = run_cli("import", FIXTURES / args[0], *args[1:], "-o", log)

    assert result.code == exit_code
    assert result.err.startswith(f"error[{code}]: ")
    assert "Traceback" not in result.err and not log.exists()


def test_import_refuses_an_existing_log_unless_forced(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """A second import onto the same log is LOG_EXISTS (exit 1); --force replaces it with identical bytes."""
    log = tmp_path / "out.jsonl"
    assert run_cli("import", SAMPLE, "-o", log).code == 0
    first = log.read_bytes()

    refused = run_cli("import", SAMPLE, "-o", log)
    forced = run_cli("import", SAMPLE, "-o", log, "--force")

    assert (refused.code, refused.err.split(":")[0]) == (1, "error[LOG_EXISTS]")
    assert forced.code == 0 and log.read_bytes() == first


def test_import_help_has_an_example(run_cli: Callable[..., CliResult]) -> None:
    """import --help shows an example command line."""
    result = run_cli("import", "--help")

    assert "Example:" in result.out
    assert "plantrail import samples/claude-session.jsonl -o session.plantrail.jsonl" in result.out


def test_the_imported_sample_is_what_the_importer_writes(tmp_path: Path) -> None:
    """Re-importing samples/claude-session.jsonl gives exactly the bytes of the sample log kept beside it."""
    report = import_transcript(SAMPLE, tmp_path / "claude-session.plantrail.jsonl")

    assert Path(report.log).read_bytes() == SAMPLE_LOG.read_bytes()


def test_import_reports_each_file_then_the_total(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """With --with-subagents, import prints the lead's and the subagent's part (items, versions, events,
    inferred), then the total."""
    for source in FIXTURES.glob("claude_tasks_lead*.jsonl"):
        (tmp_path / source.name).write_bytes(source.read_bytes())
    lead, subagent = tmp_path / "claude_tasks_lead.jsonl", tmp_path / "claude_tasks_lead__subagent-d4n4.jsonl"

    result = run_cli("import", lead, "--with-subagents", "-o", tmp_path / "team.jsonl")
    lines = result.out.splitlines()

    assert result.code == 0
    start = lines.index("per file")
    assert lines[start + 1 : start + 4] == [
        f"  {lead}: 5 plan update(s), 2 item(s), 1 version(s), 1 extended in place, 4 event(s) written "
        "(0 inferred); 14 line(s) read",
        f"  {subagent}: 1 plan update(s), 0 item(s), 0 version(s), 1 event(s) written (0 inferred); 3 line(s) read",
        "total",
    ]


def test_import_json_lists_each_files_part_and_the_total(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """import --json gives `files` (each file's figures and what it could not map, by reason) and `total`,
    whose figures are the files' sums."""
    log = tmp_path / "out.jsonl"

    report = run_cli("import", FIXTURES / "claude_plan_mode.jsonl", "-o", log, "--json").json()
    old = run_cli("import", FIXTURES / "claude_old_schema.jsonl", "-o", tmp_path / "old.jsonl", "--json").json()

    [part] = report["files"]
    assert part == {
        "file": str(FIXTURES / "claude_plan_mode.jsonl"),
        "lines_read": 5,
        "plan_updates": 3,
        "items": 4,
        "versions": 3,
        "extensions": 0,
        "events_written": 7,
        "events_inferred": 2,
        "skipped": {},
    }
    assert report["total"] == {key: part[key] for key in report["total"]}
    assert report["total"]["events_written"] == report["events_written"]
    assert old["files"][0]["skipped"] == {"invalid_json": 1, "unknown_record_type": 1} == old["total"]["skipped"]
