"""Normalized plan observations read from agent transcripts.

Every value is immutable (frozen msgspec Structs, tuples not lists) and records only what the
transcript shows: a field the transcript does not carry is None, never a guess. Where a value is
derived rather than read, the field that says so is documented (`TaskEvent.status_source`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from plantrail.ledger.vocabulary.evidence import Usage

__all__ = [
    "ListSnapshot",
    "Observation",
    "Status",
    "TaskEvent",
    "TodoItem",
    "ToolOutcome",
    "Transcript",
]

Status = Literal["pending", "in_progress", "completed", "cancelled", "blocked"]
"""An item's status as written by the agent. `cancelled` occurs in OpenCode and Gemini CLI transcripts,
`blocked` only in Gemini CLI ones."""

ToolOutcome = Literal["ok", "error"]
"""What the tool answered to the call; None on an observation means the transcript holds no answer."""


class TodoItem(msgspec.Struct, frozen=True, kw_only=True):
    """One item of a whole-list plan update.

    `native_id` is set only where the format gives the item a real identity; no supported list format
    does. Model-chosen labels (old TodoWrite `id`, OpenCode `id`) are positions that agents reuse for
    other items after a replan, so they are kept in `position_label` and never used as identity.
    """

    text: str
    status: Status
    native_id: str | None = None
    position_label: str | None = None
    active_form: str | None = None
    priority: str | None = None
    parent: str | None = None
    """The text of the item this one is indented under (Cline sub-items); None at the top level."""


class ListSnapshot(msgspec.Struct, frozen=True, kw_only=True, tag="list"):
    """A whole-list replacement: TodoWrite, update_plan, OpenCode todowrite or a Cline checklist.

    `line` is the 1-based line of the call in a JSONL transcript; for the single-document JSON
    formats (OpenCode, Cline) it is the 1-based index of the message in the document's message list.
    `explanation` is the agent's own words about the update, at `explanation_line`: Codex's
    `explanation` argument (on the call's line), the text a Claude Code agent wrote just before
    the call (since the last `user` line), or the words a Gemini model wrote before the call in a
    `/chat share` export (its last words in the message before the call). `context` is the most recent
    user message before the update (at most 500 characters, cut with a trailing "…"), `context_line` its
    line or message index.
    `result` and `result_line` describe the tool's answer where the transcript pairs one with the call.
    `prior_items` is the tool's own record of the list just before this write (Claude Code
    `toolUseResult.oldTodos`), which shows when the tool itself emptied the list; None where the transcript
    does not carry it. `prompts` are the user's messages before the update, each with its line (at most the
    first PROMPTS_KEPT of the session, each cut at PROMPT_LIMIT characters): what the goal rule chooses the
    request from (`goal`).
    `user_verdict` is what the person decided about this very update, as the tool's answer at `result_line`
    reports it (Claude Code ExitPlanMode: "the user approved the plan", "... with their edits"); the update is
    then the user's decision, not the agent's revision. `proposed` is set only while a parser splits an approval
    with edits into the agent's proposal and the user's update (never on a parsed transcript's observations).
    `replayed` says the update is part of the history a resumed session replayed (Codex), and when: the work
    itself is older than its timestamp here.
    `decision` is the user's answer to a plan that asked for their approval (Claude Code ExitPlanMode: the call
    asks "approve this plan?"): "granted" or "denied", `decision_why` what the answer says ("the user approved
    the plan with their edits"), `decision_words` the user's words when a refusal quotes them,
    `result_timestamp` the answer's time; the mapping records it as an approval of the version the update
    gives (`mapping`, "Approvals").
    """

    line: int
    native_id: str | None
    timestamp: str | None
    items: tuple[TodoItem, ...]
    tool: str
    explanation: str | None = None
    explanation_line: int | None = None
    context: str | None = None
    context_line: int | None = None
    agent: str | None = None
    result: ToolOutcome | None = None
    result_line: int | None = None
    prior_items: tuple[TodoItem, ...] | None = None
    prompts: tuple[tuple[str, int], ...] = ()
    user_verdict: str | None = None
    proposed: tuple[TodoItem, ...] | None = None
    replayed: str | None = None
    decision: Literal["granted", "denied"] | None = None
    decision_why: str | None = None
    decision_words: str | None = None
    result_timestamp: str | None = None
    meta: Mapping[str, Any] | None = None
    """What the adapter did not map (the payload's unread fields, with the adapter and its version; bounded:
    `metadata`), for the sources of the update's events; None when nothing was left unread."""
    turns: Usage | None = None
    """The usage of the agent's turns that ended since the previous plan update (Claude Code's Stop hook, as
    plantrail's hook journal keeps it), for the next result the mapping records; None when none ended."""


class TaskEvent(msgspec.Struct, frozen=True, kw_only=True, tag="task"):
    """One change made with the Claude Code 2.1 task tools (TaskCreate, TaskUpdate).

    A created task's id exists only in the tool's result, so `task_id` is None when the result is
    missing. `status_from` and `status_to` come from the result's `statusChange` (`status_source`
    "result"); when the result only names the updated fields (subagent files carry no structured
    result) and "status" is among them, `status_to` is the status the call asked for and
    `status_source` is "request"; otherwise both are None and `status_source` is None.
    `requested_status` is what the call asked for, whether or not it took effect. `explanation` is
    the text the agent wrote just before the call (since the last `user` line), at `explanation_line`.
    `prompts` are the user's messages before the call, as on `ListSnapshot`.
    """

    line: int
    native_id: str | None
    timestamp: str | None
    kind: Literal["created", "updated"]
    task_id: str | None
    subject: str | None
    description: str | None
    status_from: str | None
    status_to: str | None
    agent: str | None
    context: str | None = None
    context_line: int | None = None
    explanation: str | None = None
    explanation_line: int | None = None
    requested_status: str | None = None
    status_source: Literal["result", "request"] | None = None
    owner: str | None = None
    active_form: str | None = None
    updated_fields: tuple[str, ...] | None = None
    result: ToolOutcome | None = None
    result_line: int | None = None
    prompts: tuple[tuple[str, int], ...] = ()
    meta: Mapping[str, Any] | None = None
    """As on `ListSnapshot`: what the adapter did not map, for the sources of the update's events."""
    turns: Usage | None = None
    """As on `ListSnapshot`: the usage of the turns that ended since the previous plan update."""


Observation: TypeAlias = ListSnapshot | TaskEvent


class Transcript(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed transcript: its plan observations in file order, and what was skipped and why.

    `lines_total` counts the file's lines (for the single-document formats, the messages in the
    document); `lines_skipped` counts those that were not understood, each under one reason.
    """

    format: str
    path: str
    session_id: str | None
    observations: tuple[Observation, ...]
    lines_total: int
    lines_skipped: int
    skipped_reasons: Mapping[str, int]
