"""plantrail's ledger: plan drafts, events, decisions, the stores that keep a run's log, and its audit views.

The public names below load on first use, so ``import plantrail.ledger.vocabulary.plan`` stays cheap and the
CLI starts fast.
``plantrail.ledger`` never imports ``plantrail.cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from plantrail._version import __version__

_EXPORTS = {
    "Ack": "plantrail.ledger.stores.protocol",
    "Block": "plantrail.ledger.rules.decide",
    "Command": "plantrail.ledger.rules.decide",
    "CommandRefused": "plantrail.ledger.vocabulary.errors",
    "Complete": "plantrail.ledger.rules.decide",
    "Create": "plantrail.ledger.rules.decide",
    "Fail": "plantrail.ledger.rules.decide",
    "Finish": "plantrail.ledger.rules.decide",
    "JsonlStore": "plantrail.ledger.stores.jsonl.log",
    "Ledger": "plantrail.ledger.api",
    "LogDamaged": "plantrail.ledger.vocabulary.errors",
    "LogReader": "plantrail.ledger.stores.jsonl.log",
    "PlanInvalid": "plantrail.ledger.vocabulary.errors",
    "PlanPatch": "plantrail.ledger.vocabulary.plan",
    "PlanSpec": "plantrail.ledger.vocabulary.plan",
    "PlantrailError": "plantrail.ledger.vocabulary.errors",
    "Record": "plantrail.ledger.vocabulary.events",
    "Refused": "plantrail.ledger.vocabulary.errors",
    "Replan": "plantrail.ledger.rules.decide",
    "Run": "plantrail.ledger.stores.protocol",
    "RunWriter": "plantrail.ledger.stores.protocol",
    "Source": "plantrail.ledger.vocabulary.events",
    "Start": "plantrail.ledger.rules.decide",
    "StorageError": "plantrail.ledger.vocabulary.errors",
    "Trace": "plantrail.ledger.vocabulary.events",
    "Store": "plantrail.ledger.stores.protocol",
    "UsageError": "plantrail.ledger.vocabulary.errors",
    "VerifyCriterion": "plantrail.ledger.rules.decide",
    "audit": "plantrail.ledger.audit",
    "as_run": "plantrail.ledger.stores.opener",
    "check": "plantrail.ledger.rules.decide",
    "decide": "plantrail.ledger.rules.decide",
    "default_run_id": "plantrail.ledger.api",
    "open_run": "plantrail.ledger.stores.opener",
    "open_store": "plantrail.ledger.stores.opener",
    "parse_draft": "plantrail.ledger.vocabulary.plan",
    "parse_patch": "plantrail.ledger.vocabulary.plan",
    "repair": "plantrail.ledger.stores.jsonl.log",
    "traced": "plantrail.ledger.tracing",
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
    "Run",
    "RunWriter",
    "Source",
    "Start",
    "StorageError",
    "Store",
    "Trace",
    "UsageError",
    "VerifyCriterion",
    "__version__",
    "as_run",
    "audit",
    "check",
    "decide",
    "default_run_id",
    "open_run",
    "open_store",
    "parse_draft",
    "parse_patch",
    "repair",
    "traced",
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
    from plantrail.ledger.rules.decide import (
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
    from plantrail.ledger.stores.jsonl.log import JsonlStore, LogReader, repair
    from plantrail.ledger.stores.opener import as_run, open_run, open_store
    from plantrail.ledger.stores.protocol import Run, RunWriter, Store
    from plantrail.ledger.stores.values import Ack
    from plantrail.ledger.tracing import traced
    from plantrail.ledger.verify import verify_log
    from plantrail.ledger.vocabulary.errors import (
        CommandRefused,
        LogDamaged,
        PlanInvalid,
        PlantrailError,
        Refused,
        StorageError,
        UsageError,
    )
    from plantrail.ledger.vocabulary.events import Record, Source, Trace
    from plantrail.ledger.vocabulary.plan import PlanPatch, PlanSpec, parse_draft, parse_patch
