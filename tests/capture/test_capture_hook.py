"""`plantrail hook claude`: live capture from Claude Code's hooks, through the importers' one mapping."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.capture.append import append_transcript
from plantrail.ledger.capture.hook import ERRORS_CAP, ERRORS_FILE, claude_hook
from plantrail.ledger.importers import import_transcript
from tests.conftest import SAMPLES, CliResult
from tests.helpers.hook_payloads import as_hooks_see, payloads_of, post_tool_use, prompt
from tests.helpers.story import story

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
TRANSCRIPTS = (
    SAMPLES / "claude-session.jsonl",
    FIXTURES / "claude_tasks_lead.jsonl",
    FIXTURES / "claude_new_schema.jsonl",
)


def _hook_process(payload: dict[str, Any] | bytes) -> subprocess.CompletedProcess[bytes]:
    """One `plantrail hook claude` process with the payload on stdin."""
    raw = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    command = [sys.executable, "-m", "plantrail.cli.main", "hook", "claude"]
    return subprocess.run(command, input=raw, capture_output=True, check=False)


def _log(project: Path, session: str) -> Path:
    return project / ".plantrail" / "runs" / f"{session}.jsonl"


def _todo(session: str, project: Path, call: str, *items: tuple[str, str]) -> dict[str, Any]:
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    return post_tool_use(session, project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, with $PLANTRAIL_HOME unset so runs go under its .plantrail/."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    return tmp_path


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=lambda p: p.name)
def test_hook_payloads_as_separate_processes_tell_the_imports_story(project: Path, transcript: Path) -> None:
    """A session's real-shaped payloads, one `plantrail hook claude` process each, give the story of the
    import of its transcript: the same plans, transitions and evidence, in the same order."""
    payloads = payloads_of(transcript, project)

    results = [_hook_process(payload) for payload in payloads]

    assert [(r.returncode, r.stdout) for r in results] == [(0, b"")] * len(payloads)
    whole = import_transcript(transcript, project / "whole.jsonl")
    assert story(_log(project, payloads[0]["session_id"])) == story(Path(whole.log))
    assert not (project / ".plantrail" / ERRORS_FILE).exists()


@pytest.mark.parametrize("name", ["claude_plan_mode_approved.jsonl", "claude_plan_mode.jsonl"])
def test_the_hooks_exit_plan_mode_path_gives_the_imports_approvals(project: Path, name: str) -> None:
    """ExitPlanMode approved as proposed or with the user's edits gives, through the hooks, the approval request
    and grant (and the edited version) the import of what the hooks see gives."""
    transcript = FIXTURES / name
    payloads = payloads_of(transcript, project)

    assert all(claude_hook(orjson.dumps(payload)).errors == () for payload in payloads)
    whole = import_transcript(as_hooks_see(transcript, project / name), project / "whole.jsonl")
    told = story(_log(project, payloads[0]["session_id"]))
    assert told == story(Path(whole.log))
    assert [event[0] for event in told if event[0].startswith("approval.")] == [
        "approval.requested",
        "approval.granted",
    ]


def test_import_append_after_the_hooks_adds_only_what_they_missed(project: Path) -> None:
    """When the hooks missed the last plan update, `import --append` of the transcript adds just that one."""
    transcript = SAMPLES / "claude-session.jsonl"
    payloads = payloads_of(transcript, project)
    plan_calls = [p for p in payloads if p["hook_event_name"] == "PostToolUse"]
    for payload in payloads:
        if payload is not plan_calls[-1]:
            assert claude_hook(orjson.dumps(payload)).errors == ()
    log = _log(project, payloads[0]["session_id"])

    report = append_transcript(transcript, log)

    assert (report.updates_appended, report.refused) == (1, ())
    assert story(log) == story(Path(import_transcript(transcript, project / "whole.jsonl").log))


def test_a_payload_delivered_twice_is_recorded_once(project: Path) -> None:
    """The same PostToolUse payload again leaves the log's bytes as they were."""
    payload = _todo("s1", project, "toolu_1", ("Reproduce the crash", "in_progress"), ("Fix the parser", "pending"))
    claude_hook(orjson.dumps(payload))
    before = _log(project, "s1").read_bytes()

    again = claude_hook(orjson.dumps(payload))

    assert again.errors == ()
    assert _log(project, "s1").read_bytes() == before


BAD_PAYLOADS = {
    "truncated JSON": b'{"session_id": "s1", "hook_event_name": "PostTo',
    "an unknown tool": orjson.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash"}),
    "no session id": orjson.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "hello there"}),
    "an unknown event": orjson.dumps({"session_id": "s1", "hook_event_name": "Teleport"}),
}


