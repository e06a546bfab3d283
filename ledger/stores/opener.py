"""Create the run a target names, in the store it names: a JSONL file, or a database run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from plantrail.ledger.stores.targets import is_database_url

if TYPE_CHECKING:
    from plantrail.ledger.stores.protocol import FsyncPolicy, PendingRecord, Store
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["create_store"]


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
    from plantrail.ledger.stores.jsonl.log import JsonlStore

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
