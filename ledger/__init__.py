"""plantrail's ledger: plan drafts, events, decisions, and the stores that keep a run's log.

The public names below load on first use, so ``import ledger.plan`` stays cheap and the CLI starts fast.
``ledger`` never imports ``cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Ack": "ledger.store",
    "Block": "ledger.decide",
    "Command": "ledger.decide",
    "CommandRefused": "ledger.errors",
    "Complete": "ledger.decide",
    "Create": "ledger.decide",
    "Fail": "ledger.decide",
    "Finish": "ledger.decide",
    "JsonlStore": "ledger.jsonl",
    "Ledger": "ledger.api",
    "LogDamaged": "ledger.errors",
    "LogReader": "ledger.jsonl",
    "PlanInvalid": "ledger.errors",
    "PlanPatch": "ledger.plan",
    "PlanSpec": "ledger.plan",
    "PlantrailError": "ledger.errors",
    "Record": "ledger.events",
    "Refused": "ledger.errors",
    "Replan": "ledger.decide",
    "Source": "ledger.events",
    "Start": "ledger.decide",
    "StorageError": "ledger.errors",
    "Store": "ledger.store",
    "UsageError": "ledger.errors",
    "VerifyCriterion": "ledger.decide",
    "check": "ledger.decide",
    "decide": "ledger.decide",
    "default_run_id": "ledger.api",
    "parse_draft": "ledger.plan",
    "parse_patch": "ledger.plan",
    "repair": "ledger.jsonl",
    "verify_log": "ledger.verify",
}

__all__ = [
    "Ack",
    "Block",
    "Command",
    "CommandRefused",
    "Complete",
    "Create",
    "Fail",
    "Finish",
    "JsonlStore",
    "Ledger",
    "LogDamaged",
    "LogReader",
    "PlanInvalid",
    "PlanPatch",
    "PlanSpec",
    "PlantrailError",
    "Record",
    "Refused",
    "Replan",
    "Source",
    "Start",
    "StorageError",
    "Store",
    "UsageError",
    "VerifyCriterion",
    "__version__",
    "check",
    "decide",
    "default_run_id",
    "parse_draft",
    "parse_patch",
    "repair",
    "verify_log",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ledger' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from ledger.api import Ledger, default_run_id
    from ledger.decide import (
        Block,
        Command,
        Complete,
        Create,
        Fail,
        Finish,
        Replan,
        Start,
        VerifyCriterion,
        check,
        decide,
    )
    from ledger.errors import CommandRefused, LogDamaged, PlanInvalid, PlantrailError, Refused, StorageError, UsageError
    from ledger.events import Record, Source
    from ledger.jsonl import JsonlStore, LogReader, repair
    from ledger.plan import PlanPatch, PlanSpec, parse_draft, parse_patch
    from ledger.store import Ack, Store
    from ledger.verify import verify_log
