"""One agent hook call: payload bytes in, the JSON the agent reads out; it never raises and never fails the agent.

    output = claude_hook(sys.stdin.buffer.read())    # "" or '{"hookSpecificOutput": ...}'

The run lives at ``<runs folder>/<session id>.jsonl`` (``$PLANTRAIL_HOME/runs``, else ``.plantrail/runs``
under the payload's ``cwd``), its hook journal in ``capture/`` beside ``runs/`` (:mod:`.journal`). Under the
journal's lock the hook writes the payload's lines to the journal and, for a payload that can change the plan,
appends to the log what the journal's mapping holds and the log does not (:mod:`.append`: one mapping, keyed
by the session and the calls' own ids, so a payload delivered twice is recorded once).

What else each event does: ``SessionStart`` announces the session's run for the project (the plan server's
fallback, :mod:`.announcement`) and returns the run's resume receipt (when the run exists), from which the front
door writes what the model reads; ``PreCompact`` records the compaction on an open run (an observation,
:data:`COMPACTION`) and returns the receipt too; a plan event whose run holds plan server versions is a note on
the current version, not a version (:mod:`.notes`); ``SessionEnd`` pauses an open run with the reason
``session_end`` (not final: the next plan update continues it). ``Stop`` is a turn boundary: the journal keeps
the turn's usage (read from the transcript's tail), and the mapping reports it on the next result it records
(the plan contract counts usage on results), once per turn.

Anything that goes wrong (a payload that is no JSON, over its cap, without a session, an event or tool the hook
does not take, a log that refuses an update) is one line in ``hook-errors.log`` beside ``runs/``, kept under
:data:`ERRORS_CAP` bytes (the older half is dropped), and the log is left as it was.

A project's ``.plantrail/`` is not plantrail's own: a cloned repository can ship anything there. Every file the
hook reads or writes in it is reached through :class:`plantrail.ledger.stores.owned.Folder` (no link followed,
nothing that blocks, nothing planted written through, sub-folders made refusing a file or link in their place);
what is planted is an error line (or, when the error file itself is planted, an error of the call), never a
write outside the folder. The agent's transcript (a Stop's usage, a subagent's calls) is read without waiting
on a FIFO and only when it is a regular file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec
import orjson

from plantrail.ledger.stores.locations import HOME_ENV, child_path, pure_path, run_file
from plantrail.ledger.stores.opener import as_run, open_store
from plantrail.ledger.stores.targets import STORE_ENV
from plantrail.ledger.vocabulary.clock import utc_now
from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.limits import HOOK_PAYLOAD
from plantrail.ledger.vocabulary.plan import check_id

from . import claude
from .announcement import Announcement, announce
from .ignored import keep_out_of_git
from .journal import CAPTURE_FOLDER, Journal, journal_file

if TYPE_CHECKING:
    from pathlib import Path

    from plantrail.ledger.stores.owned import Folder

__all__ = [
    "ERRORS_CAP",
    "ERRORS_FILE",
    "HookResult",
    "append_errors",
    "capture_journal",
    "claude_hook",
    "gemini_hook",
    "hook_errors",
    "opencode_hook",
    "plantrail_folder",
    "plantrail_root",
]

#: A session's log: a file, or a database run's URL (``$PLANTRAIL_STORE``); a hook call names its files by
#: strings (it loads no :mod:`pathlib`), a caller may give ``Path``\ s.
Log: TypeAlias = "Path | str"

ERRORS_FILE = "hook-errors.log"
ERRORS_CAP = 256 * 1024
#: ``plantrail hook errors`` reads no more of the error file than this (the hook keeps it under ERRORS_CAP).
_ERRORS_READ = 16 * ERRORS_CAP
RECEIPT_CAP = 10_000
_PLAN_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure", "TaskCreated", "TaskCompleted", "SubagentStop"})
#: The events whose answer tells the model where its plan stands (:mod:`plantrail.cli.hook_texts` writes it).
BRIEFED = frozenset({"SessionStart", "PreCompact"})
#: The key of the observation a compaction records on an open run.
COMPACTION = "context-compaction"


class HookResult(msgspec.Struct, frozen=True):
    """What one hook call did: the receipt to return (SessionStart, PreCompact: None while the run has no log),
    the log, and the errors it wrote down; with the session's run, the event and its ``source`` (SessionStart:
    startup, resume, compact …; PreCompact: its trigger), for the text the agent reads."""

    receipt: Mapping[str, Any] | None
    log: Log | None
    errors: tuple[str, ...]
    run: str | None = None
    event: str | None = None
    source: str | None = None
    unreadable: str | None = None
    """The code of the error that kept the run's receipt from being read (its log exists but cannot be)."""


