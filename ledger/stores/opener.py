"""The one place a run or a store is opened from what names it.

:func:`open_run` turns a path, a run id with a store (``--store``), or a ``postgresql://…/db#RUN`` URL into a
:class:`~plantrail.ledger.stores.protocol.Run`; :func:`as_run` does the same for a caller that may already
hold one; :func:`open_store` turns a runs folder or a database URL into a
:class:`~plantrail.ledger.stores.protocol.Store`; :func:`create_store` creates a run with its first records.
Everything else holds the objects: nothing else tells a file from a database by looking at a name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from plantrail.ledger.stores.targets import is_database_url
from plantrail.ledger.vocabulary.arguments import refuse, strict

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.run import FileRun, FolderStore
    from plantrail.ledger.stores.postgres_run import DatabaseRun, DatabaseStore
    from plantrail.ledger.stores.protocol import Run, RunWriter
    from plantrail.ledger.stores.values import FsyncPolicy, PendingRecord
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["as_run", "create_store", "open_destination", "open_run", "open_source", "open_store"]


@strict
def open_run(name: str | os.PathLike[str], *, store: str | None = None, new: bool = False) -> FileRun | DatabaseRun:
    """The run ``name`` names (see :func:`plantrail.ledger.stores.targets.locate`: a path, a run id in ``store``
    or in the runs folder, a database run's URL), as a run object of its store. Nothing is opened yet."""
    from plantrail.ledger.stores.targets import locate

    return _run_at(locate(os.fspath(name), store, new=new))


def as_run(target: Run | str | os.PathLike[str]) -> Run:
    """``target`` itself when it is a run object already, else the run it names as a path or a database run's
    URL (exactly: no runs folder or store is consulted)."""
    if isinstance(target, str | os.PathLike):
        return _run_at(os.fspath(target))
    if not callable(getattr(target, "open_writer", None)):
        raise refuse("target", target, "a run object, a path or a database run's URL", where="as_run")
    return target


def _run_at(target: str) -> FileRun | DatabaseRun:
    if is_database_url(target):
        from plantrail.ledger.stores.postgres_run import DatabaseRun

        return DatabaseRun(target)
    from plantrail.ledger.stores.jsonl.run import FileRun

    return FileRun(target)


@strict
def open_store(location: str | os.PathLike[str] | None = None) -> FolderStore | DatabaseStore:
    """The store ``location`` names: a database (``postgresql://…/db``) or a runs folder (default: the runs
    folder, :func:`plantrail.ledger.stores.locations.runs_folder`)."""
    name = None if location is None else os.fspath(location)
    if name is not None and is_database_url(name):
        from plantrail.ledger.stores.postgres_run import DatabaseStore

        return DatabaseStore(name)
    from plantrail.ledger.stores.jsonl.run import FolderStore
    from plantrail.ledger.stores.locations import runs_folder

    return FolderStore(runs_folder(name))


def open_source(name: str, *, store: str | None = None) -> FolderStore | DatabaseStore | FileRun | DatabaseRun:
    """What a name that may name many runs names (``copy``'s source): a store when it names one (a folder that
    exists, a database's URL without a run), else the run :func:`open_run` finds for it with ``store``."""
    from plantrail.ledger.stores.targets import names_store

    return open_store(name) if names_store(name) else open_run(name, store=store)


def open_destination(
    name: str | None, *, store: str | None = None, many: bool = False
) -> FolderStore | DatabaseStore | FileRun | DatabaseRun:
    """Where runs go (``copy``'s destination): ``store`` when no name is given (USAGE without either); a store
    when the name names one, or, for ``many`` runs, a folder to make; else the run :func:`open_run` finds for a
    new run with ``store``. Many runs into one run is USAGE."""
    from plantrail.ledger.stores.targets import names_store
    from plantrail.ledger.vocabulary.errors import error

    if name is None:
        if not store:
            raise error("USAGE", "nothing to copy into: give a destination, or a store")
        return open_store(store)
    if names_store(name) or (many and not is_database_url(name)):
        return open_store(name)
    if many:
        raise error("USAGE", f"{name} names one run; copy several runs into a database, not a run")
    return open_run(name, store=store, new=True)


def create_store(
    target: str,
    *,
    run: str | None,
    first: Sequence[PendingRecord],
    fsync: FsyncPolicy,
    nonce: str | None,
    ts: str,
    actor: str,
    allow_network_fs: bool,
    clock: Callable[[], str],
) -> tuple[RunWriter, list[Record]]:
    """Create the run ``target`` names (a JSONL path, or a database run's URL, whose run id is its own) with
    its header and ``first`` records; LOG_EXISTS when it exists. ``run`` is a JSONL log's run id (default: the
    file's name)."""
    return _run_at(target).create(
        run=run,
        first=first,
        fsync=fsync,
        nonce=nonce,
        ts=ts,
        actor=actor,
        allow_network_fs=allow_network_fs,
        clock=clock,
    )
