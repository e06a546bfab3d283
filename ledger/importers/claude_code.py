"""Claude Code session transcripts (JSONL): TodoWrite snapshots and 2.1 TaskCreate / TaskUpdate events.

A call sits in an `assistant` line as a `tool_use` block; its answer sits in a later `user` line as a
`tool_result` block with the same id, often beside a structured `toolUseResult`. Both TodoWrite
schemas are read: up to 1.0.x `{id, content, status, priority}` (the id is a position, kept as
`position_label`) and from 1.0.128 `{content, status, activeForm}`. A subagent's transcript (a file
named `...__subagent-<id>.jsonl`, or `subagents/agent-<id>.jsonl`) and sidechain lines are told apart
from the lead's through `agent`: "lead", "subagent:<agent id>", or "subagent" for a sidechain line
that names no agent.

The agent's own words before a call (the last `text` block of an assistant line since the previous
`user` line, on the same line or an earlier one) are kept as the call's `explanation`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace

from plantrail.ledger.stores.locations import pure_path
from plantrail.ledger.vocabulary.evidence import Usage

from ._records import (
    PROMPT_LIMIT,
    JsonObject,
    Tally,
    add_usage,
    clip,
    json_lines,
    list_field,
    object_field,
    objects,
    text_field,
    todo_items,
    with_prompt,
)
from .goal import slash_command
from .model import ListSnapshot, Observation, TaskEvent, TodoItem, ToolOutcome, Transcript

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ADAPTER_VERSION", "FORMAT", "Reader", "is_record", "new_reader", "parse", "read_record"]

FORMAT = "claude-code"
#: This adapter's version, recorded in every plan version it imports (see ``parse.ADAPTER_VERSIONS``).
ADAPTER_VERSION = 4
LEAD = "lead"
RECORD_TYPES = frozenset(
    {
        "assistant",
        "attachment",
        "file-history-snapshot",
        "last-prompt",
        "permission-mode",
        "progress",
        "queue-operation",
        "summary",
        "system",
        "user",
    }
)
PLAN_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate", "ExitPlanMode"})
_IDENTITY_KEYS = ("sessionId", "uuid", "leafUuid", "messageId")
_NOT_USER_WORDS = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<ide_",
    "<system-reminder>",
)
# The patterns are compiled on first use (``re``'s own cache keeps them): a hook call, which reads one payload,
# meets none of them in the common case, and compiling all six cost ~0.7 ms of every call.
_SUBAGENT_FILE = r"__subagent-(?P<id>[^_.]+)\.jsonl$"
_SUBAGENT_IN_FOLDER = r"^agent-(?P<id>[^.]+)\.jsonl$"
_CREATED_TEXT = r"^Task #(?P<id>\S+) created"
_UPDATED_TEXT = r"(?s)^Updated task #\S+ ?(?P<fields>.*)$"
_REFUSAL = "doesn't want to proceed with this tool use"
_REJECTED = r"(?s)doesn't want to proceed with this tool use.*?the user said:\s*(?P<words>\S.*)"  # _REFUSAL first
_APPROVED = "User has approved your plan"

_EDITED = r"(?s)##\s*Approved Plan \(edited by user\):\s*\n(?P<plan>.*)"


def is_record(record: JsonObject) -> bool:
    """Whether a JSONL line is a Claude Code transcript record."""
    return record.get("type") in RECORD_TYPES and any(key in record for key in _IDENTITY_KEYS)


class _Reader(msgspec.Struct):
    """What the parser carries from line to line."""

    file_agent: str
    observations: list[Observation] = msgspec.field(default_factory=list)
    awaiting: dict[str, int] = msgspec.field(default_factory=dict)
    context: tuple[str | None, int | None] = (None, None)
    said: tuple[str | None, int | None] = (None, None)
    session_id: str | None = None
    prompts: tuple[tuple[str, int], ...] = ()
    unbilled: Usage | None = None
    """The usage of the turns that ended (plantrail's hook journal: a Stop's mark) since the last plan call."""


#: The parser's state between lines, for a caller that keeps it (live capture keeps it between hook calls).
Reader = _Reader


class _Origin(msgspec.Struct, frozen=True):
    """Where a call comes from: its line, id, time, author, the user message and the agent's words before it."""

    line: int
    native_id: str | None
    timestamp: str | None
    agent: str
    context: str | None
    context_line: int | None
    explanation: str | None
    explanation_line: int | None
    prompts: tuple[tuple[str, int], ...] = ()
    meta: Mapping[str, Any] | None = None
    turns: Usage | None = None


