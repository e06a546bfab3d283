"""The importer's mapping, end to end on small transcripts of each format: what each agent behaviour becomes.

A trail is the log in short: `create`, `start X`, `complete X`, `replan vN reason`, with `*` on events the
importer inferred (actor importer, source.inferred).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.importers.importer import ImportReport, import_transcript
from plantrail.ledger.importers.mapping import slug
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError, TranscriptError
from plantrail.ledger.vocabulary.events import PlanExtended, PlanReplanned, Record, StepCompleted, StepStarted
from plantrail.projections.history import history
from plantrail.projections.model import PlanState
from plantrail.projections.state import fold
from plantrail.projections.views import ready_steps
from tests.importers.transcripts import Claude, Cline, Codex, OpenCode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
Builder = Claude | Codex | OpenCode | Cline


def imported(tmp_path: Path, builder: Builder, name: str = "session.jsonl", **options: Any) -> ImportReport:
    """Write the transcript, import it, and check that the log verifies."""
    report = import_transcript(builder.write(tmp_path / name), tmp_path / "out.plantrail.jsonl", **options)
    verify_log(report.log)
    return report


def records(report: ImportReport) -> list[Record]:
    """The log's records, header included (the log.batch bounds of group commits left out)."""
    with LogReader(report.log) as reader:
        return [r for r in reader.records() if r.type != "log.batch"]


def state(report: ImportReport) -> PlanState:
    """The log folded."""
    with LogReader(report.log) as reader:
        return fold(reader.records())


def trail(report: ImportReport) -> list[str]:
    """The log in short, one entry per event after the header."""
    entries = []
    for record in records(report)[1:]:
        data: Any = record.data
        mark = "*" if record.source is not None and record.source.inferred else ""
        match record.type:
            case "plan.created":
                entries.append("create")
            case "plan.replanned":
                entries.append(f"replan v{data.new_version} {data.reason}")
            case "plan.extended":
                entries.append(f"extend v{record.plan_version} {' '.join(s.id for s in data.steps)}")
            case "step.started":
                entries.append(f"start{mark} {data.step}")
            case "step.completed":
                entries.append(f"complete{mark} {data.step}")
    return entries


def replans(report: ImportReport) -> list[PlanReplanned]:
    """The plan.replanned events in order."""
    return [r.data for r in records(report) if isinstance(r.data, PlanReplanned)]


def statuses(report: ImportReport) -> dict[str, str]:
    """Each step's status in the last plan version."""
    return {step.id: step.status for step in state(report).steps.values_in_order()}


# The first plan


def test_the_first_list_creates_the_plan_with_the_user_request_as_goal(tmp_path: Path) -> None:
    """The first list creates version 1, by the agent: its items as steps, the request as goal and criterion."""
    session = Claude()
    session.user("The CSV parser drops the last row.\n  Fix it.")
    line = session.todo(("Reproduce the bug", "pending"), ("Fix read_rows", "pending"))

    report = imported(tmp_path, session)
    created = records(report)[1]
    plan = state(report).plan

    assert plan is not None
    assert plan.goal == "The CSV parser drops the last row. Fix it."
    assert [(s.id, s.title, s.depends_on) for s in plan.steps] == [
        ("reproduce-the-bug", "Reproduce the bug", ()),
        ("fix-read-rows", "Fix read_rows", ()),
    ]
    assert {s.completion_evidence for s in plan.steps} == {"the agent marks this item completed in its plan"}
    assert [(c.id, c.status) for c in state(report).criteria.values_in_order()] == [("request-met", "unverified")]
    assert (
        plan.acceptance_criteria[0].description
        == 'what the user asked for is done: "The CSV parser drops the last row. Fix it."'
    )
    assert (created.actor, created.source is not None and created.source.line) == ("agent", line)
    assert state(report).outcome is None


def test_a_plan_without_a_user_request_names_its_session(tmp_path: Path) -> None:
    """With no user message before the first list, the goal says so and names the session instead of guessing."""
    session = Claude()
    session.todo(("Tidy the imports", "pending"))

    plan = state(imported(tmp_path, session)).plan

    assert plan is not None
    assert (
        plan.goal == f"the plan of claude-code session {session.session} (the transcript states no request before it)"
    )


# Status changes