def plantrail_folder(cwd: str | None, env: Mapping[str, str] | None = None) -> Path:
    """``$PLANTRAIL_HOME``, else ``<cwd>/.plantrail`` (the working directory when the payload names none)."""
    from pathlib import Path

    return Path(_folder(cwd, env))


def _folder(cwd: str | None, env: Mapping[str, str] | None) -> str:
    """:func:`plantrail_folder` as a string (``str(plantrail_folder(cwd, env))``), without :mod:`pathlib`."""
    home = (env if env is not None else os.environ).get(HOME_ENV)
    if home:
        return pure_path(home)
    return child_path(pure_path(cwd if cwd is not None else os.getcwd()), ".plantrail")


def plantrail_root(cwd: str | None, env: Mapping[str, str] | None) -> Folder:
    """The folder :func:`_folder` names, held open and made when missing: ``$PLANTRAIL_HOME`` as the user names
    it, else the project's ``.plantrail``, reached from the project without following a link (a file or a link
    planted in its place is refused)."""
    from plantrail.ledger.stores.owned import Folder

    home = (env if env is not None else os.environ).get(HOME_ENV)
    if home:
        return Folder.open(pure_path(home), create=True, what="plantrail folder")
    project = pure_path(cwd if cwd is not None else os.getcwd())
    with Folder.open(project, create=True, what="project folder") as above:
        found = above.folder(".plantrail", create=True, what="plantrail folder")
    found.path = child_path(project, ".plantrail")
    try:
        keep_out_of_git(found)
    except BaseException:
        found.close()
        raise
    return found


def claude_hook(
    raw: bytes,
    *,
    now: Callable[[], str] = utc_now,
    env: Mapping[str, str] | None = None,
) -> HookResult:
    """Record one Claude Code hook payload (see the module); every error is written down, none raised."""
    payload: claude.Payload | None = None
    try:
        payload = claude.read_payload(_capped(raw))
        return _record(payload, now(), env)
    except PlantrailError as exc:
        return _failed(payload, raw, env, f"error[{exc.code}]: {exc.message}")
    except Exception as exc:  # the hook must never fail the agent; the error is written down
        return _failed(payload, raw, env, f"error[INTERNAL]: {type(exc).__name__}: {exc}")


def gemini_hook(raw: bytes, *, now: Callable[[], str] = utc_now, env: Mapping[str, str] | None = None) -> HookResult:
    """Record one Gemini CLI hook payload (:mod:`.gemini`); every error is written down, none raised."""
    return _guarded("gemini", raw, env, lambda: _record_gemini(_capped(raw), now(), env))


def opencode_hook(raw: bytes, *, now: Callable[[], str] = utc_now, env: Mapping[str, str] | None = None) -> HookResult:
    """Record the OpenCode events on stdin, one JSON line each (:mod:`.opencode`); errors written down."""
    return _guarded("opencode", raw, env, lambda: _record_opencode(_capped(raw), now(), env))


def _guarded(agent: str, raw: bytes, env: Mapping[str, str] | None, work: Callable[[], HookResult]) -> HookResult:
    try:
        return work()
    except PlantrailError as exc:
        return _failed(None, raw, env, f"error[{exc.code}]: {exc.message}", agent)
    except Exception as exc:  # the hook must never fail the agent; the error is written down
        return _failed(None, raw, env, f"error[INTERNAL]: {type(exc).__name__}: {exc}", agent)