#: The keys of each plan tool's input this adapter reads; any other is kept in the events' source ``meta``.
_INPUT_READ: Mapping[str, frozenset[str]] = {
    "TodoWrite": frozenset({"todos"}),
    "ExitPlanMode": frozenset({"plan"}),
    "TaskCreate": frozenset({"taskId", "subject", "description", "status", "owner", "activeForm"}),
    "TaskUpdate": frozenset({"taskId", "subject", "description", "status", "owner", "activeForm"}),
}


def _meta(record: JsonObject, name: str, call: JsonObject | None) -> Mapping[str, Any] | None:
    """What a plan call's line leaves unread (`metadata`): the keys of its input this adapter does not read
    (as ``tool_input.<key>``) and, on a line of plantrail's hook journal, the hook payload's own unread fields."""
    from .metadata import marked_meta

    read = _INPUT_READ.get(name, frozenset())
    unread = {f"tool_input.{key}": value for key, value in (call or {}).items() if key not in read}
    mark = object_field(record, "plantrail")
    if mark is None and not unread:
        return None
    if mark is not None and text_field(mark, "adapter") is not None:
        return marked_meta(mark, unread)  # a hook journal's line: its mark names the adapter
    return marked_meta(mark, unread, adapter=FORMAT, version=ADAPTER_VERSION)


def parse(path: Path) -> Transcript:
    """Read a Claude Code transcript into its plan observations, in file order."""
    tally = Tally()
    reader = new_reader(path)
    for number, record in json_lines(path, tally):
        read_record(reader, tally, number, record)
    tally.require(FORMAT, path)
    return tally.transcript(FORMAT, path, reader.session_id, reader.observations)


def new_reader(path: str | os.PathLike[str]) -> _Reader:
    """The parser's state at the start of the transcript at ``path`` (for reading it a line at a time)."""
    return _Reader(file_agent=_file_agent(path))


def read_record(reader: _Reader, tally: Tally, number: int, record: JsonObject) -> None:
    """Read line ``number`` into ``reader`` (``reader.observations`` grows; a call's answer completes it)."""
    if not is_record(record):
        tally.skip(number, "unknown_record_type")
        return
    tally.recognized += 1
    reader.session_id = reader.session_id or text_field(record, "sessionId")
    if record.get("type") == "assistant":
        if not _read_calls(reader, number, record):
            tally.skip(number, "malformed_plan_update")
    elif record.get("type") == "user":
        reader.said = (None, None)
        _read_user(reader, number, record)
    elif record.get("type") == "system":
        reader.unbilled = add_usage(reader.unbilled, _turn_usage(object_field(record, "plantrail")))


def _turn_usage(mark: JsonObject | None) -> Usage | None:
    """The usage of the turn a line of plantrail's hook journal marks as ended (a Stop: ``turn.usage``)."""
    spent = object_field(object_field(mark, "turn"), "usage")
    if spent is None:
        return None
    turns, tokens, cost = spent.get("turns"), spent.get("tokens"), spent.get("cost_usd", 0.0)
    if not (_count(turns) and _count(tokens)) or isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return None
    assert isinstance(turns, int) and isinstance(tokens, int)
    return Usage(turns=turns, tokens=tokens, cost_usd=float(cost) if cost >= 0 else 0.0)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _file_agent(path: str | os.PathLike[str]) -> str:
    """The agent a transcript file is by its name (``Path(path).name`` and its parent's, without pathlib)."""
    folder, name = os.path.split(pure_path(os.fspath(path)))
    found = re.search(_SUBAGENT_FILE, name)
    if found is None and os.path.basename(folder) == "subagents":
        found = re.match(_SUBAGENT_IN_FOLDER, name)
    return LEAD if found is None else f"subagent:{found['id']}"


def _agent(record: JsonObject, file_agent: str) -> str:
    agent_id = text_field(record, "agentId")
    if agent_id is not None:
        return f"subagent:{agent_id}"
    if record.get("isSidechain") is True and file_agent == LEAD:
        return "subagent"
    return file_agent


def _blocks(record: JsonObject, block_type: str) -> list[JsonObject]:
    content = list_field(object_field(record, "message"), "content")
    return [block for block in objects(content) if block.get("type") == block_type]


def _read_calls(reader: _Reader, number: int, record: JsonObject) -> bool:
    """Append the line's plan calls, awaiting their results; False when one of them is malformed.

    The line's text blocks, in order with its calls, become the explanation of the calls after them.
    """
    well_formed = True
    content = list_field(object_field(record, "message"), "content")
    for block in objects(content):
        words = text_field(block, "text") if block.get("type") == "text" else None
        if words is not None and words.strip():
            reader.said = (clip(words), number)
        name = text_field(block, "name") if block.get("type") == "tool_use" else None
        if name not in PLAN_TOOLS:
            continue
        origin = _Origin(
            line=number,
            native_id=text_field(block, "id"),
            timestamp=text_field(record, "timestamp"),
            agent=_agent(record, reader.file_agent),
            context=reader.context[0],
            context_line=reader.context[1],
            explanation=reader.said[0],
            explanation_line=reader.said[1],
            prompts=reader.prompts,
            meta=_meta(record, name or "", object_field(block, "input")),
            turns=reader.unbilled,
        )
        reader.unbilled = None  # the next result this call's update gives reports them
        observation = _observation(name, object_field(block, "input"), origin)
        if observation is None:
            well_formed = False
            continue
        if origin.native_id is not None:
            reader.awaiting[origin.native_id] = len(reader.observations)
        reader.observations.append(observation)
    return well_formed


