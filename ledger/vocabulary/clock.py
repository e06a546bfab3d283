"""The one place plantrail reads the wall clock (callers can pass their own clock instead)."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utc_now"]


def utc_now() -> str:
    """The current UTC time as ``2026-11-29T21:28:39.123456Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
