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

Codes are part of the public contract (docs/errors.md): a code is never renamed or reused.
Structured fields (``step``, ``plan_version``, ``seq``, ``line``, ``expected``, ``actual`` ...) travel
with the error so callers never parse the message.

An error's ``message`` says what is wrong, in words any caller understands. What to do about it depends
on the front door the caller came through (a Python call or the ``plantrail`` command), so it is kept
apart, in :data:`ADVICE`: ``str(exc)`` is the message with the Python advice (``Ledger.open(path,
repair=True)``), and the CLI prints ``exc.text("cli")``, the message with the command's advice (run
``plantrail repair LOG``). A raise site names its advice when the code's own does not fit (``advice=``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final, Literal, NamedTuple, Self

__all__ = [
    "ADVICE",
    "CODES",
    "MAX_PROBLEMS",
    "Advice",
    "CommandRefused",
    "Door",
    "LogDamaged",
    "PlanInvalid",
    "PlantrailError",
    "Problems",
    "Refused",
    "StorageError",
    "TranscriptError",
    "TranscriptRefused",
    "TranscriptUnreadable",
    "UnknownTranscriptFormat",
    "UsageError",
    "error",
]

#: The front doors an error can be reported through; each has its own advice (see :data:`ADVICE`).
Door = Literal["python", "cli"]


class Advice(NamedTuple):
    """What to do about an error, said for each front door; ``{name}`` is the error's field ``name``."""

    python: str
    cli: str


