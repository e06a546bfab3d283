"""Idempotency keys: is a retried command the same as the event its key already wrote?

"The same content" means the same type, step (or criterion) and payload. The plan version and the attempt
are compared when the retried command states them; when it leaves them to their defaults they are whatever
the original resolved to (a retry after the run moved on still finds its original event). Values a decision
derives from the state (the next attempt number, the next version, a patch applied to its base) are never
compared, so a retry is recognised even though the state has moved.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from plantrail.ledger.decide import Block, Command, Complete, Create, Fail, Finish, Replan, Start, VerifyCriterion
from plantrail.ledger.errors import error
from plantrail.ledger.events import (
    CriterionVerified,
    PlanCreated,
    PlanReplanned,
    Record,
    RunFinished,
    StepBlocked,
    StepCompleted,
    StepFailed,
    StepStarted,
)
from plantrail.ledger.plan import Draft, PlanSpec
from plantrail.ledger.store import KeyEntry

__all__ = ["KeyEntry", "command_view", "match", "record_view"]


def _digest(parts: list[Any]) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _plan_view(plan: Draft | PlanSpec) -> list[Any]:
    return [list(plan.steps), list(plan.acceptance_criteria)]


def record_view(record: Record) -> KeyEntry:
    """The comparable content of a stored record."""
    data = record.data
    attempt = getattr(data, "attempt", None)
    match data:
        case StepStarted():
            parts: list[Any] = [data.TYPE, data.step]
        case StepCompleted():
            parts = [data.TYPE, data.step, list(data.evidence)]
        case StepBlocked():
            parts = [data.TYPE, data.step, data.reason]
        case StepFailed():
            parts = [data.TYPE, data.step, data.error]
        case CriterionVerified():
            parts = [data.TYPE, data.criterion, data.verdict, data.evidence]
        case RunFinished():
            parts = [data.TYPE, data.outcome, data.reason]
        case PlanReplanned():
            shape = data.patch if data.patch is not None else _plan_view(data.plan)
            parts = [data.TYPE, data.reason, data.why, list(data.causes), list(data.observations), shape]
        case PlanCreated():
            parts = [data.TYPE, data.plan.goal, _plan_view(data.plan)]
        case _:
            parts = [data.TYPE, data]
    return KeyEntry(
        seq=record.seq, hash=record.h, view=_digest(parts), plan_version=record.plan_version, attempt=attempt
    )


def command_view(command: Command) -> str:
    """The comparable content of a command, normalised as its decision would normalise it."""
    match command:
        case Start():
            parts: list[Any] = [StepStarted.TYPE, command.step]
        case Complete():
            parts = [StepCompleted.TYPE, command.step, [e.strip() for e in command.evidence]]
        case Block():
            parts = [StepBlocked.TYPE, command.step, command.reason.strip()]
        case Fail():
            parts = [StepFailed.TYPE, command.step, command.error.strip()]
        case VerifyCriterion():
            verdict = "passed" if command.passed else "failed"
            parts = [CriterionVerified.TYPE, command.criterion, verdict, command.evidence.strip()]
        case Finish():
            parts = [RunFinished.TYPE, command.outcome, command.reason.strip()]
        case Create():
            parts = [PlanCreated.TYPE, command.plan.goal, _plan_view(command.plan)]
        case Replan():
            shape = command.patch if command.patch is not None else _plan_view(command.plan)  # type: ignore[arg-type]
            observations = [o.strip() for o in command.observations if o.strip()]
            parts = [PlanReplanned.TYPE, command.reason, command.why.strip(), list(command.causes), observations, shape]
        case _:
            parts = [type(command).__name__, command]
    return _digest(parts)


def match(entry: KeyEntry, command: Command, key: str) -> None:
    """Accept a retry of the keyed event; raise IDEMPOTENCY_CONFLICT when the content differs."""
    same = entry.view == command_view(command)
    version = getattr(command, "plan_version", None)
    attempt = getattr(command, "attempt", None)
    if same and version is not None and version != entry.plan_version:
        same = False
    if same and attempt is not None and attempt != entry.attempt:
        same = False
    if not same:
        raise error(
            "IDEMPOTENCY_CONFLICT",
            f"idempotency key {key!r} was used at seq {entry.seq} for different content",
            key=key,
            seq=entry.seq,
        )
