"""The stores that keep a run's log, side by side, each with its own caches.

- :mod:`plantrail.ledger.stores.jsonl`: the embedded default, one JSONL file per run (``JsonlStore``,
  ``LogReader``, ``repair``);
- :mod:`plantrail.ledger.stores.cache`: that store's cache beside a log (snapshots, the version index);
- :mod:`plantrail.ledger.stores.reads`: reads of a JSONL log that start from its cache;
- :mod:`plantrail.ledger.stores.salvage`: what can be read back from a damaged JSONL log.

- :mod:`plantrail.ledger.stores.postgres`: a run in a PostgreSQL database, for many writers on many machines
  (``pip install 'plantrail[postgres]'``).

Every store implements :class:`plantrail.ledger.store.Store`, which depends on none of them. A path names a
JSONL run; ``postgresql://…/db#RUN_ID`` names a database run; :func:`locate` turns what a user typed (a
path, a run id, and the store it lives in) into one of the two.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plantrail.ledger.store import FsyncPolicy, PendingRecord, Store
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["STORE_ENV", "create_store", "is_database_url", "locate", "require_file", "run_in_store"]

#: The environment variable that names the store runs live in when ``--store`` is not given.
STORE_ENV = "PLANTRAIL_STORE"
_SCHEMES = ("postgresql", "postgres")


def is_database_url(target: object) -> bool:
    """True when ``target`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and "://" in target and target.split("://", 1)[0].lower() in _SCHEMES


def locate(name: str, store: str | None = None, *, new: bool = False) -> str:
    """The run ``name`` names, as a JSONL path or a database run's URL (``postgresql://…/db#RUN``).

    - A database URL names its run itself (``…/db#RUN``), whatever the store.
    - A name with a path separator, or ending in ``.jsonl``, is a path, whatever the store.
    - With a store (``--store`` or ``PLANTRAIL_STORE``), any other name is a run id: in a database
      (``postgresql://…/db``) it is that database's run; in a folder, ``<folder>/<id>.jsonl``.
    - Otherwise a name that names a file is that file; a bare run id that names none is the run in the runs
      folder (:func:`plantrail.ledger.locations.runs_folder`) when that folder holds it, or, for a run to be
      created (``new``), always.

    A store URL that names a run itself is refused (USAGE), and so is a run id that is no id (INVALID_ID).
    """
    from plantrail.ledger.vocabulary.errors import PlantrailError

    if is_database_url(name):
        return name
    separators = {os.sep, "/"} | ({os.altsep} if os.altsep else set())
    is_path = any(s in name for s in separators) or name.endswith(".jsonl")
    if store:
        return name if is_path else run_in_store(store, name)
    if is_path or os.path.lexists(name):
        return name
    from plantrail.ledger.locations import run_path, runs_folder
    from plantrail.ledger.vocabulary.plan import check_id

    try:
        check_id(name, "run id")
    except PlantrailError:
        return name  # not an id: the path it is, with the path's own errors
    found = run_path(runs_folder(), name)
    return str(found) if new or found.exists() else name


def run_in_store(store: str, run: str) -> str:
    """Run ``run`` of ``store``: ``<store>#<run>`` in a database, ``<store>/<run>.jsonl`` in a folder. ``run`` is
    always an id here, never a path (INVALID_ID otherwise), so it never names anything outside the store; a store
    URL that names a run itself is refused (USAGE)."""
    from plantrail.ledger.vocabulary.errors import error
    from plantrail.ledger.vocabulary.plan import check_id

    if is_database_url(store):
        if "#" in store:
            raise error("USAGE", "the store URL names a run (#...): a store is a database; its runs are named by id")
        check_id(run, "run id")
        return f"{store}#{run}"
    from pathlib import Path

    from plantrail.ledger.locations import run_path

    return str(run_path(Path(store), run))


def require_file(target: str, command: str) -> str:
    """``target`` when it is a JSONL log; FILE_STORE_ONLY when it is a database run, where ``command`` (repair,
    salvage: what only a file can need) means nothing."""
    if is_database_url(target):
        from plantrail.ledger.vocabulary.errors import error

        raise error(
            "FILE_STORE_ONLY",
            f"{command} works on a JSONL log's bytes; a database run has no torn tail or damaged line to {command}",
            command=command,
        )
    return target


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
) -> tuple[Store, list[Record]]:
    """Create the run ``target`` names (a JSONL path, or a database run's URL, whose run id is its own) with
    its header and ``first`` records; LOG_EXISTS when it exists. ``run`` is a JSONL log's run id."""
    if is_database_url(target):
        from plantrail.ledger.stores.postgres import PostgresStore

        return PostgresStore.create(
            target, run=run, first=first, fsync=fsync, nonce=nonce, ts=ts, actor=actor, clock=clock
        )
    from plantrail.ledger.stores.jsonl import JsonlStore

    assert run is not None  # the caller names a JSONL log's run
    return JsonlStore.create(
        target,
        run=run,
        first=first,
        fsync=fsync,
        nonce=nonce,
        ts=ts,
        actor=actor,
        allow_network_fs=allow_network_fs,
        clock=clock,
    )