class PlantrailError(Exception):
    """The root of every error plantrail raises on purpose."""

    exit_code: ClassVar[int] = 1
    #: What a read could still answer before the error stopped it: the valid part's document, for a
    #: TORN_TAIL raised by :mod:`ledger.audit`; None otherwise.
    partial: Any = None

    def __init__(self, code: str, message: str, *, advice: str | None = None, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields: Mapping[str, Any] = {k: v for k, v in fields.items() if v is not None}
        self._advice = ADVICE.get(advice or code)

    def __str__(self) -> str:
        return self.text("python")

    def advice(self, door: Door = "python") -> str | None:
        """What to do about the error through ``door`` (None when there is nothing more to say)."""
        if self._advice is None:
            return None
        template = self._advice.python if door == "python" else self._advice.cli
        return template.format_map(_Placeholders(self.fields))

    def text(self, door: Door = "python") -> str:
        """The message, then the advice for ``door``: what a person reads."""
        advice = self.advice(door)
        return self.message if advice is None else f"{self.message}; {advice}"

    def as_dict(self) -> dict[str, Any]:
        """The error as JSON-ready data: code, message, exit code and fields."""
        return {"code": self.code, "message": self.message, "exit_code": self.exit_code, **self.fields}

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the same error: class, code, message, fields and advice (``Exception`` would rebuild it by
        calling the class with its message alone)."""
        return _restored, (type(self), self.message), self.__dict__


def _restored(cls: type[PlantrailError], message: str) -> PlantrailError:
    """An unpickled error before its attributes are set back (see :meth:`PlantrailError.__reduce__`)."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    return exc


class UsageError(PlantrailError):
    """The caller passed arguments that cannot mean anything."""

    exit_code = 2


class Refused(PlantrailError):
    """A rule refused the request; nothing was written."""

    exit_code = 1


class PlanInvalid(Refused):
    """A plan draft or patch failed validation; ``errors`` lists every problem found (this one first)."""

    def __init__(self, code: str, message: str, **fields: Any) -> None:
        super().__init__(code, message, **fields)
        self.errors: tuple[PlantrailError, ...] = (self,)


#: The most problems one validation keeps to report at once; the others are only counted.
MAX_PROBLEMS: Final = 100


class Problems(list[PlantrailError]):
    """The problems a validation found, as a list that keeps the first :data:`MAX_PROBLEMS` (without their
    tracebacks) and counts the others it is given in ``more``; once it is :attr:`full` a validation stops
    looking at further items. A draft with a million bad steps is reported in bounded memory and time: its
    first hundred problems, and that there are more."""

    def __init__(self) -> None:
        super().__init__()
        self.more = 0

    @property
    def full(self) -> bool:
        """Whether no further problem would be listed."""
        return len(self) >= MAX_PROBLEMS

    def append(self, problem: PlantrailError) -> None:
        if len(self) < MAX_PROBLEMS:
            super().append(problem.with_traceback(None))
        else:
            self.more += 1 + getattr(problem, "fields", {}).get("more_problems", 0)

    def extend(self, problems: Iterable[PlantrailError]) -> None:
        for problem in problems:
            self.append(problem)

    def __iadd__(self, problems: Iterable[PlantrailError]) -> Self:  # type: ignore[override,misc]
        self.extend(problems)
        return self


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


#: Every stable code, the class that carries it, and what it means (the table in docs/errors.md).
CODES: Mapping[str, tuple[type[PlantrailError], str]] = {
    # usage
    "USAGE": (UsageError, "the arguments or options are malformed"),
    "INVALID_ARGUMENT": (
        UsageError,
        "a library call got an argument of another type than it takes (the parameter, the type it takes and the "
        "type it got are named); nothing is coerced",
    ),
    "LEDGER_NOT_OPEN": (UsageError, "a ledger used after close(), or made with Ledger() from something not opened"),
    "REPORT_INVALID": (UsageError, "a result's evidence record (--report) is malformed (the field is named)"),
    "CHECKPOINT_KEY_INVALID": (UsageError, "no checkpoint key was given, or it is shorter than 16 bytes"),
    "SIGNING_KEY_INVALID": (
        UsageError,
        "a signing key or public key file is malformed, or signing needs the cryptography package (plantrail[sign])",
    ),
    "FILE_STORE_ONLY": (UsageError, "the command works on a JSONL file's bytes (repair, salvage), not a database run"),
    "INVALID_TRACE_CONTEXT": (
        UsageError,
        "a command's trace context is not a W3C traceparent (version 00, a 32-hex trace id and a 16-hex span id "
        "not all zeros, 2-hex flags) or its tracestate breaks the W3C limits (32 members, 512 characters)",
    ),
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
    "UNKNOWN_COVERED_CRITERION": (PlanInvalid, "a step covers an acceptance criterion the plan does not have"),
    "COVERAGE_GAP": (PlanInvalid, "strict: a task criterion is covered by no step and no typed check"),
    "SCOPE_INVALID": (PlanInvalid, "a scope glob is empty, absolute, or holds an empty, . or .. segment"),
    "SCOPE_OUTSIDE_TASK": (
        PlanInvalid,
        "a step's writes or reads glob is outside the task's scope (step and glob named)",
    ),
    "UNKNOWN_REPAIR_STEP": (PlanInvalid, "a step's on_failure names a step the plan does not have"),
    "REPAIR_CYCLE": (PlanInvalid, "the failure chains (on_failure) loop; only a step may repair itself"),
    "REPAIR_STEP_HAS_DEPENDENCIES": (PlanInvalid, "a repair step lists depends_on (it starts only after a failure)"),
    "DEPENDS_ON_REPAIR_STEP": (PlanInvalid, "a step depends on a repair step, which runs only after a failure"),
    "REPAIR_STEP_UNREACHABLE": (PlanInvalid, "no failure can call a repair step (what it repairs has one attempt)"),
    "INPUT_DANGLING": (
        PlanInvalid,
        "a step's input names an unknown step, an output its step does not declare, an undeclared initial input, "
        "or a step not upstream of it by depends_on (step and input named)",
    ),
    "ARTIFACT_UNKNOWN": (PlanInvalid, "a required artifact or a schema check names an output no step declares"),
    "DUPLICATE_ARTIFACT": (PlanInvalid, "an output, input or produced artifact is declared or given twice"),
    "DIGEST_INVALID": (PlanInvalid, "a digest is not ALGO:HEX (lower case; sha256 needs 64 hex digits)"),
    # commands
    "PLAN_NOT_CREATED": (CommandRefused, "the log has no plan yet"),
    "PLAN_ALREADY_CREATED": (CommandRefused, "the log already has a plan (use replan)"),
    "LOG_EXISTS": (CommandRefused, "create refuses to overwrite an existing file"),
    "KEY_EXISTS": (CommandRefused, "keygen refuses to overwrite any existing file (an empty one too)"),
    "DRAFT_EXISTS": (CommandRefused, "new refuses to overwrite an existing file"),
    "STEP_NOT_FOUND": (CommandRefused, "no such step in the plan version"),
    "STEP_NOT_READY": (CommandRefused, "the step's dependencies are not all completed (they are named)"),
    "AWAITING_REPAIR": (CommandRefused, "the step failed and waits until its repair step (named) completes"),
    "REPAIR_NOT_NEEDED": (CommandRefused, "a repair step starts only while a failed step it repairs waits for it"),
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
    "REASON_REQUIRED": (CommandRefused, "a reason, error or why (or an effect's target) is empty after trimming"),
    "ARTIFACT_UNDECLARED": (CommandRefused, "a completion gives an artifact its step does not declare as an output"),
    "ARTIFACT_MISSING": (CommandRefused, "a completion lacks an artifact for an output its step declares"),
    "CRITERION_NOT_FOUND": (CommandRefused, "no such acceptance criterion in the active version"),
    "CRITERIA_UNVERIFIED": (CommandRefused, "finishing complete while a step or criterion is open"),
    "RUN_FINISHED": (CommandRefused, "the run finished complete, failed or cancelled"),
    "STOP_POLICY": (
        CommandRefused,
        "the stop policy forbids starting work (no progress, a budget or the deadline spent)",
    ),
    "STALE_ATTEMPT": (
        CommandRefused,
        "a heartbeat or abandon names an attempt that is not running (superseded by a later start, or abandoned)",
    ),
    "LEASE_REQUIRED": (CommandRefused, "a heartbeat needs a lease: --lease SECONDS or the step's timeout_s"),
    "PARTIAL_NOT_ALLOWED": (CommandRefused, "finishing partial when the plan's policy does not set allowed_partial"),
    "OUTCOME_CONTRADICTS_STOP": (
        CommandRefused,
        "the outcome contradicts the state: complete while the stop policy says otherwise, or partial or "
        "budget_exhausted with nothing left to do",
    ),
    "SCOPE_VIOLATION": (
        CommandRefused,
        "verify: a result reports changed paths or tools outside its step's scope but is not recorded as the "
        "scope violation it is",
    ),
    "PAUSED_SCOPE_VIOLATION": (
        CommandRefused,
        "the run is paused by a scope violation: only an approval that widens the scope, or a replan, ends it",
    ),
    "PAUSED_APPROVAL_DENIED": (
        CommandRefused,
        "the run is paused by a denied approval until a replan removes or changes the denied steps",
    ),
    "APPROVAL_REQUIRED": (
        CommandRefused,
        "the step is waiting_approval: no granted approval for this plan version covers it",
    ),
    "WRITE_SCOPE_CONFLICT": (
        CommandRefused,
        "the step's write scope overlaps that of a step in progress (the other step is named)",
    ),
    "APPROVAL_NOT_FOUND": (CommandRefused, "no approval request with that id"),
    "APPROVAL_DECIDED": (CommandRefused, "the approval request was already granted or denied"),
    "APPROVAL_STALE": (CommandRefused, "the approval request was asked for a superseded plan version"),
    "DUPLICATE_APPROVAL_ID": (CommandRefused, "an approval request with that id already exists"),
    "EFFECT_NOT_REQUESTED": (CommandRefused, "an effect commit names a key no effect request recorded"),
    "EFFECT_DUPLICATE": (
        CommandRefused,
        "the effect is already committed, or already requested by the same attempt (never performed twice)",
    ),
    "EFFECT_KEY_CONFLICT": (CommandRefused, "the effect key already names another step's or target's effect"),
    "EFFECT_MISMATCH": (
        CommandRefused,
        "an effect commit names another step, plan version or attempt than its request",
    ),
    "STALE_PLAN_VERSION": (CommandRefused, "the command was issued against a superseded plan version"),
    "UNKNOWN_ATTEMPT": (
        CommandRefused,
        "a result names by --started-seq a seq that is not the start of one of its step's attempts (or says another "
        "plan version or attempt than that start's)",
    ),
    "ADOPT_REFUSED": (
        CommandRefused,
        "adopt: the late result is not a completion, its step is not pending in the active version, or the "
        "step's contract is not the one the result was made under (the reason is named)",
    ),
    "UNKNOWN_PLAN_VERSION": (CommandRefused, "the plan version does not exist yet"),
    "UNKNOWN_CAUSE": (
        CommandRefused,
        "a replan names a cause seq that is not in the log, or a parent cause that is not an event of the parent "
        "up to the fork",
    ),
    "UNKNOWN_SEQ": (CommandRefused, "a replay asks for a seq the log does not reach"),
    "UNKNOWN_REASON_CODE": (CommandRefused, "a replan reason code outside the closed set"),
    "STALE_EXPECTED_SEQ": (CommandRefused, "the log no longer ends at the seq the caller expected"),
    "IDEMPOTENCY_CONFLICT": (CommandRefused, "the idempotency key was used for different content"),
    "WRITE_CONFLICT": (
        CommandRefused,
        "other writers of a database run kept appending first; nothing was written (the ledger retried)",
    ),
    "INVALID_TEXT": (CommandRefused, "a text field cannot be stored as UTF-8 (e.g. a lone surrogate)"),
    "EVENT_TOO_LARGE": (CommandRefused, "the encoded event exceeds the maximum line size"),
    "INPUT_TOO_LARGE": (Refused, "an input file (draft, patch, key file, transcript) is over its cap (docs/limits.md)"),
    "VERSION_TOUCHED": (
        CommandRefused,
        "an extension in place of a plan version that work has touched since it was adopted (replan instead)",
    ),
    "STEP_EXISTS": (CommandRefused, "an extension adds a step id the plan version already has"),
    "CRITERION_EXISTS": (CommandRefused, "an extension adds a criterion id the plan version already has"),
    # damaged logs
    "EMPTY_LOG": (LogDamaged, "the file is empty: a log always starts with its header line"),
    "CORRUPT_LINE": (LogDamaged, "a line is not a valid record (framing, JSON, schema or canonical form)"),
    "TORN_TAIL": (LogDamaged, "the last line is incomplete (a crash mid-write); run repair"),
    "HASH_MISMATCH": (LogDamaged, "a line's hash or its link to the previous line does not match"),
    "SEQ_GAP": (LogDamaged, "a seq is missing, repeated or out of order"),
    "ILLEGAL_EVENT": (LogDamaged, "verify: an event breaks a rule when replayed in order"),
    "ORPHAN_APPLIED": (LogDamaged, "verify: a late result changed the active plan"),
    "NONDETERMINISTIC_FOLD": (LogDamaged, "verify: two folds of the log gave different bytes"),
    "PAYLOAD_MISSING": (LogDamaged, "the run's store holds no payload by that digest"),
    "PAYLOAD_ALTERED": (LogDamaged, "a stored payload's salt and bytes do not hash to its digest"),
    "ANCHOR_MISMATCH": (
        LogDamaged,
        "the log does not contain the anchored head (its seq and hash, or a signed note's tree size and root)",
    ),
    "CHECKPOINT_INVALID": (
        LogDamaged,
        "a checkpoint (keyed or signed) does not cover the record just before it, or a keyed checkpoint's MAC "
        "does not verify with the given key",
    ),
    "CHECKPOINT_MISSING": (
        LogDamaged,
        "verify was given a checkpoint key (a public key) but the log holds no keyed (signed) checkpoint",
    ),
    "CHECKPOINT_MISMATCH": (
        LogDamaged,
        "a signed checkpoint's tree root or size is not that of the records it covers (or two notes disagree)",
    ),
    "SIGNATURE_INVALID": (LogDamaged, "a signed checkpoint's signature does not verify with the given public key"),
    "DATA_LOSS": (LogDamaged, "an acknowledged record is missing or differs"),
    "NOT_REPAIRABLE": (LogDamaged, "the damage is not a torn tail; repair refuses to cut history"),
    "FORK_INVALID": (
        LogDamaged,
        "a forked run's first event is misplaced, or its carried state does not hash as named",
    ),
    "FORK_MISMATCH": (
        LogDamaged,
        "verify --parent: the parent's hash or state at the fork's seq is not what the fork names",
    ),
    # evidence packs (export pack, verify --pack)
    "PACK_NOT_ZIP": (LogDamaged, "verify --pack: the file is not a zip archive (or is cut short)"),
    "PACK_UNSAFE": (
        LogDamaged,
        "verify --pack: the archive is refused unread: a member name with '..', absolute or odd, a link, a folder, "
        "a name twice, an encrypted member, or sizes past the cap (a zip bomb)",
    ),
    "PACK_MANIFEST_INVALID": (
        LogDamaged,
        "verify --pack: manifest.json is missing, is not JSON, or does not describe the pack's members "
        "(or a key member holds no key)",
    ),
    "PACK_MEMBER_ALTERED": (LogDamaged, "verify --pack: a member's SHA-256 or size is not what the manifest says"),
    "PACK_MEMBER_MISSING": (LogDamaged, "verify --pack: a member the manifest lists is not in the pack"),
    "PACK_MEMBER_UNLISTED": (LogDamaged, "verify --pack: the pack holds a member the manifest does not list"),
    "PACK_REPORT_MISMATCH": (
        LogDamaged,
        "verify --pack: a run's report in the pack does not say what verifying its log finds",
    ),
    # storage
    "LOG_NOT_FOUND": (StorageError, "the log file does not exist"),
    "FORMAT_TOO_NEW": (
        StorageError,
        "a line holds a format version, event type or member this plantrail does not know: a newer one wrote it",
    ),
    "NOT_A_FILE": (StorageError, "the path is a directory or not a regular file"),
    "PERMISSION_DENIED": (StorageError, "the file cannot be opened with the needed permission"),
    "IO_ERROR": (StorageError, "the operating system reported an I/O error"),
    "NO_SPACE": (StorageError, "the disk or quota is full (ENOSPC, EDQUOT, EFBIG); nothing was added"),
    "NETWORK_FILESYSTEM": (StorageError, "the log is on NFS or SMB, where appends and locks are unsafe"),
    "WRITER_POISONED": (StorageError, "an earlier write or fsync failed; this writer acknowledges nothing more"),
    "LOCK_TIMEOUT": (StorageError, "a reader waited too long for a writer's lock (a stopped writer holds it)"),
    "FILE_NOT_FOUND": (StorageError, "an input file (draft, patch, transcript, key) does not exist"),
    "FOLDER_NOT_FOUND": (StorageError, "the folder a new log (create, import) should go in does not exist"),
    "RUN_NOT_FOUND": (StorageError, "the database holds no run with that id"),
    "STORE_UNAVAILABLE": (StorageError, "the database cannot be reached, or the connection broke (retry with the key)"),
    "STORE_SCHEMA_NEWER": (StorageError, "the database has a newer plantrail schema than this plantrail knows"),
    "EXPORT_FAILED": (StorageError, "the OTLP receiver refused the spans or could not be reached"),
    # transcripts given to import
    "UNKNOWN_FORMAT": (UnknownTranscriptFormat, "no transcript parser has that format name"),
    "NOT_A_TRANSCRIPT": (TranscriptRefused, "the file is not a transcript of a known (or of the requested) format"),
    "EMPTY_TRANSCRIPT": (TranscriptRefused, "the transcript holds nothing but whitespace"),
    "NO_PLAN_IN_TRANSCRIPT": (TranscriptRefused, "the transcript holds no plan update the importer can record"),
    "TRANSCRIPT_UNREADABLE": (TranscriptUnreadable, "the transcript cannot be opened or read"),
    # agent hooks and their installation (plantrail hook, plantrail install)
    "HOOK_PAYLOAD_INVALID": (
        UsageError,
        "a hook payload is not JSON, names no session, or is an event or tool the hook does not take",
    ),
    "SETTINGS_INVALID": (Refused, "an agent's settings file cannot be parsed, so install leaves it alone"),
    "PLUGIN_EXISTS": (Refused, "a file plantrail did not write is at the plugin's path, so install leaves it alone"),
    # the web view (plantrail serve)
    "NON_LOOPBACK_BIND": (UsageError, "serve was asked to listen beyond loopback without a token file"),
    "TOKEN_FILE_INVALID": (UsageError, "serve's token file cannot be read, or holds no token of 16 characters or more"),
    "TOKEN_REQUIRED": (Refused, "a request to serve did not carry the token it requires"),
    "READ_ONLY": (Refused, "a request to serve was not a read (serve answers GET only)"),
    "HOST_NOT_ALLOWED": (Refused, "a request to serve without a token named a host other than this machine"),
}


#: Advice by code, or by the name a raise site gives when a code needs different advice there.
ADVICE: Mapping[str, Advice] = {
    "TORN_TAIL": Advice(
        python="repair it with plantrail.repair({path!r}) or Ledger.open({path!r}, repair=True) "
        "(the torn bytes are moved aside, never deleted)",
        cli="run `plantrail repair {path}`",
    ),
    "TORN_TAIL_READ": Advice(
        python="the answer of the valid part is the error's .partial; repair the log with "
        "plantrail.repair({path!r}) or Ledger.open({path!r}, repair=True)",
        cli="the output above covers the valid part; run `plantrail repair {path}`",
    ),
    "PACK_TORN": Advice(
        python="a pack holds whole logs: make it again from the run (repaired, if its log is torn)",
        cli="a pack holds whole logs: make it again with `plantrail export pack` (after `plantrail repair` if "
        "the run's log is torn)",
    ),
    "PLAN_NOT_CREATED": Advice(
        python="a log gets its plan from Ledger.create(path, plan)",
        cli="a log gets its plan from `plantrail create LOG --plan DRAFT`",
    ),
    "PLAN_ALREADY_CREATED": Advice(python="use Ledger.replan", cli="use `plantrail replan`"),
    "ARTIFACT_MISSING": Advice(
        python="pass each in Ledger.complete's artifacts",
        cli="give each with --artifact (the output name, an equals sign, its digest)",
    ),
    "LEASE_REQUIRED": Advice(python="pass lease_s=SECONDS", cli="pass --lease SECONDS"),
    "IMPORT_LOG_EXISTS": Advice(python="pass force=True to replace it", cli="pass --force to replace it"),
    "SUBAGENTS_NOT_CLAUDE": Advice(python="leave with_subagents False", cli="leave out --with-subagents"),
    "NO_CHECKPOINT_KEY": Advice(
        python="give load_key a key file, or set $PLANTRAIL_CHECKPOINT_KEY",
        cli="pass --key-file FILE or set $PLANTRAIL_CHECKPOINT_KEY",
    ),
    "REPLAY_ONE_POINT": Advice(python="pass version= or at_seq=", cli="give --version V or --at-seq N"),
}


class _Placeholders(dict[str, Any]):
    """An error's fields for an advice template; a field the error lacks reads as its name in capitals."""

    def __missing__(self, key: str) -> str:
        return key.upper()


def error(code: str, message: str, *, advice: str | None = None, **fields: Any) -> PlantrailError:
    """Build the error of the right class for a stable code; ``advice`` names its entry in :data:`ADVICE`
    when it is not the code's own."""
    cls, _ = CODES[code]
    return cls(code, message, advice=advice, **fields)
