"""plantrail's ledger: plan drafts, events, decisions, the stores that keep a run's log, and its audit views.

The public names below load on first use, so ``import plantrail.ledger.plan`` stays cheap and the CLI starts fast.
``plantrail.ledger`` never imports ``plantrail.cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from plantrail._version import __version__

_EXPORTS = {
    "Ack": "plantrail.ledger.store",
    "Block": "plantrail.ledger.decide",
    "Command": "plantrail.ledger.decide",
    "CommandRefused": "plantrail.ledger.errors",
    "Complete": "plantrail.ledger.decide",
    "Create": "plantrail.ledger.decide",
    "Fail": "plantrail.ledger.decide",
    "Finish": "plantrail.ledger.decide",
    "JsonlStore": "plantrail.ledger.stores.jsonl",
    "Ledger": "plantrail.ledger.api",
    "LogDamaged": "plantrail.ledger.errors",
    "LogReader": "plantrail.ledger.stores.jsonl",
    "PlanInvalid": "plantrail.ledger.errors",
    "PlanPatch": "plantrail.ledger.plan",
    "PlanSpec": "plantrail.ledger.plan",
    "PlantrailError": "plantrail.ledger.errors",
    "Record": "plantrail.ledger.events",
    "Refused": "plantrail.ledger.errors",
    "Replan": "plantrail.ledger.decide",
    "Source": "plantrail.ledger.events",
    "Start": "plantrail.ledger.decide",
    "StorageError": "plantrail.ledger.errors",
    "Store": "plantrail.ledger.store",
    "UsageError": "plantrail.ledger.errors",
    "VerifyCriterion": "plantrail.ledger.decide",
    "audit": "plantrail.ledger.audit",
    "check": "plantrail.ledger.decide",
    "decide": "plantrail.ledger.decide",
    "default_run_id": "plantrail.ledger.api",
    "parse_draft": "plantrail.ledger.plan",
    "parse_patch": "plantrail.ledger.plan",
    "repair": "plantrail.ledger.stores.jsonl",
    "verify_log": "plantrail.ledger.verify",
}

__all__: list[str] = [
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
    "audit",
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
        raise AttributeError(f"module 'plantrail.ledger' has no attribute {name!r}")
    if module == f"{__name__}.{name}":  # a submodule exported as such (audit)
        return importlib.import_module(module)
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from plantrail.ledger import audit
    from plantrail.ledger.api import Ledger, default_run_id
    from plantrail.ledger.decide import (
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
    from plantrail.ledger.errors import (
        CommandRefused,
        LogDamaged,
        PlanInvalid,
        PlantrailError,
        Refused,
        StorageError,
        UsageError,
    )
    from plantrail.ledger.events import Record, Source
    from plantrail.ledger.plan import PlanPatch, PlanSpec, parse_draft, parse_patch
    from plantrail.ledger.store import Ack, Store
    from plantrail.ledger.stores.jsonl import JsonlStore, LogReader, repair
    from plantrail.ledger.verify import verify_log
