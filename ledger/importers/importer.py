"""Import a transcript into a new plantrail log: parse, map (see `mapping`), write with the Ledger API.

    import_transcript("session.jsonl", "session.plantrail.jsonl") -> ImportReport

Choices, and why:

* **Same input, same bytes out.** Every event's `ts` comes from the transcript (`mapping`), the header's
  nonce is the first 32 hex digits of the SHA-256 of the transcript bytes, and the run id defaults to the
  transcript's session id (or, failing that, its file name made into a valid id); sources name files by
  their base name, so the output does not depend on where the files lie, on the clock or on chance.
* **Durability.** The log is written to a temporary file beside LOG: its header and plan with the
  `always` policy (so that later appends to the imported log are durable), the rest with fsync `none`,
  then one fsync of the whole file before it is linked into place (an existing LOG is refused with
  LOG_EXISTS) or, with `force`, renamed over LOG. A failed import leaves no file behind.
* **Lead and subagent files.** Claude Code agent teams write one task board from several files: the
  lead's and each subagent's (`<lead>__subagent-<id>.jsonl` or `<lead>/subagents/agent-<id>.jsonl`). A
  file is imported alone by default, and the report names the subagent files found beside it; with
  `with_subagents` they are merged into the lead's log by timestamp, each file keeping its own line
  order (timestamps are not monotonic within a file), the lead first on a tie. Merging is explicit
  because a subagent file alone updates tasks it never created (its updates are skipped as
  `unknown_task`), and a lead alone cannot show what its subagents completed. A subagent's
  `agent-<id>.meta.json` beside it is metadata, never a transcript: its `agentType` and `description` are
  noted in version 1 ("subagent file F: agentType ..., description ..."). Side-question and compaction
  subagents (`aside_question-*`, `acompact-*`) replay the lead's context before their own work: a plan call of
  a subagent file that the lead's file holds (the same tool-use id) is skipped as `replayed_lead_context`,
  merged or alone (a file under `<lead>/subagents/` is checked against `<lead>.jsonl` when it is there), so
  the lead's work is neither credited to the subagent nor counted twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import os
import re
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Create
from plantrail.ledger.stores.files import folder_of, fsync_dir, open_regular, os_error
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.stores.postgres_run import DatabaseRun
from plantrail.ledger.stores.values import Ack
from plantrail.ledger.vocabulary.clock import SetClock
from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.plan import PlanSpec

from ._records import open_transcript
from .mapping import Batch, MappedRun, map_updates, with_their_version
from .model import Observation, Transcript
from .parse import parse_transcript

__all__ = [
    "FileReport",
    "ImportReport",
    "Observed",
    "database_run",
    "import_transcript",
    "read_observations",
    "subagent_files",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_NOT_ID = re.compile(r"[^A-Za-z0-9._:-]+")
_CHUNK = 1 << 20
_PROGRESS_EVERY = 256  # batches between two progress reports


class FileReport(NamedTuple):
    """What one file of an import (the lead's transcript, a merged subagent's) gave: its lines read, the plan
    updates seen in it, the items first seen there, the versions (the plan and its replans) and extensions it
    made, the events it wrote (inferred ones among them), and what could not be mapped, counted by reason (its
    lines skipped, its updates skipped)."""

    file: str
    lines_read: int
    plan_updates: int
    items: int
    versions: int
    extensions: int
    events_written: int
    events_inferred: int
    skipped: dict[str, int]


class ImportReport(NamedTuple):
    """What an import read and wrote."""

    format: str
    transcripts: tuple[str, ...]
    log: str
    run: str
    plan_updates: int
    versions: int
    steps_completed: int
    events_written: int
    events_inferred: int
    max_in_progress: int
    lines_read: int
    lines_skipped: int
    skipped: dict[str, int]
    subagent_files: tuple[str, ...]
    last_seq: int
    head_hash: str
    untimed_events: int = 0
    """Events whose transcript line has no time (stamped 1970-01-01T00:00:00Z plus the line number)."""
    items: int = 0
    """The agent's distinct items over the whole import (each a step id in some version)."""
    extensions: int = 0
    """Updates that added items to an untouched version in place (``plan.extended``) instead of a new version."""
    files: tuple[FileReport, ...] = ()
    """Each file's part, the lead's first (their sums are the figures above)."""


