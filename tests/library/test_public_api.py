"""The public surface is explicit: __all__ of each package is pinned here."""

from __future__ import annotations

from plantrail import ledger
from plantrail.projections import canonical, model, state, views


def test_ledger_exports_are_pinned_and_resolve() -> None:
    """ledger.__all__ is exactly the documented API, and every name in it loads."""
    assert ledger.__all__ == sorted(
        [
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
    )
    for name in ledger.__all__:
        assert getattr(ledger, name) is not None


def test_projection_exports_are_pinned() -> None:
    """The reducer and its model expose a small, stable surface."""
    assert state.__all__ == [
        "Delta",
        "StateView",
        "evolve",
        "find_orphan",
        "fold",
        "initial",
        "is_state_view",
        "orphan_reason",
        "share_unchanged",
    ]
    assert "PlanState" in model.__all__ and "StepState" in model.__all__
    assert canonical.__all__ == ["canonical_bytes", "state_hash"]
    assert set(views.__all__) >= {"advice", "ready_steps", "status_view"}
