"""What the hooks tell the model when a session starts, resumes or comes back from a compaction, and what a
compaction's summary is asked to keep: recorded payloads through `plantrail hook claude` as a process, and the
exact text the agent receives (no exit code, no command-line flag, always a next step)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.api import Ledger

STEPS = [
    {"id": "reproduce", "title": "Reproduce the failure", "completion_evidence": "failing output"},
    {"id": "fix", "title": "Fix it", "depends_on": ["reproduce"], "completion_evidence": "the diff"},
    {"id": "docs", "title": "Note it", "completion_evidence": "changelog"},
    {
        "id": "ship",
        "title": "Ship it",
        "depends_on": ["fix"],
        "completion_evidence": "the release",
        "requires_approval": True,
    },
]
CRITERIA = [{"id": "tests-pass", "description": "the test suite passes"}]


def _payload(event: str, project: Path, **fields: Any) -> dict[str, Any]:
    """A hook payload as Claude Code sends it (its hooks reference: the common fields, then the event's)."""
    return {
        "session_id": "sess-1",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def _hook(payload: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    """One `plantrail hook claude` process; the hookSpecificOutput it printed."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "hook", "claude"],
        input=orjson.dumps(payload),
        capture_output=True,
        check=True,
        env={**environment, **(env or {})},
    )
    assert done.stderr == b""
    output: dict[str, Any] = orjson.loads(done.stdout)["hookSpecificOutput"]
    return output


def _log(project: Path) -> Path:
    return project / ".plantrail" / "runs" / "sess-1.jsonl"


def _plan_in_progress(project: Path) -> None:
    """The plan server's run for the session: reproduce done, fix started, ship waiting for approval."""
    with Ledger.set_plan(_log(project), STEPS, run="sess-1", goal="fix the login", criteria=CRITERIA) as ledger:
        ledger.start("reproduce")
        ledger.complete("reproduce", ["401 seen"])
        ledger.start("fix")


def _model_text(text: str) -> None:
    """A text for a model: no exit code, no command-line flag, and a next step."""
    assert "exit" not in text.lower() and not re.search(r"(^|\s)--?[a-z]", text), text
    assert "Next" in text, text


def test_after_a_compaction_the_model_gets_the_run_the_version_and_the_next_step(tmp_path: Path) -> None:
    _plan_in_progress(tmp_path)

    output = _hook(_payload("SessionStart", tmp_path, source="compact", model="claude-sonnet-5"))

    assert output["hookEventName"] == "SessionStart"
    assert output["additionalContext"] == (
        'plantrail: this session\'s run is "sess-1". Pass run "sess-1" on every plan server call.\n'
        "Your context was just compacted. The plan below is the current one: a plan, step list or version in the "
        "summary that differs from it is out of date.\n"
        "Goal: fix the login\n"
        "Current plan version: 1\n"
        "Done: reproduce\n"
        "In progress (started, no result yet): fix (attempt 1)\n"
        "Ready to start: docs\n"
        "Waiting for approval: ship\n"
        "In doubt (nobody knows whether its work happened): none\n"
        "Next: carry on with fix and end its attempt with step_update (complete with its evidence, or fail or "
        "block with a reason)."
    )
    _model_text(output["additionalContext"])


def test_on_resume_a_late_result_of_a_superseded_version_is_named_with_the_current_version(tmp_path: Path) -> None:
    """A completion of a step of version 1 reported after the replan to version 2 goes to the orphan path; the
    resumed session is told it changed nothing in version 2, and what to do next."""
    _plan_in_progress(tmp_path)
    with Ledger.set_plan(
        _log(tmp_path), STEPS[:2], reason="user_request", why="docs and shipping are someone else's"
    ) as ledger:
        ledger.complete("fix", ["the diff"], plan_version=1)

    output = _hook(_payload("SessionStart", tmp_path, source="resume"))

    assert output["additionalContext"] == (
        'plantrail: this session\'s run is "sess-1". Pass run "sess-1" on every plan server call.\n'
        "This session resumed. The plan below is where the run stands now.\n"
        "Goal: fix the login\n"
        "Current plan version: 2\n"
        "Done: reproduce\n"
        "In progress (started, no result yet): none\n"
        "Ready to start: fix\n"
        "Waiting for approval: none\n"
        "In doubt (nobody knows whether its work happened): none\n"
        "Late results kept on the orphan path: 1; they changed nothing in the current plan version 2.\n"
        "Next: start fix with step_start."
    )
    _model_text(output["additionalContext"])


def test_a_session_that_ended_is_told_its_next_call_continues_the_run(tmp_path: Path) -> None:
    """SessionEnd paused the run; the next session's start says so, and what to do."""
    with Ledger.set_plan(_log(tmp_path), STEPS[:1], run="sess-1", goal="fix the login", criteria=CRITERIA):
        pass
    _hook_quiet(_payload("SessionEnd", tmp_path, reason="prompt_input_exit"))

    output = _hook(_payload("SessionStart", tmp_path, source="resume"))

    assert output["additionalContext"].splitlines()[-2:] == [
        "The run was paused when the last session ended; your next plan call continues it.",
        "Next: start reproduce with step_start.",
    ]


def _hook_quiet(payload: dict[str, Any]) -> None:
    environment = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "hook", "claude"],
        input=orjson.dumps(payload),
        capture_output=True,
        check=True,
        env=environment,
    )
    assert (done.stdout, done.stderr) == (b"", b"")


def test_a_compaction_is_recorded_and_its_summary_asked_to_keep_the_run_and_version(tmp_path: Path) -> None:
    _plan_in_progress(tmp_path)
    before = _log(tmp_path).read_bytes()

    output = _hook(_payload("PreCompact", tmp_path, trigger="auto", custom_instructions=""))

    assert output == {
        "hookEventName": "PreCompact",
        "customInstructions": 'Keep this word for word in the summary: this session\'s plantrail run is "sess-1" '
        "and its current plan version is 1; the plan server holds the plan. Next, after the compaction: call "
        'plan_status with run "sess-1" before any other plan call.',
    }
    _model_text(output["customInstructions"])
    added = [orjson.loads(line) for line in _log(tmp_path).read_bytes()[len(before) :].splitlines()]
    assert [(r["type"], r["data"]["key"], r["data"]["version"].split(" at ")[0]) for r in added] == [
        ("observation.recorded", "context-compaction", "auto")
    ]
    journal = (tmp_path / ".plantrail" / "capture" / "sess-1.claude-code-hooks.jsonl").read_bytes()
    assert b'"subtype":"hook:PreCompact"' in journal and b'"content":"PreCompact (auto)"' in journal


def test_a_compaction_before_any_plan_asks_the_summary_to_keep_the_run(tmp_path: Path) -> None:
    output = _hook(_payload("PreCompact", tmp_path, trigger="manual", custom_instructions="keep the tests"))

    assert output["customInstructions"] == (
        'Keep this word for word in the summary: this session\'s plantrail run is "sess-1"; pass run "sess-1" on '
        "every plan server call. Next, after the compaction: call plan_status or plan_set with that run."
    )
    assert not _log(tmp_path).exists()


def test_the_plugin_launchers_fallback_is_said_to_the_model(tmp_path: Path) -> None:
    """When the plugin's launcher ran the first plantrail on PATH, the session-start text says so and what the
    user can do."""
    output = _hook(
        _payload("SessionStart", tmp_path, source="startup"), {"PLANTRAIL_LAUNCHED_FROM_PATH": "/x/plantrail"}
    )

    assert output["additionalContext"].splitlines()[-1] == (
        "Also tell the user: the plantrail plugin found no recorded plantrail and ran the first one on PATH "
        "(/x/plantrail); recording the one they want (see the plugin's README) keeps it from changing."
    )


@pytest.mark.skipif(not os.path.exists("/usr/bin/git"), reason="needs git")
def test_a_hook_call_leaves_git_status_clean(tmp_path: Path) -> None:
    """The first write under a project makes .plantrail/.gitignore ignoring everything: git status shows nothing
    under .plantrail/ after hook calls that wrote a journal, an announcement and a log."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _hook(_payload("SessionStart", tmp_path, source="startup"))
    _plan_in_progress(tmp_path)
    _hook(_payload("PreCompact", tmp_path, trigger="auto"))

    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path, capture_output=True, check=True
    )
    assert status.stdout == b""
    assert (tmp_path / ".plantrail" / ".gitignore").read_bytes().endswith(b"\n*\n")


def test_a_gemini_session_start_names_the_run_and_announces_it(tmp_path: Path) -> None:
    """Gemini CLI's SessionStart gets the same text (its hooks take hookSpecificOutput.additionalContext), and
    the run is announced for the plan server."""
    from plantrail.ledger.capture.announcement import announced

    environment = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    payload = {
        "session_id": "gem-1",
        "transcript_path": str(tmp_path / "chat.json"),
        "cwd": str(tmp_path),
        "hook_event_name": "SessionStart",
        "timestamp": "2026-12-04T10:00:00Z",
        "source": "startup",
    }
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "hook", "gemini"],
        input=orjson.dumps(payload),
        capture_output=True,
        check=True,
        env=environment,
    )

    assert orjson.loads(done.stdout)["hookSpecificOutput"]["additionalContext"].splitlines()[0] == (
        'plantrail: this session\'s run is "gem-1". Pass run "gem-1" on every plan server call.'
    )
    found = announced(tmp_path / ".plantrail")
    assert found is not None and (found.run, found.agent) == ("gem-1", "gemini-cli-hooks")


def test_a_gemini_compression_is_recorded_on_the_open_run(tmp_path: Path) -> None:
    """Gemini CLI's PreCompress records the compaction on the session's open run, and prints nothing."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    log = tmp_path / ".plantrail" / "runs" / "gem-1.jsonl"
    with Ledger.set_plan(log, STEPS[:1], run="gem-1", goal="fix the login", criteria=CRITERIA):
        pass
    payload = {
        "session_id": "gem-1",
        "transcript_path": str(tmp_path / "chat.json"),
        "cwd": str(tmp_path),
        "hook_event_name": "PreCompress",
        "timestamp": "2026-12-04T10:00:00Z",
        "trigger": "auto",
    }
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "hook", "gemini"],
        input=orjson.dumps(payload),
        capture_output=True,
        check=True,
        env=environment,
    )

    assert (done.stdout, done.stderr) == (b"", b"")
    last = orjson.loads(log.read_bytes().splitlines()[-1])
    assert (last["type"], last["data"]["key"], last["data"]["version"].split(" at ")[0]) == (
        "observation.recorded",
        "context-compaction",
        "auto",
    )


