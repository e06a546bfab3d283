"""Synthetic plantrail-shaped JSONL logs: ~400-byte events ending in a sha256 hash chain."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson

GENESIS = b"0" * 64
_KINDS = ("plan.revised", "step.started", "step.completed", "tool.called", "note.added")


def make_lines(n: int, *, line_bytes: int = 400) -> list[bytes]:
    """Return n newline-terminated event lines of about line_bytes each, hash-chained."""
    lines: list[bytes] = []
    prev = GENESIS
    for seq in range(n):
        body = _body(seq, line_bytes)
        digest = hashlib.sha256(prev + body).hexdigest().encode()
        lines.append(body[:-1] + b',"prev":"' + prev + b'","h":"' + digest + b'"}\n')
        prev = digest
    return lines


def _body(seq: int, line_bytes: int) -> bytes:
    """One event object without its chain suffix, padded so the full line is ~line_bytes."""
    event = {
        "seq": seq,
        "ts": f"2025-01-01T00:{seq // 60 % 60:02d}:{seq % 60:02d}.{seq % 1000:03d}000Z",
        "run": "run-0001",
        "type": _KINDS[seq % len(_KINDS)],
        "plan": f"plan-{seq % 7}",
        "version": seq // 50 + 1,
        "payload": {"step": f"step-{seq % 97}", "status": "ok", "note": ""},
    }
    suffix = len(',"prev":"","h":""\n') + 128  # the body's own "}" closes the line
    pad = max(0, line_bytes - len(orjson.dumps(event)) - suffix)
    event["payload"]["note"] = "x" * pad  # type: ignore[index]
    return orjson.dumps(event)


def write_log(path: Path, lines: list[bytes]) -> Path:
    """Write lines to path via a temp file and rename (no fsync), and return the path."""
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(b"".join(lines))
    partial.replace(path)
    return path
