"""The agent's own plan tool beside the plan server: one session is one run, counted once.

When the run of a session holds plan versions the plan server wrote (or anyone but the hooks' mapping: a
``plan.*`` record whose idempotency key is not one the hooks give, ``<session>:…``), the plan lives there, and
the agent's own plan-tool updates (TodoWrite, TaskCreate, TaskUpdate …) arriving through the hooks are not
mapped into versions of their own: each becomes a note on the current version, an observation
:data:`AGENT_PLAN_TOOL` whose version says what the agent's list held, keyed ``<session>:<update>:note`` so an
update delivered twice is one note (a run that finished takes none). A run without such versions is mapped as
before, the agent's updates making the versions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from plantrail.ledger.importers.model import ListSnapshot, Observation, TaskEvent
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.vocabulary.clock import SetClock
from plantrail.ledger.vocabulary.cut import one_line
from plantrail.ledger.vocabulary.errors import PlantrailError

if TYPE_CHECKING:
    from plantrail.ledger.importers.mapping import Batch

__all__ = ["AGENT_PLAN_TOOL", "NOTE_LIMIT", "kept_by_plan_server", "note_of", "write_notes"]

#: The observation key of a note of the agent's own plan tool.
AGENT_PLAN_TOOL = "agent-plan-tool"
NOTE_LIMIT = 500
_PLAN_TYPES = frozenset({"plan.created", "plan.replanned", "plan.extended"})
_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def kept_by_plan_server(
    log: str | os.PathLike[str], session: str, since: tuple[int, str] | None = None, *, known: bool = False
) -> tuple[bool, tuple[int, str] | None]:
    """Whether the session's run exists and holds a plan version the hooks' mapping did not write, and the seq
    and hash of the last record read. ``since`` is such a place from an earlier call: when the log still holds
    that record, only the records after it are read, and what the earlier call found (``known``) holds still (a
    log replaced since is read from its start)."""
    run = as_run(log)
    if not run.exists():
        return False, None
    own = f"{session}:"
    with run:
        held = None if since is None else next(iter(run.records(after=since[0] - 1, upto=since[0])), None)
        start = since if since is not None and held is not None and held.h == since[1] else None
        if start is not None and known:
            return True, start
        last = start
        for record in run.records(after=-1 if start is None else start[0]):
            last = (record.seq, record.h)
            if record.type in _PLAN_TYPES and not (record.key or "").startswith(own):
                return True, last
    return False, last


def note_of(observation: Observation) -> str:
    """What one update of the agent's plan tool said, in one line of at most :data:`NOTE_LIMIT` characters."""
    if isinstance(observation, ListSnapshot):
        items = " · ".join(f"{_MARKS.get(i.status, f'[{i.status}]')} {i.text}" for i in observation.items)
        said = f"{observation.tool}: {items or 'an empty list'}"
    elif isinstance(observation, TaskEvent):
        status = observation.status_to or observation.requested_status
        said = f"task {observation.task_id or '?'} {observation.kind}: {observation.subject or ''}".rstrip(": ")
        said += f" ({status})" if status else ""
    else:  # an approval or a plan proposal: named by its kind
        said = type(observation).__name__
    return one_line(said, NOTE_LIMIT)


def write_notes(
    log: str | os.PathLike[str],
    batches: Sequence[tuple[str, Batch]],
    updates: Mapping[str, Observation],
    session: str,
) -> list[str]:
    """One note on the current version for each update that gave batches (see the module); the refusals, as
    error lines."""
    from plantrail.ledger.api import Ledger

    errors: list[str] = []
    seen: list[tuple[str, str]] = []
    for identity, batch in batches:
        if identity in updates and identity not in {i for i, _ in seen}:
            seen.append((identity, batch.ts))
    if not seen:
        return errors
    clock = SetClock(seen[0][1])
    with Ledger.open(log, clock=clock) as ledger:
        if ledger.unread_state.finished:
            return errors  # a finished run takes no note: nothing the agent's list says changes it
        for identity, ts in seen:
            clock.now = ts
            key = f"{session}:{identity}:note"
            try:
                ledger.observe(AGENT_PLAN_TOOL, note_of(updates[identity]), idempotency_key=key, actor="agent")
            except PlantrailError as exc:
                errors.append(f"error[{exc.code}]: note of update {identity}: {exc.message}")
    return errors
