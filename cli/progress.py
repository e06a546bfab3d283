"""A progress bar on stderr for long reads, shown only when stderr is a terminal (never in pipes or JSON).

:func:`bar_line` is the pure rendering; :func:`progress_for` ticks it from a log reader's position.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:
    from plantrail.ledger.events import Record
    from plantrail.ledger.stores.jsonl import LogReader

__all__ = ["SHOW_FROM_BYTES", "bar_line", "progress_for"]

#: Logs smaller than this read too fast for a bar to help.
SHOW_FROM_BYTES: Final = 4 << 20
_EVERY: Final = 2048  # records between two redraws


def bar_line(label: str, done: int, total: int, width: int = 30) -> str:
    """One line of the bar: ``label [####......]  42%`` (``done`` of ``total`` bytes)."""
    share = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
    filled = round(share * width)
    return f"{label} [{'#' * filled}{'.' * (width - filled)}] {share * 100:3.0f}%"


def _nothing(record: Record) -> None:
    return None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_for(
    reader: LogReader, label: str, stream: TextIO | None = None, *, show_from: int = SHOW_FROM_BYTES
) -> Iterator[Callable[[Record], None]]:
    """A callback to give each record read from ``reader``; it redraws the bar on ``stream`` (stderr) every
    few thousand records when that is a terminal and the log is at least ``show_from`` bytes, and the bar is
    erased at the end. Otherwise the callback does nothing."""
    out = sys.stderr if stream is None else stream
    total = os.fstat(reader.fd).st_size
    if total < show_from or not _is_terminal(out):
        yield _nothing
        return
    count = 0

    def tick(record: Record) -> None:
        nonlocal count
        count += 1
        if count % _EVERY == 0:
            out.write("\r" + bar_line(label, reader.position.offset, total))
            out.flush()

    try:
        yield tick
    finally:
        out.write("\r\x1b[K")
        out.flush()