def test_status_changes_become_starts_and_completions_citing_their_line(tmp_path: Path) -> None:
    """pending -> in_progress is a start and in_progress -> completed a completion, each citing its call."""
    session = Claude()
    session.user("Fix the bug")
    session.todo(("Reproduce", "pending"), ("Fix", "pending"))
    started = session.todo(("Reproduce", "in_progress"), ("Fix", "pending"))
    finished = session.todo(("Reproduce", "completed"), ("Fix", "pending"))

    report = imported(tmp_path, session)
    start, complete = records(report)[2:]

    assert trail(report) == ["create", "start reproduce", "complete reproduce"]
    assert start.source is not None and (start.source.file, start.source.line) == ("session.jsonl", started)
    assert (start.source.id, start.source.tool, start.source.inferred) == ("toolu_2", "TodoWrite", False)
    assert start.source.timestamp == start.ts
    assert isinstance(complete.data, StepCompleted)
    assert complete.data.evidence == (f"marked completed by the agent in TodoWrite at line {finished}",)
    assert complete.actor == "agent"


def test_pending_straight_to_completed_gets_an_inferred_start(tmp_path: Path) -> None:
    """An item that skips in_progress gets a start marked inferred (actor importer) before its completion."""
    session = Claude()
    session.todo(("Reproduce", "pending"), ("Fix", "pending"))
    session.todo(("Reproduce", "completed"), ("Fix", "pending"))

    report = imported(tmp_path, session)
    start = records(report)[2]

    assert trail(report) == ["create", "start* reproduce", "complete reproduce"]
    assert (start.actor, report.events_inferred) == ("importer", 1)


def test_an_item_born_completed_is_started_by_inference_and_completed(tmp_path: Path) -> None:
    """An item that is already completed in the first list is recorded as an inferred start and a completion."""
    session = Claude()
    session.todo(("Read the code", "completed"), ("Fix it", "in_progress"))

    report = imported(tmp_path, session)

    assert trail(report) == ["create", "start* read-the-code", "complete read-the-code", "start fix-it"]
    assert statuses(report) == {"read-the-code": "completed", "fix-it": "in_progress"}


def test_two_items_in_progress_set_max_in_progress_to_two(tmp_path: Path) -> None:
    """When the agent has two items in progress at once, the imported plan allows two."""
    session = Claude()
    session.todo(("Frontend", "in_progress"), ("Backend", "in_progress"), ("Docs", "pending"))

    report = imported(tmp_path, session)
    plan = state(report).plan

    assert plan is not None and plan.policy.max_in_progress == 2 == report.max_in_progress
    assert statuses(report) == {"frontend": "in_progress", "backend": "in_progress", "docs": "pending"}


def test_one_item_at_a_time_keeps_max_in_progress_at_one(tmp_path: Path) -> None:
    """An agent that never had more than one item in progress gets max_in_progress 1, even with none started."""
    session = Claude()
    session.todo(("Only", "pending"))

    plan = state(imported(tmp_path, session)).plan

    assert plan is not None and plan.policy.max_in_progress == 1


# Replans


def test_a_reworded_item_is_a_replan_removing_the_old_text_and_adding_the_new(tmp_path: Path) -> None:
    """A reworded item is a different item: the replan removes the old step and adds the new one."""
    session = Claude()
    session.todo(("Fix the parser", "in_progress"), ("Add a test", "pending"))
    line = session.todo(("Fix read_rows at EOF", "completed"), ("Add a test", "pending"))

    report = imported(tmp_path, session)
    [replan] = replans(report)
    changes = history(records(report)).versions[1].changes

    assert trail(report) == [
        "create",
        "start fix-the-parser",
        "replan v2 agent_revision",
        "start* fix-read-rows-at-eof",
        "complete fix-read-rows-at-eof",
    ]
    assert changes is not None and [(c.step, c.was) for c in changes.removed] == [("fix-the-parser", "in_progress")]
    assert replan.observations == (
        f'transcript line {line}: added "Fix read_rows at EOF" (completed)',
        f'transcript line {line}: removed "Fix the parser" (it was in_progress)',
    )
    assert replan.why.startswith(f"the agent changed its plan in TodoWrite at line {line} without saying why")
    assert replan.causes == ()


def test_a_user_message_between_updates_makes_a_user_request_replan_quoting_it(tmp_path: Path) -> None:
    """A replan after a new user message has reason user_request and quotes the message, and the agent's words."""
    session = Claude()
    session.user("Fix the bug")
    session.todo(("Fix", "in_progress"))
    asked = session.user("Also add a regression test,\nplease.")
    said = session.says("I'll add the test to the plan.")
    session.todo(("Fix", "in_progress"), ("Add a regression test", "pending"))

    [replan] = replans(imported(tmp_path, session))

    assert replan.reason == "user_request"
    assert replan.why == f'the user wrote at line {asked}: "Also add a regression test, please."'
    assert replan.observations[:2] == (
        f"transcript line {asked}: the user wrote: Also add a regression test,\nplease.",
        f"transcript line {said}: the agent wrote: I'll add the test to the plan.",
    )


