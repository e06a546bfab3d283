"""plantrail watch: follows a growing log, plain lines into a pipe, redraws on a terminal, Ctrl-C exits 0."""

from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.cli.watching import REDRAW, follow, frame, terminal_safe
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogScan
from tests.logs import read_records
from tests.pictures import HOSTILE_TITLE, diamond

WAIT = 20.0  # seconds before a test gives up waiting for output (a bound, not a timing)


def _watch(log: Path, stdout: int, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "plantrail", "watch", str(log), "--interval", "0.02", *extra],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "120"},
    )


def _read_until(fd: int, wanted: bytes, seen: bytearray) -> bytes:
    """Read ``fd`` into ``seen`` until ``wanted`` appears (or WAIT passes); what was read."""
    deadline = time.monotonic() + WAIT
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return bytes(seen)


def _stop(proc: subprocess.Popen[bytes], screen: int | None = None) -> int:
    """Ctrl-C the watch; read what it still writes to ``screen`` (a terminal that is not read fills up, and a
    watch that cannot write its last line never ends) until it exits."""
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + WAIT
    while screen is not None and proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([screen], [], [], 0.1)
        if ready:
            try:
                os.read(screen, 65536)
            except OSError:
                break
    return proc.wait(timeout=WAIT)


def test_watch_into_a_pipe_prints_each_new_event(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """Into a pipe: the status once, then one plain line per appended event, no escape sequence; Ctrl-C exits 0."""
    ledger = make_ledger(diamond(HOSTILE_TITLE))
    log = tmp_path / "run.jsonl"
    proc = _watch(log, subprocess.PIPE)
    assert proc.stdout is not None
    seen = bytearray()
    _read_until(proc.stdout.fileno(), b"(watching; Ctrl-C to stop)", seen)
    ledger.start("a")
    ledger.complete("a", ["evidence with \x1b]0;title\x07 inside"])
    out = _read_until(proc.stdout.fileno(), b"step.completed a", seen)
    assert _stop(proc) == 0
    text = out.decode()
    assert "seq 2 · " in text and "step.started a (v1)" in text and "step.completed a (v1)" in text
    assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;title\\x07" in text


def test_watch_on_a_terminal_redraws(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """On a pseudo-terminal each append redraws the screen; the redraw is the only escape sequence written."""
    ledger = make_ledger(diamond(HOSTILE_TITLE))
    log = tmp_path / "run.jsonl"
    main, follower = pty.openpty()
    proc = _watch(log, follower)
    os.close(follower)
    seen = bytearray()
    _read_until(main, b"Ctrl-C to stop", seen)
    ledger.start("a")
    out = _read_until(main, b"step.started a", seen)
    assert _stop(proc) == 0
    os.close(main)
    text = out.decode(errors="replace")
    assert text.count(REDRAW) >= 2
    assert text.replace(REDRAW, "").count("\x1b") == 0
    assert "in_progress" in text


def test_frame_escapes_log_text(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """The frame shows control characters from titles and evidence as escapes, never raw."""
    ledger = make_ledger(diamond(HOSTILE_TITLE))
    ledger.start("a")
    ledger.complete("a", ["done \x1b[2J\r\x9b"])
    records = [r for r in read_records(tmp_path / "run.jsonl") if not r.type.startswith("log.")]
    screen = frame(ledger.state, records[-3:], width=160)
    assert all(c == "\n" or c.isprintable() for c in screen)
    assert "\\x1b[2J" in screen and "\\x9b" in screen and "\r" not in screen
    assert terminal_safe("a\nb\x1b") == "a\nb\\x1b"


def test_watch_json_is_one_document_per_line(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """--json writes the status document, then one {"event", "advice"} line per appended event."""
    ledger = make_ledger(diamond())
    proc = _watch(tmp_path / "run.jsonl", subprocess.PIPE, "--json")
    assert proc.stdout is not None
    seen = bytearray()
    _read_until(proc.stdout.fileno(), b"\n", seen)
    ledger.start("a")
    _read_until(proc.stdout.fileno(), b'"advice":null}\n', seen)  # the end of the event's line
    assert _stop(proc) == 0
    first, second = [orjson.loads(line) for line in bytes(seen).splitlines()[:2]]
    assert first["plan_version"] == 1 and [s["id"] for s in first["steps"]] == ["a", "b", "c", "d", "e"]
    assert (second["event"]["type"], second["event"]["data"]["step"], second["advice"]) == ("step.started", "a", None)


def test_watch_follows_from_where_it_stopped(
    make_ledger: Callable[..., Ledger], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first read, each read starts at the end of a record it read before, never at the start."""
    from plantrail.ledger.stores.jsonl import follow as following

    ledger = make_ledger(diamond())
    starts: list[int] = []
    scan = following.LogScan

    def noted(fd: int, *, offset: int = 0, **rest: Any) -> LogScan:
        starts.append(offset)
        return scan(fd, offset=offset, **rest)

    monkeypatch.setattr(following, "LogScan", noted)
    checks = iter([lambda: ledger.start("a"), lambda: ledger.complete("a", ["done"]), None])

    def until() -> bool:
        step = next(checks)
        if step is None:
            return True
        step()
        return False

    log = tmp_path / "run.jsonl"
    first_end = log.stat().st_size
    out = io.StringIO()
    follow(str(log), out, interval=0.01, until=until)
    ends = [len(line) for line in log.read_bytes().splitlines(keepends=True)]
    record_ends = {sum(ends[: i + 1]) for i in range(len(ends))}
    assert starts and starts[0] == first_end  # the follower starts where the first read ended
    assert starts == sorted(starts) and set(starts) <= record_ends and max(starts) < log.stat().st_size
    assert len(set(starts)) == 2  # after the start's record was read, the next read began at its end
    assert "step.started a (v1)" in out.getvalue() and "step.completed a (v1): done" in out.getvalue()


def test_watch_on_a_terminal_keeps_running_across_a_cut_and_a_repair(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """A record the watch showed is cut into (a torn write) and repaired: the screen says so, shows the records
    appended after the repair, and the watch is still running."""
    from plantrail.ledger.stores.jsonl.log import repair

    ledger = make_ledger(diamond())
    log = tmp_path / "run.jsonl"
    main, follower = pty.openpty()
    proc = _watch(log, follower)
    os.close(follower)
    seen = bytearray()
    try:
        _read_until(main, b"Ctrl-C to stop", seen)
        ledger.start("a")
        _read_until(main, b"step.started a", seen)
        ledger.close()
        os.truncate(log, log.stat().st_size - 20)  # the started record the screen shows is torn
        _read_until(main, b"going on after seq 1", seen)
        repair(log)
        with Ledger.open(log, fsync="none") as again:
            again.start("a")
            again.complete("a", ["after the repair"])
        out = _read_until(main, b"step.completed a (v1): after the repair", seen)  # a frame's last event
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
    finally:
        code = _stop(proc, main)
        os.close(main)
    text = out.decode(errors="replace")
    last = text.rsplit(REDRAW, 1)[-1]
    assert "seq 2 is no longer in it as shown" in text
    assert "seq 4 · " in last and "step.completed a (v1): after the repair" in last
    assert "seq 2 · " not in last  # the repair record took its place; log.* records are not events
    assert code == 0
