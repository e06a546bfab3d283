"""Append to a log what a transcript shows and the log does not hold yet: the one mapping, applied to a
transcript that grows (``plantrail import --append`` / ``--follow``, and every agent hook).

    append_transcript("rollout.jsonl", "run.jsonl") -> AppendReport

How, and why:

* **One mapping.** The whole transcript is mapped as a whole import maps it (``mapping.map_updates``, in its
  ``live`` form: no focus limit fixed before the agent's peak is known), so an appended event is the event a
  whole import would have written for the same update, in the same mapper state. Mapping is pure and fast; the
  cost of reading the whole transcript again is what keeps the mapping single.
* **What the log holds** is recognised by the transcript's own ids (:mod:`.identity`): each update's commands
  are appended together (one group commit), keyed ``<session>:<identity>:<n>``; an update whose last key the
  log holds (checked against the log's bytes) is recorded (a log's first update is written in two steps, the
  plan with the log's header and then the rest; a crash between them leaves the rest to the next append),
  and so is one whose call id a source of the log names (a log written by a whole import, which has no
  keys). A re-delivered update is therefore never a second event.
* **A log that does not exist yet** is created from the first update that lists an item, with the run id
  given (else the transcript's session id); a transcript with no plan yet appends nothing (not an error:
  the agent has not planned yet).
* **An update the ledger refuses** (the log went its own way: a step it holds completed that the transcript
  still shows open) is left out and reported with its code; the updates after it are still tried, each
  against the log as it then stands. Nothing refused is ever half-written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

import msgspec

from plantrail.ledger.api import Ledger
from plantrail.ledger.importers.mapping import Batch, map_updates, with_their_version
from plantrail.ledger.importers.model import Observation
from plantrail.ledger.rules.decide import Command, Create, Replan
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.vocabulary.clock import SetClock
from plantrail.ledger.vocabulary.errors import PlantrailError, Refused
from plantrail.ledger.vocabulary.plan import PlanSpec

from .identity import batch_key, identities, identity_of_source

__all__ = ["AppendReport", "Refusal", "append_observations", "append_transcript", "recorded_sources", "write_batches"]


class Refusal(msgspec.Struct, frozen=True):
    """An update the ledger refused to record: its identity, the error's code and message."""

    identity: str
    code: str
    message: str


class AppendReport(msgspec.Struct, frozen=True):
    """What one append found and wrote."""

    log: str
    run: str | None
    created: bool
    plan_updates: int
    updates_recorded: int
    """Updates with events that the log already held (recognised by their identity)."""
    updates_appended: int
    events_written: int
    refused: tuple[Refusal, ...]
    last_seq: int
    head_hash: str | None


def append_transcript(
    transcript_path: str | os.PathLike[str],
    log_path: str | os.PathLike[str],
    format: str | None = None,
    *,
    with_subagents: bool = False,
    run: str | None = None,
    notes: Sequence[str] = (),
) -> AppendReport:
    """Extend ``log_path`` (created when missing) with the updates of a transcript that it does not hold yet;
    ``notes`` are added to version 1's (a hook adapter names itself)."""
    from pathlib import Path

    from plantrail.ledger.importers.importer import read_observations

    target = as_run(log_path)
    if target.names_its_id:
        run = target.new_run_id(run, what="the run to import into")  # the URL names the run: another is USAGE
    read = read_observations(Path(transcript_path), format, with_subagents=with_subagents)
    return append_observations(
        log_path,
        read.observations,
        format=read.lead.format,
        session=read.session,
        run=run or read.run,
        notes=(*read.notes, *notes),
    )


def append_observations(
    log_path: str | os.PathLike[str],
    observations: Sequence[tuple[str, Observation]],
    *,
    format: str,
    session: str,
    run: str,
    notes: Sequence[str] = (),
    own_journal: bool = False,
) -> AppendReport:
    """Map every observation (all of the transcript so far) and append the updates the log does not hold.

    Updates are recognised by their keys and by the call ids the log's unkeyed sources name (a whole import's
    log has no keys). ``own_journal`` says the log was only ever appended from these very observations, in
    their order (a hook's journal): every update before the last one recorded is then recorded or was refused
    (and would be again), so the log is read no further back than that one and its snapshot.
    """
    log = os.fspath(log_path)
    try:
        mapped = map_updates(observations, format=format, session=session, notes=notes, live=True)
    except PlantrailError as exc:
        if exc.code != "NO_PLAN_IN_TRANSCRIPT":
            raise
        return AppendReport(log, None, False, len(observations), 0, 0, 0, (), -1, None)
    names = identities(observations)
    batches = [(names[b.update], b) for b in mapped.batches]
    return write_batches(
        log, batches, session=session, run=run, plan_updates=len(observations), own_journal=own_journal
    )