def test_a_log_that_cannot_be_read_is_said_with_what_to_do(tmp_path: Path) -> None:
    """A log of a newer format: the model is told its run, that the log could not be read, and what to do; the
    error is written down for the user."""
    _log(tmp_path).parent.mkdir(parents=True)
    _log(tmp_path).write_bytes(b'{"v":9,"seq":0}\n')

    output = _hook(_payload("SessionStart", tmp_path, source="resume"))

    assert output["additionalContext"] == (
        'plantrail: this session\'s run is "sess-1". Pass run "sess-1" on every plan server call.\n'
        "Its log could not be read (FORMAT_TOO_NEW).\n"
        "Next: tell the user the run's log could not be read, and call plan_status, which says what it can read "
        "and what to do."
    )
    assert "FORMAT_TOO_NEW" in (tmp_path / ".plantrail" / "hook-errors.log").read_text()


def test_a_damaged_log_is_said_with_what_to_do(tmp_path: Path) -> None:
    _log(tmp_path).parent.mkdir(parents=True)
    _log(tmp_path).write_bytes(b"garbage\n")

    output = _hook(_payload("SessionStart", tmp_path, source="resume"))

    assert output["additionalContext"] == (
        'plantrail: this session\'s run is "sess-1". Pass run "sess-1" on every plan server call.\n'
        "This session resumed. The plan below is where the run stands now.\n"
        "Its log is damaged: what follows is what its valid part holds.\n"
        "Next: tell the user the run's log is damaged and needs a repair before the plan can change."
    )
    _model_text(output["additionalContext"])


