"""The eventsourcing aggregate used by the eventsourcing baseline (needs the `bench` extra)."""

from __future__ import annotations

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