def test_an_agent_revision_quotes_the_agents_own_words(tmp_path: Path) -> None:
    """Without a new user message, the replan is agent_revision and its why quotes what the agent wrote."""
    session = Claude()
    session.user("Fix the bug")
    session.todo(("Fix", "in_progress"))
    said = session.says("The bug is in two places; splitting the fix.")
    session.todo(("Fix the reader", "in_progress"), ("Fix the writer", "pending"))

    [replan] = replans(imported(tmp_path, session))

    assert (replan.reason, replan.why) == (
        "agent_revision",
        f'the agent wrote at line {said}: "The bug is in two places; splitting the fix."',
    )


def test_an_item_still_in_progress_after_a_replan_is_restarted_by_inference(tmp_path: Path) -> None:
    """A replan supersedes work in progress, so an item the agent keeps in progress is started again, inferred."""
    session = Claude()
    session.todo(("Fix", "in_progress"))
    session.todo(("Fix", "in_progress"), ("Document", "pending"))

    report = imported(tmp_path, session)

    assert trail(report) == ["create", "start fix", "replan v2 agent_revision", "start* fix"]
    assert statuses(report) == {"fix": "in_progress", "document": "pending"}


def test_completions_in_a_replanning_update_are_recorded_before_the_replan(tmp_path: Path) -> None:
    """Work the same update shows done is completed in the old version, so the replan keeps it."""
    session = Claude()
    session.todo(("Fix", "in_progress"))
    session.todo(("Fix", "completed"), ("Document", "in_progress"))

    report = imported(tmp_path, session)
    changes = history(records(report)).versions[1].changes

    assert trail(report) == ["create", "start fix", "complete fix", "replan v2 agent_revision", "start document"]
    assert changes is not None and changes.kept == ("fix",)


def test_an_unfinished_item_dropped_is_removed_by_the_replan(tmp_path: Path) -> None:
    """An item dropped while pending is removed by the replan, which records what it was."""
    session = Claude()
    session.todo(("Fix", "in_progress"), ("Refactor", "pending"))
    line = session.todo(("Fix", "completed"))

    report = imported(tmp_path, session)
    [replan] = replans(report)

    assert f'transcript line {line}: removed "Refactor" (it was pending)' in replan.observations
    assert statuses(report) == {"fix": "completed"}


def test_merged_items_are_two_removals_and_one_addition(tmp_path: Path) -> None:
    """Two items merged into one are recorded as the two removed and the merged one added (Cline)."""
    history = Cline()
    history.user("Support the cline format")
    history.checklist(("Update types.ts if needed", False), ("Update the agent enums", False), ("Test", False))
    message = history.checklist(("Update types.ts and the enums for cline", False), ("Test", False))

    report = imported(tmp_path, history, "history.json")
    [replan] = replans(report)

    assert replan.observations == (
        f'transcript message {message}: added "Update types.ts and the enums for cline" (pending)',
        f'transcript message {message}: removed "Update types.ts if needed" (it was pending)',
        f'transcript message {message}: removed "Update the agent enums" (it was pending)',
    )


def test_an_item_removed_and_re_added_keeps_its_step_id_and_starts_afresh(tmp_path: Path) -> None:
    """An item that comes back keeps the id of its text and is a new step in the ledger (attempt 1 again)."""
    session = Claude()
    session.todo(("Fix", "in_progress"), ("Benchmark", "pending"))
    session.todo(("Fix", "in_progress"))
    session.todo(("Fix", "completed"), ("Benchmark", "in_progress"))

    report = imported(tmp_path, session)
    added = [v.changes.added for v in history(records(report)).versions[1:] if v.changes is not None]

    assert trail(report) == [
        "create",
        "start fix",
        "replan v2 agent_revision",
        "start* fix",
        "complete fix",
        "replan v3 agent_revision",
        "start benchmark",
    ]
    assert added == [(), ("benchmark",)]
    assert state(report).steps["benchmark"].attempt == 1


