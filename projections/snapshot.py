"""A plan state as JSON and back, for snapshots (a cache: see :mod:`plantrail.ledger.stores.cache`).

Pure and independent of pydantic, so loading a snapshot costs one ``orjson.loads`` and the constructors.
``REDUCER_VERSION`` names the reducer's semantics: a snapshot made by another version is never used.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from plantrail.ledger.contract import CheckSpec, StepTerms
from plantrail.ledger.evidence import Usage
from plantrail.ledger.plan import CriterionSpec, PlanSpec, Policy, StepSpec
from plantrail.projections.model import (
    Changes,
    CriterionState,
    FailureStreak,
    Orphan,
    PlanState,
    StepChange,
    StepState,
    VersionInfo,
)
from plantrail.projections.table import Table

__all__ = ["REDUCER_VERSION", "decode_orphans", "decode_state", "encode_state"]

#: Bump whenever evolve's semantics change: snapshots made under another value are ignored.
REDUCER_VERSION: Final = 1


def _default(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return value._asdict()
    if isinstance(value, Table):
        return list(value.values_in_order())
    raise TypeError(f"cannot encode {type(value).__name__}")


def encode_state(state: PlanState) -> bytes:
    """The state as compact JSON (steps and criteria as lists, in their order)."""
    return orjson.dumps(state, default=_default)


def _plan(d: dict[str, Any] | None) -> PlanSpec | None:
    if d is None:
        return None
    return PlanSpec(
        goal=d["goal"],
        acceptance_criteria=tuple(
            CriterionSpec(c["id"], c["description"], _checks(c)) for c in d["acceptance_criteria"]
        ),
        steps=tuple(StepSpec(**{**s, "depends_on": tuple(s["depends_on"]), "terms": _terms(s)}) for s in d["steps"]),
        policy=Policy(**d["policy"]),
        notes=_notes(d),
    )


def _notes(d: dict[str, Any]) -> tuple[str, ...]:
    """A plan's or step's notes (format v2; a snapshot of a plan without notes has none)."""
    return tuple(d.get("notes", ()))


def _terms(d: dict[str, Any]) -> StepTerms | None:
    """A step's format v2 terms (a snapshot of a v1 plan has none)."""
    terms = d.get("terms")
    return None if terms is None else StepTerms(**{**terms, "checks": _checks(terms), "notes": _notes(terms)})


def _checks(d: dict[str, Any]) -> tuple[CheckSpec, ...]:
    """A spec's typed checks (format v2; a snapshot of a v1 plan has none)."""
    return tuple(CheckSpec(**c) for c in d.get("checks", ()))


def _change(d: dict[str, Any]) -> StepChange:
    return StepChange(**{**d, "fields": tuple(d["fields"])})


def _changes(d: dict[str, Any] | None) -> Changes | None:
    if d is None:
        return None
    return Changes(
        kept=tuple(d["kept"]),
        reset=tuple(_change(c) for c in d["reset"]),
        added=tuple(d["added"]),
        removed=tuple(_change(c) for c in d["removed"]),
        criteria_kept=tuple(d["criteria_kept"]),
        criteria_reset=tuple(_change(c) for c in d["criteria_reset"]),
        criteria_added=tuple(d["criteria_added"]),
        criteria_removed=tuple(d["criteria_removed"]),
        policy_changed=d["policy_changed"],
    )


def _adopted(d: dict[str, Any] | None, plan: PlanSpec | None) -> VersionInfo | None:
    if d is None:
        return None
    recorded = _plan(d["plan"])
    return VersionInfo(
        version=d["version"],
        seq=d["seq"],
        ts=d["ts"],
        actor=d["actor"],
        plan=plan if recorded == plan and plan is not None else recorded,  # type: ignore[arg-type]
        reason=d["reason"],
        why=d["why"],
        causes=tuple(d["causes"]),
        observations=tuple(d["observations"]),
        patched=d["patched"],
        changes=_changes(d["changes"]),
    )


def decode_orphans(items: list[dict[str, Any]], *, up_to: int | None = None) -> tuple[Orphan, ...]:
    """Orphans as :func:`encode_state` wrote them (only those recorded at or before seq ``up_to``, when given).

    Built positionally: a long run keeps every late result, and the version index decodes them per rebuild.
    """
    return tuple(
        Orphan(
            o["seq"],
            o["type"],
            o["step"],
            o["plan_version"],
            o["attempt"],
            o["active_version"],
            o["why"],
            tuple(o["evidence"]),
            o["reason"],
        )
        for o in items
        if up_to is None or o["seq"] <= up_to
    )


def decode_state(raw: bytes) -> PlanState:
    """The state :func:`encode_state` encoded."""
    d = orjson.loads(raw)
    plan = _plan(d["plan"])
    steps = [StepState(**{**s, "evidence": tuple(s["evidence"]), "usage": _usage(s.get("usage"))}) for s in d["steps"]]
    criteria = [CriterionState(**c) for c in d["criteria"]]
    return PlanState(
        run=d["run"],
        plan=plan,
        version=d["version"],
        steps=Table(tuple(s.id for s in steps), steps),
        criteria=Table(tuple(c.id for c in criteria), criteria),
        outcome=d["outcome"],
        outcome_reason=d["outcome_reason"],
        outcome_seq=d["outcome_seq"],
        adopted=_adopted(d["adopted"], plan),
        orphans=decode_orphans(d["orphans"]),
        consecutive_failures=d["consecutive_failures"],
        last_seq=d["last_seq"],
        head=d["head"],
        usage=_usage(d.get("usage")),
        failure_streak=None if d.get("failure_streak") is None else FailureStreak(**d["failure_streak"]),
        contract=d.get("contract", False),
    )


def _usage(d: dict[str, Any] | None) -> Usage | None:
    return None if d is None else Usage(**d)