def _observation(name: str | None, call: JsonObject | None, origin: _Origin) -> Observation | None:
    if call is None:
        return None
    if name == "TodoWrite":
        return _snapshot(call, origin)
    if name == "ExitPlanMode":
        return _plan_mode(call, origin)
    return TaskEvent(
        line=origin.line,
        native_id=origin.native_id,
        timestamp=origin.timestamp,
        kind="created" if name == "TaskCreate" else "updated",
        task_id=text_field(call, "taskId"),
        subject=text_field(call, "subject"),
        description=text_field(call, "description"),
        status_from=None,
        status_to=None,
        agent=origin.agent,
        context=origin.context,
        context_line=origin.context_line,
        explanation=origin.explanation,
        explanation_line=origin.explanation_line,
        requested_status=text_field(call, "status"),
        owner=text_field(call, "owner"),
        active_form=text_field(call, "activeForm"),
        prompts=origin.prompts,
        meta=origin.meta,
        turns=origin.turns,
    )


def _snapshot(call: JsonObject, origin: _Origin) -> ListSnapshot | None:
    items = todo_items(call.get("todos"))
    return None if items is None else _listed(origin, items, "TodoWrite")


def _plan_mode(call: JsonObject, origin: _Origin) -> ListSnapshot | None:
    """An ExitPlanMode call: its Markdown plan's items (`markdown_plan`); None when it holds no plan."""
    from .markdown_plan import plan_items  # its patterns are compiled only for a session that plans in Markdown

    plan = text_field(call, "plan")
    items = plan_items(plan) if plan is not None else ()
    return _listed(origin, items, "ExitPlanMode") if items else None


def _listed(origin: _Origin, items: tuple[TodoItem, ...], tool: str) -> ListSnapshot:
    """The whole list a call holds, with where it came from."""
    return ListSnapshot(
        line=origin.line,
        native_id=origin.native_id,
        timestamp=origin.timestamp,
        items=items,
        tool=tool,
        explanation=origin.explanation,
        explanation_line=origin.explanation_line,
        context=origin.context,
        context_line=origin.context_line,
        agent=origin.agent,
        prompts=origin.prompts,
        meta=origin.meta,
        turns=origin.turns,
    )


def _read_user(reader: _Reader, number: int, record: JsonObject) -> None:
    results = _blocks(record, "tool_result")
    structured = object_field(record, "toolUseResult") if len(results) == 1 else None
    for block in results:
        index = reader.awaiting.pop(text_field(block, "tool_use_id") or "", None)
        if index is not None:
            answered = _resolve(reader.observations[index], number, block, structured)
            if isinstance(answered, ListSnapshot) and answered.tool == "ExitPlanMode":
                answered = replace(answered, result_timestamp=text_field(record, "timestamp"))
            reader.observations[index] = _proposal(answered)
            if isinstance(answered, ListSnapshot) and answered.proposed is not None:  # the user's edits: their
                edited = replace(answered, line=number, timestamp=text_field(record, "timestamp"), proposed=None)
                reader.observations.append(edited)  # own update, at the answer
        answer = _result_text(block)
        refused = re.search(_REJECTED, answer) if _REFUSAL in answer else None
        if refused is not None:  # the person refused a tool call and said why: their words, as a message
            reader.context = (clip(refused["words"]), number)
            reader.prompts = with_prompt(reader.prompts, refused["words"], number)
    prompt = _prompt(record)
    if prompt is not None:
        reader.context = (clip(prompt), number)
        reader.prompts = with_prompt(reader.prompts, prompt, number)
    elif reader.prompts and reader.prompts[-1][1] == number - 1:
        _join_expansion(reader, record)


def _join_expansion(reader: _Reader, record: JsonObject) -> None:
    """Join the prompt a slash command expands to (a meta line right after the command's) to the command, so
    that the goal rule reads what the command asks for (``goal``)."""
    command, line = reader.prompts[-1]
    if record.get("isMeta") is not True or "<command-name>" not in command:
        return
    sent = slash_command(command)
    if sent is None or sent.body:  # not a command, or its expansion is joined already
        return
    texts = [text_field(object_field(record, "message"), "content")]
    texts += [text_field(block, "text") for block in _blocks(record, "text")]
    expansion = "\n".join(text for text in texts if text and text.strip())
    if expansion:
        joined = f"{command}\n\n{expansion}"
        reader.prompts = (*reader.prompts[:-1], (clip(joined, PROMPT_LIMIT), line))


