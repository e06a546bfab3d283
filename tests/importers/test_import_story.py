"""Imports that tell the agent's own story, each point on the smallest faithful fixture: the agent's
order, what it wrote kept and nothing invented, the request as goal, readable ids, Cline's times and task id."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from plantrail.ledger.importers.goal import request, substantive
from plantrail.ledger.importers.importer import ImportReport, import_transcript
from plantrail.ledger.importers.mapping import added_in_place
from plantrail.ledger.importers.parse import ADAPTER_VERSIONS
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.times import UNRECORDED, time_recorded
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.events import Record
from plantrail.ledger.vocabulary.plan import StepSpec
from plantrail.projections.model import PlanState
from plantrail.projections.state import fold
from plantrail.projections.views import ready_steps
from tests.conftest import CliResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def imported(tmp_path: Path, fixture: str) -> ImportReport:
    """Import a fixture (copied so the log lands in tmp_path) and check the log verifies."""
    source = FIXTURES / fixture
    copy = tmp_path / source.relative_to(FIXTURES)
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copy)
    report = import_transcript(copy, tmp_path / "out.plantrail.jsonl")
    verify_log(report.log)
    return report


def records(report: ImportReport) -> list[Record]:
    """The log's records, header included."""
    with LogReader(report.log) as reader:
        return list(reader.records())


def state(report: ImportReport) -> PlanState:
    """The log folded."""
    return fold(records(report))


def test_the_goal_is_the_first_substantive_request_and_the_go_is_kept_as_a_note(tmp_path: Path) -> None:
    """The goal is the user's first substantive message, not the "OK, let's start" just before the plan."""
    report = imported(tmp_path, "claude_goal_after_go.jsonl")
    plan = state(report).plan

    assert plan is not None
    assert plan.goal.startswith("The checkout page shows the wrong total when a coupon is applied twice")
    assert "transcript line 3: the user also wrote: OK, let's start" in plan.notes


def test_the_goal_rule_passes_over_acknowledgements() -> None:
    """A message of fewer than four words or twenty characters is not a request; the first one that is wins."""
    assert not substantive("Go")
    assert not substantive("OK, let's start")
    assert substantive("Fix the flaky login test")
    prompts = [("hi", 1), ("Fix the flaky login test please", 3), ("a pasted template " * 5, 5)]
    assert request(prompts, (None, None)) == ("Fix the flaky login test please", 3, None)
    assert request([("go", 4)], ("go", 4)) == ("go", 4, None)


def test_version_1_is_the_agents_and_records_the_adapter(tmp_path: Path) -> None:
    """plan.created is credited to the agent, and every version notes the adapter and its version."""
    report = imported(tmp_path, "claude_goal_after_go.jsonl")
    created = records(report)[1]
    adapter = f"imported by plantrail's claude-code adapter v{ADAPTER_VERSIONS['claude-code']}"

    assert created.actor == "agent"
    assert created.source is not None and not created.source.inferred
    assert adapter in created.data.plan.notes  # type: ignore[union-attr]


def test_no_attempt_limit_or_order_is_invented_beyond_the_agents_list(tmp_path: Path) -> None:
    """Steps keep the agent's order as priority and carry no dependency or attempt limit the agent did not state."""
    report = imported(tmp_path, "claude_goal_after_go.jsonl")
    plan = state(report).plan

    assert plan is not None
    assert [s.priority for s in plan.steps] == [0, -1, -2, -3]
    assert {s.max_attempts for s in plan.steps} == {None}
    assert {s.max_attempts for s in state(report).steps.values()} == {None}
    assert all(s.depends_on == () for s in plan.steps)
    assert ready_steps(state(report))[0] == plan.steps[1].id  # the first is in progress; the agent's next is next


def test_non_latin_titles_get_numbered_ids_and_accents_are_transliterated(tmp_path: Path) -> None:
    """A Chinese title gets item-N by its place; an Italian one with accents keeps a readable slug."""
    report = imported(tmp_path, "claude_goal_after_go.jsonl")
    plan = state(report).plan

    assert plan is not None
    assert [(s.id, s.title) for s in plan.steps][2:] == [
        ("item-3", "修复购物车测试"),
        ("verificare-e-gia-fatto", "Verificare è già fatto"),
    ]


