"""The parsing half of the transcript importer: real transcripts, hand-written fixtures, errors."""

from __future__ import annotations

import itertools
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import plantrail.ledger.importers as importers
from plantrail.ledger.importers import (
    ListSnapshot,
    TaskEvent,
    Transcript,
    TranscriptError,
    detect_format,
    parse_transcript,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
REALDATA = Path(os.environ.get("PLANTRAIL_REALDATA", ROOT.parent / "shared" / "realdata"))

# From shared/realdata/PROVENANCE.md: records per file and plan-tool calls per file. OpenCode's
# "1 records" counts the document, not its messages, so it is not compared with lines_total.
PROVENANCE: dict[str, tuple[int | None, dict[str, int]]] = {
    "claude-code__amac0-ClaudeStatus__example2.jsonl": (740, {"TodoWrite": 75}),
    "claude-code__amac0-ClaudeStatus__example.jsonl": (39, {"TodoWrite": 5}),
    "claude-code__daaain-real_projects__JSSoundRecorder__7acd37a8.jsonl": (211, {"TodoWrite": 15}),
    "claude-code__daaain-real_projects__deep-manifest__a7da6a22.jsonl": (316, {"TodoWrite": 14}),
    "claude-code__daaain-real_projects__danieldemmel-me-next__f852ad25.jsonl": (103, {"TodoWrite": 12}),
    "claude-code-tasks__daaain-real_projects__experiments-worktrees__ef958aa1.jsonl": (
        180,
        {"TaskCreate": 6, "TaskUpdate": 12},
    ),
    "claude-code-tasks__daaain-real_projects__experiments-worktrees__ef958aa1__subagent-a52886dc180afb356.jsonl": (
        44,
        {"TaskUpdate": 1},
    ),
    "claude-code__agentlogs__todos.jsonl": (18, {"TodoWrite": 5}),
    "codex__MoonMind__rollout-2025-11-13T16-00-16-019a7fa9.jsonl": (568, {"update_plan": 7}),
    "codex__OpenPrintKit__rollout-2025-10-31T19-02-58-c61729d4.jsonl": (1612, {"update_plan": 3}),
    "opencode__agentlogs__all-tools.json": (None, {"todowrite": 1}),
    "cline__agentlogs__crud.json": (42, {"task_progress": 21}),
}
TASKS_LEAD = "claude-code-tasks__daaain-real_projects__experiments-worktrees__ef958aa1.jsonl"
TASKS_SUBAGENT = (
    "claude-code-tasks__daaain-real_projects__experiments-worktrees__ef958aa1__subagent-a52886dc180afb356.jsonl"
)
FIXTURE_FORMATS = {
    "claude_old_schema.jsonl": "claude-code",
    "claude_new_schema.jsonl": "claude-code",
    "claude_tasks_lead.jsonl": "claude-code",
    "claude_tasks_lead__subagent-d4n4.jsonl": "claude-code",
    "codex_rollout.jsonl": "codex",
    "opencode_export.json": "opencode",
    "cline_history.json": "cline",
    "acp_stream.jsonl": "acp",
}


def real(name: str) -> Path:
    """The real transcript `name`, or a skip when the shared test data is not on this machine."""
    path = REALDATA / name
    if not path.is_file():
        pytest.skip(f"real transcript {name} not found under {REALDATA}")
    return path


def fixture(name: str) -> Transcript:
    """The parsed fixture transcript `name`."""
    return parse_transcript(FIXTURES / name)


def snapshots(transcript: Transcript) -> list[ListSnapshot]:
    """The whole-list snapshots of a transcript, in order."""
    return [o for o in transcript.observations if isinstance(o, ListSnapshot)]


def task_events(transcript: Transcript) -> list[TaskEvent]:
    """The task-tool events of a transcript, in order."""
    return [o for o in transcript.observations if isinstance(o, TaskEvent)]


def tool_counts(transcript: Transcript) -> Counter[str]:
    """Observations per plan tool, with task events named by the tool that made them."""
    return Counter(
        o.tool if isinstance(o, ListSnapshot) else ("TaskCreate" if o.kind == "created" else "TaskUpdate")
        for o in transcript.observations
    )


def raw_tool_counts(path: Path) -> Counter[str]:
    """Plan-tool calls counted straight from the file, without the parsers."""
    if path.suffix == ".jsonl":
        data = path.read_bytes()
        names = ("TodoWrite", "TaskCreate", "TaskUpdate", "update_plan", "ExitPlanMode")
        return Counter({name: data.count(f'"name":"{name}"'.encode()) for name in names})
    counts: Counter[str] = Counter()
    for node in walk(orjson.loads(path.read_bytes())):
        if node.get("type") == "tool" and node.get("tool") == "todowrite":
            counts["todowrite"] += 1
        if isinstance(node.get("task_progress"), str):
            counts["task_progress"] += 1
    return counts


def walk(value: object) -> Iterator[dict[str, object]]:
    """Every JSON object nested in `value`."""
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from walk(child)


# Real transcripts


@pytest.mark.parametrize("name", sorted(PROVENANCE))
def test_real_transcript_counts_match_the_file_and_provenance(name: str) -> None:
    """Each real transcript yields one observation per plan-tool call in the file, as PROVENANCE.md counts them."""
    path = real(name)
    records, expected = PROVENANCE[name]

    transcript = parse_transcript(path)

    counted = tool_counts(transcript)
    assert counted == raw_tool_counts(path)
    assert counted - Counter({"ExitPlanMode": counted["ExitPlanMode"]}) == Counter(expected)  # PROVENANCE predates it
    assert transcript.lines_skipped == 0 and dict(transcript.skipped_reasons) == {}
    if records is not None:
        assert transcript.lines_total == records


@pytest.mark.parametrize("name", sorted(PROVENANCE))
def test_real_observations_are_in_file_order_and_cite_their_answers(name: str) -> None:
    """Observations come in file order, and every answered call cites a later line for its answer."""
    transcript = parse_transcript(real(name))

    lines = [o.line for o in transcript.observations]
    assert lines == sorted(lines)
    for observation in transcript.observations:
        assert observation.result_line is None or observation.result_line >= observation.line
        assert observation.context_line is None or observation.context_line < observation.line
        assert observation.context is None or len(observation.context) <= 500


def test_real_old_schema_reuses_position_ids_for_other_items() -> None:
    """In the old TodoWrite schema the same id labels different items after a replan, so it is no identity."""
    transcript = parse_transcript(real("claude-code__amac0-ClaudeStatus__example2.jsonl"))

    texts_by_label: dict[str | None, set[str]] = {}
    for snapshot in snapshots(transcript):
        for item in snapshot.items:
            assert item.native_id is None
            texts_by_label.setdefault(item.position_label, set()).add(item.text)
    assert len(texts_by_label["1"]) > 1


def test_real_new_schema_shows_the_list_the_tool_emptied() -> None:
    """After an all-completed write, the next TodoWrite's result shows the tool had emptied the list."""
    transcript = parse_transcript(real("claude-code__daaain-real_projects__danieldemmel-me-next__f852ad25.jsonl"))

    todos = [s for s in snapshots(transcript) if s.tool == "TodoWrite"]
    pairs = itertools.pairwise(todos)
    emptied = [later for earlier, later in pairs if all(i.status == "completed" for i in earlier.items)]
    assert emptied and all(later.prior_items == () for later in emptied)


def test_real_task_lead_resolves_created_ids_and_keeps_a_no_op_update() -> None:
    """TaskCreate ids come from the results, and an update the subagent had already made changes nothing."""
    events = task_events(parse_transcript(real(TASKS_LEAD)))

    assert [e.task_id for e in events if e.kind == "created"] == ["1", "2", "3", "4", "5", "6"]
    no_op = next(e for e in events if e.line == 74)
    assert (no_op.task_id, no_op.requested_status) == ("2", "completed")
    assert (no_op.status_to, no_op.updated_fields) == (None, ())
    assert {e.agent for e in events} == {"lead"}


def test_real_subagent_completion_is_marked_as_taken_from_the_request() -> None:
    """A subagent's TaskUpdate carries no structured result, so its status comes from the request, marked so."""
    transcript = parse_transcript(real(TASKS_SUBAGENT))

    (event,) = task_events(transcript)
    assert (event.task_id, event.status_to, event.status_source) == ("2", "completed", "request")
    assert event.agent == "subagent:a52886dc180afb356"
    assert transcript.session_id == parse_transcript(real(TASKS_LEAD)).session_id


# Claude Code fixtures


def test_old_schema_keeps_position_ids_as_labels_after_a_replan() -> None:
    """Old-schema ids are kept as position labels, and the same label names a different item after a replan."""
    first, _, replanned = snapshots(fixture("claude_old_schema.jsonl"))

    assert [(i.position_label, i.text) for i in first.items] == [
        ("1", "Read the status command"),
        ("2", "Add the --json flag"),
    ]
    assert [(i.position_label, i.text) for i in replanned.items] == [
        ("1", "Document the --json flag in the README"),
        ("2", "Add an example to the help text"),
    ]
    assert all(i.native_id is None for s in (first, replanned) for i in s.items)


def test_an_item_can_go_from_pending_to_completed_directly() -> None:
    """An item written pending and next written completed is recorded as such, with nothing in between."""
    first, second, _ = snapshots(fixture("claude_old_schema.jsonl"))

    assert [i.status for i in first.items if i.text == "Add the --json flag"] == ["pending"]
    assert [i.status for i in second.items if i.text == "Add the --json flag"] == ["completed"]


def test_several_items_can_be_in_progress_at_once() -> None:
    """Two items in progress in one snapshot are both kept in progress."""
    *_, replanned = snapshots(fixture("claude_old_schema.jsonl"))

    assert [i.status for i in replanned.items] == ["in_progress", "in_progress"]
    assert replanned.context == "Now document the flag, and add an example to the help text too"
    assert replanned.context_line == 8


def test_unparseable_and_unknown_lines_are_skipped_and_counted() -> None:
    """A torn JSON line and an unknown record type are skipped and counted, and parsing goes on past them."""
    transcript = fixture("claude_old_schema.jsonl")

    assert transcript.lines_total == 10
    assert transcript.lines_skipped == 2
    assert dict(transcript.skipped_reasons) == {"invalid_json": 1, "unknown_record_type": 1}
    assert [s.line for s in snapshots(transcript)] == [2, 4, 9]
    assert [s.result_line for s in snapshots(transcript)] == [3, 6, 10]


def test_new_schema_has_no_ids_and_ends_with_an_empty_list() -> None:
    """New-schema items have no id at all, keep their activeForm, and an emptied list is an empty snapshot."""
    transcript = fixture("claude_new_schema.jsonl")
    first, _, cleared = snapshots(transcript)

    assert all(i.position_label is None and i.native_id is None for i in first.items)
    assert first.items[1].active_form == "Fixing the end-of-file handling"
    assert cleared.items == ()
    assert cleared.prior_items == ()
    assert transcript.session_id == "9b7c2d4e-0000-4000-8000-000000000002"


def test_an_item_can_be_born_completed() -> None:
    """An item whose first appearance is already completed is recorded completed, not pending."""
    first, *_ = snapshots(fixture("claude_new_schema.jsonl"))

    assert (first.items[0].text, first.items[0].status) == ("Reproduce the dropped last row", "completed")


def test_context_is_the_last_words_a_person_sent_not_command_output() -> None:
    """Local command output between two updates does not replace the user's request as their context."""
    _, second, _ = snapshots(fixture("claude_new_schema.jsonl"))

    assert second.context_line == 2
    assert second.context is not None and second.context.startswith("The CSV parser drops the last row")


def test_task_create_ids_are_resolved_from_the_results() -> None:
    """A TaskCreate's task id, known only from its result, is filled in from the paired tool_result."""
    created = [e for e in task_events(fixture("claude_tasks_lead.jsonl")) if e.kind == "created"]

    assert [(e.line, e.native_id, e.task_id, e.result_line) for e in created] == [
        (3, "toolu_task_1", "1", 4),
        (5, "toolu_task_2", "2", 6),
    ]
    assert created[0].subject == "Draft the changelog (dana)"
    assert created[0].description is not None and created[0].description.startswith("Teammate dana")


def test_task_update_status_comes_from_the_status_change() -> None:
    """A TaskUpdate's from/to statuses come from the result's statusChange, and the owner from the call."""
    events = task_events(fixture("claude_tasks_lead.jsonl"))
    started = [e for e in events if e.kind == "updated" and e.status_to == "in_progress"]

    assert [(e.task_id, e.status_from, e.status_source) for e in started] == [
        ("1", "pending", "result"),
        ("2", "pending", "result"),
    ]
    assert started[0].owner == "dana" and started[0].updated_fields == ("owner", "status")


def test_task_update_that_changed_nothing_has_no_status_change() -> None:
    """An update whose result lists no updated field keeps the requested status but records no change."""
    *_, no_op = task_events(fixture("claude_tasks_lead.jsonl"))

    assert (no_op.task_id, no_op.requested_status) == ("1", "completed")
    assert (no_op.status_from, no_op.status_to, no_op.status_source, no_op.updated_fields) == (None, None, None, ())


def test_task_list_reads_are_not_observations() -> None:
    """TaskList only reads the board, so it yields no observation."""
    transcript = fixture("claude_tasks_lead.jsonl")

    assert len(transcript.observations) == 5
    assert transcript.lines_total == 14


def test_subagent_file_names_its_agent_and_marks_inferred_status() -> None:
    """A subagent's update is attributed to it, and its status, read from the request, is marked as such."""
    (event,) = task_events(fixture("claude_tasks_lead__subagent-d4n4.jsonl"))

    assert event.agent == "subagent:d4n4"
    assert (event.task_id, event.status_from, event.status_to) == ("1", None, "completed")
    assert (event.status_source, event.updated_fields) == ("request", ("status",))
    assert event.context_line == 1


def test_a_file_in_a_subagents_folder_is_a_subagent_transcript(tmp_path: Path) -> None:
    """A transcript stored as subagents/agent-<id>.jsonl is attributed to that subagent."""
    target = tmp_path / "subagents" / "agent-x9.jsonl"
    target.parent.mkdir()
    shutil.copy(FIXTURES / "claude_new_schema.jsonl", target)

    assert {s.agent for s in snapshots(parse_transcript(target))} == {"subagent:x9"}
    assert {s.agent for s in snapshots(fixture("claude_new_schema.jsonl"))} == {"lead"}


def test_claude_code_calls_keep_the_agents_words_before_them() -> None:
    """A TodoWrite keeps the text the agent wrote before it since the last user line, and nothing older."""
    transcript = fixture("claude_old_schema.jsonl")
    first, *_, last = snapshots(transcript)

    assert (first.explanation, first.explanation_line) == (None, None)
    assert (last.explanation, last.explanation_line) == ("I'll plan the documentation work.", 9)


def test_codex_explanation_is_on_the_calls_own_line() -> None:
    """A Codex explanation is cited at the line of the update_plan call that carries it."""
    first, second = snapshots(fixture("codex_rollout.jsonl"))

    assert first.explanation_line == first.line
    assert second.explanation_line is None


# Codex, OpenCode, Cline fixtures


def test_codex_update_plan_keeps_its_explanation_and_the_user_message_before_it() -> None:
    """An update_plan keeps the agent's explanation and the preceding user_message as its context."""
    transcript = fixture("codex_rollout.jsonl")
    first, second = snapshots(transcript)

    assert first.explanation == "Profile first, then docs; each step is committed on its own."
    assert first.context == "Add the Prusa MK4 profile, then update the docs. Commit after each step."
    assert first.context_line == 4
    assert (first.native_id, first.result, first.result_line) == ("call_plan_1", "ok", 7)
    assert [(i.text, i.status) for i in first.items] == [
        ("Add the Prusa MK4 profile", "in_progress"),
        ("Update the docs", "pending"),
    ]
    assert second.explanation is None
    assert transcript.session_id == "019a0000-0000-7000-8000-000000000004"


def test_opencode_todowrite_parts_become_snapshots_indexed_by_message() -> None:
    """OpenCode todowrite parts become snapshots whose line is the message index, with a cancelled item kept."""
    transcript = fixture("opencode_export.json")
    first, second = snapshots(transcript)

    assert (transcript.lines_total, first.line, second.line) == (3, 2, 3)
    assert first.timestamp == "2026-01-23T21:22:45.000Z"
    assert first.context == "Rename the `note` command to `notes` and keep an alias."
    assert (first.context_line, first.agent, first.native_id) == (1, "build", "call_todo_1")
    assert [i.position_label for i in first.items] == ["1", "2", "3"]
    assert [i.status for i in second.items] == ["completed", "completed", "cancelled"]
    assert transcript.session_id == "ses_fixture0001"


def test_cline_checklists_become_snapshots() -> None:
    """Cline task_progress checklists become snapshots: [x] completed, [ ] pending, a stray <br> dropped."""
    transcript = fixture("cline_history.json")
    first, second, third = snapshots(transcript)

    assert [(i.text, i.status) for i in second.items] == [
        ("Read the signup form", "completed"),
        ("Validate the e-mail field", "completed"),
        ("Validate the password field", "pending"),
    ]
    assert [s.line for s in (first, second, third)] == [2, 4, 7]
    assert all(s.timestamp is None and s.tool == "task_progress" for s in (first, second, third))
    assert third.items[2].text == "Validate the password field (12 characters minimum)"


def test_cline_context_ignores_tool_output_and_takes_feedback() -> None:
    """A <task> quoted in tool output is not a user message; a <feedback> element is."""
    transcript = fixture("cline_history.json")
    _, second, third = snapshots(transcript)

    assert (second.context, second.context_line) == ("Add input validation to the signup form", 1)
    assert (third.context, third.context_line) == ("Also reject passwords shorter than 12 characters", 6)
    assert dict(transcript.skipped_reasons) == {"unknown_record_type": 1}


def test_context_is_cut_to_500_characters(tmp_path: Path) -> None:
    """A long user message is kept as its first characters, at most 500 with the ellipsis."""
    prompt = "word " * 400
    lines = [
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "user_message", "message": prompt}},
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "update_plan", "arguments": '{"plan":[]}', "call_id": "c"},
        },
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))

    (snapshot,) = snapshots(parse_transcript(path))

    assert snapshot.context is not None and len(snapshot.context) == 500
    assert snapshot.context == prompt.strip()[:499] + "…"


