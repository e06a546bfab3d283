"""The Agent Client Protocol's plan stream: JSON-RPC messages between an editor and an agent -> plan updates.

ACP (JSON-RPC 2.0, one message a line) carries the agent's plan in a ``session/update`` notification:

* ``{"sessionUpdate": "plan", "entries": [{content, priority, status}, ...]}`` (protocol v1): the session's
  one plan, the whole list each time;
* ``{"sessionUpdate": "plan_update", "plan": {"type": "items", "planId", "entries"}}`` (v2): one of the
  session's plans, by its ``planId``, the whole list each time; ``{"type": "markdown", "planId", "content"}``
  is a plan written as Markdown (no items); ``{"type": "file", ...}`` and ``plan_removed`` name no items.

Each plan is its own stream of updates, keyed ``<sessionId>`` (v1) or ``<sessionId>.<planId>`` (v2). An entry's
status is ``pending``, ``in_progress`` or ``completed``; its ``priority`` (high, medium, low) is kept as a note.
The user's ``session/prompt`` text before an update is what the goal rule reads; the agent's name comes from
its ``initialize`` answer (``agentInfo``), the session's working directory from the editor's ``session/new`` or
``session/load`` (a new session's id is in the agent's answer to it).

A saved stream (``plantrail acp --save-stream FILE``) holds one message a line: ``{"ts": <when it was relayed>,
"from": "editor" | "agent", "message": <the JSON-RPC message>}``, or ``"text"`` for a line that was no JSON; its
line N is the N-th message relayed. Importing it records its first plan (later plans are counted as skipped
``another_plan``, a Markdown plan as ``markdown_plan``); the live recorder records every plan
(:mod:`plantrail.ledger.capture.acp_recorder`). Both read the messages here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from ._records import JsonObject, Tally, json_lines, with_prompt
from .model import ListSnapshot, Status, TodoItem, Transcript

__all__ = [
    "ADAPTER_VERSION",
    "FORMAT",
    "Found",
    "Markdown",
    "Reader",
    "Sender",
    "is_record",
    "parse",
    "read_message",
    "stream_line",
]

FORMAT = "acp"
#: This adapter's version, recorded in every plan version it imports (see ``parse.ADAPTER_VERSIONS``).
ADAPTER_VERSION = 1
TOOL = "session/update plan"
TOOL_V2 = "session/update plan_update"

Sender = Literal["editor", "agent"]
_STATUSES: Mapping[object, Status] = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}


class Markdown(msgspec.Struct, frozen=True):
    """A plan the agent wrote as Markdown (v2 ``plan_update`` of type ``markdown``): no items, its text."""

    line: int
    content: str


class Found(msgspec.Struct, frozen=True):
    """A plan update of the plan ``key`` (``<sessionId>`` or ``<sessionId>.<planId>``), in session ``session``."""

    key: str
    session: str
    update: ListSnapshot | Markdown


class Reader(msgspec.Struct):
    """What the stream said so far that a later message needs (plain data)."""

    agent: str | None = None
    """``acp:<name>`` from the agent's ``initialize`` answer (with its version when given)."""
    asked: dict[str, str] = msgspec.field(default_factory=dict)
    """The editor's requests awaiting the agent's answer: JSON-RPC id -> the working directory it names
    (``session/new``), or "" for ``initialize``."""
    cwd: dict[str, str] = msgspec.field(default_factory=dict)
    """Each session's working directory."""
    prompts: dict[str, tuple[tuple[str, int], ...]] = msgspec.field(default_factory=dict)
    """The user's prompts of each session, with the line of each (the first PROMPTS_KEPT)."""


def stream_line(sender: Sender, raw: bytes, ts: str) -> bytes:
    """The saved stream's line of one message (``raw`` without its newline) relayed at ``ts``."""
    import orjson

    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return orjson.dumps({"ts": ts, "from": sender, "text": raw.decode("utf-8", "replace")}) + b"\n"
    return orjson.dumps({"ts": ts, "from": sender, "message": message}) + b"\n"


def is_record(value: object) -> bool:
    """Whether a JSONL line is a saved ACP stream's line."""
    if not isinstance(value, dict) or value.get("from") not in ("editor", "agent"):
        return False
    message = value.get("message")
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0"


def read_message(reader: Reader, line: int, sender: Sender, message: object, ts: str | None = None) -> list[Found]:
    """The plan updates one message carries (``line`` its place in the stream, ``ts`` when it was relayed, if
    known), noting in ``reader`` what later messages need."""
    if not isinstance(message, dict):
        return []
    if sender == "editor":
        _from_editor(reader, line, message)
        return []
    _answer(reader, message)
    params = message.get("params")
    if message.get("method") != "session/update" or not isinstance(params, dict):
        return []
    session, update = params.get("sessionId"), params.get("update")
    if not isinstance(session, str) or not isinstance(update, dict):
        return []
    return _plan(reader, line, session, update, ts)


