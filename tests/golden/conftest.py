"""Fixtures of the golden pins: a clean environment in a temporary working directory, with the entropy fixed."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.golden.golden import StoppedClock, fix_entropy

#: Where the stopped clock starts (a test moves it before each command: see ``Cli``).
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def stopped_clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> StoppedClock:
    """The stopped clock plantrail reads, in ``tmp_path`` as the working directory, with no ``PLANTRAIL_*``
    variable set (a default store, a cache switch or a checkpoint key would change what the commands do)."""
    for name in [n for n in os.environ if n.startswith("PLANTRAIL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    stopped = StoppedClock(EPOCH)
    fix_entropy(monkeypatch, stopped, tmp_path / "state")
    return stopped
