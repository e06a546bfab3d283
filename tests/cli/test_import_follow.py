"""`import --follow` across a torn tail of the log it appends to: it waits for the repair, then goes on."""

from __future__ import annotations

import fcntl
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.importers import import_transcript
from plantrail.ledger.stores.jsonl.log import repair
from tests.conftest import SAMPLES
from tests.helpers.story import story

WAIT = 20.0  # seconds before a test gives up waiting (a bound, not a timing)


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("the condition never held")
        time.sleep(0.05)


def _stderr_until(process: subprocess.Popen[bytes], wanted: bytes, seen: bytearray) -> None:
    assert process.stderr is not None
    deadline = time.monotonic() + WAIT
    while wanted not in seen and time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stderr], [], [], 0.1)
        if ready:
            seen += process.stderr.read1(65536)  # type: ignore[attr-defined]


def test_follow_waits_for_the_repair_of_a_torn_log_and_goes_on(tmp_path: Path) -> None:
    """A torn tail on the log (a writer refuses to append onto one) is said once on stderr while the import waits;
    after the repair the updates that came meanwhile are appended, each once, and the import keeps running."""
    lines = (SAMPLES / "claude-session.jsonl").read_bytes().splitlines(keepends=True)
    growing, log = tmp_path / "session.jsonl", tmp_path / "run.jsonl"
    growing.write_bytes(b"".join(lines[:8]))
    command = [sys.executable, "-m", "plantrail", "import", "--follow", str(growing), "-o", str(log)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = bytearray()
    first = import_transcript(growing, tmp_path / "first.jsonl")
    try:
        _wait_for(lambda: log.exists() and story(log) == story(Path(first.log)))
        # Torn as a crashed writer tears a log: holding the writer lock (flock on the log), never in the middle of
        # another writer's turn, which the writer would rightly refuse as a change outside its lock.
        with log.open("ab") as torn:
            fcntl.flock(torn.fileno(), fcntl.LOCK_EX)
            torn.write(b'{"v":2,"seq":99,"ts":"20')
            torn.flush()
            fcntl.flock(torn.fileno(), fcntl.LOCK_UN)
        with growing.open("ab") as more:
            more.write(b"".join(lines[8:]))
        _stderr_until(process, b"the import goes on once it is repaired", err)
        assert process.poll() is None, bytes(err)
        repair(log)
        whole = import_transcript(SAMPLES / "claude-session.jsonl", tmp_path / "whole.jsonl")
        _wait_for(lambda: story(log) == story(Path(whole.log)))
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=30)
    err += rest
    assert process.returncode == 0, bytes(err)
    assert err.count(b"waiting: ") == 1 and b"Traceback" not in err