def test_a_run_its_stop_policy_ends_is_not_told_to_start_a_step(tmp_path: Path) -> None:
    """A plan whose deadline has passed: the stop policy says budget_exhausted, so the model is told so and to
    replan or finish, never to start the ready step."""
    terms = {"policy": {"deadline": "2020-01-01T00:00:00Z"}}
    with Ledger.set_plan(_log(tmp_path), STEPS, run="sess-1", goal="fix the login", criteria=CRITERIA, terms=terms):
        pass

    output = _hook(_payload("SessionStart", tmp_path, source="resume"))

    said = output["additionalContext"]
    assert said.endswith(
        "Next: the plan's stop policy says this run is budget_exhausted; replan with plan_set if the work can go "
        "on another way, else end the run with run_finish, outcome budget_exhausted."
    ), said
    assert "step_start" not in said
    _model_text(said)


def test_a_ready_step_whose_side_effect_may_have_happened_is_checked_before_it_starts(tmp_path: Path) -> None:
    """docs asked to send an email, then its attempt failed before the email was known sent: resume says the
    effect is in doubt, so the model is told to check the target first, never to start docs at once."""
    with Ledger.set_plan(_log(tmp_path), STEPS, run="sess-1", goal="fix the login", criteria=CRITERIA) as ledger:
        ledger.start("docs")
        ledger.request_effect("docs", "notify", "mail:team@example.com", before="no mail sent")
        ledger.fail("docs", "the mail server timed out")

    output = _hook(_payload("SessionStart", tmp_path, source="resume"))

    said = output["additionalContext"]
    assert said.endswith(
        "Next: before docs starts again, check whether its side effect notify on 'mail:team@example.com' already "
        "happened: if it did, record it with step_effect, phase committed; never do it twice."
    ), said
    _model_text(said)


def test_a_run_paused_by_a_denied_approval_is_told_to_replan_not_to_ask_again(tmp_path: Path) -> None:
    """The person denied ship's approval: the stop policy pauses the run until a replan removes or changes
    ship, so the model is told that, never to ask for the same approval again or to start the ready step."""
    with Ledger.set_plan(_log(tmp_path), STEPS, run="sess-1", goal="fix the login", criteria=CRITERIA) as ledger:
        ledger.request_approval("ship-it", "may I ship?", "ship")
        ledger.deny("ship-it", why="not this week")

    output = _hook(_payload("SessionStart", tmp_path, source="resume"))

    said = output["additionalContext"]
    assert "Waiting for approval: none\n" in said, said
    assert "Approval denied (a replan must remove or change them): ship\n" in said, said
    assert said.endswith(
        "Next: the plan's stop policy paused this run: an approval for ship was denied; a replan that removes or "
        "changes those steps ends the pause; replan with plan_set without those steps or with them changed, or ask "
        "the user how to go on."
    ), said
    assert "step_start" not in said and "approval_request" not in said
    _model_text(said)
