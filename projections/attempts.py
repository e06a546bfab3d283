"""Each step's attempt history: every attempt of every version, how it ended, and the late results for it.

A projection of the whole log (the plan state keeps only each step's current attempt). Model, then
:func:`fold`, then the query that renders it, as in every projection. An attempt is named by the plan
version it started in and its number; it ends ``completed``, ``blocked`` or ``failed`` by its result,
``abandoned`` when its worker gave it up (it is not charged), ``superseded`` when a replan landed while it was
in progress, or not yet (``None``). A late result (the
orphan path) never ends an attempt: it is listed under the attempt it names, with why it was late.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from plantrail.projections.model import OrphanWhy, PlanState
from plantrail.projections.state import evolve, initial

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record

__all__ = ["Attempt", "AttemptHistory", "LateResult", "attempts_view", "fold"]


class LateResult(NamedTuple):
    """A result for an attempt that had already ended or been superseded (it is on the orphan path)."""

    seq: int
    type: str
    why: OrphanWhy
    evidence: tuple[str, ...] = ()
    reason: str | None = None


class Attempt(NamedTuple):
    """One attempt of a step: where it started, how and where it ended, and late results naming it."""

    plan_version: int
    attempt: int
    started_seq: int | None = None
    result: str | None = None
    result_seq: int | None = None
    evidence: tuple[str, ...] = ()
    reason: str | None = None
    late: tuple[LateResult, ...] = ()


class AttemptHistory(NamedTuple):
    """The state after the whole log, and every step's attempts in log order, by step id."""

    state: PlanState
    attempts: Mapping[str, tuple[Attempt, ...]]


def _result_fields(data: Any) -> tuple[tuple[str, ...], str | None]:
    """A result's evidence (completed) or its reason or error (blocked, failed)."""
    evidence = getattr(data, "evidence", ())
    return tuple(evidence), getattr(data, "reason", None) or getattr(data, "error", None)


def fold(records: Iterable[Record]) -> AttemptHistory:
    """Every step's attempt history over ``records`` (the whole log, from its header)."""
    state = initial()
    history: dict[str, list[Attempt]] = {}
    where: dict[tuple[str, int, int], int] = {}  # (step, version, attempt) -> index in history[step]
    for record in records:
        before = state
        state = evolve(state, record)
        kind = record.type
        if kind == "step.started":
            step, attempt = record.data.step, record.data.attempt  # type: ignore[union-attr]
            entries = history.setdefault(step, [])
            where[(step, record.plan_version, attempt)] = len(entries)
            entries.append(Attempt(record.plan_version, attempt, started_seq=record.seq))
        elif kind in ("step.completed", "step.blocked", "step.failed"):
            _add_result(history, where, record, state, late=len(state.orphans) > len(before.orphans))
        elif kind == "step.abandoned":
            data: Any = record.data
            now, then = state.steps.get(data.step), before.steps.get(data.step)
            ended = now is not None and data.attempt in now.abandoned
            if ended and (then is None or data.attempt not in then.abandoned):
                version, attempt = record.plan_version, data.attempt
                _end(history, where, data.step, version, attempt, "abandoned", record.seq, (), data.reason)
        elif kind == "plan.replanned":
            for step in before.steps.values_in_order():
                if step.status == "in_progress":
                    _end(history, where, step.id, before.version, step.attempt, "superseded", record.seq)
    frozen = {step: tuple(entries) for step, entries in history.items()}
    return AttemptHistory(state, frozen)


def _end(
    history: dict[str, list[Attempt]],
    where: dict[tuple[str, int, int], int],
    step: str,
    version: int,
    attempt: int,
    result: str,
    seq: int,
    evidence: tuple[str, ...] = (),
    reason: str | None = None,
) -> None:
    index = where.get((step, version, attempt))
    if index is None:  # a result whose start the log does not hold (an imported or hand-made log)
        entries = history.setdefault(step, [])
        where[(step, version, attempt)] = index = len(entries)
        entries.append(Attempt(version, attempt))
    entry = history[step][index]
    history[step][index] = entry._replace(result=result, result_seq=seq, evidence=evidence, reason=reason)


def _add_result(
    history: dict[str, list[Attempt]],
    where: dict[tuple[str, int, int], int],
    record: Record,
    state: PlanState,
    *,
    late: bool,
) -> None:
    data: Any = record.data
    evidence, reason = _result_fields(data)
    result = record.type.removeprefix("step.")
    if not late:
        _end(history, where, data.step, record.plan_version, data.attempt, result, record.seq, evidence, reason)
        return
    key = (data.step, record.plan_version, data.attempt)
    if key not in where:
        entries = history.setdefault(data.step, [])
        where[key] = len(entries)
        entries.append(Attempt(record.plan_version, data.attempt))
    index = where[key]
    entry = history[data.step][index]
    orphan = LateResult(record.seq, record.type, state.orphans[-1].why, evidence, reason)
    history[data.step][index] = entry._replace(late=(*entry.late, orphan))


def attempts_view(attempts: tuple[Attempt, ...]) -> list[dict[str, Any]]:
    """One step's attempts as JSON: ``plan_version``, ``attempt``, ``started_seq``, ``result`` (completed,
    blocked, failed, abandoned, superseded, or null while in progress), ``result_seq``, ``evidence``, ``reason``
    (a block's reason, a failure's error or an abandon's reason), and ``late`` (``{seq, type, why, evidence,
    reason}``)."""
    return [
        a._asdict()
        | {"evidence": list(a.evidence), "late": [o._asdict() | {"evidence": list(o.evidence)} for o in a.late]}
        for a in attempts
    ]