def subagent_files(lead: str | os.PathLike[str]) -> tuple[Path, ...]:
    """The Claude Code subagent transcripts beside a lead's: `<stem>__subagent-*.jsonl`, `<stem>/subagents/*`."""
    path = Path(lead)
    prefix = f"{path.stem}__subagent-"
    beside = [p for p in path.parent.iterdir() if p.name.startswith(prefix) and p.suffix == ".jsonl"]
    folder = path.parent / path.stem / "subagents"
    nested = (
        [p for p in folder.iterdir() if p.name.startswith("agent-") and p.suffix == ".jsonl"] if folder.is_dir() else []
    )
    return tuple(sorted(beside) + sorted(nested))


#: A subagent's ``.meta.json`` is a few fields; no more of it is read.
_META_CAP = 1 << 20


def subagent_meta(transcript: Path) -> str | None:
    """What a subagent's `.meta.json` says of it (agentType, description), as one note; None without one."""
    meta = transcript.with_suffix(".meta.json")
    try:  # never waits on a FIFO, reads only a regular file, and at most its cap
        fd = open_regular(str(meta), what="subagent metadata")
    except PlantrailError:
        return None
    try:
        value = json.loads(os.read(fd, _META_CAP).decode("utf-8"))  # a larger file is cut: not JSON, no note
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(value, dict):
        return None
    said = [f"{key} {value[key]}" for key in ("agentType", "description") if isinstance(value.get(key), str)]
    return f"subagent file {transcript.name}: {', '.join(said)}" if said else None


def _lead_of(transcript: Path) -> Path | None:
    """The lead's transcript of a file under `<lead>/subagents/`, when it is there."""
    if transcript.parent.name != "subagents":
        return None
    lead = transcript.parent.parent.with_suffix(".jsonl")
    return lead if lead.is_file() else None