def test_the_agents_order_is_kept_as_priority_and_lists_the_steps(tmp_path: Path) -> None:
    """The agent's item order becomes the steps' priority (first highest), so status and next list steps in it."""
    session = Claude()
    session.todo(("Write the tests", "pending"), ("Add a flag", "pending"), ("Bump the version", "pending"))

    report = imported(tmp_path, session)
    plan = state(report).plan

    assert plan is not None
    expected = [("write-the-tests", 0), ("add-a-flag", -1), ("bump-the-version", -2)]
    assert [(s.id, s.priority) for s in plan.steps] == expected
    assert list(state(report).steps) == ["write-the-tests", "add-a-flag", "bump-the-version"]
    assert ready_steps(state(report)) == ["write-the-tests", "add-a-flag", "bump-the-version"]


def test_a_pure_reorder_is_an_agent_revision_that_keeps_completed_work(tmp_path: Path) -> None:
    """A list whose only change is its order is a new version (agent_revision) naming the new order; done stays done."""
    session = Claude()
    session.todo(("A", "completed"), ("B", "pending"), ("C", "pending"))
    session.todo(("A", "completed"), ("C", "pending"), ("B", "pending"))

    report = imported(tmp_path, session)
    [replan] = replans(report)

    assert trail(report) == ["create", "start* a", "complete a", "replan v2 agent_revision"]
    assert any('reordered its items: "A", "C", "B"' in note for note in replan.observations)
    assert statuses(report) == {"a": "completed", "c": "pending", "b": "pending"}
    assert ready_steps(state(report)) == ["c", "b"]


# Going back


def test_in_progress_back_to_pending_is_a_replan_that_supersedes_the_step(tmp_path: Path) -> None:
    """An item moved back from in_progress to pending is recorded as a replan in which it is pending again."""
    session = Claude()
    session.todo(("Fix", "in_progress"), ("Test", "pending"))
    line = session.todo(("Fix", "pending"), ("Test", "in_progress"))

    report = imported(tmp_path, session)
    [replan] = replans(report)

    assert trail(report) == ["create", "start fix", "replan v2 agent_revision", "start test"]
    assert f'transcript line {line}: "Fix" went back from in_progress to pending' in replan.observations
    assert statuses(report) == {"fix": "pending", "test": "in_progress"}


def test_a_reopened_item_gets_a_new_contract_and_is_completed_again(tmp_path: Path) -> None:
    """An item reopened after completion changes its completion evidence, so the replan resets it; it completes
    again."""
    session = Claude()
    session.todo(("Fix", "completed"), ("Test", "in_progress"))
    reopened = session.todo(("Fix", "in_progress"), ("Test", "pending"))
    session.todo(("Fix", "completed"), ("Test", "pending"))

    report = imported(tmp_path, session)
    plan = state(report).plan
    reset = history(records(report)).versions[1].changes

    assert trail(report) == [
        "create",
        "start* fix",
        "complete fix",
        "start test",
        "replan v2 agent_revision",
        "start fix",
        "complete fix",
    ]
    assert reset is not None and [(c.step, c.cause, c.fields) for c in reset.reset] == [
        ("fix", "contract_changed", ("completion_evidence",)),
        ("test", "superseded", ()),
    ]
    assert plan is not None and plan.steps[0].completion_evidence == (
        f"the agent marks this item completed in its plan again: the agent reopened it at line {reopened}"
    )
    assert report.steps_completed == 2


def test_a_cline_item_unchecked_again_keeps_its_contract_and_its_completion(tmp_path: Path) -> None:
    """A Cline box unchecked after being checked is no new contract: the step keeps the completion evidence the
    ledger gave every item and its completion, and an inferred note says what the agent did."""
    history = Cline()
    history.user("Add a rate limiter to the API router")
    history.checklist(("Read the router", True), ("Add the limiter", False))
    unchecked = history.checklist(("Read the router", False), ("Add the limiter", False))
    history.checklist(("Read the router", True), ("Add the limiter", True))

    report = imported(tmp_path, history, "api_conversation_history.json")
    final = state(report)
    spec = final.plan.steps[0]  # type: ignore[union-attr]

    assert trail(report) == [
        "create",
        "start* read-the-router",
        "complete read-the-router",
        "replan v2 agent_revision",
        "start* add-the-limiter",
        "complete add-the-limiter",
    ]
    assert spec.completion_evidence == "the agent marks this item completed in its plan"
    assert spec.notes == (
        f"inferred: the agent unchecked it at message {unchecked} after checking it; Cline's checklist has no "
        "in-progress mark and the agent wrote no new terms, so the step keeps its contract and its completion",
    )
    assert final.steps["read-the-router"].status == "completed" and final.steps["read-the-router"].attempt == 1
    assert replans(report)[0].observations[-1].endswith('"Read the router" is pending again after being completed')


