"""The plan formats found in real use beyond the first importers, each on a fixture written from its documented
shape: detected, readable by its --format name, imported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plantrail.ledger.importers import detect_format, parse_transcript
from plantrail.ledger.importers.importer import ImportReport, import_transcript
from plantrail.ledger.importers.markdown_plan import plan_items
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.events import Record
from plantrail.projections.model import PlanState
from plantrail.projections.state import fold

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def imported(tmp_path: Path, fixture: str, format: str | None = None) -> ImportReport:
    """Import a fixture copied into tmp_path (with --format when given) and check the log verifies."""
    copy = tmp_path / Path(fixture).name
    shutil.copyfile(FIXTURES / fixture, copy)
    report = import_transcript(copy, tmp_path / "out.plantrail.jsonl", format)
    verify_log(report.log)
    return report


def records(report: ImportReport) -> list[Record]:
    """The log's records, header included."""
    with LogReader(report.log) as reader:
        return list(reader.records())


def state(report: ImportReport) -> PlanState:
    """The log folded."""
    return fold(records(report))


def titles(report: ImportReport) -> list[str]:
    """The active plan's step titles in order."""
    plan = state(report).plan
    assert plan is not None
    return [s.title for s in plan.steps]


@pytest.mark.parametrize(
    ("fixture", "name", "parser"),
    [
        ("codex_plan_mode.jsonl", "codex-plan-mode", "codex"),
        ("codex_legacy_rollout.jsonl", "codex-legacy", "codex"),
        ("claude_plan_mode.jsonl", "claude-code-plan-mode", "claude-code"),
        ("gemini_session.json", "gemini", "gemini"),
        ("gemini_session.jsonl", "gemini-jsonl", "gemini-jsonl"),
        ("gemini_share.md", "gemini-share", "gemini-share"),
        ("opencode_export.md", "opencode-markdown", "opencode-markdown"),
        ("cline_text_progress.json", "cline-text", "cline"),
    ],
)
def test_each_format_has_a_name_and_is_detected(fixture: str, name: str, parser: str) -> None:
    """A fixture is detected as its parser's format and parses the same under its own --format name."""
    path = FIXTURES / fixture

    assert detect_format(path) == parser
    assert parse_transcript(path, name).observations == parse_transcript(path).observations


def test_codex_plan_mode_reads_the_plan_once(tmp_path: Path) -> None:
    """An item_completed Plan becomes the plan; the <proposed_plan> block that repeats it is not read again."""
    report = imported(tmp_path, "codex_plan_mode.jsonl", "codex-plan-mode")

    assert (report.plan_updates, report.versions) == (1, 1)
    assert titles(report) == [
        "Lower-case tags in parse_tags",
        "Merge duplicate tags in the index",
        "Add tests for mixed-case tags",
    ]
    assert records(report)[1].source is not None and records(report)[1].source.tool == "Plan"  # type: ignore[union-attr]


def test_a_legacy_codex_rollout_imports_without_payload_wrappers(tmp_path: Path) -> None:
    """A legacy rollout's bare header names the run, its items are read, injected instructions are no request."""
    report = imported(tmp_path, "codex_legacy_rollout.jsonl", "codex-legacy")
    current = state(report)

    assert report.run == "6f0c1d2e-0000-4000-8000-00000000leg1"
    assert current.plan is not None and current.plan.goal == "Add a --dry-run flag to the deploy script"
    assert {s.id: s.status for s in current.steps.values_in_order()} == {
        "read-deploy-sh": "completed",
        "add-the-dry-run-flag": "in_progress",
    }
    assert report.untimed_events == report.events_written


def test_a_resumed_codex_session_records_the_replayed_history_once(tmp_path: Path) -> None:
    """The call a resumed session replays is skipped as replayed_history; the first keeps its own time."""
    report = imported(tmp_path, "codex_resumed.jsonl")
    log = records(report)

    assert report.skipped.get("replayed_history") == 1
    assert (report.plan_updates, report.versions) == (2, 2)
    assert log[1].ts == "2025-12-01T08:00:10.000Z"
    [replan] = [r.data for r in log if r.type == "plan.replanned"]
    assert replan.why == 'the user wrote at line 9: "Carry on, and measure it again when the index is in."'  # type: ignore[union-attr]


