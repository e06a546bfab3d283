"""What a log holds under one idempotency key: a value every store keeps an index of, and the rules compare a
retried command with (:mod:`plantrail.ledger.rules.idempotency`)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["KeyEntry"]


class KeyEntry(NamedTuple):
    """What a log holds under one idempotency key: the record, and its comparable content (see
    :func:`plantrail.ledger.rules.idempotency.record_view`)."""

    seq: int
    hash: str
    view: str
    plan_version: int
    attempt: int | None