# Detection and errors


@pytest.mark.parametrize("name", sorted(FIXTURE_FORMATS))
def test_detect_format_names_each_fixture(name: str) -> None:
    """Each fixture is detected as the format it is written in."""
    assert detect_format(FIXTURES / name) == FIXTURE_FORMATS[name]


def test_a_plantrail_log_is_not_a_transcript() -> None:
    """A plantrail event log is refused as NOT_A_TRANSCRIPT."""
    with pytest.raises(TranscriptError) as caught:
        parse_transcript(FIXTURES / "not_a_transcript.jsonl")

    assert caught.value.code == "NOT_A_TRANSCRIPT"


@pytest.mark.parametrize(
    "content",
    [
        b'{"hello": "world"}\n',
        b"[1, 2, 3]",
        b'{\n  "hello": "world"\n}\n',
        b"\x00\x01\xff\xfe\x89PNG\r\n",
        b"plain text\n",
    ],
    ids=["json-object", "json-array", "pretty-json", "binary", "text"],
)
def test_other_files_are_not_transcripts(tmp_path: Path, content: bytes) -> None:
    """Unrelated JSON, binary data and plain text are refused as NOT_A_TRANSCRIPT."""
    path = tmp_path / "file.json"
    path.write_bytes(content)

    with pytest.raises(TranscriptError) as caught:
        parse_transcript(path)

    assert caught.value.code == "NOT_A_TRANSCRIPT"


