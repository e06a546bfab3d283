"""OpenCode plugin events -> the session's hook journal, in OpenCode's own export dialect (adapter
``opencode-hooks``, version :data:`VERSION`; the plugin is ``integrations/opencode/plantrail.ts``).

The plugin forwards each bus event as one JSON line on stdin, with the project's ``directory`` added:
``{"type": "todo.updated", "properties": {"sessionID", "todos": [{content, status, priority, id?}]},
"directory"}`` (the whole list, as OpenCode's ``replaceAll`` publishes it). Several lines may come at once;
each is one payload. ``todo.updated`` is the only event recorded; any other type is refused
(HOOK_PAYLOAD_INVALID), and so is a line without ``sessionID``.

The journal is the export document OpenCode writes (``{info, messages: [{info, parts}]}``), one assistant
message with a ``todowrite`` tool part per update, rewritten whole (atomically) under the journal's lock, so
the importer's ``opencode`` parser and the one mapping read it as they read an export. Each message keeps,
under ``plantrail``, this adapter's version and the fields of the event it does not read.
"""

from __future__ import annotations

from typing import Any

import orjson

from plantrail.ledger.vocabulary.errors import error

from .claude import Payload

__all__ = ["ADAPTER", "EVENTS", "FORMAT", "VERSION", "add_update", "read_payloads"]

ADAPTER = "opencode-hooks"
VERSION = 1
FORMAT = "opencode"
EVENTS = frozenset({"todo.updated"})
PLAN_EVENTS = EVENTS


def read_payloads(raw: bytes) -> list[Payload]:
    """Each JSON line of stdin as a checked payload (HOOK_PAYLOAD_INVALID names the first bad line)."""
    payloads = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise error("HOOK_PAYLOAD_INVALID", f"line {number} is not JSON ({exc})") from None
        if not isinstance(value, dict) or value.get("type") not in EVENTS:
            kind = value.get("type") if isinstance(value, dict) else None
            raise error("HOOK_PAYLOAD_INVALID", f"line {number}: event {kind!r} is not one this hook records")
        given = value.get("properties")
        properties: dict[str, Any] = given if isinstance(given, dict) else value
        session = properties.get("sessionID")
        if not isinstance(session, str) or not session:
            raise error("HOOK_PAYLOAD_INVALID", f"line {number} names no sessionID")
        directory = value.get("directory")
        cwd = directory if isinstance(directory, str) and directory else None
        payloads.append(Payload(str(value["type"]), session, cwd, {**value, "properties": properties}))
    if not payloads:
        raise error("HOOK_PAYLOAD_INVALID", "stdin holds no event")
    return payloads


def add_update(document: dict[str, Any] | None, payload: Payload, millis: int) -> dict[str, Any]:
    """The journal document with ``payload``'s list added as the next todowrite message."""
    doc: dict[str, Any] = document if document is not None else {"info": {"id": payload.session}, "messages": []}
    messages: list[Any] = doc["messages"]
    number = len(messages) + 1
    properties = payload.fields["properties"]
    todos = properties.get("todos") if isinstance(properties.get("todos"), list) else []
    unread = {k: v for k, v in payload.fields.items() if k not in ("type", "properties", "directory")}
    unread |= {k: v for k, v in properties.items() if k not in ("sessionID", "todos")}
    part = {
        "type": "tool",
        "callID": f"todo-updated-{number}",
        "tool": "todowrite",
        "state": {"status": "completed", "input": {"todos": todos}, "time": {"start": millis}},
    }
    info = {"id": f"msg_{number}", "sessionID": payload.session, "role": "assistant", "time": {"created": millis}}
    mark = {"event": payload.event, "adapter": ADAPTER, "adapter_version": VERSION, "unread": unread}
    messages.append({"info": info, "parts": [part], "plantrail": mark})
    return doc
