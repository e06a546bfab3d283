"""Claude Code's Stop hook: a turn boundary whose usage the run's budgets count, once per turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.capture.append import append_transcript
from plantrail.ledger.capture.hook import ERRORS_FILE, claude_hook
from plantrail.ledger.capture.turns import TAIL, turn_usage
from tests.helpers.hook_payloads import post_tool_use

SESSION = "3f2a9c1e-0000-4000-8000-000000000001"
USAGE_1 = {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 50}
USAGE_2 = {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1200, "output_tokens": 20}
USAGE_3 = {"input_tokens": 7, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 2300, "output_tokens": 90}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, with $PLANTRAIL_HOME unset so runs go under its .plantrail/."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    return tmp_path


def _line(kind: str, uuid: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A transcript line as Claude Code writes it."""
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/app",
        "sessionId": SESSION,
        "version": "2.1.240",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": "2026-12-02T01:00:00.000Z",
        **extra,
    }


def _assistant(uuid: str, message_id: str, block: dict[str, Any], usage: dict[str, int]) -> dict[str, Any]:
    message = {"id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [block]}
    return _line("assistant", uuid, {**message, "usage": usage}, requestId=f"req_{message_id}")


def _turn(prompt: str, n: int, *messages: tuple[str, dict[str, int]]) -> list[dict[str, Any]]:
    """A turn: the user's prompt, then each API message as two lines (a text block, a tool call) repeating its
    usage, each followed by the tool's result."""
    lines = [_line("user", f"u{n}", {"role": "user", "content": prompt})]
    for place, (message_id, usage) in enumerate(messages):
        text = {"type": "text", "text": "Working on it."}
        call = {"type": "tool_use", "id": f"toolu_{message_id}", "name": "Bash", "input": {"command": "ls"}}
        lines += [_assistant(f"a{n}-{place}-1", message_id, text, usage)]
        lines += [_assistant(f"a{n}-{place}-2", message_id, call, usage)]
        result = {"type": "tool_result", "tool_use_id": f"toolu_{message_id}", "content": "ok"}
        lines += [_line("user", f"r{n}-{place}", {"role": "user", "content": [result]})]
    return lines


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _stop(project: Path, transcript: Path, **extra: Any) -> dict[str, Any]:
    """A Stop payload, as Claude Code's hooks reference documents it."""
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "Done.",
        "background_tasks": [],
        **extra,
    }


def _todo(project: Path, call: str, *items: tuple[str, str]) -> dict[str, Any]:
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    return post_tool_use(SESSION, project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})


def _completions(log: Path) -> list[dict[str, Any]]:
    records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    return [r["data"] for r in records if r["type"] == "step.completed"]


def test_turn_usage_counts_each_message_once_since_the_users_prompt(tmp_path: Path) -> None:
    """A turn's tokens are input, cache and output tokens of each API message since the prompt, counted once
    though its lines repeat them; an earlier turn is not counted."""
    lines = _turn("Rename the CLI command", 1, ("msg_1", USAGE_3))
    lines += _turn("Now fix the parser crash", 2, ("msg_2", USAGE_1), ("msg_3", USAGE_2))
    transcript = _write(tmp_path / "t.jsonl", lines)

    usage = turn_usage(str(transcript))

    assert usage.tokens == sum(USAGE_1.values()) + sum(USAGE_2.values())
    assert (usage.last, usage.cost_usd) == ("a2-1-2", None)


