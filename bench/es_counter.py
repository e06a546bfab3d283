"""The eventsourcing aggregates used by the eventsourcing baselines (need the `bench` extra)."""

from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate, event


class Counter(Aggregate):
    """An aggregate whose only command sets one integer field."""

    @event("Created")
    def __init__(self) -> None:
        self.value = 0

    @event("Set")
    def set(self, value: int) -> None:
        """Record a Set event carrying the new value."""
        self.value = value


class Recording(Aggregate):
    """An aggregate whose only command records one event carrying a plantrail event's data as it is."""

    @event("Started")
    def __init__(self) -> None:
        self.count = 0

    @event("Recorded")
    def record(self, data: dict[str, Any]) -> None:
        """Record an event carrying ``data`` (a plantrail record's JSON object)."""
        self.count += 1
