"""The errors the transcript importers raise: one `TranscriptError` family rooted in `ledger.vocabulary.errors`.

    TranscriptError                 code, message, line (the classes live in ledger.vocabulary.errors)
      UNKNOWN_FORMAT                UnknownTranscriptFormat (a UsageError, exit 2): no parser has that name
      NOT_A_TRANSCRIPT              TranscriptRefused (Refused, exit 1): not a transcript of that format
      EMPTY_TRANSCRIPT              TranscriptRefused (Refused, exit 1): nothing but whitespace
      NO_PLAN_IN_TRANSCRIPT         TranscriptRefused (Refused, exit 1): no plan update to import
      TRANSCRIPT_UNREADABLE         TranscriptUnreadable (a StorageError, exit 4): cannot be opened or read

A file that is not a transcript is refused like a draft that does not validate (exit 1, nothing
written); a format name nobody knows is a usage error; I/O failures are storage errors. A line that
a parser does not understand is never an error: it is skipped and counted
(`Transcript.skipped_reasons`).
"""

from __future__ import annotations

from typing import Literal

from plantrail.ledger.vocabulary.errors import TranscriptError, error

__all__ = ["ErrorCode", "TranscriptError", "transcript_error"]

ErrorCode = Literal[
    "NOT_A_TRANSCRIPT", "UNKNOWN_FORMAT", "EMPTY_TRANSCRIPT", "NO_PLAN_IN_TRANSCRIPT", "TRANSCRIPT_UNREADABLE"
]


def transcript_error(code: ErrorCode, message: str, line: int | None = None) -> TranscriptError:
    """The TranscriptError of the right class (and exit code) for `code`."""
    built = error(code, message if line is None else f"{message} (line {line})", line=line)
    assert isinstance(built, TranscriptError)  # every transcript code maps to a TranscriptError class
    return built