# Emptied lists


def test_a_list_the_tool_emptied_is_noted_by_the_next_replan(tmp_path: Path) -> None:
    """When the tool silently emptied a finished list, the next list's replan notes it and removes the done items."""
    session = Claude()
    session.todo(("Fix", "completed"))
    line = session.todo(("Release", "pending"), emptied=True)

    report = imported(tmp_path, session)
    [replan] = replans(report)

    assert trail(report) == ["create", "start* fix", "complete fix", "replan v2 agent_revision"]
    assert replan.observations[0] == (
        f"transcript line {line}: the tool's answer at line {line + 1} shows the list was already empty "
        "before this write"
    )
    assert state(report).outcome is None


def test_an_emptied_list_writes_nothing(tmp_path: Path) -> None:
    """An empty list write adds no event; the next list is compared with the last plan recorded."""
    session = Claude()
    session.todo(("Fix", "completed"), ("Ship", "pending"))
    session.todo()
    session.todo(("Fix", "completed"), ("Ship", "in_progress"))

    report = imported(tmp_path, session)

    assert trail(report) == ["create", "start* fix", "complete fix", "start ship"]
    assert (report.plan_updates, report.versions) == (3, 1)


def test_a_list_that_ends_empty_leaves_the_plan_as_last_recorded(tmp_path: Path) -> None:
    """When the session ends with an emptied list, the plan stays as the last list left it and the run stays open."""
    session = Claude()
    session.todo(("Fix", "in_progress"), ("Ship", "pending"))
    session.todo()

    report = imported(tmp_path, session)

    assert statuses(report) == {"fix": "in_progress", "ship": "pending"}
    assert state(report).outcome is None


# Identity and ids


def test_positional_ids_are_not_identities(tmp_path: Path) -> None:
    """OpenCode's positional ids are reused for other items; identity follows the text, not the id."""
    export = OpenCode()
    export.todo(("Rename the command", "completed"), ("Add an alias", "pending"))
    export.todo(("Add an alias", "in_progress"), ("Update the docs", "pending"))

    report = imported(tmp_path, export, "export.json")

    assert statuses(report) == {"add-an-alias": "in_progress", "update-the-docs": "pending"}
    assert trail(report)[-1] == "start add-an-alias"


def test_old_todowrite_ids_reused_for_new_items_do_not_carry_work_over(tmp_path: Path) -> None:
    """Old-schema TodoWrite ids 1 and 2 reused for new items make new steps; the completed ones are removed."""
    report = import_transcript(FIXTURES / "claude_old_schema.jsonl", tmp_path / "out.jsonl")
    verify_log(report.log)
    changes = history(records(report)).versions[1].changes

    assert changes is not None and changes.kept == ()
    assert [(c.step, c.was) for c in changes.removed] == [
        ("read-the-status-command", "completed"),
        ("add-the-json-flag", "completed"),
    ]
    assert statuses(report) == {
        "document-the-json-flag-in-the-readme": "in_progress",
        "add-an-example-to-the-help-text": "in_progress",
    }


def test_the_same_text_twice_in_one_list_is_two_steps(tmp_path: Path) -> None:
    """Two items with the same text are told apart by their order of occurrence."""
    session = Claude()
    session.todo(("Run the tests", "completed"), ("Fix", "pending"), ("Run the tests", "pending"))

    assert statuses(imported(tmp_path, session)) == {
        "run-the-tests": "completed",
        "fix": "pending",
        "run-the-tests-2": "pending",
    }


def test_item_text_with_newlines_is_kept_as_the_title(tmp_path: Path) -> None:
    """An item's text keeps its inner newlines in the step title; only surrounding whitespace is trimmed."""
    session = Claude()
    session.todo(("  Fix the parser:\n- handle EOF\n- handle CRLF  ", "pending"))

    plan = state(imported(tmp_path, session)).plan

    assert plan is not None and plan.steps[0].title == "Fix the parser:\n- handle EOF\n- handle CRLF"
    assert plan.steps[0].id == "fix-the-parser-handle-eof-handle-crlf"


def test_step_ids_are_bounded_slugs_with_a_hash_when_no_letters_are_left() -> None:
    """A slug is lower-case ASCII words, cut at a word within 40 characters, and a text hash when empty."""
    assert slug("Fix `read_rows()` at EOF!") == "fix-read-rows-at-eof"
    assert slug("Überprüfe die Ergebnisse") == "uberprufe-die-ergebnisse"
    assert (
        slug("a very long item text that keeps going well past the limit") == "a-very-long-item-text-that-keeps-going"
    )
    assert slug("修复解析器") == "item-" + hashlib.sha256("修复解析器".encode()).hexdigest()[:8]


