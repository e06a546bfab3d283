"""The ACP dialect adapter: a saved `plantrail acp` stream read into its first plan's updates."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from plantrail.ledger.importers import acp
from plantrail.ledger.importers.detect import detect_format
from plantrail.ledger.importers.parse import parse_transcript
from plantrail.ledger.vocabulary.errors import TranscriptError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "acp_stream.jsonl"


def _stream(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _update(session: str, update: dict[str, object]) -> dict[str, object]:
    params = {"sessionId": session, "update": update}
    return {"from": "agent", "message": {"jsonrpc": "2.0", "method": "session/update", "params": params}}


def _entries(*items: tuple[str, str]) -> list[dict[str, str]]:
    return [{"content": text, "priority": "medium", "status": status} for text, status in items]


def test_the_fixture_reads_as_its_two_plan_updates() -> None:
    """Each plan update is one whole-list snapshot at its line, with its time, the user's prompt before it and
    the agent's name; the run id is acp-<sessionId>."""
    transcript = parse_transcript(FIXTURE)
    assert transcript.format == "acp" and transcript.session_id == "acp-session-1"
    assert [o.line for o in transcript.observations] == [6, 7]
    first, last = transcript.observations
    assert [(i.text, i.status, i.priority) for i in first.items] == [
        ("Read the failing test", "pending", "high"),
        ("Fix the parser", "pending", "medium"),
    ]
    assert [i.status for i in last.items] == ["completed", "in_progress", "pending"]
    assert first.timestamp == "2026-12-04T10:00:05.000Z"
    assert first.prompts == (("Fix the failing parser test and run the whole suite", 5),)
    assert first.meta == {"adapter": "acp", "adapter_version": 1, "agent": "acp:fake-agent"}


def test_a_saved_stream_is_detected() -> None:
    """The first line of a saved stream names the format."""
    assert detect_format(FIXTURE) == "acp"


def test_only_the_first_plan_is_imported_and_the_rest_counted(tmp_path: Path) -> None:
    """A v2 stream's first planId is the transcript's plan; another plan's updates and a Markdown plan are
    counted as skipped, never mixed in."""
    path = _stream(
        tmp_path / "s.jsonl",
        [
            _update(
                "s",
                {
                    "sessionUpdate": "plan_update",
                    "plan": {"type": "items", "planId": "a", "entries": _entries(("one", "pending"))},
                },
            ),
            _update(
                "s",
                {
                    "sessionUpdate": "plan_update",
                    "plan": {"type": "items", "planId": "b", "entries": _entries(("two", "pending"))},
                },
            ),
            _update(
                "s", {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "a", "content": "# x"}}
            ),
            {"from": "agent", "text": "not json"},
        ],
    )
    transcript = parse_transcript(path, "acp")
    assert transcript.session_id == "acp-s.a"
    assert [[i.text for i in o.items] for o in transcript.observations] == [["one"]]
    assert dict(transcript.skipped_reasons) == {"another_plan": 1, "markdown_plan": 1, "not_json_rpc": 1}


def test_a_file_of_no_stream_line_is_refused(tmp_path: Path) -> None:
    """A JSONL file none of whose lines is a saved stream's is NOT_A_TRANSCRIPT when read as acp."""
    path = _stream(tmp_path / "x.jsonl", [{"zz": 1}])
    with pytest.raises(TranscriptError) as caught:
        parse_transcript(path, "acp")
    assert caught.value.code == "NOT_A_TRANSCRIPT"


def test_the_working_directory_and_agent_come_from_the_answers() -> None:
    """session/new's cwd belongs to the session id the agent answers with; an unknown status is pending."""
    reader = acp.Reader()
    acp.read_message(
        reader, 1, "editor", {"jsonrpc": "2.0", "id": "n", "method": "session/new", "params": {"cwd": "/p"}}
    )
    acp.read_message(reader, 2, "agent", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "wrong-id-type"}})
    acp.read_message(reader, 3, "agent", {"jsonrpc": "2.0", "id": "n", "result": {"sessionId": "s9"}})
    assert reader.cwd == {"s9": "/p"}
    found = acp.read_message(
        reader, 4, "agent", _update("s9", {"sessionUpdate": "plan", "entries": _entries(("x", "odd"))})["message"]
    )
    assert found[0].key == "s9" and found[0].update.items[0].status == "pending"  # type: ignore[union-attr]