def _record_gemini(raw: bytes, now: str, env: Mapping[str, str] | None) -> HookResult:
    from . import gemini

    [payload] = gemini.read_payloads(raw)
    folder, session, log = _where(payload, env)
    errors: list[str] = []
    with plantrail_root(payload.cwd, env) as root:
        _check_log(root, log, env)
        with (
            _capture(root) as capture,
            Journal.locked(journal_file(folder, session, gemini.ADAPTER), capture) as journal,
        ):
            records = gemini.journal_records(payload, now, len(journal.lines()))
            journal.append(records)
            if payload.event in gemini.PLAN_EVENTS and records:
                errors += _append_journal(journal.path, log, session, gemini.FORMAT, gemini.ADAPTER, gemini.VERSION)
            if payload.event == "SessionEnd" and as_run(log).exists():
                _pause(log, session, payload, now, "Gemini CLI")
            if payload.event == "PreCompress" and as_run(log).exists():
                errors += _compacted(log, session, payload, now)
        if payload.event == "SessionStart":
            announce(folder, Announcement(run=session, session=session, agent=gemini.ADAPTER, at=now))
        receipt, unreadable = _briefing(log, errors) if payload.event == "SessionStart" else (None, None)
    errors += _write_errors(payload.cwd, env, payload, errors, "gemini")
    return HookResult(receipt, log, tuple(errors), session, payload.event, payload.text("source"), unreadable)


def _record_opencode(raw: bytes, now: str, env: Mapping[str, str] | None) -> HookResult:
    from plantrail.ledger.importers._records import iso_to_millis

    from . import opencode

    errors: list[str] = []
    log: Log | None = None
    for payload in opencode.read_payloads(raw):
        folder, session, log = _where(payload, env)
        name = journal_file(folder, session, opencode.ADAPTER, ".json")
        with plantrail_root(payload.cwd, env) as root:
            _check_log(root, log, env)
            with _capture(root) as capture, Journal.locked(name, capture) as journal:
                blob = journal.content()
                document = orjson.loads(blob) if blob.strip() else None
                updated = opencode.add_update(document, payload, iso_to_millis(now) or 0)
                journal.rewrite(orjson.dumps(updated))
                found = _append_journal(journal.path, log, session, opencode.FORMAT, opencode.ADAPTER, opencode.VERSION)
        errors += found
        errors += _write_errors(payload.cwd, env, payload, found, "opencode")
    return HookResult(None, log, tuple(errors))


def _where(payload: claude.Payload, env: Mapping[str, str] | None) -> tuple[str, str, Log]:
    """The .plantrail folder, the session id (checked as a run id) and the run's log."""
    folder = _folder(payload.cwd, env)
    session = check_id(payload.session, "session id")
    return folder, session, _run_log(folder, session, env)


def _run_log(folder: str, session: str, env: Mapping[str, str] | None) -> Log:
    """The session's log: in ``$PLANTRAIL_STORE`` when it is set (a database's run, or ``<DIR>/<session>.jsonl``),
    else ``<folder>/runs/<session>.jsonl``; the journal and the error file stay under ``folder`` either way."""
    store = (env if env is not None else os.environ).get(STORE_ENV)
    if store:
        return open_store(store).run(session).location
    return run_file(child_path(folder, "runs"), session)


def _prepare(log: Log) -> None:
    """Make what the run needs before it is created (a log file's folder; a database run needs nothing)."""
    as_run(log).prepare()


def _capture(root: Folder) -> Folder:
    """The journals' folder, ``capture/`` in the .plantrail folder, made when missing (never through a link)."""
    return root.folder(CAPTURE_FOLDER, create=True, what="capture folder")


def _check_log(root: Folder, log: Log, env: Mapping[str, str] | None) -> None:
    """Before the hook reads or writes the session's log in the .plantrail folder's own ``runs/`` (not a store
    the user named): the runs folder made or found without following a link, and the log absent or a regular
    file with one name (NOT_A_FILE otherwise: a planted link or FIFO is never appended through)."""
    if (env if env is not None else os.environ).get(STORE_ENV):
        return  # the user's own store: its folder or database is theirs
    with root.folder("runs", create=True, what="runs folder") as runs:
        found = runs.lstat(os.path.basename(os.fspath(log)))
        if found is not None and (not stat.S_ISREG(found.st_mode) or found.st_nlink > 1):
            path = runs.child(os.path.basename(os.fspath(log)))
            raise error(
                "NOT_A_FILE", f"the log {path} is not a regular file of its own; it was left as it is", path=path
            )


