"""A hook journal's mapping kept from one hook call to the next, so a call maps only what it adds.

Reading the whole journal and mapping it again at every hook call would give the same batches (the mapping is
deterministic) at a cost that grows with the session; instead the parser's and the mapping's state after the
journal's first ``offset`` bytes is kept in a sealed cache beside the journal (``<journal>.plantrail-cache/``,
:mod:`plantrail.ledger.stores.jsonl.seal`: only this user's plantrail can have written it), with the SHA-256 of
those bytes. The state is data, never code: MessagePack of :class:`LiveState` (msgspec), its format named by
the seal's kind (:data:`KIND`), decoded with every type checked, so a planted file can at worst be a state that
does not decode. A call reads the journal from there on; a state that is missing, unsealed, of another version,
that does not decode or is for other bytes is not used, and the journal is read from its start (the log's keys
then recognise what is already recorded). Either way the batches are the same: the cache is a hint, never a
second source of truth.

Updates are handed to the mapping once their answer is in (a call waiting for its result stays in the
parser); an update of a task the agent's board does not hold yet (hooks that ran in parallel) waits for the
task's creation and is mapped just after it (:mod:`.order` does the same for a whole journal).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import orjson

from plantrail.ledger.importers import claude_code
from plantrail.ledger.importers._records import Tally
from plantrail.ledger.importers.mapping import Batch, LiveMapping
from plantrail.ledger.importers.model import Observation, TaskEvent

from .identity import Identities
from .journal import Journal

if TYPE_CHECKING:
    from _hashlib import HASH

    from plantrail.ledger.stores.jsonl.seal import CacheFolder

    #: A journal as its caller names it (a hook call: a string; it loads no pathlib), or held open and locked.
    JournalName = str | os.PathLike[str]
    AnyJournal = Journal | JournalName

__all__ = ["KIND", "LiveState", "advance", "decode_state", "encode_state", "fresh_state", "load_state", "save_state"]

#: The seal's kind of a kept state: names its format (MessagePack of :class:`LiveState`); a state of another
#: kind (an older build's) reads as absent.
KIND = "plantrail-capture-state/4"
_STATE_FILE = "mapping.state"
_LIMIT = 256 << 20


class LiveState(msgspec.Struct):
    """The parser and the mapping after the journal's first ``offset`` bytes (``digest`` their SHA-256)."""

    file: str
    mapping: LiveMapping
    reader: claude_code.Reader
    tally: Tally = msgspec.field(default_factory=Tally)
    names: Identities = msgspec.field(default_factory=Identities)
    deferred: dict[str, list[Observation]] = msgspec.field(default_factory=dict)
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    digest: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")] = hashlib.sha256(b"").hexdigest()
    lines: Annotated[int, msgspec.Meta(ge=0)] = 0
    updates: Annotated[int, msgspec.Meta(ge=0)] = 0
    plan_server: bool = False
    """Whether the run holds plan versions the plan server wrote (:mod:`.notes`): once it does, it always will."""
    checked: tuple[int, str] | None = None
    """The seq and hash of the last log record :func:`plantrail.ledger.capture.notes.kept_by_plan_server` read."""


def fresh_state(journal: AnyJournal, session: str, notes: Sequence[str]) -> LiveState:
    """The state before the journal's first byte."""
    path = journal.path if isinstance(journal, Journal) else journal
    mapping = LiveMapping.start(format=claude_code.FORMAT, session=session, notes=notes)
    return LiveState(file=os.path.basename(path), mapping=mapping, reader=claude_code.new_reader(path))


def encode_state(state: LiveState) -> bytes:
    """``state`` as the bytes kept (MessagePack)."""
    return msgspec.msgpack.encode(state)


def decode_state(payload: bytes) -> LiveState | None:
    """The state kept in ``payload``, every value of the type it must have; None when it does not decode (a
    damaged or foreign state: the journal is read again)."""
    try:
        return _decoder()(payload)
    except (msgspec.MsgspecError, ValueError, TypeError):
        return None


_DECODERS: list[Callable[[bytes], LiveState]] = []


def _decoder() -> Callable[[bytes], LiveState]:
    """The typed decoder, made on first use (once a process)."""
    if not _DECODERS:
        _DECODERS.append(msgspec.msgpack.Decoder(LiveState, dec_hook=_counter).decode)
    return _DECODERS[0]


def _counter(kind: Any, value: Any) -> Any:
    """MessagePack has no counter: a ``Counter[str]`` is kept as a map of strings to integers."""
    if kind is Counter or getattr(kind, "__origin__", None) is Counter:
        return Counter(msgspec.convert(value, dict[str, int]))
    raise NotImplementedError(f"no decoder for {kind!r}")


