"""The stores that keep a run's log, side by side, each with its own caches.

- :mod:`plantrail.ledger.stores.jsonl`: the embedded default, one JSONL file per run (``JsonlStore``,
  ``LogReader``, ``repair``);
- :mod:`plantrail.ledger.stores.cache`: that store's cache beside a log (snapshots, the version index);
- :mod:`plantrail.ledger.stores.reads`: reads of a JSONL log that start from its cache;
- :mod:`plantrail.ledger.stores.salvage`: what can be read back from a damaged JSONL log.

- :mod:`plantrail.ledger.stores.postgres`: a run in a PostgreSQL database, for many writers on many machines
  (``pip install 'plantrail[postgres]'``).

Every store implements :class:`plantrail.ledger.store.Store`, which depends on none of them. A path names a
JSONL run; ``postgresql://…/db#RUN_ID`` names a database run.
"""

from __future__ import annotations

__all__ = ["is_database_url"]

_SCHEMES = ("postgresql", "postgres")


def is_database_url(target: object) -> bool:
    """True when ``target`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and "://" in target and target.split("://", 1)[0].lower() in _SCHEMES