def _append_journal(
    journal: str | os.PathLike[str], log: Log, session: str, format: str, adapter: str, version: int
) -> list[str]:
    """Append what a (small, whole-list) journal's mapping holds and the log does not: ``import --append`` of it."""
    from plantrail.ledger.capture.append import append_transcript

    _prepare(log)
    note = f"captured live by plantrail's {adapter} adapter v{version} (journal {os.path.basename(journal)})"
    report = append_transcript(journal, log, format, run=session, notes=(note,))
    return [f"error[{r.code}]: update {r.identity}: {r.message}" for r in report.refused]


def hook_errors(folder: str | os.PathLike[str]) -> str:
    """The hook error file's text under ``folder`` (empty when there is none); NOT_A_FILE when a link, a FIFO
    or anything but a regular file is in its place."""
    from plantrail.ledger.stores.owned import Folder

    try:
        place = Folder.open(os.fspath(folder), what="plantrail folder")
    except PlantrailError as exc:
        if exc.code == "FILE_NOT_FOUND":
            return ""
        raise
    with place:
        blob = place.read(ERRORS_FILE, _ERRORS_READ, what="hook error file")
    return "" if blob is None else blob.decode("utf-8", errors="replace")


def _capped(raw: bytes) -> bytes:
    cap = HOOK_PAYLOAD.cap()
    if len(raw) > cap:
        raise error("INPUT_TOO_LARGE", f"the hook payload is {len(raw)} bytes, over its cap of {cap}")
    return raw


def _record(payload: claude.Payload, now: str, env: Mapping[str, str] | None) -> HookResult:
    folder, session, log = _where(payload, env)
    errors: list[str] = []
    turn = _turn(payload)  # the transcript is read before the session's lock is taken, never while holding it
    with plantrail_root(payload.cwd, env) as root:
        _check_log(root, log, env)
        with (
            _capture(root) as capture,
            Journal.locked(journal_file(folder, session, claude.ADAPTER), capture) as journal,
        ):
            if turn is None or not _holds_turn(journal, turn):
                held = _held_calls(journal, payload)
                journal.append(claude.journal_records(payload, now, held, _transcript_lines, turn))
            if payload.event in _PLAN_EVENTS:
                errors += capture_journal(journal, log, session)
            if payload.event == "SessionEnd" and as_run(log).exists():
                _pause(log, session, payload, now)
            if payload.event == "PreCompact" and as_run(log).exists():
                errors += _compacted(log, session, payload, now)
        if payload.event == "SessionStart":
            announce(folder, Announcement(run=session, session=session, agent=claude.ADAPTER, at=now))
        receipt, unreadable = _briefing(log, errors) if payload.event in BRIEFED else (None, None)
    errors += _write_errors(payload.cwd, env, payload, errors)
    source = payload.text("source") or payload.text("trigger")
    return HookResult(receipt, log, tuple(errors), session, payload.event, source, unreadable)