@pytest.mark.parametrize("name", [*BAD_PAYLOADS, "a 10 MB tool response"])
def test_a_bad_payload_is_one_error_line_exit_0_and_the_log_untouched(project: Path, name: str) -> None:
    """Truncated JSON, an unknown tool or event, no session id, a 10 MB tool response: the hook exits 0, prints
    nothing, leaves a line in .plantrail/hook-errors.log and does not touch the log."""
    first = _todo("s1", project, "toolu_1", ("Reproduce the crash", "in_progress"))
    claude_hook(orjson.dumps(first))
    before = _log(project, "s1").read_bytes()
    if name in BAD_PAYLOADS:
        raw = BAD_PAYLOADS[name]
    else:
        huge = _todo("s1", project, "toolu_2", ("Reproduce the crash", "completed"))
        huge["tool_response"]["output"] = "x" * (10 * 1024 * 1024)
        raw = orjson.dumps(huge)

    result = subprocess.run(
        [sys.executable, "-m", "plantrail.cli.main", "hook", "claude"],
        input=raw,
        capture_output=True,
        cwd=project,
        check=False,
    )

    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    errors = (project / ".plantrail" / ERRORS_FILE).read_text().splitlines()
    assert len(errors) == 1 and "error[" in errors[0]
    assert _log(project, "s1").read_bytes() == before


def test_an_update_delivered_before_its_task_is_created_is_recorded_after_it(project: Path) -> None:
    """A TaskUpdate that lands before its TaskCreate (parallel hooks) is recorded once the task exists, its
    skipped start marked inferred."""
    update = post_tool_use(
        "s1",
        project,
        "TaskUpdate",
        "toolu_2",
        {"taskId": "1", "status": "completed"},
        {
            "success": True,
            "taskId": "1",
            "updatedFields": ["status"],
            "statusChange": {"from": "pending", "to": "completed"},
        },
    )
    create = post_tool_use(
        "s1", project, "TaskCreate", "toolu_1", {"subject": "Write the notes", "description": ""},
        {"task": {"id": "1", "subject": "Write the notes"}},
    )  # fmt: skip
    claude_hook(orjson.dumps(update))
    claude_hook(orjson.dumps(create))

    records = [orjson.loads(line) for line in _log(project, "s1").read_bytes().splitlines()]
    steps = [(r["type"], r["source"]["inferred"]) for r in records if r["type"].startswith("step.")]
    assert steps == [("step.started", True), ("step.completed", False)]


def test_task_created_and_its_tool_call_record_one_creation(project: Path) -> None:
    """The TaskCreated hook and the TaskCreate PostToolUse of one task make one step, whichever comes first."""
    created = {"session_id": "s1", "cwd": str(project), "hook_event_name": "TaskCreated", "task_id": "1"}
    created["task_subject"] = "Write the notes"
    call = post_tool_use(
        "s1", project, "TaskCreate", "toolu_1", {"subject": "Write the notes"},
        {"task": {"id": "1", "subject": "Write the notes"}},
    )  # fmt: skip
    claude_hook(orjson.dumps(created))
    claude_hook(orjson.dumps(call))
    completed = {"session_id": "s1", "cwd": str(project), "hook_event_name": "TaskCompleted", "task_id": "1"}
    claude_hook(orjson.dumps(completed))

    records = [orjson.loads(line) for line in _log(project, "s1").read_bytes().splitlines()]
    plans = [r for r in records if r["type"] in ("plan.created", "plan.replanned")]
    assert [len(r["data"]["plan"]["steps"]) for r in plans] == [1]
    assert [r["type"] for r in records if r["type"].startswith("step.")] == ["step.started", "step.completed"]


