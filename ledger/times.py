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
from typing import Final

from plantrail.ledger.errors import PlantrailError
from plantrail.ledger.events import Record

__all__ = ["UNRECORDED", "log_times_recorded", "time_recorded"]

#: What a human output says of a log (or an event) whose times the transcript did not record.
UNRECORDED: Final = "times: not recorded by this format; order only"


def time_recorded(record: Record, *, log_recorded: bool = True) -> bool:
    """Whether ``record.ts`` is a real time: not for an event imported from a transcript line without one, nor
    for the import's own records (header, group-commit bounds) in a log whose times were not recorded."""
    if record.source is not None:
        return bool(record.source.timestamp)
    return log_recorded or not record.type.startswith("log.")


def log_times_recorded(path: str | os.PathLike[str]) -> bool:
    """Whether the log at ``path`` records real times: False when its plan (seq 1) was imported from a
    transcript line without a time; True for any other log, and for one without a plan yet."""
    from plantrail.ledger.stores.seek import record_at

    try:
        first = record_at(os.fspath(path), 1)
    except PlantrailError:
        return True  # no plan yet, or damage the command reports on its own
    return time_recorded(first)
