"""What a store holds belongs to the process that made it.

A forked child starts as a copy of its parent: the same objects, sharing the parent's open file descriptions
(and the ``flock`` locks on them) and database sockets, with every lock in the state the parent's threads
left it in. A child that used the parent's descriptor would "hold" the parent's file lock at the same time
as the parent; one that used the parent's connection would talk into the parent's session; one that waited
on a lock another thread of the parent held at the fork would wait forever (that thread does not exist in
the child).

So a store object remembers the pid that opened what it holds, and a process uses only what it opened: a
child opens its own (the file store reopens its log, the database store makes its own connection pool) and
never closes or uses the parent's. And the locks the stores take are :class:`ForkSafeLock` objects, made
anew (free) in a child at the fork itself, before any of the child's code runs.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Final

__all__ = ["ForkSafeLock", "current_pid", "owning_lock"]


class ForkSafeLock:
    """A thread lock that is new and free in a forked child, whoever held it in the parent."""

    __slots__ = ("__weakref__", "acquire", "locked", "release")

    def __init__(self) -> None:
        self._renew()
        _LOCKS.add(self)

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _renew(self) -> None:
        """A new lock; its methods are the lock's own (``acquire``, ``release``, ``locked``), no call between."""
        lock = threading.Lock()
        self.acquire, self.release, self.locked = lock.acquire, lock.release, lock.locked


_LOCKS: Final[weakref.WeakSet[ForkSafeLock]] = weakref.WeakSet()

#: Taken while a store object passes from its parent to the child process using it (one thread does it).
owning_lock: Final = ForkSafeLock()


#: This process's pid, set again in a forked child at the fork (``os.getpid`` is a system call each time).
_pid: int = os.getpid()


def current_pid() -> int:
    """This process's pid, without a system call: what a store object compares the pid it remembers with."""
    return _pid


def _renew_locks() -> None:
    """In a forked child, before its code runs (one thread exists): its pid noted, every store lock made anew."""
    global _pid
    _pid = os.getpid()
    for lock in list(_LOCKS):
        lock._renew()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_locks)