def test_session_start_returns_where_the_plan_stands_as_additional_context(project: Path) -> None:
    """SessionStart prints the JSON Claude Code reads, where the run's plan stands within 10,000 characters."""
    many = [(f"Item number {i} of a very long list " + "x" * 200, "pending") for i in range(200)]
    assert claude_hook(orjson.dumps(_todo("s1", project, "toolu_1", *many))).errors == ()

    result = _hook_process(
        {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart", "source": "resume"}
    )

    assert result.returncode == 0
    output = orjson.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert 'run is "s1"' in output["additionalContext"] and len(output["additionalContext"]) <= 10_000


def test_session_start_of_a_new_session_names_its_run_and_the_plan_server(project: Path) -> None:
    """A session with no run yet is told its run id and to keep its plan with the plan server, and the run is
    announced for the project (the plan server's fallback)."""
    from plantrail.ledger.capture.announcement import announced

    result = _hook_process({"session_id": "s9", "cwd": str(project), "hook_event_name": "SessionStart"})

    assert (result.returncode, result.stderr) == (0, b"")
    assert orjson.loads(result.stdout)["hookSpecificOutput"] == {
        "hookEventName": "SessionStart",
        "additionalContext": 'plantrail: this session\'s run is "s9". Pass run "s9" on every plan server call.\n'
        "It has no plan yet.\n"
        'Next: keep your plan with the plan server: call plan_set with run "s9", a goal, acceptance criteria and '
        "steps; then start each step with step_start and end it with step_update.",
    }
    found = announced(project / ".plantrail")
    assert found is not None and (found.run, found.session, found.agent) == ("s9", "s9", "claude-code-hooks")
    assert not _log(project, "s9").exists()


def test_session_end_pauses_the_run_and_the_next_update_continues_it(project: Path) -> None:
    """SessionEnd pauses an open run with the reason session_end; the next plan update continues it."""
    claude_hook(orjson.dumps(_todo("s1", project, "toolu_1", ("Reproduce the crash", "in_progress"))))
    end = {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    claude_hook(orjson.dumps(end))
    claude_hook(orjson.dumps(end))  # delivered twice: paused once
    claude_hook(orjson.dumps(_todo("s1", project, "toolu_2", ("Reproduce the crash", "completed"))))

    records = [orjson.loads(line) for line in _log(project, "s1").read_bytes().splitlines()]
    finished = [r["data"] for r in records if r["type"] == "run.finished"]
    assert [(f["outcome"], f["reason"].split(":")[0]) for f in finished] == [("paused", "session_end")]
    assert records[-1]["type"] == "step.completed"


def test_the_users_prompt_is_the_goal_of_a_new_run(project: Path) -> None:
    """UserPromptSubmit before the first plan gives the run its goal."""
    claude_hook(orjson.dumps(prompt("s1", project, "Fix the crash on empty CSV files and add a regression test")))
    claude_hook(orjson.dumps(_todo("s1", project, "toolu_1", ("Reproduce the crash", "pending"))))

    first = orjson.loads(_log(project, "s1").read_bytes().splitlines()[1])
    assert first["data"]["plan"]["goal"] == "Fix the crash on empty CSV files and add a regression test"


def test_plantrail_home_holds_the_runs_when_set(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With $PLANTRAIL_HOME set, the run is written under it, not under the payload's cwd."""
    home = project / "home"
    monkeypatch.setenv("PLANTRAIL_HOME", str(home))

    claude_hook(orjson.dumps(_todo("s1", project / "elsewhere", "toolu_1", ("Reproduce the crash", "pending"))))

    assert (home / "runs" / "s1.jsonl").is_file()


def test_parallel_hooks_of_one_session_never_interleave(project: Path) -> None:
    """Eight hook processes at once, each creating a task, leave a log that verifies with all eight steps (one
    version, extended in place: no work touched it between the creations)."""

    def create(n: int) -> dict[str, Any]:
        answer = {"task": {"id": str(n), "subject": f"Task {n}"}}
        return post_tool_use("s1", project, "TaskCreate", f"toolu_{n}", {"subject": f"Task {n}"}, answer)

    payloads = [create(n) for n in range(8)]
    command = [sys.executable, "-m", "plantrail.cli.main", "hook", "claude"]
    processes = [subprocess.Popen(command, stdin=subprocess.PIPE) for _ in payloads]
    for process, payload in zip(processes, payloads, strict=True):
        assert process.stdin is not None
        process.stdin.write(orjson.dumps(payload))
        process.stdin.close()
    assert [process.wait(timeout=60) for process in processes] == [0] * 8

    check = subprocess.run(
        [sys.executable, "-m", "plantrail.cli.main", "verify", str(_log(project, "s1"))],
        capture_output=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout
    records = [orjson.loads(line) for line in _log(project, "s1").read_bytes().splitlines()]
    created = [s for r in records if r["type"] == "plan.created" for s in r["data"]["plan"]["steps"]]
    added = [s for r in records if r["type"] == "plan.extended" for s in r["data"]["steps"]]
    assert len(created) + len(added) == 8
    assert not [r for r in records if r["type"] == "plan.replanned"]


def test_the_error_file_stays_bounded(project: Path) -> None:
    """However many payloads fail, the error file stays under its cap and keeps the latest lines."""
    for n in range(3000):
        claude_hook(orjson.dumps({"session_id": f"s{n}", "cwd": str(project), "hook_event_name": "Nope"}))

    text = (project / ".plantrail" / ERRORS_FILE).read_text()
    assert len(text.encode()) <= ERRORS_CAP
    assert text.endswith("\n") and "'Nope'" in text.splitlines()[-1]


def test_hook_errors_shows_the_error_file(project: Path, run_cli: Callable[..., CliResult]) -> None:
    """plantrail hook errors prints the lines the hooks wrote; with none it says so."""
    folder = project / ".plantrail"
    assert "no hook errors" in run_cli("hook", "errors", "--dir", folder).out
    claude_hook(BAD_PAYLOADS["truncated JSON"], env={"PLANTRAIL_HOME": str(folder)})

    shown = run_cli("hook", "errors", "--dir", folder)

    assert shown.code == 0 and "error[HOOK_PAYLOAD_INVALID]" in shown.out


def test_the_kept_mapping_state_is_a_hint(project: Path) -> None:
    """With the mapping state kept between calls, dropped before each, or replaced by garbage, the hooks
    write the same story."""
    transcript = FIXTURES / "claude_tasks_lead.jsonl"
    stories = []
    for way in ("kept", "dropped", "garbage"):
        where = project / way
        where.mkdir()
        payloads = payloads_of(transcript, where)
        for payload in payloads:
            for cache in (where / ".plantrail" / "capture").glob("*.plantrail-cache"):
                for kept in cache.iterdir():
                    if way == "dropped":
                        kept.unlink()
                    elif way == "garbage":
                        kept.write_bytes(b"plantrail-sealed/1\n" + b"\0" * 64)
            assert claude_hook(orjson.dumps(payload)).errors == ()
        stories.append(story(_log(where, payloads[0]["session_id"])))
        kept_states = list((where / ".plantrail" / "capture").glob("*.plantrail-cache/mapping.state"))
        assert len(kept_states) == 1  # each call keeps the state it reached

    assert stories[0] == stories[1] == stories[2]
    assert stories[0] == story(Path(import_transcript(transcript, project / "whole.jsonl").log))


def test_hook_json_reports_what_the_call_did(project: Path) -> None:
    """hook claude --json prints the log and errors of the call (for scripts) and still exits 0."""
    payload = _todo("s1", project, "toolu_1", ("Reproduce the crash", "in_progress"))
    command = [sys.executable, "-m", "plantrail.cli.main", "hook", "claude", "--json"]

    result = subprocess.run(command, input=orjson.dumps(payload), capture_output=True, check=False)

    assert result.returncode == 0
    assert orjson.loads(result.stdout) == {"ok": True, "log": str(_log(project, "s1")), "errors": [], "receipt": None}


def test_subagent_stop_merges_the_subagents_plan_calls(project: Path) -> None:
    """SubagentStop copies the subagent transcript's plan calls the hooks did not send, credited to the
    subagent; a second SubagentStop adds nothing."""
    lead = FIXTURES / "claude_tasks_lead.jsonl"
    for payload in payloads_of(lead, project):
        assert claude_hook(orjson.dumps(payload)).errors == ()
    stop = {
        "session_id": payloads_of(lead, project)[0]["session_id"],
        "cwd": str(project),
        "hook_event_name": "SubagentStop",
        "agent_id": "d4n4",
        "agent_type": "general-purpose",
        "agent_transcript_path": str(FIXTURES / "claude_tasks_lead__subagent-d4n4.jsonl"),
        "stop_hook_active": False,
    }
    log = _log(project, stop["session_id"])

    assert claude_hook(orjson.dumps(stop)).errors == ()
    after_first = log.read_bytes()
    assert claude_hook(orjson.dumps(stop)).errors == ()

    completed = [orjson.loads(line) for line in after_first.splitlines() if b'"step.completed"' in line]
    assert any("subagent d4n4" in " ".join(r["data"]["evidence"]) for r in completed)
    assert log.read_bytes() == after_first


REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"
REAL_CLAUDE = sorted(p.name for p in REALDATA.glob("claude-code*.jsonl") if "__subagent" not in p.name)


@pytest.mark.skipif(not REAL_CLAUDE, reason=f"no real Claude Code transcripts at {REALDATA}")
@pytest.mark.parametrize("name", REAL_CLAUDE)
def test_real_sessions_through_the_hooks_tell_the_imports_story(project: Path, name: str) -> None:
    """Each real Claude Code transcript, replayed as the payloads its hooks send (ExitPlanMode included), gives
    the story its import gives of what the hooks see (a plan the user refused never ran: no PostToolUse)."""
    transcript = REALDATA / name
    payloads = payloads_of(transcript, project)

    errors = [line for payload in payloads for line in claude_hook(orjson.dumps(payload)).errors]

    assert errors == []
    whole = import_transcript(as_hooks_see(transcript, project / name), project / "whole.jsonl")
    assert story(_log(project, payloads[0]["session_id"])) == story(Path(whole.log))
