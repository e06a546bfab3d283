"""Which runs of a store changed: the store's follow across runs, as the run ids that were appended to.

A database follows every record of every run in the order it committed them
(:class:`~plantrail.ledger.stores.protocol.FollowsAll`: a ``NOTIFY`` wakes it, a bounded poll is its fallback).
A runs folder keeps no order across its files, so its entries and their sizes are scanned: a log that appeared,
grew, shrank (a repair) or went away is a change. On Linux, inotify wakes the scan as soon as the folder changes
(the scan still runs every ``poll`` seconds: inotify says nothing of a folder on a network filesystem, and its
queue can overflow). Either way the caller gets a batch of run ids per wake-up, never the records themselves: a
reader of the list asks the store again for the rows it shows.

Where the changes start is the store's :meth:`~plantrail.ledger.stores.protocol.Store.head_position`, taken when
:func:`run_changes` is called (not when the first batch is asked for): a caller that reads everything there is
after the call misses nothing appended meanwhile. Given one run instead of a store, only that run's changes are
reported (a log is watched by its own size and times, whatever its file is named).

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
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

from plantrail.ledger.stores.jsonl.entries import Entries, changed_entries, folder_entries
from plantrail.ledger.stores.locations import default_run_id
from plantrail.ledger.stores.opener import open_store
from plantrail.ledger.stores.protocol import FollowsAll, Store
from plantrail.ledger.vocabulary.errors import PlantrailError

if TYPE_CHECKING:
    from plantrail.ledger.stores.protocol import Run

__all__ = ["Handed", "SharedChanges", "changed_entries", "folder_entries", "run_changes"]


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


def _folder_changes(
    folder: str, scan: Callable[[], Entries], seen: Entries, poll: float, stop: Callable[[], bool]
) -> Iterator[set[str]]:
    """The run ids whose entries (as ``scan`` gives them) differ from the last scan, starting from ``seen``."""
    with _inotify(folder) as fd:
        while not stop():
            _wait(fd, poll)
            now = scan()
            changed = changed_entries(seen, now)
            seen = now
            if changed:
                yield changed


def _followed_changes(
    store: FollowsAll, position: Any, ours: Callable[[str], bool], poll: float, stop: Callable[[], bool]
) -> Iterator[set[str]]:
    """The runs a store's follow across runs reports (those ``ours`` keeps), from the records committed after
    ``position``; each wake-up's records as one batch (a batch ends when the follower would wait)."""
    pending: set[str] = set()

    def flushed() -> bool:
        return stop() or bool(pending)

    while not stop():
        for at, record in store.follow(after=position, poll=poll, stop=flushed):
            position = at
            if ours(record.run):
                pending.add(record.run)
        if pending:
            yield pending
            pending = set()


def _file_entry(path: str) -> Callable[[], Entries]:
    """A scan of one log: its size and modification time under its run id (nothing when it is gone)."""
    run_id = default_run_id(path)

    def scan() -> Entries:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return {}
        return {run_id: (st.st_size, st.st_mtime_ns)}

    return scan


def _one_run(run: Run, poll: float, stop: Callable[[], bool]) -> Iterator[set[str]]:
    """The changes of ``run`` alone: a database's follow kept to the run's records, or the log's own entry."""
    store = run.store
    if isinstance(store, FollowsAll):

        def ours(found: str) -> bool:
            return store.run(found).location == run.location

        return _followed_changes(store, store.head_position(), ours, poll, stop)
    scan = _file_entry(run.location)
    return _folder_changes(os.path.dirname(run.location) or ".", scan, scan(), poll, stop)