def test_turn_usage_reads_only_the_tail_and_survives_a_missing_file(tmp_path: Path) -> None:
    """A long transcript is read from its last TAIL bytes only; a missing one gives a turn without tokens."""
    filler = [_line("system", f"s{n}", {"role": "system", "content": "x" * 1000}) for n in range(TAIL // 900)]
    lines = _turn("Rename the CLI command", 1, ("msg_1", USAGE_3)) + filler
    lines += _turn("Now fix the parser crash", 2, ("msg_2", USAGE_1))
    transcript = _write(tmp_path / "t.jsonl", lines)

    assert turn_usage(str(transcript)).tokens == sum(USAGE_1.values())
    assert turn_usage(str(tmp_path / "missing.jsonl")) == (None, 0, None)


def test_stop_feeds_the_next_results_usage_and_the_runs_turns_once_per_turn(project: Path) -> None:
    """Each Stop's turn (its tokens from the transcript) is reported on the next completion the hooks record,
    a Stop delivered twice counting once, so the run's usage, which max_turns is held to, counts the turns."""
    transcript = project / "transcript.jsonl"
    first = _turn("Fix the parser crash on empty input", 1, ("msg_1", USAGE_1), ("msg_2", USAGE_2))
    second = first + _turn("Go on with the next item now", 2, ("msg_3", USAGE_3))
    sent = [
        _todo(project, "toolu_t1", ("Reproduce the crash", "in_progress"), ("Fix the parser", "pending")),
        ("transcript", first),
        _stop(project, transcript, prompt_id="p-1"),
        _stop(project, transcript, prompt_id="p-1"),
        _todo(project, "toolu_t2", ("Reproduce the crash", "completed"), ("Fix the parser", "in_progress")),
        ("transcript", second),
        _stop(project, transcript),
        _stop(project, transcript),
        _todo(project, "toolu_t3", ("Reproduce the crash", "completed"), ("Fix the parser", "completed")),
    ]

    for payload in sent:
        if isinstance(payload, tuple):
            _write(transcript, payload[1])
        else:
            assert claude_hook(orjson.dumps(payload)).errors == ()

    log = project / ".plantrail" / "runs" / f"{SESSION}.jsonl"
    reports = [data.get("report") for data in _completions(log)]
    assert reports == [
        {"usage": {"turns": 1, "tokens": sum(USAGE_1.values()) + sum(USAGE_2.values())}},
        {"usage": {"turns": 1, "tokens": sum(USAGE_3.values())}},
    ]
    with Ledger.open(log) as ledger:
        usage = ledger.state.usage
    assert usage is not None and (usage.turns, usage.tokens) == (
        2,
        sum(map(sum, (u.values() for u in (USAGE_1, USAGE_2, USAGE_3)))),
    )
    assert not (project / ".plantrail" / ERRORS_FILE).exists()


def test_turns_the_journal_holds_map_to_the_same_reports_on_a_rebuild(project: Path) -> None:
    """`import --append` of the hook journal writes the same completions, usage included, as the hooks did."""
    transcript = _write(
        project / "transcript.jsonl", _turn("Fix the parser crash on empty input", 1, ("msg_1", USAGE_1))
    )
    claude_hook(orjson.dumps(_todo(project, "toolu_t1", ("Reproduce the crash", "in_progress"))))
    claude_hook(orjson.dumps(_stop(project, transcript, prompt_id="p-1")))
    claude_hook(orjson.dumps(_todo(project, "toolu_t2", ("Reproduce the crash", "completed"))))
    journal = project / ".plantrail" / "capture" / f"{SESSION}.claude-code-hooks.jsonl"

    rebuilt = append_transcript(journal, project / "rebuilt.jsonl")

    assert rebuilt.refused == ()
    log = project / ".plantrail" / "runs" / f"{SESSION}.jsonl"
    assert _completions(Path(rebuilt.log)) == _completions(log)
    assert _completions(log)[0]["report"] == {"usage": {"turns": 1, "tokens": sum(USAGE_1.values())}}


def test_a_turn_without_a_readable_transcript_still_counts_as_a_turn(project: Path) -> None:
    """A Stop whose transcript cannot be read reports one turn and no tokens."""
    claude_hook(orjson.dumps(_todo(project, "toolu_t1", ("Reproduce the crash", "in_progress"))))
    claude_hook(orjson.dumps(_stop(project, project / "gone.jsonl")))
    claude_hook(orjson.dumps(_todo(project, "toolu_t2", ("Reproduce the crash", "completed"))))

    log = project / ".plantrail" / "runs" / f"{SESSION}.jsonl"
    assert _completions(log)[0]["report"] == {"usage": {"turns": 1}}
