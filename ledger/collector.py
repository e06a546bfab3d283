"""Python's cyclic garbage collector, paused for a stretch of work that makes no cycles.

A log's read makes millions of short-lived objects and no reference cycles: records, states and the tuples
they hold are freed by reference counting the moment they are dropped. The collector's passes over them
free nothing and cost a few percent of a full read (``verify``), and most of a hook call's import.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off inside the block and back on after it, if it was on before. Objects keep being
    freed by reference counting; a cycle made inside is collected by the first pass after the block."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
