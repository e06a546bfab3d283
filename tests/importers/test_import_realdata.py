"""Every real transcript in ../shared/realdata imports into a log that verifies, replays and matches the transcript.

The expected figures are computed here from the parser's observations by a plain model (a version for the
first list and for every list that adds, removes or reopens items; a completion for every item that becomes
completed; for a task board, a task created before any task of the current version moved extends it in place
instead of making a version), independent of the importer's mapping; the table pins them as well, so that a
change of mapping shows up as a diff of numbers. (No whole-list transcript here only appends items to a list
nothing has touched yet, which would also extend in place: the list model counts every change of the set.)
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from plantrail.ledger.importers import (
    ListSnapshot,
    TaskEvent,
    TranscriptError,
    import_transcript,
    parse_transcript,
)
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from plantrail.projections.canonical import state_hash
from plantrail.projections.state import fold

ROOT = Path(__file__).resolve().parents[2]
REALDATA = Path(os.environ.get("PLANTRAIL_REALDATA", ROOT.parent / "shared" / "realdata"))
LEAD = "claude-code-tasks__daaain-real_projects__experiments-worktrees__ef958aa1.jsonl"
SUBAGENT = "claude-code-tasks__daaain-real_projects__experiments-worktrees__ef958aa1__subagent-a52886dc180afb356.jsonl"

#: file -> (plan updates seen, versions made, steps completed, events inferred, max in progress); ExitPlanMode
#: plans count as plan updates (the two daaain files hold approved ones: each a version before the todo list,
#: and refused ones: each a version the user denied, me-next's twice and deep-manifest's once, whose inferred
#: approval requests count among the inferred events)
FIGURES: dict[str, tuple[int, int, int, int, int]] = {
    "claude-code__amac0-ClaudeStatus__example2.jsonl": (75, 24, 51, 13, 1),
    "claude-code__amac0-ClaudeStatus__example.jsonl": (5, 1, 4, 0, 1),
    "claude-code__daaain-real_projects__JSSoundRecorder__7acd37a8.jsonl": (15, 4, 11, 1, 1),
    "claude-code__daaain-real_projects__deep-manifest__a7da6a22.jsonl": (17, 5, 16, 7, 1),
    "claude-code__daaain-real_projects__danieldemmel-me-next__f852ad25.jsonl": (16, 7, 14, 11, 1),
    LEAD: (18, 1, 5, 0, 3),  # six TaskCreate calls before any work: one version, extended in place five times
    "claude-code__agentlogs__todos.jsonl": (5, 1, 3, 0, 1),
    "codex__MoonMind__rollout-2025-11-13T16-00-16-019a7fa9.jsonl": (7, 2, 8, 3, 1),
    "codex__OpenPrintKit__rollout-2025-10-31T19-02-58-c61729d4.jsonl": (3, 1, 2, 0, 1),
    "opencode__agentlogs__all-tools.json": (1, 1, 1, 1, 1),
    "cline__agentlogs__crud.json": (21, 5, 4, 4, 1),
}
#: The lead merged with its subagent: the subagent's completion of task 2 is the sixth.
MERGED_FIGURES = (19, 1, 6, 0, 3)

pytestmark = pytest.mark.skipif(not REALDATA.is_dir(), reason=f"no real transcripts at {REALDATA}")


def _present(names: list[str]) -> list[str]:
    return [name for name in names if (REALDATA / name).is_file()]


def _expected_from_lists(path: Path) -> tuple[int, int, int]:
    """Plan updates, versions and completions of a whole-list transcript, by a plain model of its lists: a plan
    the user denied is a version, and the next list, answering the denial, is always a new one."""
    observations = parse_transcript(path).observations
    last: dict[tuple[str, int], str] | None = None
    versions = completions = 0
    denied = False
    for snapshot in observations:
        assert isinstance(snapshot, ListSnapshot)
        seen: Counter[str] = Counter()
        current: dict[tuple[str, int], str] = {}
        for item in snapshot.items:
            ran = snapshot.result != "error" or snapshot.decision == "denied"
            if item.text.strip() and item.status != "cancelled" and ran:
                seen[item.text.strip()] += 1
                current[(item.text.strip(), seen[item.text.strip()])] = item.status
        if not current:
            continue
        before = last or {}
        went_back = any(
            (before.get(key), status)
            in {("completed", "pending"), ("completed", "in_progress"), ("in_progress", "pending")}
            for key, status in current.items()
        )
        versions += last is None or set(current) != set(before) or went_back or denied
        denied = snapshot.decision == "denied"
        completions += sum(1 for key, status in current.items() if status == "completed" != before.get(key))
        last = current
    return len(observations), versions, completions


def _expected_from_tasks(*paths: Path) -> tuple[int, int, int]:
    """Plan updates, versions and completions of task-board transcripts (tasks only created and moved forward):
    a task created before any task of the current version moved extends it in place, one created after is a new
    version; one completion per task completed."""
    events = [o for path in paths for o in parse_transcript(path).observations]
    assert all(isinstance(e, TaskEvent) for e in events)
    events.sort(key=lambda e: e.timestamp or "")  # merged files interleave by time, as the importer merges them
    created = {e.task_id for e in events if isinstance(e, TaskEvent) and e.kind == "created" and e.task_id}
    completed = {e.task_id for e in events if isinstance(e, TaskEvent) and e.status_to == "completed"} & created
    versions, touched = 0, False
    for event in events:
        assert isinstance(event, TaskEvent)
        if event.kind == "created" and event.task_id:
            versions, touched = (versions + 1, False) if versions == 0 or touched else (versions, touched)
        elif event.status_to in ("in_progress", "completed") and event.task_id in created:
            touched = True
    return len(events), versions, len(completed)


def _check_log(log: Path) -> tuple[int, int, int, int]:
    """Verify and replay the log; return its versions, completions, inferred events and max_in_progress."""
    report = verify_log(log)
    with LogReader(log) as reader:
        records = list(reader.records())
    state = fold(records)
    assert state_hash(state) == report.state_hash == state_hash(fold(records))
    assert all(r.source is not None and r.source.line for r in records[1:] if r.type != "log.batch")
    assert {c.status for c in state.criteria.values_in_order()} == {"unverified"}
    assert state.outcome is None
    inferred = [r for r in records if r.source is not None and r.source.inferred]
    assert {r.actor for r in inferred} <= {"importer"}
    completions = [r for r in records if r.type == "step.completed"]
    assert state.plan is not None and state.plan.policy.max_in_progress is not None
    return state.version, len(completions), len(inferred), state.plan.policy.max_in_progress


@pytest.mark.parametrize("name", _present(sorted(FIGURES)))
def test_a_real_transcript_imports_verifies_and_matches_its_counts(tmp_path: Path, name: str) -> None:
    """The import verifies and replays, and its figures match the transcript's own plan updates."""
    path = REALDATA / name
    report = import_transcript(path, tmp_path / "out.plantrail.jsonl")

    versions, completions, inferred, most = _check_log(tmp_path / "out.plantrail.jsonl")
    expected = _expected_from_tasks(path) if name == LEAD else _expected_from_lists(path)

    assert (report.plan_updates, report.versions, report.steps_completed) == expected
    assert (versions, completions, inferred, most) == (*expected[1:], report.events_inferred, report.max_in_progress)
    assert (*expected, report.events_inferred, report.max_in_progress) == FIGURES[name]
    refused = report.skipped.get("rejected_by_tool", 0)  # plan calls a tool refused are skipped (a denied plan is not)
    assert report.lines_skipped == parse_transcript(path).lines_skipped + refused