def capture_journal(journal: Journal | str | os.PathLike[str], log: Log, session: str) -> list[str]:
    """Append what the journal's mapping holds and the log does not (the mapping resumed from its kept state
    when there is one, :mod:`.live`); the refusals, as error lines. ``journal`` is held and locked (a hook
    call), or named (it is then locked for the call)."""
    from plantrail.ledger.capture.append import write_batches
    from plantrail.ledger.capture.live import advance, fresh_state, load_state, save_state
    from plantrail.ledger.capture.notes import kept_by_plan_server, write_notes
    from plantrail.ledger.importers.model import Observation

    if not isinstance(journal, Journal):
        with Journal.locked(journal) as held:
            return capture_journal(held, log, session)
    name = os.path.basename(journal.path)
    note = f"captured live by plantrail's {claude.ADAPTER} adapter v{claude.VERSION} (journal {name})"
    blob = journal.content()  # read and hashed once: the kept state's check and the lines after it
    kept = load_state(journal, blob)
    state, prefix = kept if kept is not None else (fresh_state(journal, session, (note,)), None)
    updates: dict[str, Observation] = {}
    batches = advance(journal, state, blob, prefix, updates)
    if batches:
        state.plan_server, state.checked = kept_by_plan_server(log, session, state.checked, known=state.plan_server)
    if batches and state.plan_server:  # the plan server keeps the plan: notes, not versions
        errors = write_notes(log, batches, updates, session)
        save_state(journal, state)
        return errors
    _prepare(log)
    report = write_batches(log, batches, session=session, run=session, plan_updates=state.updates, own_journal=True)
    save_state(journal, state)
    return [f"error[{r.code}]: update {r.identity}: {r.message}" for r in report.refused]


def _pause(log: Log, session: str, payload: claude.Payload, now: str, agent: str = "Claude Code") -> None:
    """Pause an open run with the reason ``session_end`` (a finished or planless run is left as it is)."""
    from plantrail.ledger.api import Ledger

    with Ledger.open(log, clock=lambda: now) as ledger:
        state = ledger.unread_state  # its plan, outcome and seq: no evidence is read
        if state.plan is None or state.outcome is not None:
            return
        why = payload.text("reason")
        reason = "session_end" + (f": {agent} reported {why}" if why else "")
        ledger.finish("paused", reason, idempotency_key=f"{session}:session-end:{state.last_seq}", actor="runtime")


def _compacted(log: Log, session: str, payload: claude.Payload, now: str) -> list[str]:
    """Record on an open run that the agent's context was compacted (an observation, :data:`COMPACTION`, whose
    version is the trigger and the time); a finished or planless run is left as it is."""
    from plantrail.ledger.api import Ledger

    with Ledger.open(log, clock=lambda: now) as ledger:
        state = ledger.unread_state
        if state.plan is None or state.outcome is not None:
            return []
        version = f"{payload.text('trigger') or 'compacted'} at {now}"
        key = f"{session}:compaction:{state.last_seq}"
        try:
            ledger.observe(COMPACTION, version, idempotency_key=key, actor="runtime")
        except PlantrailError as exc:
            return [f"error[{exc.code}]: the compaction was not recorded: {exc.message}"]
    return []


def _briefing(log: Log, errors: list[str]) -> tuple[Mapping[str, Any] | None, str | None]:
    """The run's receipt for the text the model reads (None while the run has no log), or, when the log cannot be
    read, the error's code (its line added to ``errors``)."""
    try:
        return (_receipt(log) if as_run(log).exists() else None), None
    except PlantrailError as exc:
        errors.append(f"error[{exc.code}]: the run's receipt was not read: {exc.message}")
        return None, exc.code


def _receipt(log: Log) -> Mapping[str, Any]:
    from plantrail.ledger import audit

    return audit.resume(log)


def _turn(payload: claude.Payload) -> Mapping[str, Any] | None:
    """A Stop's turn, its usage read from the transcript's tail (:mod:`.turns`); None for any other event."""
    if payload.event != "Stop":
        return None
    from .turns import turn_usage

    return claude.turn_of(payload, turn_usage(payload.text("transcript_path")))


def _holds_turn(journal: Journal, turn: Mapping[str, Any]) -> bool:
    """Whether the journal holds the turn already (a Stop delivered twice): a byte search for its id, as the
    journal writes it (``"turn":{"id":"<id>"``); a turn without an id is never taken for another."""
    if turn.get("id") is None:
        return False
    return b'"turn":{"id":' + orjson.dumps(turn["id"]) in journal.content()


