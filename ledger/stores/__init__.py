"""The stores that keep a run's log, side by side, each with its own caches.

- :mod:`plantrail.ledger.stores.protocol`: what every store provides (it depends on none of them);
- :mod:`plantrail.ledger.stores.targets`: what names a run, and the store it lives in; :mod:`.opener` creates it;
- :mod:`plantrail.ledger.stores.jsonl`: the embedded default, one JSONL file per run, with its caches, indexes,
  seek, read-ahead and salvage;
- :mod:`plantrail.ledger.stores.postgres`: a run in a PostgreSQL database, for many writers on many machines
  (``pip install 'plantrail[postgres]'``);
- :mod:`plantrail.ledger.stores.chain`: the record chain every store keeps, whatever holds its bytes;
- :mod:`plantrail.ledger.stores.copy`: runs copied between stores byte for byte;
- :mod:`plantrail.ledger.stores.files`, :mod:`plantrail.ledger.stores.locations`: files and where runs live.

The names this package offered before load from :mod:`.targets` and :mod:`.opener` on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["STORE_ENV", "create_store", "is_database_url", "locate", "require_file", "run_in_store"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    home = "opener" if name == "create_store" else "targets"
    return getattr(importlib.import_module(f"plantrail.ledger.stores.{home}"), name)


if TYPE_CHECKING:
    from plantrail.ledger.stores.opener import create_store
    from plantrail.ledger.stores.targets import STORE_ENV, is_database_url, locate, require_file, run_in_store
