"""The one error the transcript importers raise.

    TranscriptError                 (code, message, line)
      code NOT_A_TRANSCRIPT         the file is no transcript of a known (or of the requested) format
      code UNKNOWN_FORMAT           a format name that no parser handles
      code EMPTY_TRANSCRIPT         the file holds nothing but whitespace
      code TRANSCRIPT_UNREADABLE    the file cannot be opened or read (I/O)

A line that a parser does not understand is never an error: it is skipped and counted
(`Transcript.skipped_reasons`).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ErrorCode", "TranscriptError"]

ErrorCode = Literal["NOT_A_TRANSCRIPT", "UNKNOWN_FORMAT", "EMPTY_TRANSCRIPT", "TRANSCRIPT_UNREADABLE"]


class TranscriptError(Exception):
    """A transcript that cannot be parsed at all, with a stable machine code."""

    code: ErrorCode
    message: str
    line: int | None

    def __init__(self, code: ErrorCode, message: str, line: int | None = None) -> None:
        self.code = code
        self.message = message
        self.line = line
        super().__init__(message if line is None else f"{message} (line {line})")