def test_items_whose_slugs_collide_get_numbered_ids(tmp_path: Path) -> None:
    """Different texts with the same slug get -2, -3 in order of first appearance, and the step says why."""
    session = Claude()
    session.todo(("Fix the bug", "pending"), ("Fix: the bug!", "pending"))
    report = imported(tmp_path, session)
    plan = state(report).plan

    assert list(statuses(report)) == ["fix-the-bug", "fix-the-bug-2"]
    assert plan is not None
    assert plan.steps[1].notes == ('the id fix-the-bug was taken by the earlier item "Fix the bug"',)
    assert plan.steps[0].notes == ()


def test_a_cancelled_item_leaves_the_plan_with_a_note(tmp_path: Path) -> None:
    """An OpenCode item marked cancelled is removed from the plan, and the replan says it was cancelled."""
    export = OpenCode()
    export.todo(("Rename", "in_progress"), ("Add an alias", "pending"))
    message = export.todo(("Rename", "completed"), ("Add an alias", "cancelled"))

    report = imported(tmp_path, export, "export.json")
    [replan] = replans(report)

    assert statuses(report) == {"rename": "completed"}
    assert replan.observations[0] == (
        f'transcript message {message}: "Add an alias" is marked cancelled, so it is no longer part of the plan'
    )


# The task board


def test_task_creates_extend_the_plan_and_updates_start_and_complete(tmp_path: Path) -> None:
    """The first TaskCreate creates the plan, a later one before any work extends it in place (no replan), and
    status changes start and complete."""
    session = Claude()
    session.user("Prepare the release")
    session.task_create("Draft the changelog")
    added = session.task_create("Bump the version")
    session.task_update("1", "in_progress", was="pending")
    session.task_update("2", "in_progress", was="pending")
    done = session.task_update("1", "completed", was="in_progress")
    session.task_update("2", "completed")

    report = imported(tmp_path, session)
    extension = records(report)[2]

    assert trail(report) == [
        "create",
        "extend v1 bump-the-version",
        "start draft-the-changelog",
        "start bump-the-version",
        "complete draft-the-changelog",
    ]
    assert isinstance(extension.data, PlanExtended) and extension.actor == "agent"
    assert extension.data.observations == (f'transcript line {added}: added task #2 "Bump the version" (pending)',)
    assert (report.versions, report.extensions, report.max_in_progress) == (1, 1, 2)
    assert records(report)[-1].data == StepCompleted(
        step="draft-the-changelog",
        attempt=1,
        evidence=(f"marked completed by the agent in TaskUpdate at line {done}",),
    )


def test_a_list_that_only_grows_before_any_work_is_extended_unless_the_user_asked(tmp_path: Path) -> None:
    """A TodoWrite that appends items to an untouched list extends the version; one the user asked for between
    the two writes is a user_request replan quoting them; an item inserted before others is a replan."""
    session = Claude()
    session.todo(("Reproduce the bug", "pending"))
    session.todo(("Reproduce the bug", "pending"), ("Fix read_rows", "pending"))
    asked = session.user("Also add a regression test for the empty file case")
    session.todo(("Reproduce the bug", "pending"), ("Fix read_rows", "pending"), ("Add a regression test", "pending"))
    session.todo(("Read the issue", "pending"), ("Reproduce the bug", "pending"), ("Fix read_rows", "pending"))

    report = imported(tmp_path, session)

    assert trail(report) == ["create", "extend v1 fix-read-rows", "replan v2 user_request", "replan v3 agent_revision"]
    assert replans(report)[0].why.startswith(f'the user wrote at line {asked}: "Also add a regression test')


def test_a_renamed_task_keeps_its_step_and_a_deleted_one_leaves(tmp_path: Path) -> None:
    """A task renamed keeps its step id with the new title; a deleted task is removed by a replan (an addition
    before any work extends the version instead)."""
    session = Claude()
    session.task_create("Draft the changelog")
    session.task_create("Bump the version")
    session.task_update("1", subject="Draft the changelog for 3.2")
    session.task_update("2", "deleted", was="pending")

    report = imported(tmp_path, session)
    plan = state(report).plan

    assert [r.reason for r in replans(report)] == ["agent_revision"] * 2
    assert report.extensions == 1
    assert plan is not None and [(s.id, s.title) for s in plan.steps] == [
        ("draft-the-changelog", "Draft the changelog for 3.2"),
    ]