def test_the_markdown_rule_prefers_the_works_sections_and_numbered_headings() -> None:
    """Numbered entries of a Problem section are not steps; numbered headings are; a plan of prose is its title."""
    problem_then_steps = "# Plan: X\n## Problem\n1. It crashes\n2. It is slow\n## Steps\n1. Fix the crash\n2. Cache it"
    headings = "# Plan: Y\n\n## Implementation\n### 1. Add `helper()`\n### 2. Update **tests**\n"
    prose = "# Rename the module\n\nJust rename it.\n"

    assert [i.text for i in plan_items(problem_then_steps)] == ["Fix the crash", "Cache it"]
    assert [i.text for i in plan_items(headings)] == ["Add helper()", "Update tests"]
    assert [i.text for i in plan_items(prose)] == ["Rename the module"]
    assert [(i.text, i.status) for i in plan_items("- [x] Read it\n- [ ] Fix it\n")] == [
        ("Read it", "completed"),
        ("Fix it", "pending"),
    ]


def test_gemini_write_todos_keeps_cancelled_and_blocked_as_the_agent_wrote_them(tmp_path: Path) -> None:
    """A cancelled item leaves the plan and a blocked one stays pending, each said in the replan's observations."""
    report = imported(tmp_path, "gemini_session.json", "gemini")
    [replan] = [r.data for r in records(report) if r.type == "plan.replanned"]
    current = state(report)

    assert report.run == "109b2f5e-0000-4000-8000-00000000ge01"
    assert records(report)[1].ts == "2026-01-13T08:51:02.120Z"
    assert [s.status for s in current.steps.values_in_order()] == ["completed", "in_progress", "pending"]
    assert titles(report) == [
        "Add a method to PlaylistRepository to list playlists.",
        "Expose it through ISpotifyService.",
        "Wait for the API key from the user.",
    ]
    assert any("is marked cancelled" in o for o in replan.observations)  # type: ignore[union-attr]
    assert any("is marked blocked (recorded as pending" in o for o in replan.observations)  # type: ignore[union-attr]


def test_gemini_jsonl_applies_a_rewind(tmp_path: Path) -> None:
    """A $rewindTo drops the plan updates after its message: the rewound list never becomes a version."""
    report = imported(tmp_path, "gemini_session.jsonl")

    assert report.skipped == {"rewound": 1}
    assert (report.plan_updates, report.versions) == (2, 1)
    assert titles(report) == ["Fix port type", "Re-run build"]
    assert state(report).plan.goal == "Fix the port type in the build config and re-run the build."  # type: ignore[union-attr]


def test_gemini_share_markdown_and_opencode_markdown_import_their_lists(tmp_path: Path) -> None:
    """/chat share and OpenCode /export Markdown give the user's request as goal and the lists' progress."""
    share = imported(tmp_path, "gemini_share.md")
    export = import_transcript(FIXTURES / "opencode_export.md", tmp_path / "export.plantrail.jsonl")

    assert state(share).plan.goal == "List the user's playlists in the Spotify service."  # type: ignore[union-attr]
    assert [s.status for s in state(share).steps.values_in_order()] == ["completed", "in_progress"]
    assert state(export).plan.goal == "Create a small blog with a list page and a post page."  # type: ignore[union-attr]
    assert [s.status for s in state(export).steps.values_in_order()] == ["completed", "in_progress", "pending"]
    assert state(export).plan.steps[1].notes == ('the agent gave it priority "medium"',)  # type: ignore[union-attr]
    assert export.untimed_events == export.events_written


def test_older_cline_task_progress_in_the_assistant_text_is_read(tmp_path: Path) -> None:
    """<task_progress> inside an older Cline assistant's text is a checklist like the task_progress parameter."""
    report = imported(tmp_path, "cline_text_progress.json", "cline-text")

    assert (report.plan_updates, report.steps_completed) == (2, 2)
    assert titles(report) == ["Read the config", "Fix the port"]
