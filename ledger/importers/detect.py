"""Format detection: which known transcript format a file is, from its first records.

A JSONL transcript is recognized from the first of its first lines that is a record of a known
format (Claude Code, Codex of either shape, a Gemini CLI session header). A file whose first line opens a
JSON value without closing it is read as one JSON document, which may be an OpenCode export, a Cline
history or a Gemini CLI chat session. A file that is not JSON at all may be a Markdown export: a Gemini
CLI `/chat share` or an OpenCode `/export`, told apart by their section and tool markers. Anything else (a
plantrail log, unrelated JSON or text, a binary file) is not a transcript.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import orjson

from . import claude_code, cline, codex, gemini, opencode, opencode_markdown
from ._records import open_transcript
from .errors import transcript_error

__all__ = ["detect_format", "ensure_not_empty"]

SNIFF_LINES = 50
_CHUNK = 1 << 16


def ensure_not_empty(path: Path) -> None:
    """Refuse a file that holds nothing but whitespace."""
    with open_transcript(path) as handle:
        while chunk := handle.read(_CHUNK):
            if chunk.strip():
                return
    raise transcript_error("EMPTY_TRANSCRIPT", f"{path} is empty")


def detect_format(path: Path) -> str:
    """The name of the transcript format of `path`, or NOT_A_TRANSCRIPT."""
    with open_transcript(path) as handle:
        lines = [line for line in islice(handle, SNIFF_LINES) if line.strip()]
    values = [_loads(line) for line in lines]
    for value in values:
        found = _line_format(value)
        if found is not None:
            return found
    if lines and values[0] is None and lines[0].lstrip()[:1] in (b"{", b"["):
        with open_transcript(path) as handle:
            found = _document_format(_loads(handle.read()))
        if found is not None:
            return found
    if lines and all(value is None for value in values):
        found = _markdown_format(b"".join(lines).decode("utf-8", "replace"))
        if found is not None:
            return found
    raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not a transcript of a known format")


def _loads(raw: bytes) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _line_format(value: object) -> str | None:
    if isinstance(value, dict):
        if codex.is_record(value):
            return codex.FORMAT
        if claude_code.is_record(value):
            return claude_code.FORMAT
        if gemini.is_header(value) and "messages" not in value:
            return gemini.JSONL_FORMAT
    return _document_format(value)


def _markdown_format(text: str) -> str | None:
    if opencode_markdown.is_export(text):
        return opencode_markdown.FORMAT
    if gemini.is_share(text):
        return gemini.SHARE_FORMAT
    return None


def _document_format(value: object) -> str | None:
    if opencode.is_document(value):
        return opencode.FORMAT
    if cline.is_document(value):
        return cline.FORMAT
    if gemini.is_document(value):
        return gemini.FORMAT
    return None
