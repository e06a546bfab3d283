"""Every error plantrail raises, with a stable machine code.

The tree::

    PlantrailError                 code, exit_code, fields; message derived from the fields
    ├── UsageError                 exit 2   bad arguments or options
    │   └── UnknownTranscriptFormat*        no transcript parser has that format name
    ├── Refused                    exit 1   a rule refused the command; the log is unchanged
    │   ├── PlanInvalid                     the plan draft or patch does not validate
    │   ├── CommandRefused                  the command is illegal in the current state
    │   └── TranscriptRefused*              the input is no transcript, is empty, or holds no plan to import
    ├── LogDamaged                 exit 3   the log is corrupt, torn or tampered with
    └── StorageError               exit 4   the file cannot be read or written
        └── TranscriptUnreadable*           the transcript cannot be opened or read

    * also a TranscriptError: catch that one class for any problem with a transcript given to import.

Codes are part of the public contract (README, "Error codes"): a code is never renamed or reused.
Structured fields (``step``, ``plan_version``, ``seq``, ``line``, ``expected``, ``actual`` ...) travel
with the error so callers never parse the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "CODES",
    "CommandRefused",
    "LogDamaged",
    "PlanInvalid",
    "PlantrailError",
    "Refused",
    "StorageError",
    "TranscriptError",
    "TranscriptRefused",
    "TranscriptUnreadable",
    "UnknownTranscriptFormat",
    "UsageError",
    "error",
]


class PlantrailError(Exception):
    """The root of every error plantrail raises on purpose."""

    exit_code: ClassVar[int] = 1

    def __init__(self, code: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields: Mapping[str, Any] = {k: v for k, v in fields.items() if v is not None}

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict[str, Any]:
        """The error as JSON-ready data: code, message, exit code and fields."""
        return {"code": self.code, "message": self.message, "exit_code": self.exit_code, **self.fields}


class UsageError(PlantrailError):
    """The caller passed arguments that cannot mean anything."""

    exit_code = 2


class Refused(PlantrailError):
    """A rule refused the request; nothing was written."""

    exit_code = 1


class PlanInvalid(Refused):
    """A plan draft or patch failed validation."""


class CommandRefused(Refused):
    """A command is not legal against the current state of the run."""


class LogDamaged(PlantrailError):
    """The log is corrupt, torn or has been tampered with."""

    exit_code = 3


class StorageError(PlantrailError):
    """The log or a file beside it could not be read or written."""

    exit_code = 4


class TranscriptError(PlantrailError):
    """A transcript given to import cannot be imported at all; ``line`` says where, when known."""

    @property
    def line(self) -> int | None:
        """The transcript line the error is about, if any."""
        line = self.fields.get("line")
        return line if isinstance(line, int) else None


class UnknownTranscriptFormat(TranscriptError, UsageError):
    """A transcript format name that no parser handles."""


class TranscriptRefused(TranscriptError, Refused):
    """The input is not a transcript of a known format, is empty, or holds no plan the importer can record."""


class TranscriptUnreadable(TranscriptError, StorageError):
    """The transcript cannot be opened or read."""


#: Every stable code, the class that carries it, and what it means (rendered in the README).
CODES: Mapping[str, tuple[type[PlantrailError], str]] = {
    # usage
    "USAGE": (UsageError, "the arguments or options are malformed"),
    "REPORT_INVALID": (UsageError, "a result's evidence record (--report) is malformed (the field is named)"),
    "CHECKPOINT_KEY_INVALID": (UsageError, "no checkpoint key was given, or it is shorter than 16 bytes"),
    # plan drafts and patches
    "INVALID_ID": (
        PlanInvalid,
        "an id (step, criterion, run) is empty, too long, or has a character outside [A-Za-z0-9._:-]",
    ),
    "DRAFT_INVALID": (PlanInvalid, "the draft is not a JSON object of the documented shape"),
    "EMPTY_PLAN": (PlanInvalid, "the draft has no steps"),
    "NO_ACCEPTANCE_CRITERIA": (PlanInvalid, "the draft has no acceptance criteria"),
    "DUPLICATE_STEP_ID": (PlanInvalid, "two steps share an id"),
    "DUPLICATE_CRITERION_ID": (PlanInvalid, "two acceptance criteria share an id"),
    "DUPLICATE_CHECK_ID": (PlanInvalid, "two checks of one step or criterion share an id"),
    "UNKNOWN_DEPENDENCY": (PlanInvalid, "a step depends on a step the plan does not have"),
    "SELF_DEPENDENCY": (PlanInvalid, "a step depends on itself"),
    "DEPENDENCY_CYCLE": (PlanInvalid, "the dependencies form a cycle (the steps on it are named)"),
    "BLANK_FIELD": (PlanInvalid, "a required text field is empty after trimming"),
    "GOAL_CHANGED": (PlanInvalid, "a replan tried to change the goal"),
    "PATCH_INVALID": (PlanInvalid, "a plan patch operation cannot apply to its base version"),
    # commands
    "PLAN_NOT_CREATED": (CommandRefused, "the log has no plan yet"),
    "PLAN_ALREADY_CREATED": (CommandRefused, "the log already has a plan (use replan)"),
    "LOG_EXISTS": (CommandRefused, "create refuses to overwrite an existing file"),
    "STEP_NOT_FOUND": (CommandRefused, "no such step in the plan version"),
    "STEP_NOT_READY": (CommandRefused, "the step's dependencies are not all completed (they are named)"),
    "STEP_ALREADY_ACTIVE": (CommandRefused, "max_in_progress steps are already in progress (they are named)"),
    "INVALID_TRANSITION": (
        CommandRefused,
        "the step is not in the status the command needs (current, expected, target)",
    ),
    "EVIDENCE_REQUIRED": (CommandRefused, "evidence is empty after trimming"),
    "CHECK_NOT_MET": (
        CommandRefused,
        "a completion or passing verdict whose reported observations do not satisfy its checks (they are named)",
    ),
    "REASON_REQUIRED": (CommandRefused, "a reason, error or why is empty after trimming"),
    "CRITERION_NOT_FOUND": (CommandRefused, "no such acceptance criterion in the active version"),
    "CRITERIA_UNVERIFIED": (CommandRefused, "finishing complete while a step or criterion is open"),
    "RUN_FINISHED": (CommandRefused, "the run finished complete, failed or cancelled"),
    "STOP_POLICY": (
        CommandRefused,
        "the stop policy forbids starting work (no progress, a budget or the deadline spent)",
    ),
    "STALE_PLAN_VERSION": (CommandRefused, "the command was issued against a superseded plan version"),
    "UNKNOWN_PLAN_VERSION": (CommandRefused, "the plan version does not exist yet"),
    "UNKNOWN_CAUSE": (CommandRefused, "a replan names a cause seq that is not in the log"),
    "UNKNOWN_SEQ": (CommandRefused, "a replay asks for a seq the log does not reach"),
    "UNKNOWN_REASON_CODE": (CommandRefused, "a replan reason code outside the closed set"),
    "STALE_EXPECTED_SEQ": (CommandRefused, "the log no longer ends at the seq the caller expected"),
    "IDEMPOTENCY_CONFLICT": (CommandRefused, "the idempotency key was used for different content"),
    "INVALID_TEXT": (CommandRefused, "a text field cannot be stored as UTF-8 (e.g. a lone surrogate)"),
    "EVENT_TOO_LARGE": (CommandRefused, "the encoded event exceeds the maximum line size"),
    # damaged logs
    "EMPTY_LOG": (LogDamaged, "the file is empty: a log always starts with its header line"),
    "CORRUPT_LINE": (LogDamaged, "a line is not a valid record (framing, JSON, schema or canonical form)"),
    "TORN_TAIL": (LogDamaged, "the last line is incomplete (a crash mid-write); run repair"),
    "HASH_MISMATCH": (LogDamaged, "a line's hash or its link to the previous line does not match"),
    "SEQ_GAP": (LogDamaged, "a seq is missing, repeated or out of order"),
    "UNKNOWN_EVENT_TYPE": (LogDamaged, "a line has an event type this version does not know"),
    "UNSUPPORTED_SCHEMA_VERSION": (LogDamaged, "a line was written in a newer log format"),
    "ILLEGAL_EVENT": (LogDamaged, "verify: an event breaks a rule when replayed in order"),
    "ORPHAN_APPLIED": (LogDamaged, "verify: a late result changed the active plan"),
    "NONDETERMINISTIC_FOLD": (LogDamaged, "verify: two folds of the log gave different bytes"),
    "ANCHOR_MISMATCH": (LogDamaged, "the log does not contain the anchored head seq and hash"),
    "CHECKPOINT_INVALID": (LogDamaged, "a keyed checkpoint does not verify with the given key"),
    "CHECKPOINT_MISSING": (LogDamaged, "verify was given a checkpoint key but the log holds no checkpoint"),
    "DATA_LOSS": (LogDamaged, "an acknowledged record is missing or differs"),
    "NOT_REPAIRABLE": (LogDamaged, "the damage is not a torn tail; repair refuses to cut history"),
    # storage
    "LOG_NOT_FOUND": (StorageError, "the log file does not exist"),
    "NOT_A_FILE": (StorageError, "the path is a directory or not a regular file"),
    "PERMISSION_DENIED": (StorageError, "the file cannot be opened with the needed permission"),
    "IO_ERROR": (StorageError, "the operating system reported an I/O error"),
    "NO_SPACE": (StorageError, "the disk or quota is full (ENOSPC, EDQUOT, EFBIG); nothing was added"),
    "NETWORK_FILESYSTEM": (StorageError, "the log is on NFS or SMB, where appends and locks are unsafe"),
    "WRITER_POISONED": (StorageError, "an earlier write or fsync failed; this writer acknowledges nothing more"),
    "FILE_NOT_FOUND": (StorageError, "an input file (draft, patch, transcript, key) does not exist"),
    # transcripts given to import
    "UNKNOWN_FORMAT": (UnknownTranscriptFormat, "no transcript parser has that format name"),
    "NOT_A_TRANSCRIPT": (TranscriptRefused, "the file is not a transcript of a known (or of the requested) format"),
    "EMPTY_TRANSCRIPT": (TranscriptRefused, "the transcript holds nothing but whitespace"),
    "NO_PLAN_IN_TRANSCRIPT": (TranscriptRefused, "the transcript holds no plan update the importer can record"),
    "TRANSCRIPT_UNREADABLE": (TranscriptUnreadable, "the transcript cannot be opened or read"),
}


def error(code: str, message: str, **fields: Any) -> PlantrailError:
    """Build the error of the right class for a stable code."""
    cls, _ = CODES[code]
    return cls(code, message, **fields)
