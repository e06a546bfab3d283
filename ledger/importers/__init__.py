"""Transcript importers: agent transcripts to plantrail logs.

    parse_transcript(path, format=None) -> Transcript          the parsing half (parse, model, formats)
    import_transcript(path, log, format=None) -> ImportReport  the whole import (agent_plan, mapping, importer)

Supported formats: Claude Code (TodoWrite and the 2.1 task tools, lead and subagent files), Codex
rollouts (update_plan), OpenCode exports (todowrite), Cline histories (task_progress), Gemini CLI sessions
(write_todos) and Agent Client Protocol streams saved by ``plantrail acp`` (session/update plans). The parsers
know nothing about the ledger; `agent_plan` folds their observations into the agent's whole plan after
each update, `mapping` turns those into ledger commands (the rules are in its docstring), and
`importer` writes them with the Ledger API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .detect import detect_format
    from .errors import ErrorCode, TranscriptError
    from .importer import ImportReport, import_transcript
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

#: Where each public name lives; a submodule is imported on first use, so that a caller of one parser (the
#: hooks, which run once per agent event) does not import every parser and the whole importer.
_HOMES = {
    "detect_format": ".detect",
    "ErrorCode": ".errors",
    "TranscriptError": ".errors",
    "ImportReport": ".importer",
    "import_transcript": ".importer",
    "ListSnapshot": ".model",
    "Observation": ".model",
    "Status": ".model",
    "TaskEvent": ".model",
    "TodoItem": ".model",
    "ToolOutcome": ".model",
    "Transcript": ".model",
    "FORMATS": ".parse",
    "parse_transcript": ".parse",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)


__all__ = [
    "FORMATS",
    "ErrorCode",
    "ImportReport",
    "ListSnapshot",
    "Observation",
    "Status",
    "TaskEvent",
    "TodoItem",
    "ToolOutcome",
    "Transcript",
    "TranscriptError",
    "detect_format",
    "import_transcript",
    "parse_transcript",
]