def _prompt(record: JsonObject) -> str | None:
    """The words a person sent in a `user` line; None for tool results, meta and command output."""
    if record.get("isMeta") is True or record.get("isCompactSummary") is True:
        return None
    content = object_field(record, "message")
    texts = [text_field(content, "content")] + [text_field(block, "text") for block in _blocks(record, "text")]
    words = [text for text in texts if text and text.strip() and not text.lstrip().startswith(_NOT_USER_WORDS)]
    return "\n".join(words) if words else None


def _resolve(observation: Observation, number: int, block: JsonObject, structured: JsonObject | None) -> Observation:
    failed = block.get("is_error") is True or (structured is not None and structured.get("success") is False)
    outcome: ToolOutcome = "error" if failed else "ok"
    if isinstance(observation, ListSnapshot) and observation.tool == "ExitPlanMode":
        return _plan_verdict(replace(observation, result=outcome, result_line=number), block, structured)
    if isinstance(observation, ListSnapshot):
        prior = todo_items(structured.get("oldTodos")) if structured is not None else None
        return replace(observation, result=outcome, result_line=number, prior_items=prior)
    answered = replace(observation, result=outcome, result_line=number)
    if failed:
        return answered
    if answered.kind == "created":
        return replace(answered, task_id=_created_id(block, structured))
    return _status_change(answered, block, structured)


def _plan_verdict(snapshot: ListSnapshot, block: JsonObject, structured: JsonObject | None) -> ListSnapshot:
    """An answered ExitPlanMode: the user's decision on the plan the call asks them to approve (granted as
    proposed, granted with their edits: the plan then is theirs, or denied, with their words when the refusal
    quotes them); an answer that is neither (a tool error) is left as the tool's rejection."""
    text = _result_text(block)
    if snapshot.result == "error":
        if _REFUSAL not in text:
            return snapshot
        refused = re.search(_REJECTED, text)
        said = None if refused is None else clip(refused["words"]).strip()
        why = "the user rejected the plan" if said else "the user rejected the plan without saying why"
        return replace(snapshot, decision="denied", decision_why=why, decision_words=said or None)
    if _APPROVED not in text:
        return snapshot
    edited = re.search(_EDITED, text)
    final = text_field(structured, "plan") or (edited["plan"] if edited is not None else None)
    if edited is None:
        return replace(snapshot, decision="granted", decision_why="the user approved the plan")
    from .markdown_plan import plan_items

    items = plan_items(final) if final is not None else ()
    verdict = "the user approved the plan with their edits"
    return replace(snapshot, items=items or snapshot.items, proposed=snapshot.items, user_verdict=verdict)


def _proposal(observation: Observation) -> Observation:
    """What the agent proposed in an ExitPlanMode the user approved with edits, granted with the note that the
    user edited it (else the observation itself)."""
    if not isinstance(observation, ListSnapshot) or observation.proposed is None:
        return observation
    return replace(
        observation,
        items=observation.proposed,
        proposed=None,
        user_verdict=None,
        decision="granted",
        decision_why=observation.user_verdict,
    )


def _result_text(block: JsonObject) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(text_field(part, "text") or "" for part in objects(list_field(block, "content")))


def _created_id(block: JsonObject, structured: JsonObject | None) -> str | None:
    task_id = text_field(object_field(structured, "task"), "id")
    found = re.match(_CREATED_TEXT, _result_text(block))
    return task_id or (found["id"] if found else None)


def _status_change(event: TaskEvent, block: JsonObject, structured: JsonObject | None) -> TaskEvent:
    fields = _updated_fields(block, structured)
    event = replace(event, updated_fields=fields)
    change = object_field(structured, "statusChange")
    if change is not None:
        return replace(
            event, status_from=text_field(change, "from"), status_to=text_field(change, "to"), status_source="result"
        )
    if fields is not None and "status" in fields and event.requested_status is not None:
        return replace(event, status_to=event.requested_status, status_source="request")
    return event


def _updated_fields(block: JsonObject, structured: JsonObject | None) -> tuple[str, ...] | None:
    listed = list_field(structured, "updatedFields")
    if listed is not None:
        return tuple(name for name in listed if isinstance(name, str))
    found = re.match(_UPDATED_TEXT, _result_text(block))
    if found is None:
        return None
    return tuple(name.strip() for name in found["fields"].split(",") if name.strip())
