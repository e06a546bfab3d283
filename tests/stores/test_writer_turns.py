"""A ledger opened on a log catches up as a reader reads, so that an append takes the writer lock once; a write
in progress when it opens is waited for, and a torn tail is still refused when it opens."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.state import fold
from tests.stores.test_jsonl import _read

MakeLedger = Callable[..., Ledger]


def _exclusive_locks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the exclusive flock calls from now on (each one a writer turn)."""
    taken: list[int] = []
    flock = fcntl.flock

    def counting(fd: Any, operation: int) -> Any:
        if operation & fcntl.LOCK_EX:
            taken.append(operation)
        return flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", counting)
    return taken


@pytest.mark.parametrize("cache", [True, False])
def test_opening_a_log_and_appending_once_takes_the_writer_lock_once(
    make_ledger: MakeLedger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: bool
) -> None:
    """Open, one command, close (what a command line append does): one exclusive lock turn, with a snapshot
    to start from or without, and records another writer appended after it read."""
    first = make_ledger()
    first.start("reproduce")
    first.close()
    other = Ledger.open(tmp_path / "run.jsonl", fsync="none", cache=False)
    other.complete("reproduce", ["appended after the snapshot"])  # the snapshot is now behind the log
    other.close()
    taken = _exclusive_locks(monkeypatch)
    with Ledger.open(tmp_path / "run.jsonl", fsync="none", cache=cache) as ledger:
        ledger.start("diagnose")
        assert ledger.state == fold(_read(tmp_path / "run.jsonl"))
    assert len(taken) == 1


def test_a_write_in_progress_when_a_ledger_opens_is_waited_for(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A ledger that opens while another writer holds the lock mid-write (half its line written) waits for the
    write and starts from the record it completes, as a reader does, instead of calling it a torn tail."""
    log = tmp_path / "run.jsonl"
    ledger = make_ledger()
    ledger.start("reproduce")
    line = log.read_bytes().splitlines(keepends=True)[-1]
    ledger.close()
    with open(log, "r+b") as f:  # take the last line back: the other writer is about to write it
        f.truncate(os.path.getsize(log) - len(line))
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    opened: list[Any] = []
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line[:10])
        opener = threading.Thread(target=lambda: opened.append(_open_or_error(log)), daemon=True)
        opener.start()
        opener.join(0.3)
        assert opener.is_alive(), "the ledger did not wait for the write in progress"
        os.write(fd, line[10:])
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    opener.join(30)
    assert not opener.is_alive()
    [reopened] = opened
    assert isinstance(reopened, Ledger)
    assert reopened.state.last_seq == fold(_read(log)).last_seq
    reopened.close()


def _open_or_error(log: Path) -> Ledger | PlantrailError:
    try:
        return Ledger.open(log, fsync="none", cache=False)
    except PlantrailError as exc:
        return exc


def test_a_torn_tail_is_refused_when_the_ledger_opens(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A log ending in half a line that no writer is writing is refused TORN_TAIL by the open, and left as it
    was."""
    log = tmp_path / "run.jsonl"
    make_ledger().close()
    with open(log, "ab") as f:
        f.write(b'{"v":1,"seq":2')
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as info:
        Ledger.open(log, fsync="none")
    assert info.value.code == "TORN_TAIL"
    assert log.read_bytes() == before
