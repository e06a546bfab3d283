"""`plantrail hook claude` on a plan call that failed or was refused: what the import records for a rejection."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from plantrail.ledger.capture.hook import ERRORS_FILE, claude_hook
from plantrail.ledger.importers import import_transcript
from tests.helpers.hook_payloads import payloads_of, post_tool_use, post_tool_use_failure
from tests.helpers.story import story

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
REFUSAL = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, with $PLANTRAIL_HOME unset so runs go under its .plantrail/."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    return tmp_path


def _log(project: Path, session: str) -> Path:
    return project / ".plantrail" / "runs" / f"{session}.jsonl"


def _todos(*items: tuple[str, str]) -> dict[str, object]:
    return {"todos": [{"content": text, "status": status, "activeForm": text} for text, status in items]}


def _records(log: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def test_a_refused_exit_plan_mode_through_the_hooks_is_the_imports_denial(project: Path) -> None:
    """A plan the user refused (PostToolUseFailure) and the one they then approved give, through the hooks, the
    whole transcript's story: the denied version, its approval request and denial, then the approved replan."""
    transcript = FIXTURES / "claude_plan_mode.jsonl"
    payloads = payloads_of(transcript, project, failures=True)
    assert [p["hook_event_name"] for p in payloads].count("PostToolUseFailure") == 1

    assert all(claude_hook(orjson.dumps(payload)).errors == () for payload in payloads)

    told = story(_log(project, payloads[0]["session_id"]))
    assert told == story(Path(import_transcript(transcript, project / "whole.jsonl").log))
    approvals = [event[0] for event in told if event[0].startswith("approval.")]
    assert approvals == ["approval.requested", "approval.denied", "approval.requested", "approval.granted"]
    assert not (project / ".plantrail" / ERRORS_FILE).exists()


def test_a_refused_todo_write_is_skipped_and_the_users_words_make_the_next_replan_theirs(project: Path) -> None:
    """A TodoWrite the user refused writes nothing; the words they gave with the refusal are the why of the
    next replan (``user_request``), as the import of such a transcript records them."""
    first = _todos(("Reproduce the crash", "in_progress"), ("Fix the parser", "pending"))
    refused = _todos(("Reproduce the crash", "completed"), ("Rewrite the parser", "pending"))
    later = _todos(("Reproduce the crash", "completed"), ("Fix the parser", "pending"), ("Add a test", "pending"))
    claude_hook(orjson.dumps(post_tool_use("s1", project, "TodoWrite", "toolu_1", first, {"newTodos": []})))
    before = _log(project, "s1").read_bytes()

    failed = post_tool_use_failure("s1", project, "TodoWrite", "toolu_2", refused, REFUSAL + "Keep the parser.")
    assert claude_hook(orjson.dumps(failed)).errors == ()
    assert _log(project, "s1").read_bytes() == before
    claude_hook(orjson.dumps(post_tool_use("s1", project, "TodoWrite", "toolu_3", later, {"newTodos": []})))

    replans = [r for r in _records(_log(project, "s1")) if r["type"] == "plan.replanned"]
    assert len(replans) == 1
    data = replans[0]["data"]
    assert isinstance(data, dict) and data["reason"] == "user_request"
    assert "Keep the parser." in str(data["why"])


def test_a_post_tool_use_whose_response_says_it_failed_is_a_rejection(project: Path) -> None:
    """A TaskUpdate whose tool_response says ``success: false`` changes nothing: the update is skipped as the
    tool's rejection, and the log keeps its bytes."""
    created = post_tool_use(
        "s1", project, "TaskCreate", "toolu_1", {"subject": "Fix the parser"}, {"task": {"id": "1", "subject": "x"}}
    )
    claude_hook(orjson.dumps(created))
    before = _log(project, "s1").read_bytes()
    answer = {"success": False, "taskId": "1", "updatedFields": [], "error": "Task not found"}
    update = post_tool_use("s1", project, "TaskUpdate", "toolu_2", {"taskId": "1", "status": "completed"}, answer)

    assert claude_hook(orjson.dumps(update)).errors == ()

    assert _log(project, "s1").read_bytes() == before


def test_a_failure_of_another_tool_is_refused_and_written_down(project: Path) -> None:
    """A PostToolUseFailure of a tool that is not a plan tool is one line in the error file, never a change."""
    failed = post_tool_use_failure("s1", project, "Bash", "toolu_9", {"command": "false"}, "exit 1")

    result = claude_hook(orjson.dumps(failed))

    assert len(result.errors) == 1 and "HOOK_PAYLOAD_INVALID" in result.errors[0]
    assert not _log(project, "s1").exists()


def test_the_same_failure_delivered_twice_is_journaled_once(project: Path) -> None:
    """A PostToolUseFailure delivered again adds nothing to the session's journal."""
    claude_hook(orjson.dumps(post_tool_use("s1", project, "TodoWrite", "toolu_1", _todos(("A b c d", "pending")), {})))
    failed = post_tool_use_failure("s1", project, "TodoWrite", "toolu_2", _todos(), REFUSAL + "no")
    claude_hook(orjson.dumps(failed))
    journal = project / ".plantrail" / "capture" / "s1.claude-code-hooks.jsonl"
    before = journal.read_bytes()

    claude_hook(orjson.dumps(failed))

    assert journal.read_bytes() == before


def test_an_interrupted_call_without_error_text_is_answered_as_an_interrupt(project: Path) -> None:
    """A PostToolUseFailure with ``is_interrupt`` and no ``error`` text is journaled as the transcript's
    interrupt answer (an error), and the plan is left as it was."""
    claude_hook(orjson.dumps(post_tool_use("s1", project, "TodoWrite", "toolu_1", _todos(("A b c d", "pending")), {})))
    before = _log(project, "s1").read_bytes()
    failed = {**post_tool_use_failure("s1", project, "TodoWrite", "toolu_2", _todos(), ""), "is_interrupt": True}

    assert claude_hook(orjson.dumps(failed)).errors == ()

    journal = project / ".plantrail" / "capture" / "s1.claude-code-hooks.jsonl"
    [answer] = [orjson.loads(line) for line in journal.read_bytes().splitlines()][-1:]
    assert answer["message"]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_2",
            "content": "[Request interrupted by user for tool use]",
            "is_error": True,
        }
    ]
    assert _log(project, "s1").read_bytes() == before