@pytest.mark.skipif(
    not (REALDATA / SUBAGENT).is_file() or not (REALDATA / LEAD).is_file(),
    reason="the agent-team transcripts are absent",
)
def test_the_real_lead_and_subagent_import_together(tmp_path: Path) -> None:
    """The lead merged with its subagent records the subagent's completion, and the report's part of each file
    adds up to its total; the subagent alone holds no plan."""
    log = tmp_path / "team.plantrail.jsonl"

    report = import_transcript(REALDATA / LEAD, log, with_subagents=True)
    figures = (
        report.plan_updates,
        report.versions,
        report.steps_completed,
        report.events_inferred,
        report.max_in_progress,
    )

    assert figures == MERGED_FIGURES
    assert figures[:3] == _expected_from_tasks(REALDATA / LEAD, REALDATA / SUBAGENT)
    assert _check_log(log) == MERGED_FIGURES[1:]
    lead, subagent = report.files
    assert (lead.file, subagent.file) == (str(REALDATA / LEAD), str(REALDATA / SUBAGENT))
    assert subagent.versions == 0 and subagent.plan_updates >= 1
    sums = [sum(getattr(part, name) for part in report.files) for name in ("plan_updates", "versions", "items")]
    assert sums == [report.plan_updates, report.versions, report.items]
    assert sum(part.events_written for part in report.files) == report.events_written
    with pytest.raises(TranscriptError) as caught:
        import_transcript(REALDATA / SUBAGENT, tmp_path / "alone.jsonl")
    assert caught.value.code == "NO_PLAN_IN_TRANSCRIPT"


@pytest.mark.parametrize("name", _present(sorted(FIGURES)))
def test_a_real_transcript_imports_to_the_same_bytes_twice(tmp_path: Path, name: str) -> None:
    """Importing a real transcript twice gives byte-identical logs."""
    first = import_transcript(REALDATA / name, tmp_path / "first.jsonl")
    second = import_transcript(REALDATA / name, tmp_path / "second.jsonl")

    assert Path(first.log).read_bytes() == Path(second.log).read_bytes()


#: file -> the goal its import must have: the sessions that open with the /init slash command (whose expansion the
#: transcript holds on the next line), and a Codex session that opens with a spec-kit templated prompt (the user's
#: words in its `text` block)
INIT = "/init: Please analyze this codebase and create a CLAUDE.md file, which will be given to future instances of "
GOALS: dict[str, str] = {
    "claude-code__amac0-ClaudeStatus__example.jsonl": INIT + "Claude Code to operate in this repository.",
    "claude-code__amac0-ClaudeStatus__example2.jsonl": INIT + "Claude Code to operate in this repository.",
    "claude-code__daaain-real_projects__JSSoundRecorder__7acd37a8.jsonl": INIT
    + "Claude Code to operate in this repository.",
    "codex__MoonMind__rollout-2025-11-13T16-00-16-019a7fa9.jsonl": (
        "Create a spec which will implement the orchestrator architecture defined by docsOrchestratorArchitecture.md"
    ),
}


@pytest.mark.parametrize("name", _present(sorted(GOALS)))
def test_a_real_session_opened_by_a_command_or_a_template_states_its_purpose(tmp_path: Path, name: str) -> None:
    """A real session that opens with a slash command or a templated prompt has its purpose as goal, with no
    markup, and the whole prompt in version 1's notes."""
    report = import_transcript(REALDATA / name, tmp_path / "out.jsonl")
    with LogReader(report.log) as reader:
        created = next(r for r in reader.records() if r.type == "plan.created")
    plan = created.data.plan  # type: ignore[union-attr]

    assert plan.goal == GOALS[name]
    assert "<command-" not in plan.goal
    assert any("the user's prompt in full: " in note for note in plan.notes)
