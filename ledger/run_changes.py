"""Which runs of a store changed: the store's follow across runs, as the run ids that were appended to.

A database follows every record of every run in the order it committed them
(:class:`~plantrail.ledger.stores.protocol.FollowsAll`: a ``NOTIFY`` wakes it, a bounded poll is its fallback).
A runs folder keeps no order across its files, so its entries and their sizes are scanned: a log that appeared,
grew, shrank (a repair) or went away is a change. On Linux, inotify wakes the scan as soon as the folder changes
(the scan still runs every ``poll`` seconds: inotify says nothing of a folder on a network filesystem, and its
queue can overflow). Either way the caller gets a batch of run ids per wake-up, never the records themselves: a
reader of the list asks the store again for the rows it shows.

    from plantrail.ledger.run_changes import run_changes

    for changed in run_changes(".plantrail/runs", stop=lambda: done):
        print(sorted(changed))
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import select
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from plantrail.ledger.stores.locations import default_run_id
from plantrail.ledger.stores.opener import open_store
from plantrail.ledger.stores.protocol import FollowsAll

__all__ = ["changed_entries", "folder_entries", "run_changes"]

#: A folder's logs by run id (the file's name without ``.jsonl``): size and modification time in nanoseconds.
Entries = Mapping[str, tuple[int, int]]


def folder_entries(folder: str) -> dict[str, tuple[int, int]]:
    """The folder's ``*.jsonl`` regular files (a symbolic link names no run) by run id, each with its size and
    modification time; empty when the folder is gone."""
    found: dict[str, tuple[int, int]] = {}
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
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


#: inotify's events for a folder whose entries are created, written, moved or removed.
_IN_EVENTS: Final = 0x2 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200  # MODIFY CLOSE_WRITE MOVED_FROM MOVED_TO CREATE DELETE
_IN_NONBLOCK_CLOEXEC: Final = 0o4000 | 0o2000000


@contextlib.contextmanager
def _inotify(folder: str) -> Iterator[int | None]:
    """A non-blocking inotify descriptor watching ``folder`` (closed afterwards), or None where there is none."""
    fd = None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError, TypeError):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(_IN_NONBLOCK_CLOEXEC)
            if fd < 0:
                fd = None
            elif libc.inotify_add_watch(fd, os.fsencode(folder), _IN_EVENTS) < 0:
                os.close(fd)
                fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _wait(fd: int | None, poll: float) -> None:
    """Until the folder changes (inotify) or ``poll`` seconds pass; the events read are only a wake-up."""
    if fd is None:
        time.sleep(poll)
        return
    ready, _, _ = select.select([fd], [], [], poll)
    if ready:
        time.sleep(0.02)  # let a burst of writes settle into one scan
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(fd, 65536):
                pass


def _folder_changes(folder: str, poll: float, stop: Callable[[], bool]) -> Iterator[set[str]]:
    with _inotify(folder) as fd:
        yield from _scanned_changes(folder, fd, poll, stop)


def _scanned_changes(folder: str, fd: int | None, poll: float, stop: Callable[[], bool]) -> Iterator[set[str]]:
    seen = folder_entries(folder)
    while not stop():
        _wait(fd, poll)
        now = folder_entries(folder)
        changed = changed_entries(seen, now)
        seen = now
        if changed:
            yield changed


def _followed_changes(store: FollowsAll, poll: float, stop: Callable[[], bool]) -> Iterator[set[str]]:
    """The runs a store's follow across runs reports, from the records committed after it starts; each wake-up's
    records as one batch (a batch ends when the follower would wait)."""
    head = getattr(store, "head_position", None)
    position = head() if head is not None else None  # only what is appended from now on is a change
    pending: set[str] = set()

    def flushed() -> bool:
        return stop() or bool(pending)

    while not stop():
        for at, record in store.follow(after=position, poll=poll, stop=flushed):
            position = at
            pending.add(record.run)
        if pending:
            yield pending
            pending = set()


def run_changes(
    where: str | os.PathLike[str] | None = None, *, poll: float = 0.25, stop: Callable[[], bool] | None = None
) -> Iterator[set[str]]:
    """Batches of the ids of the runs of a runs folder or a database (as :func:`plantrail.ledger.runs.list_runs`
    names them) appended to, repaired or removed after the call, until ``stop()`` is true (asked at least every
    ``poll`` seconds). A folder's run id is its log's file name without ``.jsonl``."""
    store = open_store(where)
    halt = stop if stop is not None else (lambda: False)
    if isinstance(store, FollowsAll):
        return _followed_changes(store, poll, halt)
    return _folder_changes(store.location, poll, halt)