def _from_editor(reader: Reader, line: int, message: JsonObject) -> None:
    method, params, ident = message.get("method"), message.get("params"), message.get("id")
    params = params if isinstance(params, dict) else {}
    cwd = params.get("cwd")
    if method == "initialize" and ident is not None:
        reader.asked[_id(ident)] = ""
    elif method == "session/new" and ident is not None and isinstance(cwd, str):
        reader.asked[_id(ident)] = cwd
    elif method == "session/load" and isinstance(cwd, str) and isinstance(params.get("sessionId"), str):
        reader.cwd[str(params["sessionId"])] = cwd
    elif method == "session/prompt" and isinstance(params.get("sessionId"), str):
        session = str(params["sessionId"])
        text = _prompt_text(params.get("prompt"))
        if text:
            reader.prompts[session] = with_prompt(reader.prompts.get(session, ()), text, line)


def _answer(reader: Reader, message: JsonObject) -> None:
    ident = message.get("id")
    if ident is None or "method" in message:
        return
    asked = reader.asked.pop(_id(ident), None)
    result = message.get("result")
    if asked is None or not isinstance(result, dict):
        return
    if asked == "":
        info = result.get("agentInfo")
        name = info.get("name") if isinstance(info, dict) else None
        if isinstance(name, str) and name.strip():
            version = info.get("version") if isinstance(info, dict) else None
            reader.agent = f"acp:{name.strip()}" + (f" {version}" if isinstance(version, str) and version else "")
    elif isinstance(result.get("sessionId"), str):
        reader.cwd[str(result["sessionId"])] = asked


def _plan(reader: Reader, line: int, session: str, update: JsonObject, ts: str | None) -> list[Found]:
    kind = update.get("sessionUpdate")
    if kind == "plan":
        items = _items(update.get("entries"))
        return [] if items is None else [Found(session, session, _snapshot(reader, line, session, items, TOOL, ts))]
    plan = update.get("plan")
    if kind != "plan_update" or not isinstance(plan, dict) or not isinstance(plan.get("planId"), str):
        return []
    key = f"{session}.{plan['planId']}"
    if plan.get("type") == "items":
        items = _items(plan.get("entries"))
        return [] if items is None else [Found(key, session, _snapshot(reader, line, session, items, TOOL_V2, ts))]
    content = plan.get("content")
    if plan.get("type") == "markdown" and isinstance(content, str) and content.strip():
        return [Found(key, session, Markdown(line, content))]
    return []


def _snapshot(
    reader: Reader, line: int, session: str, items: tuple[TodoItem, ...], tool: str, ts: str | None
) -> ListSnapshot:
    prompts = reader.prompts.get(session, ())
    meta = {"adapter": FORMAT, "adapter_version": ADAPTER_VERSION}
    if reader.agent is not None:
        meta["agent"] = reader.agent.split(" ")[0]
    return ListSnapshot(
        line=line,
        native_id=None,
        timestamp=ts,
        items=items,
        tool=tool,
        context=prompts[-1][0] if prompts else None,
        context_line=prompts[-1][1] if prompts else None,
        result="ok",
        prompts=prompts,
        meta=meta,
    )


def _items(entries: object) -> tuple[TodoItem, ...] | None:
    """The entries as items (an entry that is no object, or has no text, is left out); None when no list."""
    if not isinstance(entries, list):
        return None
    items = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            continue
        priority = entry.get("priority")
        items.append(
            TodoItem(
                text=str(entry["content"]),
                status=_STATUSES.get(entry.get("status"), "pending"),
                priority=priority if isinstance(priority, str) else None,
            )
        )
    return tuple(items)


def _prompt_text(blocks: object) -> str:
    """The text blocks of a prompt, joined."""
    if not isinstance(blocks, list):
        return ""
    parts = [
        b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(parts).strip()


def _id(ident: object) -> str:
    """A JSON-RPC id as a key (1 and "1" are different ids)."""
    return f"{type(ident).__name__}:{ident}"


def parse(path: Path) -> Transcript:
    """Read a saved ACP stream into the updates of its first plan (see the module)."""
    tally = Tally()
    reader = Reader()
    first: str | None = None
    observations: list[ListSnapshot] = []
    for number, record in json_lines(path, tally):
        sender = record.get("from")
        if sender not in ("editor", "agent"):
            tally.skip(number, "unknown_record_type")
            continue
        tally.recognized += 1
        if "message" not in record:
            tally.skip(number, "not_json_rpc")
            continue
        stamp = record.get("ts")
        ts = stamp if isinstance(stamp, str) else None
        for found in read_message(reader, number, "editor" if sender == "editor" else "agent", record["message"], ts):
            first = first or found.key
            if found.key != first:
                tally.skip(number, "another_plan")
            elif isinstance(found.update, Markdown):
                tally.skip(number, "markdown_plan")
            else:
                observations.append(found.update)
    tally.require(FORMAT, path)
    return tally.transcript(FORMAT, path, None if first is None else run_id(first), observations)


def run_id(key: str) -> str:
    """The run id of the plan ``key``: ``acp-<key>``, hashed when that is no valid run id."""
    import hashlib

    from plantrail.ledger.vocabulary.errors import PlantrailError
    from plantrail.ledger.vocabulary.plan import check_id

    candidate = f"acp-{key}"
    try:
        check_id(candidate, "run id")
    except PlantrailError:
        return "acp-" + hashlib.sha256(key.encode()).hexdigest()[:32]
    return candidate
