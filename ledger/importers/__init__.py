"""Transcript importers, parsing half: agent transcripts to ordered, normalized plan observations.

    parse_transcript(path, format=None) -> Transcript

Supported formats: Claude Code (TodoWrite and the 2.1 task tools, lead and subagent files), Codex
rollouts (update_plan), OpenCode exports (todowrite) and Cline histories (task_progress). Nothing
here knows about the ledger; mapping observations to plan events is the importer's other half.
"""

from .detect import detect_format
from .errors import ErrorCode, TranscriptError
from .model import (
    ListSnapshot,
    Observation,
    Status,
    TaskEvent,
    TodoItem,
    ToolOutcome,
    Transcript,
)
from .parse import FORMATS, parse_transcript

__all__ = [
    "FORMATS",
    "ErrorCode",
    "ListSnapshot",
    "Observation",
    "Status",
    "TaskEvent",
    "TodoItem",
    "ToolOutcome",
    "Transcript",
    "TranscriptError",
    "detect_format",
    "parse_transcript",
]
