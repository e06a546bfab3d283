"""A hook journal's mapping kept from one hook call to the next, so a call maps only what it adds.

Reading the whole journal and mapping it again at every hook call would give the same batches (the mapping is
deterministic) at a cost that grows with the session; instead the parser's and the mapping's state after the
journal's first ``offset`` bytes is kept in a sealed cache beside the journal (``<journal>.plantrail-cache/``,
:mod:`plantrail.ledger.stores.jsonl.seal`: only this user's plantrail can have written it), with the SHA-256 of
those bytes. A call reads the journal from there on; a state that is missing, unsealed, of another version or
for other bytes is not used, and the journal is read from its start (the log's keys then recognise what is
already recorded). Either way the batches are the same: the cache is a hint, never a second source of truth.

Updates are handed to the mapping once their answer is in (a call waiting for its result stays in the
parser); an update of a task the agent's board does not hold yet (hooks that ran in parallel) waits for the
task's creation and is mapped just after it (:mod:`.order` does the same for a whole journal).
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from plantrail.ledger.importers import claude_code
from plantrail.ledger.importers._records import Tally
from plantrail.ledger.importers.mapping import Batch, LiveMapping
from plantrail.ledger.importers.model import Observation, TaskEvent

from .identity import Identities

if TYPE_CHECKING:
    from _hashlib import HASH

    #: A journal as its caller names it (a hook call: a string; it loads no pathlib).
    Journal = str | os.PathLike[str]

__all__ = ["KIND", "LiveState", "advance", "load_state", "save_state"]

KIND = "plantrail-capture-state/3"
_STATE_FILE = "mapping.state"
_LIMIT = 256 << 20


class LiveState(msgspec.Struct):
    """The parser and the mapping after the journal's first ``offset`` bytes (``digest`` their SHA-256)."""

    file: str
    mapping: LiveMapping
    reader: Any
    tally: Tally = msgspec.field(default_factory=Tally)
    names: Identities = msgspec.field(default_factory=Identities)
    deferred: dict[str, list[Observation]] = msgspec.field(default_factory=dict)
    offset: int = 0
    digest: str = hashlib.sha256(b"").hexdigest()
    lines: int = 0
    updates: int = 0


def fresh_state(journal: Journal, session: str, notes: Sequence[str]) -> LiveState:
    """The state before the journal's first byte."""
    mapping = LiveMapping(format=claude_code.FORMAT, session=session, notes=notes)
    return LiveState(file=os.path.basename(journal), mapping=mapping, reader=claude_code.new_reader(journal))


def advance(
    journal: Journal, state: LiveState, blob: bytes | None = None, prefix: HASH | None = None
) -> list[tuple[str, Batch]]:
    """Read the journal's whole lines after ``state.offset`` into ``state``; the (identity, batch) pairs of the
    updates they complete. ``state`` must describe the journal's first bytes (see :func:`load_state`). ``blob``
    is the journal's bytes when the caller has read them, ``prefix`` the SHA-256 of its first ``state.offset``
    bytes when :func:`load_state` has computed it (so a call reads and hashes the journal once)."""
    if blob is None:
        with open(journal, "rb") as handle:
            blob = handle.read()
    end = blob.rfind(b"\n") + 1
    whole = blob[state.offset : end] if end > state.offset else b""
    digest = hashlib.sha256(blob[: state.offset]) if prefix is None else prefix
    digest.update(whole)
    state.offset += len(whole)
    state.digest = digest.hexdigest()
    for raw in whole.splitlines():
        state.lines += 1
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            state.tally.skip(state.lines, "invalid_json")
            continue
        if isinstance(record, dict):
            claude_code.read_record(state.reader, state.tally, state.lines, record)
    return _map_answered(state)


def _map_answered(state: LiveState) -> list[tuple[str, Batch]]:
    reader = state.reader
    waiting = min(reader.awaiting.values(), default=len(reader.observations))
    ready: list[Observation] = reader.observations[:waiting]
    reader.observations = reader.observations[waiting:]
    reader.awaiting = {call: place - waiting for call, place in reader.awaiting.items()}
    out: list[tuple[str, Batch]] = []
    for observation in ready:
        task = observation.task_id if isinstance(observation, TaskEvent) else None
        kind = observation.kind if isinstance(observation, TaskEvent) else None
        if task is not None and kind == "updated" and not state.mapping.knows_task(task):
            state.deferred.setdefault(task, []).append(observation)
            continue
        out += _apply(state, observation)
        if task is not None and kind == "created" and state.mapping.knows_task(task):
            for early in state.deferred.pop(task, []):
                out += _apply(state, early)
    return out


def _apply(state: LiveState, observation: Observation) -> list[tuple[str, Batch]]:
    identity = state.names.of(state.file, observation)
    state.updates += 1
    return [(identity, batch) for batch in state.mapping.apply(state.file, observation)]


def _cache_folder(journal: Journal) -> str:
    return os.fspath(journal) + ".plantrail-cache"


def load_state(journal: Journal, blob: bytes | None = None) -> tuple[LiveState, HASH] | None:
    """The kept state of ``journal`` (whose bytes are ``blob`` when the caller has read them), when it is sealed
    by this user's plantrail and describes the journal's first bytes as they are now, with the SHA-256 of those
    bytes (for :func:`advance`); else None."""
    from plantrail.ledger.stores.jsonl.seal import CacheFolder

    folder = CacheFolder.open(_cache_folder(journal), create=False)
    if folder is None:
        return None
    with folder:
        payload = folder.read(_STATE_FILE, KIND, _LIMIT)
    if payload is None:
        return None
    try:
        state = pickle.loads(payload)  # sealed under this user's key: only our own writes unseal
    except Exception:  # a state of an older build of these classes: read the journal again
        return None
    if not isinstance(state, LiveState):
        return None
    prefix = _prefix_digest(journal, state, blob)
    return None if prefix is None else (state, prefix)


def save_state(journal: Journal, state: LiveState) -> None:
    """Keep ``state`` for the next call (sealed; a cache that cannot be written is simply not kept)."""
    from plantrail.ledger.stores.jsonl.seal import CacheFolder

    folder = CacheFolder.open(_cache_folder(journal), create=True)
    if folder is None:
        return
    with folder:
        folder.write(_STATE_FILE, KIND, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def _prefix_digest(journal: Journal, state: LiveState, blob: bytes | None) -> HASH | None:
    """The SHA-256 of the journal's first ``state.offset`` bytes when they are those the state was built from;
    else None."""
    if blob is None:
        with open(journal, "rb") as handle:
            blob = handle.read(state.offset)
    if len(blob) < state.offset:
        return None
    prefix = hashlib.sha256(blob[: state.offset])
    return prefix if prefix.hexdigest() == state.digest else None