@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n"], ids=["zero-bytes", "whitespace"])
def test_an_empty_file_is_an_empty_transcript(tmp_path: Path, content: bytes) -> None:
    """A file with nothing but whitespace is refused as EMPTY_TRANSCRIPT, whatever format is asked for."""
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)

    for format_name in (None, "codex"):
        with pytest.raises(TranscriptError) as caught:
            parse_transcript(path, format_name)
        assert caught.value.code == "EMPTY_TRANSCRIPT"


def test_an_unknown_format_name_is_refused_before_reading() -> None:
    """A format name no parser handles is refused as UNKNOWN_FORMAT, even for a file that does not exist."""
    with pytest.raises(TranscriptError) as caught:
        parse_transcript(FIXTURES / "missing.jsonl", "aider")

    assert caught.value.code == "UNKNOWN_FORMAT"
    assert "claude-code" in caught.value.message


def test_a_path_that_cannot_be_read_is_unreadable(tmp_path: Path) -> None:
    """A missing file and a directory are refused as TRANSCRIPT_UNREADABLE."""
    for path in (tmp_path / "missing.jsonl", tmp_path):
        with pytest.raises(TranscriptError) as caught:
            parse_transcript(path)
        assert caught.value.code == "TRANSCRIPT_UNREADABLE"


