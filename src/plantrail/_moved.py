"""Modules that moved in this release, still importable under their old names.

The package's modules were sorted into layers (docs/development.md); a module's old dotted name keeps working
for this release and gives the very module object of its new name, so ``import plantrail.ledger.vocabulary.plan`` and
``import plantrail.ledger.vocabulary.plan`` share one module, one set of classes and one place to patch. The
CHANGELOG lists the moves. The finder is consulted last, only for a name no other finder knows.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader, MetaPathFinder

__all__ = ["MOVED", "install"]

#: Old dotted name -> new dotted name.
MOVED: dict[str, str] = {
    "plantrail.ledger.approvals": "plantrail.ledger.rules.approvals",
    "plantrail.ledger.artifacts": "plantrail.ledger.vocabulary.artifacts",
    "plantrail.ledger.chain": "plantrail.ledger.stores.chain",
    "plantrail.ledger.clock": "plantrail.ledger.vocabulary.clock",
    "plantrail.ledger.codec": "plantrail.ledger.vocabulary.codec",
    "plantrail.ledger.contract": "plantrail.ledger.vocabulary.contract",
    "plantrail.ledger.coverage": "plantrail.ledger.vocabulary.coverage",
    "plantrail.ledger.decide": "plantrail.ledger.rules.decide",
    "plantrail.ledger.draft_writer": "plantrail.ledger.vocabulary.draft_writer",
    "plantrail.ledger.effects": "plantrail.ledger.rules.effects",
    "plantrail.ledger.errors": "plantrail.ledger.vocabulary.errors",
    "plantrail.ledger.events": "plantrail.ledger.vocabulary.events",
    "plantrail.ledger.evidence": "plantrail.ledger.vocabulary.evidence",
    "plantrail.ledger.extension": "plantrail.ledger.rules.extension",
    "plantrail.ledger.files": "plantrail.ledger.stores.files",
    "plantrail.ledger.guards": "plantrail.ledger.rules.guards",
    "plantrail.ledger.idempotency": "plantrail.ledger.rules.idempotency",
    "plantrail.ledger.items": "plantrail.ledger.vocabulary.items",
    "plantrail.ledger.leases": "plantrail.ledger.rules.leases",
    "plantrail.ledger.limits": "plantrail.ledger.vocabulary.limits",
    "plantrail.ledger.lineage": "plantrail.ledger.rules.lineage",
    "plantrail.ledger.locations": "plantrail.ledger.stores.locations",
    "plantrail.ledger.observations": "plantrail.ledger.rules.observations",
    "plantrail.ledger.outcomes": "plantrail.ledger.rules.outcomes",
    "plantrail.ledger.plan": "plantrail.ledger.vocabulary.plan",
    "plantrail.ledger.read_ahead": "plantrail.ledger.stores.jsonl.read_ahead",
    "plantrail.ledger.repair_edges": "plantrail.ledger.vocabulary.repair_edges",
    "plantrail.ledger.scope": "plantrail.ledger.vocabulary.scope",
    "plantrail.ledger.store": "plantrail.ledger.stores.protocol",
    "plantrail.ledger.stores.cache": "plantrail.ledger.stores.jsonl.cache",
    "plantrail.ledger.stores.current": "plantrail.ledger.stores.jsonl.current",
    "plantrail.ledger.stores.reads": "plantrail.ledger.stores.jsonl.reads",
    "plantrail.ledger.stores.salvage": "plantrail.ledger.stores.jsonl.salvage",
    "plantrail.ledger.stores.seal": "plantrail.ledger.stores.jsonl.seal",
    "plantrail.ledger.stores.seek": "plantrail.ledger.stores.jsonl.seek",
    "plantrail.ledger.versions": "plantrail.ledger.vocabulary.versions",
    "plantrail.projections.authority": "plantrail.projections.approvals",
    "plantrail.projections.snapshot": "plantrail.projections.state_json",
}


class _Alias:
    """A meta-path finder and loader that answers an old name with the module of its new name."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name not in MOVED:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, cast("Loader", _Alias), origin=MOVED[name])

    @staticmethod
    def create_module(spec: Any) -> ModuleType:
        import importlib

        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__  # the import system sets the old name's spec on the module: undone below
        return module

    @staticmethod
    def exec_module(module: ModuleType) -> None:
        """The module ran under its new name already: give it back its own spec."""
        module.__spec__ = module.__spec__.loader_state  # type: ignore[union-attr]


def install() -> None:
    """Put the finder last on the import path's finders (once)."""
    if _Alias not in sys.meta_path:
        sys.meta_path.append(cast("MetaPathFinder", _Alias))
