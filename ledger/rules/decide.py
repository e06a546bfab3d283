"""Commands -> events: one decision per command, checked against the current state before a byte is written.

Each command is declared once, in the feature module that owns its rules (:mod:`plantrail.ledger.rules.commands`
says how): the steps' attempts (:mod:`.attempts`: start, complete, block, fail), the criteria
(:mod:`.criteria`), the run's end (:mod:`.outcomes`), the plan's versions (:mod:`.reconcile`: create, replan;
:mod:`.extension`: extend), leases (:mod:`.leases`), adopting a late result (:mod:`.adoption`), observations
(:mod:`.observations`), approvals (:mod:`.approvals`) and side effects (:mod:`.effects`). This module imports
every one of them, so that :func:`decide` finds a command's declaration by its class, and :func:`check` an
event's rules by its class.

A decision first *builds* the command's event (filling in defaults: the active plan version, the step's
attempt), then :func:`check` judges the event against the state. ``check`` is the one place the rules are
called, so ``plantrail verify`` can replay it over a whole log to catch events a plantrail writer would have
refused. A refusal raises a :class:`~ledger.vocabulary.errors.CommandRefused` or
:class:`~ledger.vocabulary.errors.PlanInvalid` with
a stable code and structured fields.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, Final

import msgspec

from plantrail.ledger.rules.adoption import ADOPT, Adopt
from plantrail.ledger.rules.approvals import DECIDE, REQUEST_APPROVAL, Decide, RequestApproval
from plantrail.ledger.rules.attempts import (
    BLOCK,
    COMPLETE,
    FAIL,
    START,
    TRANSITION_TARGET,
    Block,
    Complete,
    Fail,
    Start,
)
from plantrail.ledger.rules.commands import RULES, UNPLANNED_RULES, Declaration, declaration_of, lookup
from plantrail.ledger.rules.criteria import VERIFY_CRITERION, VerifyCriterion
from plantrail.ledger.rules.effects import COMMIT_EFFECT, REQUEST_EFFECT, CommitEffect, RequestEffect
from plantrail.ledger.rules.extension import EXTEND, Extend
from plantrail.ledger.rules.guards import require_plan, unknown_version
from plantrail.ledger.rules.leases import ABANDON, HEARTBEAT, Abandon, Heartbeat
from plantrail.ledger.rules.lineage import check_forked
from plantrail.ledger.rules.observations import OBSERVE, Observe
from plantrail.ledger.rules.outcomes import FINISH, Finish
from plantrail.ledger.rules.reconcile import CREATE, REPLAN, Create, Replan
from plantrail.ledger.vocabulary.arguments import refuse, strict
from plantrail.ledger.vocabulary.events import Actor, Event, RunForked, Source
from plantrail.projections.model import OrphanWhy

if TYPE_CHECKING:
    from plantrail.projections.state import StateView

__all__ = [
    "DECLARATIONS",
    "Abandon",
    "Adopt",
    "Block",
    "Command",
    "CommitEffect",
    "Complete",
    "Create",
    "Decide",
    "Extend",
    "Fail",
    "Finish",
    "Heartbeat",
    "NewEvent",
    "Observe",
    "Replan",
    "RequestApproval",
    "RequestEffect",
    "Start",
    "VerifyCriterion",
    "check",
    "decide",
    "decide_one",
    "judge",
]


class NewEvent(msgspec.Struct, frozen=True):
    """An event a decision produced, with the envelope fields the caller chose."""

    data: Event
    plan_version: int
    actor: Actor
    source: Source | None = None
    key: str | None = None
    orphan: OrphanWhy | None = None


Command = (
    Create
    | Start
    | Complete
    | Block
    | Fail
    | VerifyCriterion
    | Finish
    | Replan
    | Extend
    | Heartbeat
    | Abandon
    | Adopt
    | Observe
    | RequestApproval
    | Decide
    | RequestEffect
    | CommitEffect
)

#: Every command's declaration, in the order the documentation lists the commands.
DECLARATIONS: Final[tuple[Declaration[Any], ...]] = (
    CREATE,
    START,
    COMPLETE,
    BLOCK,
    FAIL,
    VERIFY_CRITERION,
    FINISH,
    REPLAN,
    EXTEND,
    HEARTBEAT,
    ABANDON,
    ADOPT,
    OBSERVE,
    REQUEST_APPROVAL,
    DECIDE,
    REQUEST_EFFECT,
    COMMIT_EFFECT,
)

#: The declarations by their command's class (the registry :mod:`.commands` keeps).
_DECLARED: Final = lookup()
#: The rules of each event judged against a plan, by the event's class (:data:`.commands.RULES`), and the step
#: status each step transition leads to: the names this module had for them before the commands were declared.
_RULES: Final = RULES
_TRANSITION_TARGET: Final = TRANSITION_TARGET


# --------------------------------------------------------------------------- decide


@strict
def decide(state: StateView, command: Command) -> list[NewEvent]:
    """The events ``command`` produces against ``state``, or a refusal with a stable code (INVALID_ARGUMENT for a
    field holding a value of another type than the field's)."""
    _require_state(state, "decide")
    declared = _DECLARED.get(type(command))
    (declaration_of(command) if declared is None else declared).check_fields(command)
    data, plan_version, orphan = decide_one(state, command)
    return [NewEvent(data, plan_version, command.actor, command.source, command.key, orphan)]


def decide_one(state: StateView, command: Command, *, now: str | None = None) -> tuple[Event, int, OrphanWhy | None]:
    """The one event ``command`` produces (its data and plan version; the envelope's actor, source and key are
    the command's), and why it is a late result (None when it applies); or a refusal, as :func:`decide`.
    ``now`` is the timestamp the event will carry: the stop policy judges a deadline against it."""
    declared = _DECLARED.get(type(command))
    if declared is None:  # a class derived from a command's
        declared = declaration_of(command)
    data, plan_version = declared.build(state, command)
    late = judge(state, data, plan_version, now=now)
    if declared.late is not None:  # a late effect is kept beside the orphans
        late = declared.late(state, data, plan_version)
    return data, plan_version, late


# --------------------------------------------------------------------------- check


def judge(state: StateView, data: Event, plan_version: int, *, now: str | None = None) -> OrphanWhy | None:
    """Judge one event against the state before it; return why it is a late result, or None if it applies.

    ``now`` is the event's timestamp (``verify`` passes each record's): rules on time, such as a deadline,
    compare it with the plan; the clock itself is never read here."""
    rules = RULES.get(type(data))  # every event judged against a plan (the rest: _check_unplanned)
    if rules is None:
        return _check_unplanned(state, data, plan_version, now)
    if state.plan is None:
        require_plan(state)
    if not 1 <= plan_version <= state.version:
        raise unknown_version(state, plan_version)
    return rules(state, data, plan_version, now)


@strict
def check(state: StateView, data: Event, plan_version: int, *, now: str | None = None) -> OrphanWhy | None:
    """:func:`judge` for a caller outside plantrail, its arguments' types checked (INVALID_ARGUMENT)."""
    _require_state(state, "check")
    if not isinstance(data, typing.get_args(Event)):
        raise refuse("data", data, "a plantrail event", where="check")
    return judge(state, data, plan_version, now=now)


def _require_state(state: object, where: str) -> None:
    """INVALID_ARGUMENT unless ``state`` is a plan state (or the builder a fold advances)."""
    from plantrail.projections.state import is_state_view

    if not is_state_view(state):
        raise refuse("state", state, "a PlanState", where=where)


def _check_unplanned(state: StateView, data: Event, plan_version: int, now: str | None) -> OrphanWhy | None:
    """:func:`check` for the events no plan is needed for (the plan's creation, the log's own records, a fork),
    and for an event of a class derived from one of :data:`~.commands.RULES` (judged by its base class's
    rules)."""
    unplanned = UNPLANNED_RULES.get(type(data))
    if unplanned is None:
        unplanned = next((rules for kind, rules in UNPLANNED_RULES.items() if isinstance(data, kind)), None)
    if unplanned is not None:
        return unplanned(state, data, plan_version, now)
    if data.TYPE.startswith("log."):
        return None
    if isinstance(data, RunForked):
        check_forked(state, data, plan_version)
        return None
    require_plan(state)
    if not 1 <= plan_version <= state.version:
        raise unknown_version(state, plan_version)
    for kind, rules in RULES.items():
        if isinstance(data, kind):
            return rules(state, data, plan_version, now)
    return None