def write_batches(
    log_path: str | os.PathLike[str],
    batches: Sequence[tuple[str, Batch]],
    *,
    session: str,
    run: str,
    plan_updates: int,
    own_journal: bool = False,
) -> AppendReport:
    """Append the (identity, batch) pairs the log does not hold yet (see the module); the log is created from
    the first batch's plan when it does not exist."""
    log = os.fspath(log_path)
    keyed = [(identity, _keyed(batch, session, identity)) for identity, batch in batches]
    if not keyed:
        return AppendReport(log, None, False, plan_updates, 0, 0, 0, (), -1, None)
    created = False
    if not as_run(log).exists():
        created = _create(log, batches[0][1].ts, keyed[0][1], run)
    clock = SetClock(batches[0][1].ts)  # the transcript's times, as a whole import stamps them
    with Ledger.open(log, clock=clock) as ledger:
        held, named = _held(ledger, log, keyed, own_journal)
        refused: list[Refusal] = []
        appended = recorded = 0
        written = 1 if created else 0  # the plan, written with the header
        for (identity, commands), (_, batch) in zip(keyed, batches, strict=True):
            if commands[-1].key in held or identity_of_source(*_origin(commands)) in named:
                recorded += 1
                continue
            clock.now = batch.ts
            try:
                state = ledger.unread_state
                acks = ledger.execute_many(with_their_version(_keeping_terms(commands, state.plan), state.version))
            except Refused as exc:
                refused.append(Refusal(identity, exc.code, exc.message))
                continue
            appended += 1
            written += sum(not ack.duplicate for ack in acks)
        state = ledger.unread_state  # its run, seq and head: no evidence is read
    return AppendReport(
        log=log,
        run=state.run,
        created=created,
        plan_updates=plan_updates,
        updates_recorded=recorded,
        updates_appended=appended,
        events_written=written,
        refused=tuple(refused),
        last_seq=state.last_seq,
        head_hash=state.head,
    )


def _held(
    ledger: Ledger, log: str, batches: Sequence[tuple[str, tuple[Command, ...]]], own_journal: bool
) -> tuple[frozenset[str], frozenset[str]]:
    """The last keys of the batches the log holds, and the identities its unkeyed sources name."""
    last_keys = [commands[-1].key or "" for _, commands in batches]
    if not own_journal:
        return ledger.recorded(last_keys), recorded_sources(log)
    for place in range(len(last_keys) - 1, -1, -1):
        if ledger.recorded([last_keys[place]]):
            return frozenset(last_keys[: place + 1]), frozenset()
    return frozenset(), frozenset()


def recorded_sources(log: str) -> frozenset[str]:
    """The identities (call id, else file and line) that the sources of the log's unkeyed events name (a whole
    import's; a keyed event is recognised by its key, since its update may be only partly written)."""
    with as_run(log) as run:
        records = run.records()
        return frozenset(
            identity_of_source(r.source.file, r.source.line, r.source.id)
            for r in records
            if r.source is not None and r.key is None
        )


def _keyed(batch: Batch, session: str, identity: str) -> tuple[Command, ...]:
    return tuple(
        msgspec.structs.replace(command, key=batch_key(session, identity, place))
        for place, command in enumerate(batch.commands)
    )


def _keeping_terms(commands: Sequence[Command], current: PlanSpec | None) -> tuple[Command, ...]:
    """The commands with each mapped replan keeping the task terms no transcript states (the policy, the task
    scope, the task's inputs and observed versions), as the log holds them: what the user set on a live run
    survives the agent's next plan update."""
    if current is None:
        return tuple(commands)
    return tuple(
        msgspec.structs.replace(
            c, plan=replace(c.plan, policy=current.policy, scope=current.scope, artifacts=current.artifacts)
        )
        if isinstance(c, Replan) and isinstance(c.plan, PlanSpec)
        else c
        for c in commands
    )


def _origin(commands: Sequence[Command]) -> tuple[str, int | None, str | None]:
    source = commands[0].source
    return ("", None, None) if source is None else (source.file, source.line, source.id)


def _create(log: str, ts: str, first: Sequence[Command], run: str) -> bool:
    """Create the log with the first update's plan; False when another writer created it first (or, for a
    database run, when it exists: the run id is the URL's own)."""
    create = first[0]
    assert isinstance(create, Create) and isinstance(create.plan, PlanSpec)  # the mapper opens with the Create
    target = as_run(log)
    if target.names_its_id:
        run = target.new_run_id(what="the run to import into")  # the URL's own
    try:
        Ledger.create(
            log,
            create.plan,
            run=run,
            actor=create.actor,
            source=create.source,
            idempotency_key=create.key,
            clock=SetClock(ts),
        ).close()
    except PlantrailError as exc:
        if exc.code != "LOG_EXISTS":
            raise
        return False
    return True