def run_changes(
    where: str | os.PathLike[str] | Store | Run | None = None,
    *,
    poll: float = 0.25,
    stop: Callable[[], bool] | None = None,
) -> Iterator[set[str]]:
    """Batches of the ids of the runs of a runs folder or a database (named, as
    :func:`plantrail.ledger.runs.list_runs` names them, or a store object) appended to, repaired or removed
    after the call, until ``stop()`` is true (asked at least every ``poll`` seconds). A folder's run id is its
    log's file name without ``.jsonl``. Given a run object, only that run's changes, under its id in its store."""
    halt = stop if stop is not None else (lambda: False)
    if where is not None and not isinstance(where, str | os.PathLike | Store):
        return _one_run(where, poll, halt)
    store: Store = where if isinstance(where, Store) else open_store(where)
    position = store.head_position()  # now: only what is appended from here on is a change
    if isinstance(store, FollowsAll):
        return _followed_changes(store, position, lambda found: True, poll, halt)
    return _folder_changes(store.location, lambda: folder_entries(store.location), position, poll, halt)


#: What a subscriber of :class:`SharedChanges` is handed: a batch of run ids, or the error that ended the follow.
Handed = set[str] | PlantrailError


class SharedChanges:
    """One follow of a store's changes (:func:`run_changes`, in a thread named ``name``) handed to every
    subscriber, for a server whose many clients watch one store: the first subscriber starts it, the last to
    leave stops it (within ``poll`` seconds). A follow that fails hands its error to the subscribers of the time
    and ends; the next subscriber starts another.

        changes = SharedChanges(".plantrail/runs")
        leave = changes.subscribe(lambda batch: print(batch))
        ...
        leave()
    """

    def __init__(self, where: str | os.PathLike[str] | Store, *, poll: float = 0.25, name: str = "run-changes") -> None:
        self._where = where
        self._poll = poll
        self._name = name
        self._lock = threading.Lock()
        #: The running follow's subscribers and its stop, or None while no follow runs.
        self._follow: tuple[dict[int, Callable[[Handed], None]], threading.Event] | None = None
        self._next = 0

    def subscribe(self, hand: Callable[[Handed], None]) -> Callable[[], None]:
        """Hand each batch (and the error that ends the follow) to ``hand``, called in the follow's thread; the
        function returned unsubscribes. The first subscriber's call takes the store's head (a database's is a
        query): the changes after it are handed on."""
        with self._lock:
            if self._follow is None:
                follow: tuple[dict[int, Callable[[Handed], None]], threading.Event] = ({}, threading.Event())
                try:  # the changes start now, before this subscriber reads what there is
                    changes: Iterator[set[str]] | PlantrailError = run_changes(
                        self._where, poll=self._poll, stop=follow[1].is_set
                    )
                except PlantrailError as exc:
                    changes = exc
                self._follow = follow
                threading.Thread(target=self._run, args=(changes, *follow), name=self._name, daemon=True).start()
            subscribers, _ = self._follow
            key = self._next
            self._next += 1
            subscribers[key] = hand
            mine = self._follow

        def leave() -> None:
            with self._lock:
                subscribers, done = mine
                if subscribers.pop(key, None) is not None and not subscribers:
                    done.set()
                    if self._follow is mine:
                        self._follow = None

        return leave

    def _run(
        self,
        changes: Iterator[set[str]] | PlantrailError,
        subscribers: dict[int, Callable[[Handed], None]],
        done: threading.Event,
    ) -> None:
        try:
            if isinstance(changes, PlantrailError):
                raise changes
            for changed in changes:
                self._hand(subscribers, changed)
        except PlantrailError as exc:
            self._over(subscribers)
            self._hand(subscribers, exc)
        finally:
            self._over(subscribers)

    def _over(self, subscribers: dict[int, Callable[[Handed], None]]) -> None:
        """This follow has ended: the next subscriber starts another."""
        with self._lock:
            if self._follow is not None and self._follow[0] is subscribers:
                self._follow = None

    def _hand(self, subscribers: dict[int, Callable[[Handed], None]], item: Handed) -> None:
        with self._lock:
            hands = list(subscribers.values())
        for hand in hands:
            hand(item)