def test_a_session_using_a_list_and_the_task_board_keeps_both(tmp_path: Path) -> None:
    """A TodoWrite list and task-tool tasks in one session are one plan: the list's writes never drop the tasks."""
    session = Claude()
    session.todo(("Read the code", "in_progress"))
    session.task_create("Write the migration")
    session.todo(("Read the code", "completed"))

    report = imported(tmp_path, session)

    assert statuses(report) == {"read-the-code": "completed", "write-the-migration": "pending"}
    assert report.versions == 2


def test_a_lead_and_its_subagent_are_merged_by_time(tmp_path: Path) -> None:
    """With subagents, a subagent's completion of the lead's task lands in the lead's log, in time order."""
    for name in ("claude_tasks_lead.jsonl", "claude_tasks_lead__subagent-d4n4.jsonl"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    out = tmp_path / "lead.plantrail.jsonl"

    alone = import_transcript(tmp_path / "claude_tasks_lead.jsonl", out)
    merged = import_transcript(tmp_path / "claude_tasks_lead.jsonl", out, with_subagents=True, force=True)
    verify_log(out)
    completion = next(r for r in records(merged) if isinstance(r.data, StepCompleted))
    evidence = (
        "marked completed by subagent d4n4 in TaskUpdate at line 2 of claude_tasks_lead__subagent-d4n4.jsonl "
        "(the tool's answer names the status as updated; the value is the one requested)"
    )

    assert alone.subagent_files == (str(tmp_path / "claude_tasks_lead__subagent-d4n4.jsonl"),)
    assert (alone.steps_completed, merged.steps_completed, merged.subagent_files) == (0, 1, ())
    assert completion.source is not None and completion.source.file == "claude_tasks_lead__subagent-d4n4.jsonl"
    assert isinstance(completion.data, StepCompleted) and completion.data.evidence == (evidence,)


def test_a_subagent_file_alone_holds_no_plan(tmp_path: Path) -> None:
    """A subagent's file only updates its lead's tasks: alone it is refused, its updates counted as unknown."""
    with pytest.raises(TranscriptError) as caught:
        import_transcript(FIXTURES / "claude_tasks_lead__subagent-d4n4.jsonl", tmp_path / "out.jsonl")

    assert (caught.value.code, caught.value.exit_code) == ("NO_PLAN_IN_TRANSCRIPT", 1)
    assert "1 unknown_task" in caught.value.message
    assert not (tmp_path / "out.jsonl").exists()


# Codex and Cline specifics


def test_a_codex_explanation_is_the_why_of_an_agent_revision(tmp_path: Path) -> None:
    """A Codex update_plan explanation is quoted as the why, cited at the call's own line."""
    rollout = Codex()
    rollout.user("Add the MK4 profile and update the docs")
    rollout.plan(("Add the MK4 profile", "in_progress"), ("Update the docs", "pending"))
    line = rollout.plan(
        ("Add the MK4 profile", "completed"),
        ("Update the docs", "in_progress"),
        ("Add a changelog entry", "pending"),
        explanation="The docs need a changelog entry too.",
    )

    report = imported(tmp_path, rollout, "rollout.jsonl")
    [replan] = replans(report)

    assert (replan.reason, replan.why) == (
        "agent_revision",
        f'the agent wrote at line {line}: "The docs need a changelog entry too."',
    )
    assert report.run == "019c0000-0000-7000-8000-00000000c0de"


def test_a_format_without_timestamps_gets_times_from_message_numbers(tmp_path: Path) -> None:
    """Cline has no timestamps: events are stamped 1970-01-01 plus the message number, and cite no timestamp."""
    history = Cline()
    history.user("Add validation")
    history.checklist(("Read the form", True), ("Validate", False))

    report = imported(tmp_path, history, "history.json")
    start = records(report)[2]

    assert [r.ts for r in records(report)] == ["1970-01-01T00:00:02.000Z"] * 4
    assert start.source is not None and start.source.timestamp is None
    assert report.run == "history"


# Skipped lines and refusals


def test_lines_not_understood_are_skipped_and_counted(tmp_path: Path) -> None:
    """A line that is not JSON and an update the tool rejected are skipped, counted by reason, never fatal."""
    session = Claude()
    session.todo(("Fix", "pending"))
    session.raw(b"{not json")
    session.raw(
        b'{"type": "assistant", "uuid": "x", "message": {"content": [{"type": "tool_use", "id": "t9", '
        b'"name": "TodoWrite", "input": {"todos": [{"content": "Oops", "status": "done"}]}}]}}'
    )
    session.raw(
        b'{"type": "assistant", "uuid": "y", "message": {"content": [{"type": "tool_use", "id": "t10", '
        b'"name": "TodoWrite", "input": {"todos": [{"content": "Fix", "status": "completed"}]}}]}}'
    )
    session.raw(
        b'{"type": "user", "uuid": "z", "message": {"content": [{"type": "tool_result", "tool_use_id": "t10", '
        b'"is_error": true, "content": "rejected"}]}}'
    )

    report = imported(tmp_path, session)

    assert report.skipped == {"invalid_json": 1, "malformed_plan_update": 1, "rejected_by_tool": 1}
    assert report.lines_skipped == 3
    assert trail(report) == ["create"]


def test_a_file_that_is_not_a_transcript_is_refused(tmp_path: Path) -> None:
    """A plantrail log given as a transcript is refused with NOT_A_TRANSCRIPT (exit 1) and nothing is written."""
    with pytest.raises(PlantrailError) as caught:
        import_transcript(FIXTURES / "not_a_transcript.jsonl", tmp_path / "out.jsonl")

    assert (caught.value.code, caught.value.exit_code) == ("NOT_A_TRANSCRIPT", 1)
    assert os.listdir(tmp_path) == []


def test_an_existing_log_is_never_overwritten_without_force(tmp_path: Path) -> None:
    """Importing onto an existing file is LOG_EXISTS; with force the file is replaced by the new log."""
    session = Claude()
    session.todo(("Fix", "pending"))
    transcript = session.write(tmp_path / "session.jsonl")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"precious\n")

    with pytest.raises(PlantrailError) as caught:
        import_transcript(transcript, out)
    assert (caught.value.code, out.read_bytes()) == ("LOG_EXISTS", b"precious\n")

    import_transcript(transcript, out, force=True)
    verify_log(out)
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl", "session.jsonl"]


