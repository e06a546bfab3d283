"""The file store: one JSONL file per run, and everything that exists only because the store is a file.

- :mod:`.log`: the log itself: ``JsonlStore`` (its writer), ``LogReader`` (its checked reader), ``repair``;
- :mod:`.seek`: random access: a record by seq, the last records, a growing file followed;
- :mod:`.read_ahead`: a large log's checked read in a forked child, while the caller folds;
- :mod:`.cache`, :mod:`.seal`, :mod:`.snapshot`: the cache beside a log (snapshots, the version and history
  indexes, text references), sealed so that only this user's plantrail can have written it;
- :mod:`.current`, :mod:`.reads`: the current state and the plan versions, read from the cache when it checks
  out;
- :mod:`.salvage`: what can still be read back from a damaged log;
- :mod:`.blobs`: the payloads a log keeps beside it, in ``<run>.blobs/``.

The names of :mod:`.log` load from here on first use, so importing one module of the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "JsonlStore",
    "LogReader",
    "LogScan",
    "RepairResult",
    "clean_stale_temps",
    "create_from_lines",
    "filesystem_type",
    "repair",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("plantrail.ledger.stores.jsonl.log"), name)


if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.log import (
        JsonlStore,
        LogReader,
        LogScan,
        RepairResult,
        clean_stale_temps,
        create_from_lines,
        filesystem_type,
        repair,
    )
