"""Gemini CLI `/chat share` exports as the CLI writes them: a message's parts joined with nothing between them,
so a tool marker may follow the model's words or a closing fence on the same line."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.importers import ListSnapshot, import_transcript, parse_transcript
from plantrail.ledger.importers.parse import ADAPTER_VERSIONS
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from plantrail.projections.state import fold
from tests.conftest import CliResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
TODOS = {
    "todos": [{"description": "Find the bug", "status": "in_progress"}, {"description": "Fix it", "status": "pending"}]
}
CALL = json.dumps({"name": "write_todos", "args": TODOS}, indent=2)
READ = json.dumps({"name": "read_file", "args": {}}, indent=2)


def snapshots(path: Path) -> list[ListSnapshot]:
    """The export's plan updates, each a whole list."""
    observations = parse_transcript(path, "gemini-share").observations
    assert all(isinstance(o, ListSnapshot) for o in observations)
    return [o for o in observations if isinstance(o, ListSnapshot)]


def export(tmp_path: Path, model: str) -> Path:
    """An export of one request and one model message whose text is ``model``."""
    path = tmp_path / "share.md"
    path.write_text(f"## USER 🧑‍💻\n\nFind the bug in the parser and fix it.\n\n---\n\n## MODEL ✨\n\n{model}\n")
    return path


@pytest.mark.parametrize(
    ("where", "model"),
    [
        ("at the start of its line", f"**Tool Command**:\n```json\n{CALL}\n```"),
        ("after the model's words", f"I will keep a plan.**Tool Command**:\n```json\n{CALL}\n```"),
        (
            "after the fence of the call before it",
            f"**Tool Command**:\n```json\n{READ}\n```**Tool Command**:\n```json\n{CALL}\n```",
        ),
        ("with its fence on the same line", f"I will keep a plan. **Tool Command**: ```json\n{CALL}\n```"),
        ("after a blank line", f"**Tool Command**:\n\n```json\n{CALL}\n```"),
    ],
)
def test_a_marker_is_read_wherever_it_stands(tmp_path: Path, where: str, model: str) -> None:
    """A write_todos call is read whether its marker opens the line, follows words or a fence, or holds the fence."""
    read = snapshots(export(tmp_path, model))

    assert [[(i.text, i.status) for i in s.items] for s in read] == [
        [("Find the bug", "in_progress"), ("Fix it", "pending")]
    ], where
    assert parse_transcript(tmp_path / "share.md", "gemini-share").lines_skipped == 0


def test_the_words_before_a_marker_are_the_models_own(tmp_path: Path) -> None:
    """The model's words before a call on its line are the update's explanation, cited at their line."""
    (update,) = snapshots(export(tmp_path, f"Two steps.\nI will keep a plan.**Tool Command**:\n```json\n{CALL}\n```"))

    assert update.explanation == "Two steps.\nI will keep a plan."
    assert update.explanation_line == 9
    assert update.prompts == (("Find the bug in the parser and fix it.", 3),)


def test_an_export_whose_every_marker_follows_words_imports(tmp_path: Path) -> None:
    """An export in which every marker follows the model's words or a fence (the newer heading, the icon after the
    role, the CLI's session context first) imports both updates; the goal is the user's request, not the context."""
    source = tmp_path / "gemini_share_inline.md"
    shutil.copyfile(FIXTURES / source.name, source)
    report = import_transcript(source, tmp_path / "out.jsonl")
    verify_log(report.log)
    with LogReader(report.log) as reader:
        records = list(reader.records())
    state = fold(records)

    assert (report.format, report.plan_updates, report.versions, report.lines_skipped) == ("gemini-share", 2, 2, 0)
    assert state.plan is not None
    assert state.plan.goal == "Invoice totals are off by a cent when the amount ends in half a cent; fix the rounding."
    assert [(s.id, s.status) for s in state.steps.values_in_order()] == [
        ("read-the-invoice-module", "completed"),
        ("round-totals-to-the-cent", "in_progress"),
        ("add-a-test-for-a-0-005-total", "pending"),
    ]
    replan = next(r for r in records if r.type == "plan.replanned")
    assert replan.data.why == (  # type: ignore[union-attr]
        'the agent wrote at line 76: "The module rounds with float arithmetic; a test for the half-cent case '
        'belongs in the plan."'
    )
    assert f"imported by plantrail's gemini-share adapter v{ADAPTER_VERSIONS['gemini-share']}" in state.plan.notes


def test_a_marker_that_cannot_be_read_is_a_skipped_line(tmp_path: Path) -> None:
    """A marker with no JSON block after it, or whose block is not JSON, is counted as a skipped line by reason; the
    updates around it are read."""
    path = FIXTURES / "gemini_share_unreadable.md"
    transcript = parse_transcript(path)

    assert [s.line for s in snapshots(path)] == [10, 47, 113]
    assert dict(transcript.skipped_reasons) == {"malformed_plan_update": 1, "unreadable_tool_marker": 2}
    assert transcript.lines_skipped == 3


def test_the_import_summary_reports_unreadable_markers(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """`plantrail import` says how many markers it could not read, by reason, in its JSON and its text."""
    source = tmp_path / "gemini_share_unreadable.md"
    shutil.copyfile(FIXTURES / source.name, source)

    data = run_cli("import", str(source), "-o", str(tmp_path / "out.jsonl"), "--json").json()
    text = run_cli("import", str(source), "-o", str(tmp_path / "again.jsonl")).out

    assert data["lines_skipped"] == 3
    assert data["total"]["skipped"] == {"malformed_plan_update": 1, "unreadable_tool_marker": 2}
    assert "skipped 2 unreadable_tool_marker" in text


def test_a_marker_left_waiting_at_the_end_is_a_skipped_line(tmp_path: Path) -> None:
    """A marker on the export's last line, which no block follows, is counted as unreadable."""
    path = export(tmp_path, f"**Tool Command**:\n```json\n{CALL}\n```\n\nOne more call.**Tool Command**:")

    assert len(snapshots(path)) == 1
    assert dict(parse_transcript(path, "gemini-share").skipped_reasons) == {"unreadable_tool_marker": 1}
