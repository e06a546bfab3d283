"""Format detection: which known transcript format a file is, from its first records.

A JSONL transcript is recognized from the first of its first lines that is a record of a known
format (Claude Code, Codex of either shape, a Gemini CLI session header). A file whose first line opens a
JSON value without closing it is read as one JSON document, which may be an OpenCode export, a Cline
history or a Gemini CLI chat session. A file that is not JSON at all may be a Markdown export: a Gemini
CLI `/chat share` or an OpenCode `/export`, told apart by their section and tool markers. Anything else (a
plantrail log, unrelated JSON or text, a binary file) is not a transcript.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import islice
from pathlib import Path
from typing import Final

import orjson

from plantrail.ledger.vocabulary.errors import TranscriptError

from . import acp, claude_code, cline, codex, gemini, opencode, opencode_markdown
from ._records import JsonStream, open_transcript
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
    """The name of the transcript format of `path`, or NOT_A_TRANSCRIPT. The first lines are read one at a
    time (a long one as a stream: :func:`_sniffed`), so the sniff holds one line, never the first fifty."""
    first: tuple[bytes, bool] | None = None  # the first line's opening byte, and whether it is no JSON value
    values_seen = False
    markers: set[str] = set()
    with open_transcript(path) as handle:
        for line in islice(handle, SNIFF_LINES):
            if not line.strip():
                continue
            value = _sniffed(path, line)
            if first is None:
                first = (line.lstrip()[:1], value is None)
            found = _line_format(value)
            if found is not None:
                return found
            if value is not None:
                values_seen = True
            elif not values_seen:  # only a file of no JSON lines may be Markdown
                text = line.decode("utf-8", "replace")
                markers.update(name for name, test in _MARKDOWN_MARKERS.items() if test(text))
    if first is not None and first[1] and first[0] in (b"{", b"["):
        found = _document_format(_document_shape(path))
        if found is not None:
            return found
    if first is not None and not values_seen:
        found = _markdown_format(markers)
        if found is not None:
            return found
    raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not a transcript of a known format")


#: A sniffed line longer than this is judged as a stream (:meth:`JsonStream.shape`), not parsed whole: a
#: one-line JSON document's message array is never built to tell its format.
_PARSED_LINE = 1 << 20


def _sniffed(path: Path, line: bytes) -> object:
    """A sniffed line's JSON value (a long line's :meth:`JsonStream.shape`); None when it is no JSON value."""
    if len(line) <= _PARSED_LINE:
        return _loads(line)
    try:
        return JsonStream(path, "JSON", line).shape()
    except TranscriptError:
        return None


#: The Markdown exports' tests (:func:`opencode_markdown.is_export`, :func:`gemini.is_share`), each of one line.
_MARKDOWN_MARKERS: Final[Mapping[str, Callable[[str], bool]]] = {
    **{f"opencode-{name}": test for name, test in opencode_markdown.MARKERS.items()},
    **{f"gemini-{name}": test for name, test in gemini.SHARE_MARKERS.items()},
}


def _document_shape(path: Path) -> object:
    """What the formats' ``is_document`` judge of a whole JSON document, read as a stream (one value held at a
    time: :meth:`JsonStream.shape`); None for a file that is no JSON document."""
    try:
        return JsonStream(path, "JSON").shape()
    except TranscriptError as exc:
        if exc.code == "NOT_A_TRANSCRIPT":
            return None
        raise


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
        if acp.is_record(value):
            return acp.FORMAT
    return _document_format(value)


def _markdown_format(markers: set[str]) -> str | None:
    """The Markdown export whose tests the sniffed lines passed (as :func:`opencode_markdown.is_export` and
    :func:`gemini.is_share` judge their text)."""
    if opencode_markdown.found_export({m.removeprefix("opencode-") for m in markers}):
        return opencode_markdown.FORMAT
    if gemini.found_share({m.removeprefix("gemini-") for m in markers}):
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
