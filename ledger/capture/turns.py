"""A Claude Code turn's usage, read at its ``Stop`` hook from the tail of the session's transcript.

    turn_usage("/home/dev/.claude/projects/-work-app/3f2a9c1e.jsonl")
    -> TurnUsage(last="b7e1...", tokens=18211, cost_usd=None)

The Stop payload names the transcript (``transcript_path``) but carries no usage; the transcript's
``assistant`` lines do (``message.usage``: ``input_tokens``, ``cache_creation_input_tokens``,
``cache_read_input_tokens``, ``output_tokens``; older builds also wrote ``costUSD``). A turn is what the
agent did since the user's last prompt, so its usage is the sum over the assistant messages after that prompt:

* **each API message once**: Claude Code writes one line per content block of a message, each repeating the
  message's usage, so a message (``message.id``) is counted once;
* **tokens** are everything the model processed or wrote: input, cache creation, cache reads and output;
  **cost** only when the transcript records one (``costUSD``), else None (never guessed);
* **only the tail is read** (:data:`TAIL` bytes): a hook must stay fast on a long session; a turn longer than
  that is counted from what the tail holds;
* the lead's lines only (a sidechain line is a subagent's, counted in its own transcript);
* a transcript that cannot be read, or is not a regular file (a FIFO is never waited on), gives no usage (the
  turn is still a turn: ``tokens`` 0).

``last`` is the uuid of the turn's last assistant line: with the payload's ``prompt_id`` (when the build
sends one) it names the turn, so a Stop delivered twice is one turn. The transcript may lag the hook (it is
written asynchronously); what it holds by then is what is counted.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import orjson

__all__ = ["TAIL", "TurnUsage", "turn_usage"]

TAIL = 512 * 1024
_TOKEN_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


class TurnUsage(NamedTuple):
    """What one turn spent: its tokens, its cost when recorded, and the uuid of its last assistant line."""

    last: str | None
    tokens: int
    cost_usd: float | None


def turn_usage(transcript: str | None) -> TurnUsage:
    """The usage of the transcript's last turn (see the module); no usage when it cannot be read."""
    lines = _tail_lines(transcript) if transcript else []
    seen: set[str] = set()
    last: str | None = None
    tokens = 0
    cost: float | None = None
    for place, raw in reversed(list(enumerate(lines))):
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(record, dict) or record.get("isSidechain") is True:
            continue
        if record.get("type") == "user" and _is_prompt(record):
            break
        if record.get("type") != "assistant":
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if last is None and isinstance(record.get("uuid"), str):
            last = record["uuid"]
        name = message.get("id")
        key = name if isinstance(name, str) else f"line-{place}"
        if key in seen:
            continue
        seen.add(key)
        tokens += _tokens(message.get("usage"))
        spent = record.get("costUSD")
        if isinstance(spent, (int, float)) and not isinstance(spent, bool) and spent >= 0:
            cost = (cost or 0.0) + float(spent)
    return TurnUsage(last, tokens, cost)


def _tail_lines(path: str) -> list[bytes]:
    """The whole lines of the file's last TAIL bytes (none when it cannot be read, or is not a regular file:
    a FIFO or a device in the transcript's place is not waited on)."""
    from plantrail.ledger.stores.files import open_regular
    from plantrail.ledger.vocabulary.errors import PlantrailError

    try:
        fd = open_regular(path, what="transcript")
    except PlantrailError:
        return []
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - TAIL)
        blob = os.pread(fd, TAIL, start)
    except OSError:
        return []
    finally:
        os.close(fd)
    lines = blob.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first is cut
    return [line for line in lines if line.strip()]


def _tokens(usage: object) -> int:
    if not isinstance(usage, dict):
        return 0
    total = 0
    for name in _TOKEN_FIELDS:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            total += value
    return total


def _is_prompt(record: dict[str, object]) -> bool:
    """Whether a user line is the person's own prompt (not a tool result, meta or command output)."""
    if record.get("isMeta") is True or record.get("isCompactSummary") is True:
        return False
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return bool(content.strip()) and not content.lstrip().startswith("<")
    if isinstance(content, list):
        return any(isinstance(b, dict) and b.get("type") == "text" for b in content) and not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
    return False
