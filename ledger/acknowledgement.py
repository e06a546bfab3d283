"""The acknowledgement document of a recorded command: what every front door answers after a write.

One function builds it from the command, the state after the command and the store's :class:`Ack`, so the
CLI's ``--json``, the MCP server's tools and a library caller (:meth:`Ledger.acknowledgement
<plantrail.ledger.api.Ledger.acknowledgement>`) give the same document. It is
:func:`ack_view` (the ack and where the run stands after it), with what the
command adds:

- ``scope_violation`` (``step``, ``paths``, ``tools``): the command's own result was recorded as the blocked
  attempt ``scope_violation`` (its report left the step's scope); never on a retried command's ack;
- ``attempt`` and ``started_seq``: a start's attempt number and the seq of its ``step.started``, by which a
  result names the attempt exactly (``--started-seq``; attempt numbers restart after a replan);
- ``effect``: a side effect's request or commit carries the effect as it stands after the record
  (:func:`~plantrail.projections.effects.effect_view`; None when it is not found);
- a create adds the created plan: ``run``, ``steps`` (the step ids), and ``warnings`` (the coverage gaps of a
  plan that declares coverage, each as :meth:`PlantrailError.as_dict
  <plantrail.ledger.vocabulary.errors.PlantrailError.as_dict>`) when there are any. A retried create under its
  idempotency key wrote nothing: it answers as every retried command does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plantrail.ledger.rules.decide import Create, Start
from plantrail.ledger.rules.effects import CommitEffect, RequestEffect
from plantrail.ledger.vocabulary.coverage import coverage_warnings
from plantrail.projections.effects import effect_view, find_effect
from plantrail.projections.views import advice, anchor, capacity_view, ready_steps, startable_steps

if TYPE_CHECKING:
    from plantrail.ledger.rules.decide import Command
    from plantrail.ledger.stores.values import Ack
    from plantrail.projections.model import PlanState

__all__ = ["ack_view", "acknowledgement"]


def acknowledgement(state: PlanState, ack: Ack, command: Command) -> dict[str, Any]:
    """The acknowledgement document of ``command``, recorded with ``ack``, as the run stands in ``state``
    (the state right after it). It prints no evidence: a state whose evidence is not read yet will do."""
    if isinstance(command, Create) and not ack.duplicate:
        return _created(state, ack)
    data = ack_view(state, ack)
    held = _held(state, ack)
    if held is not None:
        data["scope_violation"] = held
    if isinstance(command, Start):
        data |= _started(state, command.step, ack.seq)
    if isinstance(command, RequestEffect | CommitEffect):
        found = find_effect(state.effects, command.effect.strip())
        data["effect"] = None if found is None else effect_view(state, found)
    return data


def _started(state: PlanState, step: str, seq: int) -> dict[str, Any]:
    """A start's attempt and the seq a result names it by (``started_seq``; the attempt is None when a retried
    start's attempt is no longer the step's: a replan reset it since)."""
    found = state.steps.get(step)
    number = None
    if found is not None and seq in found.started:
        number = found.attempt - (len(found.started) - 1 - found.started.index(seq))
    return {"attempt": number, "started_seq": seq}


def _held(state: PlanState, ack: Ack) -> dict[str, Any] | None:
    """The scope violation the acknowledged record itself was recorded as (None: it was not one)."""
    authority = state.authority
    held = authority.violation if authority is not None and not ack.duplicate else None
    if held is None or held.seq != ack.seq:
        return None
    return {"step": held.step, "paths": list(held.paths), "tools": list(held.tools)}


def _created(state: PlanState, ack: Ack) -> dict[str, Any]:
    """A create's answer: every command's (:func:`ack_view`), with the run, the first version's steps and its
    coverage warnings."""
    view = ack_view(state, ack)
    data: dict[str, Any] = {"ok": True, "run": state.run}
    data |= {key: view[key] for key in ("seq", "hash", "anchor", "duplicate", "orphan", "durable", "plan_version")}
    data["steps"] = list(state.steps)
    data |= {key: view[key] for key in ("outcome", "ready", "can_start", "capacity", "advice")}
    warnings = [] if state.plan is None else coverage_warnings(state.plan)
    if warnings:
        data["warnings"] = [w.as_dict() for w in warnings]
    return data


def ack_view(state: PlanState, ack: Ack) -> dict[str, Any]:
    """What a recording command answers: the ack (seq, hash, anchor, duplicate, orphan, durable) and where the
    run stands after it (version, outcome, ready, can start, capacity, advice)."""
    return {
        "ok": True,
        "seq": ack.seq,
        "hash": ack.hash,
        "anchor": anchor(ack.seq, ack.hash),
        "duplicate": ack.duplicate,
        "orphan": ack.orphan,
        "durable": ack.durable,
        "plan_version": state.version,
        "outcome": state.outcome,
        "ready": ready_steps(state),
        "can_start": startable_steps(state),
        "capacity": capacity_view(state),
        "advice": advice(state),
    }
