"""Numbers of seconds that become times.

A step's ``timeout_s`` and a heartbeat's ``lease_s`` each become the time a lease ends: the timestamp the
lease runs from plus that many seconds (:mod:`projections.leases`). A time is a year from 1 to 9999, so a
number of seconds is bounded where it enters: a value that is no finite number, is not above 0 or is above
:data:`MAX_SECONDS` (10^9 s, about 31.7 years) is refused (DRAFT_INVALID in a plan, LEASE_REQUIRED for a
heartbeat), and ``verify`` replays the same rules over a log. A log written before the bound (or by hand) may
still hold a larger number: :func:`seconds_after` clamps the time it gives to the last time a timestamp can
say, so such a lease never expires, and no reader fails on it.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Final

__all__ = ["LATEST", "MAX_POLL_SECONDS", "MAX_SECONDS", "is_seconds", "poll_seconds", "seconds_after"]

#: The largest number of seconds plantrail turns into a time: 10^9 s, about 31.7 years.
MAX_SECONDS: Final = 1_000_000_000
#: The longest a follower waits between two looks at its run (an hour).
MAX_POLL_SECONDS: Final = 3600
#: The last time a timestamp can say; a later end is clamped to it.
LATEST: Final = datetime.max.replace(tzinfo=UTC)
#: The first time a timestamp can say; an earlier end is clamped to it.
_EARLIEST: Final = datetime.min.replace(tzinfo=UTC)


def is_seconds(value: object) -> bool:
    """Whether ``value`` is a number of seconds plantrail turns into a time: an int or a float (a bool is
    neither), finite, above 0 and at most :data:`MAX_SECONDS`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and 0 < value <= MAX_SECONDS


def seconds_after(moment: datetime, seconds: float) -> datetime | None:
    """``moment`` plus ``seconds``, in UTC, clamped to the times a timestamp can say (years 1 to 9999); None
    when ``seconds`` is no number (NaN). Total: no value of a log makes it raise."""
    if math.isnan(seconds):
        return None
    try:
        start = moment.astimezone(UTC)
    except OverflowError:  # a timestamp at the edge of year 1 or 9999 with an offset that leaves the range
        offset = moment.utcoffset()
        return LATEST if offset is not None and offset < timedelta(0) else _EARLIEST
    try:
        return start + timedelta(seconds=seconds)
    except OverflowError:
        return LATEST if seconds > 0 else _EARLIEST


def poll_seconds(value: object, name: str = "poll") -> float:
    """``value`` as the seconds a follower waits between two looks at its run: a finite number from 0 (look again
    at once) to :data:`MAX_POLL_SECONDS`; USAGE (naming ``name``) for anything else, so that no value makes the
    wait itself fail (``time.sleep`` overflows, or refuses a negative number)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        ok = False
    else:
        ok = 0 <= value <= MAX_POLL_SECONDS
    if not ok:
        from plantrail.ledger.vocabulary.errors import error

        raise error("USAGE", f"{name} is a number of seconds from 0 to {MAX_POLL_SECONDS}, not {value!r}")
    return float(value)  # type: ignore[arg-type]
