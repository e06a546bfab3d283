"""How large an input plantrail reads may be: one cap per kind of input, each overridable by an environment
variable (the table in docs/limits.md).

A cap bounds what one command reads into memory; an input over its cap is refused with INPUT_TOO_LARGE after
reading at most the cap plus one byte (a regular file is refused from its size alone). A log's lines are
bounded by the line limit of the format instead (``codec.MAX_LINE_BYTES``), and a log itself is streamed.
"""

from __future__ import annotations

import os
import re
from typing import Final, NamedTuple

from plantrail.ledger.vocabulary.errors import error

__all__ = ["DRAFT", "HOOK_PAYLOAD", "KEY_FILE", "LIMITS", "PACK", "PATCH", "PAYLOAD", "TRANSCRIPT", "Limit"]

_BYTES = re.compile(r"[0-9]{1,19}")
_MIB: Final = 1024 * 1024


class Limit(NamedTuple):
    """The cap on one kind of input: what it is (for messages), its default in bytes, and its variable."""

    what: str
    default: int
    env: str

    def cap(self) -> int:
        """The cap in force: ``$env`` when set (ASCII digits, bytes), else the default; USAGE when malformed."""
        raw = os.environ.get(self.env)
        if raw is None or raw == "":
            return self.default
        if _BYTES.fullmatch(raw) is None:
            raise error("USAGE", f"${self.env} must be a number of bytes (ASCII digits), not {raw!r}")
        return int(raw)


#: A plan draft given to create or replan (the same size as the largest event, which records it).
DRAFT: Final = Limit("draft", 16 * _MIB, "PLANTRAIL_MAX_DRAFT_BYTES")
#: A plan patch given to replan.
PATCH: Final = Limit("patch", 16 * _MIB, "PLANTRAIL_MAX_PATCH_BYTES")
#: A result's evidence record given to complete, block, fail or criterion (--report).
REPORT: Final = Limit("report", 16 * _MIB, "PLANTRAIL_MAX_REPORT_BYTES")
#: A checkpoint key file.
KEY_FILE: Final = Limit("key file", 64 * 1024, "PLANTRAIL_MAX_KEY_FILE_BYTES")
#: An agent transcript given to import.
TRANSCRIPT: Final = Limit("transcript", 1024 * _MIB, "PLANTRAIL_MAX_TRANSCRIPT_BYTES")

#: One agent hook payload on stdin (``plantrail hook AGENT``): a plan tool's call and answer, far below it.
HOOK_PAYLOAD: Final = Limit("hook payload", 4 * _MIB, "PLANTRAIL_MAX_HOOK_PAYLOAD_BYTES")

#: A payload a run keeps beside its records (stored by a writer, read back by a reader).
PAYLOAD: Final = Limit("payload", 64 * _MIB, "PLANTRAIL_MAX_PAYLOAD_BYTES")

#: An evidence pack given to verify --pack: the zip file, and everything its members expand to.
PACK: Final = Limit("evidence pack", 1024 * _MIB, "PLANTRAIL_MAX_PACK_BYTES")
#: Every cap, in the order docs/limits.md lists them.
LIMITS: Final = (DRAFT, PATCH, REPORT, KEY_FILE, TRANSCRIPT, HOOK_PAYLOAD, PAYLOAD, PACK)
