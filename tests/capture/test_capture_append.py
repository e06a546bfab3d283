"""`import --append` and `--follow`: the one mapping applied to a growing transcript, nothing recorded twice."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.capture.append import append_transcript
from plantrail.ledger.capture.identity import identities
from plantrail.ledger.importers import import_transcript
from plantrail.ledger.importers.model import TaskEvent
from plantrail.ledger.stores.jsonl.reads import read_state
from plantrail.ledger.vocabulary.draft_writer import plan_draft
from tests.conftest import SAMPLES, CliResult
from tests.helpers.story import story

SAMPLE = SAMPLES / "claude-session.jsonl"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_appending_a_transcript_in_two_parts_tells_the_whole_imports_story(tmp_path: Path) -> None:
    """A transcript appended half, then whole, gives the story of its whole import, each event once."""
    lines, growing, log = _lines(SAMPLE), tmp_path / "session.jsonl", tmp_path / "run.jsonl"
    growing.write_bytes(b"".join(lines[: len(lines) // 2]))
    first = append_transcript(growing, log)
    growing.write_bytes(b"".join(lines))
    second = append_transcript(growing, log)
    whole = import_transcript(growing, tmp_path / "whole.jsonl")

    assert first.created and not second.created
    assert (second.updates_recorded, second.refused) == (first.updates_appended, ())
    assert first.events_written + second.events_written == whole.events_written
    assert story(log) == story(Path(whole.log))


def test_appending_again_writes_nothing(tmp_path: Path) -> None:
    """A second append of the same transcript recognises every update and leaves the log's bytes as they were."""
    log = tmp_path / "run.jsonl"
    append_transcript(SAMPLE, log)
    before = log.read_bytes()

    again = append_transcript(SAMPLE, log)

    assert (again.updates_appended, again.events_written) == (0, 0)
    assert again.updates_recorded == 5
    assert log.read_bytes() == before


def test_append_to_a_whole_import_recognises_its_sources(tmp_path: Path) -> None:
    """A log written by a whole import (no keys) is recognised by its events' call ids: nothing is appended."""
    report = import_transcript(SAMPLE, tmp_path / "run.jsonl")
    before = Path(report.log).read_bytes()

    again = append_transcript(SAMPLE, report.log)

    assert (again.updates_appended, again.refused) == (0, ())
    assert Path(report.log).read_bytes() == before


def test_a_transcript_without_a_plan_yet_appends_nothing(tmp_path: Path) -> None:
    """A transcript whose agent has not planned yet creates no log and is no error."""
    early = tmp_path / "early.jsonl"
    early.write_bytes(b"".join(_lines(SAMPLE)[:2]))

    report = append_transcript(early, tmp_path / "run.jsonl")

    assert (report.created, report.events_written) == (False, 0)
    assert not (tmp_path / "run.jsonl").exists()


def test_a_task_creation_has_one_identity_whichever_report_names_it() -> None:
    """TaskCreate's call and the TaskCreated hook give a creation the same identity; completions are counted."""

    def task(kind: str, native: str | None, status: str | None = None) -> tuple[str, TaskEvent]:
        event = TaskEvent(
            line=1,
            native_id=native,
            timestamp=None,
            kind="created" if kind == "created" else "updated",
            task_id="7",
            subject="s",
            description=None,
            status_from=None,
            status_to=status,
            agent=None,
        )
        return "f.jsonl", event

    names = identities([task("created", "toolu_1"), task("created", None), task("u", "toolu_2", "completed")])

    assert names == ("task-7-created", "task-7-created", "task-7-completed-1")


def test_import_append_cli_reports_what_it_added(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """import --append --json names the updates appended and recorded; a second run appends none."""
    log = tmp_path / "run.jsonl"

    first = run_cli("import", "--append", SAMPLE, "-o", log, "--json")
    second = run_cli("import", "--append", SAMPLE, "-o", log, "--json")

    assert (first.code, second.code) == (0, 0)
    assert first.json()["created"] is True and first.json()["updates_appended"] == 5
    assert (second.json()["updates_appended"], second.json()["updates_recorded"]) == (0, 5)


def test_append_and_force_are_refused_together(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """--append with --force is a usage error: one extends a log, the other replaces it."""
    result = run_cli("import", "--append", "--force", SAMPLE, "-o", tmp_path / "run.jsonl")

    assert result.code == 2 and "error[USAGE]" in result.err


def test_follow_appends_as_the_file_grows_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    """import --follow appends each new update once, waits out a half-written line, and exits 0 on Ctrl-C."""
    lines, growing, log = _lines(FIXTURES / "codex_rollout.jsonl"), tmp_path / "rollout.jsonl", tmp_path / "run.jsonl"
    growing.write_bytes(b"".join(lines[:7]))  # the first plan update is on line 6
    command = [sys.executable, "-m", "plantrail.cli.main", "import", "--follow", str(growing), "-o", str(log)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: log.exists())
        with growing.open("ab") as handle:
            handle.write(b"".join(lines[3:]))
            handle.write(b'{"timestamp": "2025-')  # a line still being written
        whole = import_transcript(FIXTURES / "codex_rollout.jsonl", tmp_path / "whole.jsonl")
        _wait_for(lambda: story(log) == story(Path(whole.log)))
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)

    assert process.returncode == 0, err
    assert "Traceback" not in err.decode()
    assert story(log) == story(Path(whole.log))


def _wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("the condition never held")
        time.sleep(0.05)


def test_a_budget_set_on_a_live_run_survives_the_agents_next_plan_update(tmp_path: Path) -> None:
    """The task terms a user sets on a captured run (a turn budget and no focus limit, a task scope, the
    repository version the plan was made from) are kept by the replans the agent's later plan updates map to:
    a transcript never states them, so the log's stand."""
    lines, growing, log = _lines(SAMPLE), tmp_path / "session.jsonl", tmp_path / "run.jsonl"
    growing.write_bytes(b"".join(lines[: len(lines) // 3]))
    append_transcript(growing, log)
    with Ledger.open(log) as ledger:
        version = ledger.state.version
        assert ledger.state.plan is not None and version >= 1
        draft = plan_draft(ledger.state.plan)
        draft["policy"] = {"max_in_progress": "unlimited", "max_turns": 40}
        draft["scope"] = {"writes": ["**"], "reads": ["**"]}
        draft["observed"] = {"repo": "9c1e4f2"}
        ledger.replan("budget_change", "the user caps the session at 40 turns", plan=draft)
        budgeted = ledger.state.version
        terms = (ledger.state.plan.scope, ledger.state.plan.artifacts)
    growing.write_bytes(b"".join(lines))

    report = append_transcript(growing, log)

    state = read_state(log).state
    assert report.refused == () and report.updates_appended > 0
    assert state.version > budgeted  # the agent's later updates were replans
    assert (state.plan.policy.max_turns, state.plan.policy.max_in_progress) == (40, None)
    assert (state.plan.scope, state.plan.artifacts) == terms and terms[1] is not None