def import_transcript(
    transcript_path: str | os.PathLike[str],
    log_path: str | os.PathLike[str],
    format: str | None = None,
    *,
    with_subagents: bool = False,
    run: str | None = None,
    force: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Turn a transcript into a new plantrail log at `log_path` and report what was read and written.

    ``on_progress``, when given, is told (batches written, batches in all) as the log is written (a progress bar).
    """
    source, log = Path(transcript_path), os.fspath(log_path)
    _check_target(source, log, force)
    read = read_observations(source, format, with_subagents=with_subagents)
    lead, transcripts = read.lead, read.transcripts
    mapped = map_updates(read.observations, format=lead.format, session=read.session, notes=read.notes)
    if isinstance(as_run(log), DatabaseRun):  # a database run is written in one transaction, a file put in place
        run_id = database_run(log, run)
        last_seq, head, written = _write_database(log, mapped, run_id, _nonce(transcripts), on_progress)
    else:
        run_id = run or read.run
        last_seq, head, written = _write(log, mapped, run_id, _nonce(transcripts), force, on_progress)
    skipped = Counter(mapped.skipped)
    skipped.update(read.skipped)
    return ImportReport(
        format=lead.format,
        transcripts=tuple(t.path for t in transcripts),
        log=log,
        run=run_id,
        plan_updates=mapped.plan_updates,
        versions=mapped.versions,
        steps_completed=mapped.completions,
        events_written=written,
        events_inferred=mapped.inferred,
        max_in_progress=mapped.max_in_progress,
        lines_read=sum(t.lines_total for t in transcripts),
        lines_skipped=sum(skipped.values()),
        skipped=dict(sorted(skipped.items())),
        subagent_files=read.subagent_files,
        last_seq=last_seq,
        head_hash=head,
        untimed_events=mapped.untimed,
        items=mapped.items,
        extensions=mapped.extensions,
        files=_file_reports(read, mapped),
    )


def _file_reports(read: Observed, mapped: MappedRun) -> tuple[FileReport, ...]:
    """Each transcript's part of the import: the mapping's figures of its updates, its lines and skips."""
    figures = {f.file: f for f in mapped.files}
    reports = []
    for transcript in read.transcripts:
        name = Path(transcript.path).name
        part = figures.get(name)
        skipped = Counter(transcript.skipped_reasons)
        skipped.update({} if part is None else dict(part.skipped))
        if read.replayed.get(name):
            skipped["replayed_lead_context"] += read.replayed[name]
        reports.append(
            FileReport(
                file=transcript.path,
                lines_read=transcript.lines_total,
                plan_updates=0 if part is None else part.updates,
                items=0 if part is None else part.items,
                versions=0 if part is None else part.versions,
                extensions=0 if part is None else part.extensions,
                events_written=0 if part is None else part.events,
                events_inferred=0 if part is None else part.inferred,
                skipped=dict(sorted(skipped.items())),
            )
        )
    return tuple(reports)


class Observed(NamedTuple):
    """A transcript read for mapping: its plan updates in order (with their files), and what goes with them."""

    lead: Transcript
    transcripts: tuple[Transcript, ...]
    observations: tuple[tuple[str, Observation], ...]
    notes: tuple[str, ...]
    session: str
    run: str
    skipped: Counter[str]
    subagent_files: tuple[str, ...]
    """The subagent files found beside the lead's and not merged (empty when merged)."""
    replayed: Mapping[str, int] = MappingProxyType({})
    """Plan calls left out of each file (by base name) as the lead's context it replayed."""


def read_observations(source: Path, format: str | None = None, *, with_subagents: bool = False) -> Observed:
    """Parse a transcript (and, ``with_subagents``, the subagent files beside it) into the (file, observation)
    pairs the mapping takes: what a whole import and a live append (`ledger.capture`) both map."""
    lead = parse_transcript(source, format)
    found = subagent_files(source) if lead.format == "claude-code" and source.is_file() else ()
    if with_subagents and lead.format != "claude-code":
        raise error("USAGE", "only Claude Code transcripts have subagent transcripts", advice="SUBAGENTS_NOT_CLAUDE")
    transcripts = [lead, *(parse_transcript(p, "claude-code") for p in found)] if with_subagents else [lead]
    known = _lead_of(source) if lead.format == "claude-code" and source.is_file() else None
    replays = {o.native_id for o in parse_transcript(known, "claude-code").observations} if known else set()
    observations, dropped = _merged(transcripts, replays)
    replayed = sum(dropped.values())
    notes = [note for p in (source, *found) if (note := subagent_meta(p)) is not None] if with_subagents else []
    alone_note = subagent_meta(source) if not with_subagents else None
    skipped: Counter[str] = Counter()
    if replayed:
        skipped["replayed_lead_context"] += replayed
    for transcript in transcripts:
        skipped.update(transcript.skipped_reasons)
    return Observed(
        lead=lead,
        transcripts=tuple(transcripts),
        observations=tuple(observations),
        notes=(*notes, *([alone_note] if alone_note else [])),
        session=_session(lead),
        run=_run_id(lead),
        skipped=skipped,
        subagent_files=() if with_subagents else tuple(map(str, found)),
        replayed=MappingProxyType(dict(dropped)),
    )


def _check_target(source: Path, log: str, force: bool) -> None:
    if isinstance(as_run(log), DatabaseRun):
        database_run(log, None)
        if force:
            raise error(
                "USAGE", f"only a log file is replaced by a forced import; a database run is never replaced ({log})"
            )
        return
    folder_of(log)  # before the temporary file beside it is named in an error
    if os.path.lexists(log) and not force:
        raise error(
            "LOG_EXISTS", f"{log} already exists; import never overwrites a log", advice="IMPORT_LOG_EXISTS", path=log
        )
    if os.path.lexists(log) and source.exists() and os.path.samefile(source, log):
        raise error("USAGE", f"the log {log} would overwrite the transcript it is imported from")


def _merged(
    transcripts: Sequence[Transcript], replays: set[str | None] | None = None
) -> tuple[list[tuple[str, Observation]], Counter[str]]:
    """Every file's observations, each file in its own order, interleaved by timestamp (the first file wins ties),
    and how many were left out of each file (by base name): a later file's calls that the first file (or
    `replays`, the lead's calls of a subagent file imported alone) already holds are the lead's context replayed,
    not new work."""
    lead = {o.native_id for o in transcripts[0].observations} - {None}
    streams = []
    dropped: Counter[str] = Counter()
    for index, t in enumerate(transcripts):
        check = (replays or set()) if index == 0 else lead | (replays or set())
        kept = [(Path(t.path).name, o) for o in t.observations if o.native_id is None or o.native_id not in check]
        if len(t.observations) > len(kept):
            dropped[Path(t.path).name] += len(t.observations) - len(kept)
        streams.append(kept)
    return list(heapq.merge(*streams, key=lambda pair: pair[1].timestamp or "")), dropped


def _session(transcript: Transcript) -> str:
    return transcript.session_id or Path(transcript.path).name


def _run_id(transcript: Transcript) -> str:
    """The transcript's session id when it is a valid run id, else its file name made into one."""
    if transcript.session_id and _ID.fullmatch(transcript.session_id):
        return transcript.session_id
    name = _NOT_ID.sub("-", Path(transcript.path).stem).strip("-._:")[:128]
    return name or "imported"


def _nonce(transcripts: Sequence[Transcript]) -> str:
    digest = hashlib.sha256()
    for transcript in transcripts:
        with open_transcript(Path(transcript.path)) as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()[:32]


def _write(
    log: str,
    mapped: MappedRun,
    run_id: str,
    nonce: str,
    force: bool,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[int, str, int]:
    """Write the whole log to a temporary file, fsync it once, and put it in place; return its head and how
    many events it holds after the header (group commits' log.batch bounds aside)."""
    temporary = f"{log}.import-{secrets.token_hex(4)}.tmp"
    try:
        last_seq, head, written = _record(temporary, mapped.batches, run_id, nonce, on_progress)
        _sync(temporary)
        _install(temporary, log, force)
    finally:
        _remove(temporary)
    return last_seq, head, written


def database_run(url: str, run: str | None) -> str:
    """The run id of the database run ``url`` names (its ``#RUN``); USAGE when it names none, or another id
    than ``run``."""
    return DatabaseRun(url).new_run_id(run, what="the run to import into")


def _write_database(
    url: str,
    mapped: MappedRun,
    run_id: str,
    nonce: str,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[int, str, int]:
    """Write the whole log as :func:`_write` does, to a private temporary file, then copy its lines into the
    database run in one transaction (the same bytes as the file; LOG_EXISTS when the run exists)."""
    import tempfile

    from plantrail.ledger.stores.copy import copy_runs
    from plantrail.ledger.stores.locations import run_file

    with tempfile.TemporaryDirectory(prefix="plantrail-import-") as folder:
        temporary = run_file(folder, run_id)
        last_seq, head, written = _record(temporary, mapped.batches, run_id, nonce, on_progress)
        copy_runs(temporary, url, skip_copied=False)
    return last_seq, head, written


def _record(
    path: str,
    batches: Sequence[Batch],
    run_id: str,
    nonce: str,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[int, str, int]:
    first, *rest = batches
    create, *started = first.commands
    assert isinstance(create, Create) and isinstance(create.plan, PlanSpec)  # the mapper opens with the Create
    clock = SetClock(first.ts)
    Ledger.create(
        path,
        create.plan,
        run=run_id,
        fsync="always",
        actor=create.actor,
        source=create.source,
        nonce=nonce,
        clock=clock,
        cache=False,
    ).close()
    with Ledger.open(path, fsync="none", clock=clock, cache=False) as ledger:
        written = 1 + _written(ledger.execute_many(with_their_version(started, 1)))  # the plan, then every new event
        for done, batch in enumerate(rest, start=2):
            clock.now = batch.ts
            written += _written(ledger.execute_many(with_their_version(batch.commands, ledger.unread_state.version)))
            if on_progress is not None and done % _PROGRESS_EVERY == 0:
                on_progress(done, len(batches))
        state = ledger.state
    assert state.head is not None
    return state.last_seq, state.head, written


def _written(acks: list[Ack]) -> int:
    return sum(not a.duplicate for a in acks)


def _sync(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise os_error(exc, path) from None


def _install(temporary: str, log: str, force: bool) -> None:
    try:
        if force:
            os.replace(temporary, log)
        else:
            os.link(temporary, log)
    except FileExistsError:
        raise error(
            "LOG_EXISTS", f"{log} already exists; import never overwrites a log", advice="IMPORT_LOG_EXISTS", path=log
        ) from None
    except OSError as exc:
        raise os_error(exc, log) from None
    fsync_dir(log)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
