"""Whether a log's times are real: an imported transcript may give none (older Cline, legacy Codex rollouts,
Markdown exports).

The importer keeps the transcript's order by stamping such events 1970-01-01T00:00:00Z plus their line or
message number, and leaves their ``source.timestamp`` empty so nobody takes the stamp for a time. That empty
timestamp is the mark, read here from the log itself: an event imported from a transcript line without a
time has no recorded time, and a log whose plan (seq 1) is such an event was written at the import's
placeholder times throughout (its header and group-commit bounds included). ``status``, ``resume`` and
``log`` then say :data:`UNRECORDED` instead of showing 1970 dates.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

import orjson

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["UNRECORDED", "log_times_recorded", "time_recorded"]

#: What a human output says of a log (or an event) whose times the transcript did not record.
UNRECORDED: Final = "times: not recorded by this format; order only"
#: How much of the plan line is read for its envelope (the members before ``data``).
_ENVELOPE_BYTES: Final = 64 * 1024


def time_recorded(record: Record, *, log_recorded: bool = True) -> bool:
    """Whether ``record.ts`` is a real time: not for an event imported from a transcript line without one, nor
    for the import's own records (header, group-commit bounds) in a log whose times were not recorded."""
    if record.source is not None:
        return bool(record.source.timestamp)
    return log_recorded or not record.type.startswith("log.")


def log_times_recorded(path: str | os.PathLike[str]) -> bool:
    """Whether the log at ``path`` records real times: False when its plan (the line after the header) was
    imported from a transcript line without a time; True for any other log, one without a plan yet, and one
    this cannot read (the command reading it reports that on its own).

    Only the plan line's envelope is read (its members before ``data``: a ``,"data":`` inside a string is
    escaped, so the first one ends the envelope), without its hash check: this says how to show times, and
    the command that prints it reads and checks the log itself. Cheap enough for every ``status``."""
    try:
        with open(path, "rb") as handle:
            handle.readline(_ENVELOPE_BYTES)  # the header
            start = handle.read(_ENVELOPE_BYTES)
    except OSError:
        return True
    end = start.find(b',"data":')
    if end < 0:
        return True
    try:
        envelope = orjson.loads(start[:end] + b"}")
    except orjson.JSONDecodeError:
        return True
    source = envelope.get("source") if isinstance(envelope, dict) else None
    return not (envelope.get("seq") == 1 and isinstance(source, dict) and not source.get("timestamp"))