@pytest.mark.parametrize(
    ("name", "format_name"),
    [
        ("claude_new_schema.jsonl", "codex"),
        ("codex_rollout.jsonl", "claude-code"),
        ("claude_new_schema.jsonl", "opencode"),
        ("opencode_export.json", "cline"),
        ("cline_history.json", "opencode"),
    ],
)
def test_a_transcript_read_as_another_format_is_not_a_transcript(name: str, format_name: str) -> None:
    """A file parsed with the wrong explicit format is refused as NOT_A_TRANSCRIPT, not read as empty."""
    with pytest.raises(TranscriptError) as caught:
        parse_transcript(FIXTURES / name, format_name)

    assert caught.value.code == "NOT_A_TRANSCRIPT"


def test_claude_code_tasks_is_read_as_claude_code() -> None:
    """The format name claude-code-tasks is accepted and read by the Claude Code parser."""
    transcript = parse_transcript(FIXTURES / "claude_tasks_lead.jsonl", "claude-code-tasks")

    assert transcript.format == "claude-code"
    assert transcript == fixture("claude_tasks_lead.jsonl")


# Determinism and the public surface


def _all_transcripts() -> list[Path]:
    """Every fixture, and every real transcript that is present."""
    present = sorted(REALDATA / name for name in PROVENANCE if (REALDATA / name).is_file())
    return [FIXTURES / name for name in sorted(FIXTURE_FORMATS)] + present


