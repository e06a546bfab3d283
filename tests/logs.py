"""Reading back the logs that tests write (``make_ledger`` writes ``run.jsonl`` under ``tmp_path``)."""

from __future__ import annotations

import os

from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.events import Record


def read_records(path: str | os.PathLike[str]) -> list[Record]:
    """Every record of the log at ``path``, checked, in order."""
    with LogReader(path) as reader:
        return list(reader.records())