def test_task_descriptions_are_kept_as_step_notes(tmp_path: Path) -> None:
    """A TaskCreate description is kept on its step, word for word."""
    report = imported(tmp_path, "claude_tasks_described.jsonl")
    plan = state(report).plan

    assert plan is not None
    assert plan.steps[0].notes == (
        "description: Move parse_config and its helpers from loader.py into parser.py, keeping the public names.",
    )


def test_old_todowrite_priorities_are_kept_as_step_notes(tmp_path: Path) -> None:
    """The old TodoWrite schema's priority label is kept on the step."""
    report = imported(tmp_path, "claude_old_schema.jsonl")
    first = records(report)[1].data.plan  # type: ignore[union-attr]

    assert first.steps[0].title == "Read the status command"
    assert first.steps[0].notes == ('the agent gave it priority "high"',)


def test_cline_times_task_id_and_sub_items(tmp_path: Path) -> None:
    """A newer Cline history: real times from ts, the task folder as run id, sub-items noted under their parent."""
    report = imported(tmp_path, "cline_task/1771234567890/api_conversation_history.json")
    log = records(report)
    plan = state(report).plan

    assert report.run == "1771234567890"
    assert log[1].ts == "2026-03-02T10:15:12.345Z"
    assert log[1].source is not None and log[1].source.timestamp == "2026-03-02T10:15:12.345Z"
    assert plan is not None
    notes = {s.title: s.notes for s in plan.steps}
    assert notes["Pick the window size"] == ('a sub-item of "Add a limiter"',)
    assert notes["Add a limiter"] == ()
    assert [s.id for s in plan.steps] == [
        "read-the-api-router",
        "add-a-limiter",
        "pick-the-window-size",
        "return-429-with-retry-after",
        "test-it",
    ]


def _approvals(report: ImportReport) -> list[tuple[str, int | None, str, dict[str, object]]]:
    """The log's approval events as (type, plan version, actor, data without the question)."""
    told = []
    for r in records(report):
        if r.type.startswith("approval."):
            data = {k: v for k, v in msgspec.to_builtins(r.data).items() if k != "question"}
            told.append((r.type, r.plan_version, r.actor, data))
    return told


def test_an_approved_plan_mode_plan_is_the_agents_version_with_the_users_grant(tmp_path: Path) -> None:
    """ExitPlanMode approved as proposed: the agent's plan is version 1, asked (inferred) and granted by the user."""
    report = imported(tmp_path, "claude_plan_mode_approved.jsonl")
    log = records(report)
    asked = next(r for r in log if r.type == "approval.requested")

    assert log[1].type == "plan.created" and log[1].actor == "agent"
    assert asked.actor == "importer" and asked.source is not None and asked.source.inferred
    assert asked.data.question == "approve this plan?"  # type: ignore[union-attr]
    assert _approvals(report) == [
        (
            "approval.requested",
            1,
            "importer",
            {
                "request": "plan-approval-1",
                "steps": ("add-the-toggle-to-the-settings-page", "store-the-choice-in-localstorage"),
                "writes": (),
                "tools": (),
            },
        ),
        (
            "approval.granted",
            1,
            "user",
            {"request": "plan-approval-1", "by": "user", "why": "the user approved the plan at line 3"},
        ),
    ]
    granted = next(r for r in log if r.type == "approval.granted")
    assert granted.source is not None and (granted.source.line, granted.source.timestamp) == (
        3,
        "2026-03-26T09:02:30.000Z",
    )
    assert state(report).steps["add-the-toggle-to-the-settings-page"].status == "in_progress"
    assert report.events_inferred == 1


def test_a_denied_plan_is_recorded_and_the_plan_that_answers_it_ends_the_pause(tmp_path: Path) -> None:
    """ExitPlanMode refused with the user's words: the proposal is version 1, denied with their words; the next
    plan, which proposes the kept steps again (a step note), is theirs (user_request) and ends the pause."""
    report = imported(tmp_path, "claude_plan_mode.jsonl")
    log = records(report)
    created = log[1].data.plan  # type: ignore[union-attr]
    denied = [a for a in _approvals(report) if a[0] == "approval.denied"]
    second = next(r.data for r in log if r.type == "plan.replanned")

    assert [s.title for s in created.steps] == [
        "Lower-case tags on save",
        "Migrate the stored notes",
        "Add a test for mixed-case tags",
    ]
    assert "rejected_by_tool" not in report.skipped
    assert denied == [
        (
            "approval.denied",
            1,
            "user",
            {
                "request": "plan-approval-1",
                "by": "user",
                "why": "the user rejected the plan at line 3: "
                '"Don\'t migrate the stored notes, I will do that by hand."',
            },
        )
    ]
    assert (second.reason, second.why) == (  # type: ignore[union-attr]
        "user_request",
        'the user wrote at line 3: "Don\'t migrate the stored notes, I will do that by hand."',
    )
    kept = {s.id: s.notes for s in second.plan.steps}  # type: ignore[union-attr]
    assert kept["lower-case-tags-on-save"] == ("proposed again at line 4 after the user denied the plan at line 3",)
    after = state(report)
    assert after.authority is not None and after.authority.denied == ()


