"""The entry point: a transcript file, of a given or detected format, to a `Transcript`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from . import acp, claude_code, cline, codex, gemini, opencode, opencode_markdown
from .detect import detect_format, ensure_not_empty
from .errors import transcript_error
from .model import Transcript

__all__ = ["ADAPTER_VERSIONS", "ALIASES", "FORMATS", "parse_transcript"]

_PARSERS: Mapping[str, Callable[[Path], Transcript]] = {
    claude_code.FORMAT: claude_code.parse,
    codex.FORMAT: codex.parse,
    opencode.FORMAT: opencode.parse,
    cline.FORMAT: cline.parse,
    gemini.FORMAT: gemini.parse,
    gemini.JSONL_FORMAT: gemini.parse_jsonl,
    gemini.SHARE_FORMAT: gemini.parse_share,
    opencode_markdown.FORMAT: opencode_markdown.parse,
    acp.FORMAT: acp.parse,
}
_ALIASES: Mapping[str, str] = {
    "claude-code-tasks": claude_code.FORMAT,
    "claude-code-plan-mode": claude_code.FORMAT,  # ExitPlanMode
    "codex-plan-mode": codex.FORMAT,  # item_completed Plan items and <proposed_plan> blocks
    "codex-legacy": codex.FORMAT,  # {"record_type": "state"} rollouts without the payload wrapper
    "cline-text": cline.FORMAT,  # older Cline: <task_progress> inside the assistant's text
}

#: Each dialect adapter's version (each module's ``ADAPTER_VERSION``), recorded in every plan version it imports;
#: raised whenever what an adapter reads from a transcript, or how it is mapped, changes (docs/importers.md lists
#: what each version does).
ADAPTER_VERSIONS: Mapping[str, int] = {
    claude_code.FORMAT: claude_code.ADAPTER_VERSION,
    codex.FORMAT: codex.ADAPTER_VERSION,
    opencode.FORMAT: opencode.ADAPTER_VERSION,
    cline.FORMAT: cline.ADAPTER_VERSION,
    gemini.FORMAT: gemini.ADAPTER_VERSION,
    gemini.JSONL_FORMAT: gemini.ADAPTER_VERSION,
    gemini.SHARE_FORMAT: gemini.SHARE_ADAPTER_VERSION,
    opencode_markdown.FORMAT: opencode_markdown.ADAPTER_VERSION,
    acp.FORMAT: acp.ADAPTER_VERSION,
}

FORMATS: tuple[str, ...] = tuple(_PARSERS)
"""The parsers' format names; `parse_transcript` also takes each dialect's own name (ALIASES), read by the
parser of its file format, which reads every dialect its files hold."""
ALIASES: Mapping[str, str] = _ALIASES


def parse_transcript(path: str | os.PathLike[str], format: str | None = None) -> Transcript:
    """Parse a transcript file into its plan observations, detecting its format when none is given.

    Raises TranscriptError: UNKNOWN_FORMAT, EMPTY_TRANSCRIPT, NOT_A_TRANSCRIPT or TRANSCRIPT_UNREADABLE.
    """
    source = Path(path)
    parser = _parser(format)
    try:
        ensure_not_empty(source)
        return (parser or _PARSERS[detect_format(source)])(source)
    except OSError as exc:
        raise transcript_error("TRANSCRIPT_UNREADABLE", f"cannot read {source}: {exc.strerror or exc}") from exc


def _parser(format: str | None) -> Callable[[Path], Transcript] | None:
    if format is None:
        return None
    parser = _PARSERS.get(_ALIASES.get(format, format))
    if parser is None:
        known = ", ".join((*FORMATS, *_ALIASES))
        raise transcript_error("UNKNOWN_FORMAT", f"unknown transcript format {format!r} (known: {known})")
    return parser