@pytest.mark.parametrize("path", _all_transcripts(), ids=lambda path: path.name)
def test_parsing_twice_gives_equal_results(path: Path) -> None:
    """Parsing the same file twice gives equal transcripts."""
    assert parse_transcript(path) == parse_transcript(path)


def test_parsed_values_are_immutable() -> None:
    """Observations and transcripts are frozen, and their collections are tuples or read-only mappings."""
    transcript = fixture("claude_old_schema.jsonl")
    snapshot = snapshots(transcript)[0]

    with pytest.raises(AttributeError, match="immutable type"):
        snapshot.line = 99  # type: ignore[misc]
    with pytest.raises(TypeError):
        transcript.skipped_reasons["invalid_json"] = 0  # type: ignore[index]
    assert isinstance(transcript.observations, tuple) and isinstance(snapshot.items, tuple)


def test_public_api_is_pinned() -> None:
    """The importers package exports exactly its documented names."""
    assert sorted(importers.__all__) == sorted(
        [
            "FORMATS",
            "ErrorCode",
            "ImportReport",
            "ListSnapshot",
            "Observation",
            "Status",
            "TaskEvent",
            "TodoItem",
            "ToolOutcome",
            "Transcript",
            "TranscriptError",
            "detect_format",
            "import_transcript",
            "parse_transcript",
        ]
    )
    assert importers.FORMATS == (
        "claude-code",
        "codex",
        "opencode",
        "cline",
        "gemini",
        "gemini-jsonl",
        "gemini-share",
        "opencode-markdown",
        "acp",
    )