def _held_calls(journal: Journal, payload: claude.Payload) -> frozenset[str]:
    """The call ids of the journal that the payload could repeat: the payload's own call when the journal
    holds it (a byte search: the journal writes each call as ``"type":"tool_use","id":"<id>"``), or, for a
    SubagentStop, which copies many calls, every call the journal holds."""
    if payload.event == "SubagentStop":
        return _calls(journal.lines())
    call = claude.call_id(payload)
    if call is None:
        return frozenset()
    needle = b'"type":"tool_use","id":' + orjson.dumps(call)
    return frozenset({call}) if needle in journal.content() else frozenset()


def _calls(lines: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The call ids the journal holds (its tool_use blocks)."""
    found: set[str] = set()
    for line in lines:
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                found.add(block["id"])
    return frozenset(found)


def _transcript_lines(path: str) -> Iterator[dict[str, Any]]:
    """A subagent transcript's JSON object lines, streamed: one line is held at a time (at most the transcript
    cap); an unreadable transcript gives none, one that fails part way what came before (the hooks already
    sent most)."""
    from plantrail.ledger.stores.files import open_capped
    from plantrail.ledger.vocabulary.limits import TRANSCRIPT

    try:
        handle = open_capped(os.fspath(path), TRANSCRIPT)
    except (PlantrailError, OSError):
        return
    with handle:
        try:
            for raw in handle:
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    yield value
        except (PlantrailError, OSError):
            return


def _failed(
    payload: claude.Payload | None, raw: bytes, env: Mapping[str, str] | None, line: str, agent: str = "claude"
) -> HookResult:
    cwd = payload.cwd if payload is not None else _cwd_of(raw)
    return HookResult(None, None, (line, *_write_errors(cwd, env, payload, [line], agent)))


def _cwd_of(raw: bytes) -> str | None:
    """The payload's cwd when the payload parses at all (a refused payload still says where its project is)."""
    first = raw.split(b"\n", 1)[0] if raw.lstrip().startswith(b"{") else raw
    try:
        value = orjson.loads(raw if len(raw) <= HOOK_PAYLOAD.cap() else b"null")
    except orjson.JSONDecodeError:
        try:
            value = orjson.loads(first)  # an OpenCode batch: its first line
        except orjson.JSONDecodeError:
            return None
    if isinstance(value, dict) and "cwd" not in value and isinstance(value.get("directory"), str):
        return str(value["directory"]) or None
    cwd = value.get("cwd") if isinstance(value, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None


def append_errors(root: Folder, text: bytes) -> None:
    """Append ``text`` (whole lines) to the hook error file in ``root`` (a project's plantrail folder), keeping it
    under ERRORS_CAP: past the cap, its older half is dropped at a line's end. Raises what the folder raises."""
    fd = root.open_file(ERRORS_FILE, append=True, create=True, what="hook error file")
    try:
        os.write(fd, text)
        found = os.fstat(fd)
        if found.st_size > ERRORS_CAP:
            half = ERRORS_CAP // 2
            kept = os.pread(fd, half, found.st_size - half)
            kept = kept[kept.find(b"\n") + 1 :]
            root.replace(ERRORS_FILE, kept, mode=stat.S_IMODE(found.st_mode), what="hook error file")
    finally:
        os.close(fd)


def _write_errors(
    cwd: str | None,
    env: Mapping[str, str] | None,
    payload: claude.Payload | None,
    lines: Sequence[str],
    agent: str = "claude",
) -> list[str]:
    """The lines in the error file, which is kept under ERRORS_CAP (its older half dropped); never raises.
    Returns what kept them out, as an error line (a planted link, FIFO or folder in the error file's place, a
    folder that cannot be written), else nothing: the call's result still holds the lines."""
    if not lines:
        return []
    where = f"{payload.event} session {payload.session}" if payload is not None else "payload"
    stamp = utc_now()
    text = "".join(f"{stamp} {agent} {where}: {' '.join(line.split())}\n" for line in lines).encode()
    try:
        with plantrail_root(cwd, env) as root:
            append_errors(root, text)
    except PlantrailError as exc:
        return [f"error[{exc.code}]: the hook error file was not written: {exc.message}"]
    except OSError as exc:
        return [f"error[IO_ERROR]: the hook error file was not written: {exc.strerror or exc}"]
    return []