def test_a_denial_no_plan_answers_leaves_the_run_paused(tmp_path: Path) -> None:
    """A denied plan the session never answers leaves the run paused on the denied steps (the story as lived)."""
    lines = (FIXTURES / "claude_plan_mode.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "denied.jsonl"
    path.write_bytes(b"".join(lines[:3]))
    report = import_transcript(path, tmp_path / "out.plantrail.jsonl")
    after = state(report)

    assert after.authority is not None
    assert after.authority.denied == (
        "lower-case-tags-on-save",
        "migrate-the-stored-notes",
        "add-a-test-for-mixed-case-tags",
    )


def test_an_approval_with_edits_grants_the_proposal_and_adopts_the_users_plan(tmp_path: Path) -> None:
    """ExitPlanMode approved with the user's edits: the agent's proposal is granted ("with their edits"), and the
    edited plan is the next version, a user_request saying so."""
    report = imported(tmp_path, "claude_plan_mode.jsonl")
    log = records(report)
    granted = [a for a in _approvals(report) if a[0] == "approval.granted"]
    replans = [r for r in log if r.type == "plan.replanned"]
    plan = state(report).plan

    assert granted == [
        (
            "approval.granted",
            2,
            "user",
            {
                "request": "plan-approval-2",
                "by": "user",
                "why": "the user approved the plan with their edits at line 5",
            },
        )
    ]
    assert [s.title for s in replans[0].data.plan.steps] == [  # type: ignore[union-attr]
        "Lower-case tags on save",
        "Add a test for mixed-case tags",
    ]
    assert (replans[-1].data.reason, replans[-1].data.why) == (  # type: ignore[union-attr]
        "user_request",
        "the user approved the plan with their edits at line 5",
    )
    assert plan is not None and [s.title for s in plan.steps][-1] == "Document the tag rule in the README"
    assert [r.type for r in log].index("approval.granted") < [r.type for r in log].index("plan.replanned", 8)


def test_the_users_words_in_a_refused_call_explain_the_next_replan(tmp_path: Path) -> None:
    """A TodoWrite after a refusal whose result quotes the user is a user_request with their words as the why."""
    from tests.importers.transcripts import Claude

    session = Claude()
    session.user("Clean up the logging setup in the worker service please")
    session.todo(("Remove the print calls", "pending"), ("Add a JSON formatter", "pending"))
    session.raw(
        b'{"type":"user","sessionId":"5e551011-0000-4000-8000-000000000001","uuid":"u-x","timestamp":'
        b'"2026-02-01T10:00:30.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9",'
        b'"is_error":true,"content":"The user doesn\'t want to proceed with this tool use. The tool use was rejected. '
        b'To tell you how to proceed, the user said:\\nNo JSON, keep the plain format."}]}}'
    )
    session.todo(("Remove the print calls", "pending"), ("Keep the plain format", "pending"))
    path = session.write(tmp_path / "session.jsonl")
    report = import_transcript(path, tmp_path / "out.plantrail.jsonl")
    [replan] = [r.data for r in records(report) if r.type == "plan.replanned"]

    assert replan.reason == "user_request"  # type: ignore[union-attr]
    assert replan.why == 'the user wrote at line 4: "No JSON, keep the plain format."'  # type: ignore[union-attr]


def test_every_version_keeps_its_adapter_note_in_the_state(tmp_path: Path) -> None:
    """After a replan the active plan still names the adapter that imported it."""
    report = imported(tmp_path, "claude_plan_mode.jsonl")
    plan = state(report).plan

    assert plan is not None and state(report).version == 3
    assert plan.notes == (f"imported by plantrail's claude-code adapter v{ADAPTER_VERSIONS['claude-code']}",)


TEAM = "claude_team/5e5510aa-0000-4000-8000-0000000000d7"


def test_a_side_question_subagent_replaying_the_lead_is_neither_credited_nor_counted_twice(tmp_path: Path) -> None:
    """--with-subagents reads subagents/*.meta.json as metadata and skips the lead's calls a side question replays."""
    shutil.copytree(FIXTURES / "claude_team", tmp_path / "claude_team")
    lead = tmp_path / f"{TEAM}.jsonl"
    alone = import_transcript(lead, tmp_path / "alone.plantrail.jsonl")
    merged = import_transcript(lead, tmp_path / "merged.plantrail.jsonl", with_subagents=True)
    verify_log(merged.log)
    notes = records(merged)[1].data.plan.notes  # type: ignore[union-attr]

    assert len(alone.subagent_files) == 1 and alone.subagent_files[0].endswith(".jsonl")
    assert merged.skipped == {"replayed_lead_context": 1}
    assert (merged.versions, merged.steps_completed, merged.plan_updates) == (1, 1, 2)
    assert {r.source.file for r in records(merged)[1:] if r.source is not None} == {f"{TEAM.split('/')[1]}.jsonl"}
    assert any("agentType aside_question" in note for note in notes)


def test_a_side_question_file_alone_does_not_take_the_leads_plan(tmp_path: Path) -> None:
    """Imported alone, a side question's replay of the lead's plan is skipped, so it holds no plan of its own."""
    from plantrail.ledger.vocabulary.errors import TranscriptError

    shutil.copytree(FIXTURES / "claude_team", tmp_path / "claude_team")
    [aside] = (tmp_path / TEAM / "subagents").glob("*.jsonl")

    with pytest.raises(TranscriptError) as caught:
        import_transcript(aside, tmp_path / "aside.plantrail.jsonl")
    assert caught.value.code == "NO_PLAN_IN_TRANSCRIPT"


def test_a_burst_of_task_creates_before_any_work_is_one_version(tmp_path: Path) -> None:
    """Seven TaskCreate calls in seven seconds, before any work, make one version extended in place six times;
    the task created after work began is a replan."""
    report = imported(tmp_path, "claude_task_burst.jsonl")
    log = records(report)
    extensions = [r for r in log if r.type == "plan.extended"]
    final = state(report)

    assert (report.versions, report.extensions, report.items) == (2, 6, 8)
    assert [r.type for r in log[1:]] == [
        "plan.created",
        *["plan.extended"] * 6,
        "step.started",
        "step.completed",
        "plan.replanned",
    ]
    assert {r.plan_version for r in extensions} == {1} and {r.actor for r in extensions} == {"agent"}
    assert extensions[0].source is not None and extensions[0].source.tool == "TaskCreate"
    assert [s.title for s in final.plan.steps][:2] == ["Read the checkout module", "Add a Coupon model"]  # type: ignore[union-attr]
    assert final.steps["read-the-checkout-module"].status == "completed"  # the replan kept the work done in v1
    assert len(final.plan.steps) == 8  # type: ignore[union-attr]


def test_the_choice_between_extending_and_replanning_is_a_pure_function() -> None:
    """Only additions at the end of an untouched version the user did not decide extend it; anything else replans."""
    first = StepSpec("a", "A", (), "done")
    second = StepSpec("b", "B", (), "done")
    old = {("task", "1", 1): first}
    new = {("task", "1", 1): first, ("task", "2", 1): second}

    assert added_in_place(old, new, touched=False) == (second,)
    assert added_in_place(old, new, touched=True) is None
    assert added_in_place(old, new, touched=False, decided_by_user=True) is None
    assert added_in_place(old, old, touched=False) is None
    moved = {("task", "1", 1): StepSpec("a", "A", (), "done again"), ("task", "2", 1): second}
    assert added_in_place(old, moved, touched=False) is None


def test_a_format_without_times_says_so_instead_of_showing_1970(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """An older Cline history gives no times: status, resume and log say "times: not recorded by this format;
    order only" and print no 1970 date; a transcript with times gets no such note."""
    untimed = imported(tmp_path, "cline_history.json").log
    outputs = [run_cli(command, untimed) for command in ("status", "resume", "log")]
    timed = imported(tmp_path / "timed", "claude_task_burst.jsonl").log

    for result in outputs:
        assert UNRECORDED in result.out and "1970" not in result.out, result.out
    assert outputs[0].out.splitlines()[1] == UNRECORDED
    assert all(UNRECORDED not in run_cli(command, timed).out for command in ("status", "resume", "log"))
    assert not time_recorded(records(imported(tmp_path / "again", "cline_history.json"))[1])
