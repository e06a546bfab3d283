"""Follow a transcript that an agent is still writing (a Codex rollout, say): append what is new each time
the file changes, until the caller stops.

    follow_transcript("rollout.jsonl", "run.jsonl", on_append=print)   # returns when `stop()` says so

Each change is one :func:`append_transcript` (so what is appended is what a later ``import --append`` of the
finished file would append, and nothing twice). A line still being written (no newline yet) is not a
record: the parser passes over it, and it is read once it is whole. A file that is still empty, or holds no
whole line yet, is waited for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from plantrail.ledger.importers.errors import transcript_error
from plantrail.ledger.vocabulary.errors import PlantrailError

from .append import AppendReport, append_transcript

__all__ = ["follow_transcript"]

POLL_SECONDS = 0.25


def follow_transcript(
    transcript_path: str | os.PathLike[str],
    log_path: str | os.PathLike[str],
    format: str | None = None,
    *,
    run: str | None = None,
    on_append: Callable[[AppendReport], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
    poll: float = POLL_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> AppendReport | None:
    """Append the transcript's new updates to the log whenever the file changes, until ``stop()`` is true
    (checked after each look); returns the last append's report (None if nothing could be read yet)."""
    path = Path(transcript_path)
    seen: tuple[int, int] | None = None
    last: AppendReport | None = None
    while True:
        now = _signature(path)
        if now != seen:
            seen = now
            report = _append_once(path, log_path, format, run)
            if report is not None:
                last = report
                if on_append is not None:
                    on_append(report)
        if stop():
            return last
        sleep(poll)


def _signature(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError as exc:
        raise transcript_error("TRANSCRIPT_UNREADABLE", f"cannot read {path}: {exc.strerror or exc}") from None
    return info.st_size, info.st_mtime_ns


def _append_once(path: Path, log: str | os.PathLike[str], format: str | None, run: str | None) -> AppendReport | None:
    """One append; None while the file holds no whole record yet (empty, or only a line being written)."""
    try:
        return append_transcript(path, log, format, run=run)
    except PlantrailError as exc:
        if exc.code == "EMPTY_TRANSCRIPT" or (exc.code == "NOT_A_TRANSCRIPT" and b"\n" not in _head(path)):
            return None
        raise


def _head(path: Path) -> bytes:
    """The file's first MiB, read without waiting on a FIFO (only a regular file: else the error's code)."""
    from plantrail.ledger.stores.files import open_regular

    fd = open_regular(str(path), what="transcript")
    try:
        return os.pread(fd, 1 << 20, 0)
    finally:
        os.close(fd)