def advance(
    journal: AnyJournal,
    state: LiveState,
    blob: bytes | None = None,
    prefix: HASH | None = None,
    updates: dict[str, Observation] | None = None,
) -> list[tuple[str, Batch]]:
    """Read the journal's whole lines after ``state.offset`` into ``state``; the (identity, batch) pairs of the
    updates they complete. ``state`` must describe the journal's first bytes (see :func:`load_state`). ``blob``
    is the journal's bytes when the caller has read them, ``prefix`` the SHA-256 of its first ``state.offset``
    bytes when :func:`load_state` has computed it (so a call reads and hashes the journal once). ``updates``,
    when given, receives each mapped update by its identity (what a note of the update says)."""
    if blob is None:
        blob = _journal_bytes(journal)
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
    return _map_answered(state, updates)


def _map_answered(state: LiveState, updates: dict[str, Observation] | None = None) -> list[tuple[str, Batch]]:
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
        out += _apply(state, observation, updates)
        if task is not None and kind == "created" and state.mapping.knows_task(task):
            for early in state.deferred.pop(task, []):
                out += _apply(state, early, updates)
    return out


def _apply(
    state: LiveState, observation: Observation, updates: dict[str, Observation] | None = None
) -> list[tuple[str, Batch]]:
    identity = state.names.of(state.file, observation)
    state.updates += 1
    if updates is not None:
        updates[identity] = observation
    return [(identity, batch) for batch in state.mapping.apply(state.file, observation)]


def load_state(journal: AnyJournal, blob: bytes | None = None) -> tuple[LiveState, HASH] | None:
    """The kept state of ``journal`` (whose bytes are ``blob`` when the caller has read them), when it is sealed
    by this user's plantrail, decodes, and describes the journal's first bytes as they are now, with the
    SHA-256 of those bytes (for :func:`advance`); else None."""
    folder = _cache_folder(journal, create=False)
    if folder is None:
        return None
    with folder:
        payload = folder.read(_STATE_FILE, KIND, _LIMIT)
    state = None if payload is None else decode_state(payload)
    if state is None:
        return None
    prefix = _prefix_digest(state, _journal_bytes(journal) if blob is None else blob)
    return None if prefix is None else (state, prefix)


def save_state(journal: AnyJournal, state: LiveState) -> None:
    """Keep ``state`` for the next call (sealed; a cache that cannot be written is simply not kept)."""
    folder = _cache_folder(journal, create=True)
    if folder is None:
        return
    with folder:
        folder.write(_STATE_FILE, KIND, encode_state(state))


def _cache_folder(journal: AnyJournal, *, create: bool) -> CacheFolder | None:
    """The journal's cache folder, ``<journal>.plantrail-cache`` beside it, reached from the journal's folder
    without following a link (None when it is missing, is not a folder of this user's, or has no key)."""
    from plantrail.ledger.stores.jsonl.seal import CacheFolder
    from plantrail.ledger.stores.owned import Folder
    from plantrail.ledger.vocabulary.errors import PlantrailError

    if isinstance(journal, Journal):
        parent, name, own = journal.folder, journal.name, False
    else:
        path = os.fspath(journal)
        name, own = os.path.basename(path), True
    try:
        if own:
            parent = Folder.open(os.path.dirname(path) or ".")
        try:
            fd = parent.folder(f"{name}.plantrail-cache", create=create, mode=0o700, what="cache folder").detach()
        finally:
            if own:
                parent.close()
    except PlantrailError:
        return None
    return CacheFolder.adopt(fd, create=create)


def _journal_bytes(journal: AnyJournal) -> bytes:
    """The journal's bytes: through the held journal, else read from its folder without following a link."""
    from plantrail.ledger.stores.owned import Folder
    from plantrail.ledger.vocabulary.limits import TRANSCRIPT

    if isinstance(journal, Journal):
        return journal.content()
    path = os.fspath(journal)
    with Folder.open(os.path.dirname(path) or ".") as folder:
        return folder.read(os.path.basename(path), TRANSCRIPT.cap(), what="journal") or b""


def _prefix_digest(state: LiveState, blob: bytes) -> HASH | None:
    """The SHA-256 of the journal's first ``state.offset`` bytes when they are those the state was built from;
    else None."""
    if len(blob) < state.offset:
        return None
    prefix = hashlib.sha256(blob[: state.offset])
    return prefix if prefix.hexdigest() == state.digest else None
