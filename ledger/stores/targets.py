"""What names a run: a JSONL log's path, a run id in a store (a folder or a database), or a database run's URL
(``postgresql://…/db#RUN_ID``). The one place a name is told to be a file or a database."""

from __future__ import annotations

import os

__all__ = ["STORE_ENV", "is_database_url", "locate", "names_store", "require_file", "run_in_store"]

#: The environment variable that names the store runs live in when ``--store`` is not given.
STORE_ENV = "PLANTRAIL_STORE"
_SCHEMES = ("postgresql", "postgres")


def is_database_url(target: object) -> bool:
    """True when ``target`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and "://" in target and target.split("://", 1)[0].lower() in _SCHEMES


def names_store(name: str) -> bool:
    """True when ``name`` names a store, many runs at once, rather than one run: a database's URL that names no
    run (no ``#RUN``), or a folder that exists."""
    if is_database_url(name):
        return "#" not in name
    return os.path.isdir(name)


def locate(name: str, store: str | None = None, *, new: bool = False) -> str:
    """The run ``name`` names, as a JSONL path or a database run's URL (``postgresql://…/db#RUN``).

    - A database URL names its run itself (``…/db#RUN``), whatever the store.
    - A name with a path separator, or ending in ``.jsonl``, is a path, whatever the store.
    - With a store (``--store`` or ``PLANTRAIL_STORE``), any other name is a run id: in a database
      (``postgresql://…/db``) it is that database's run; in a folder, ``<folder>/<id>.jsonl``.
    - Otherwise a name that names a file is that file; a bare run id that names none is the run in the runs
      folder (:func:`plantrail.ledger.stores.locations.runs_folder`) when that folder holds it, or, for a run to be
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
    from plantrail.ledger.stores.locations import run_path, runs_folder
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

    from plantrail.ledger.stores.locations import run_path

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
