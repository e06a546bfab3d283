"""The one place plantrail reads the wall clock (callers can pass their own clock instead)."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["SetClock", "utc_now"]


def utc_now() -> str:
    """The current UTC time as ``2026-11-29T21:28:39.123456Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class SetClock:
    """A clock that says the time it was last set to: what importers and hooks stamp on the events of an update
    taken from a transcript (the transcript's own time, set before each batch)."""

    def __init__(self, now: str) -> None:
        self.now = now

    def __call__(self) -> str:
        return self.now
