"""A progress bar on stderr for long reads, shown only when stderr is a terminal (never in pipes or JSON).

:func:`bar_line` is the pure rendering; :func:`progress_bar` draws it for a read of ``total`` bytes;
:func:`progress_for` ticks it from a log reader's position, once every few thousand records.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, Protocol, TextIO

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.log import LogReader
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["EVERY", "SHOW_FROM_BYTES", "Shown", "bar_line", "progress_bar", "progress_for", "size_of"]

#: Logs smaller than this read too fast for a bar to help.
SHOW_FROM_BYTES: Final = 4 << 20
#: Records between two redraws.
EVERY: Final = 2048


class Shown(Protocol):
    """What :func:`progress_bar` yields: tell it how much is done (of its total, or of ``of``)."""

    def __call__(self, done: int, of: int | None = None) -> None: ...


def bar_line(label: str, done: int, total: int, width: int = 30) -> str:
    """One line of the bar: ``label [####......]  42%`` (``done`` of ``total`` bytes)."""
    share = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
    filled = round(share * width)
    return f"{label} [{'#' * filled}{'.' * (width - filled)}] {share * 100:3.0f}%"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _nothing(done: int, of: int | None = None) -> None:
    return None


def size_of(path: str) -> int:
    """A file's size, to decide whether a bar is worth showing (0 when it cannot be read: the command then
    says why)."""
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


@contextmanager
def progress_bar(
    label: str, total: int, stream: TextIO | None = None, *, show_from: int = SHOW_FROM_BYTES, enabled: bool = True
) -> Iterator[Shown]:
    """A callback taking how much is done (bytes of ``total``, or units of the ``total`` it is given); it
    redraws the bar on ``stream`` (stderr) when that is a terminal, the work is at least ``show_from`` bytes
    and ``enabled`` (False under ``--json``), and the bar is erased at the end. Otherwise the callback does
    nothing."""
    out = sys.stderr if stream is None else stream
    if not enabled or total < show_from or not _is_terminal(out):
        yield _nothing
        return

    def show(done: int, of: int | None = None) -> None:
        out.write("\r" + bar_line(label, done, total if of is None else of))
        out.flush()

    try:
        yield show
    finally:
        out.write("\r\x1b[K")
        out.flush()


@contextmanager
def progress_for(
    reader: LogReader,
    label: str,
    stream: TextIO | None = None,
    *,
    show_from: int = SHOW_FROM_BYTES,
    enabled: bool = True,
) -> Iterator[Callable[[Record], None]]:
    """A callback to give each record read from ``reader``: every :data:`EVERY` records it shows how far the
    reader is through the file (see :func:`progress_bar`)."""
    size = os.fstat(reader.fd).st_size
    with progress_bar(label, size, stream, show_from=show_from, enabled=enabled) as show:
        count = 0

        def tick(record: Record) -> None:
            nonlocal count
            count += 1
            if count % EVERY == 0:
                show(reader.position.offset)

        yield tick
