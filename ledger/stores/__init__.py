"""The stores that keep a run's log, side by side, each with its own caches.

- :mod:`plantrail.ledger.stores.jsonl`: the embedded default, one JSONL file per run (``JsonlStore``,
  ``LogReader``, ``repair``);
- :mod:`plantrail.ledger.stores.cache`: that store's cache beside a log (snapshots, the version index);
- :mod:`plantrail.ledger.stores.reads`: reads of a JSONL log that start from its cache;
- :mod:`plantrail.ledger.stores.salvage`: what can be read back from a damaged JSONL log.

Every store implements :class:`plantrail.ledger.store.Store`, which depends on none of them.
"""