def test_the_transcript_itself_is_never_the_output(tmp_path: Path) -> None:
    """Forcing the output onto the transcript file is a usage error, and the transcript is untouched."""
    session = Claude()
    session.todo(("Fix", "pending"))
    transcript = session.write(tmp_path / "session.jsonl")
    before = transcript.read_bytes()

    with pytest.raises(PlantrailError) as caught:
        import_transcript(transcript, transcript, force=True)

    assert (caught.value.code, transcript.read_bytes()) == ("USAGE", before)


def test_subagents_apply_to_claude_code_only(tmp_path: Path) -> None:
    """Asking to merge subagents into a Codex import is a usage error."""
    with pytest.raises(PlantrailError) as caught:
        import_transcript(FIXTURES / "codex_rollout.jsonl", tmp_path / "out.jsonl", with_subagents=True)

    assert (caught.value.code, caught.value.exit_code) == ("USAGE", 2)


# Determinism


@pytest.mark.parametrize(
    "name",
    [
        "claude_new_schema.jsonl",
        "claude_old_schema.jsonl",
        "claude_tasks_lead.jsonl",
        "codex_rollout.jsonl",
        "opencode_export.json",
        "cline_history.json",
    ],
)
def test_the_same_transcript_gives_the_same_bytes(tmp_path: Path, name: str) -> None:
    """Two imports of one transcript, from different places to different logs, are byte-identical."""
    elsewhere = tmp_path / "copy"
    elsewhere.mkdir()
    shutil.copy(FIXTURES / name, elsewhere / name)

    first = import_transcript(FIXTURES / name, tmp_path / "first.jsonl")
    second = import_transcript(elsewhere / name, elsewhere / "second.plantrail.jsonl")

    assert Path(first.log).read_bytes() == Path(second.log).read_bytes()
    verify_log(first.log)


def test_inferred_events_are_counted_and_marked(tmp_path: Path) -> None:
    """Every inferred event has actor importer and source.inferred; the report counts exactly those."""
    session = Claude()
    session.todo(("A", "completed"), ("B", "in_progress"))
    session.todo(("A", "completed"), ("B", "in_progress"), ("C", "completed"))

    report = imported(tmp_path, session)
    inferred = [r for r in records(report) if r.source is not None and r.source.inferred]

    assert {r.actor for r in inferred} == {"importer"}
    assert all(isinstance(r.data, StepStarted) for r in inferred)
    assert report.events_inferred == len(inferred) == 3
