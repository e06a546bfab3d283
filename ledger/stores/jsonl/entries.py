"""A runs folder's logs by their sizes and times: where a folder's changes stand, as
:meth:`plantrail.ledger.stores.jsonl.run.FolderStore.head_position` gives it and
:func:`plantrail.ledger.run_changes.run_changes` compares it.

A runs folder keeps no order across its files, so a change is seen by scanning: a log that appeared, grew,
shrank (a repair) or went away.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from plantrail.ledger.stores.locations import default_run_id

__all__ = ["Entries", "changed_entries", "folder_entries"]

#: A folder's logs by run id (the file's name without ``.jsonl``): size and modification time in nanoseconds.
Entries = Mapping[str, tuple[int, int]]


def folder_entries(folder: str) -> dict[str, tuple[int, int]]:
    """The folder's ``*.jsonl`` regular files (a symbolic link names no run) by run id, each with its size and
    modification time; empty when the folder is gone."""
    found: dict[str, tuple[int, int]] = {}
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):  # gone, or a file where the folder was: no runs
        return found
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:  # removed between the listing and the look
            continue
        found[default_run_id(entry.name)] = (st.st_size, st.st_mtime_ns)
    return found


def changed_entries(before: Entries, after: Entries) -> set[str]:
    """The run ids whose log appeared, went away, or changed size or modification time between two scans."""
    return {run for run in before.keys() | after.keys() if before.get(run) != after.get(run)}
