"""The rules of a forked run's first event, and the check of a fork against its parent.

A fork's ``run.forked`` event (:class:`ledger.vocabulary.events.RunForked`) comes right after the header, before any
plan, stamped with the plan version it carries; its state must decode, hold a plan at that version, and hash
to the ``state_hash`` it names. Those rules make a fork verify on its own (its own chain from its own header).
:func:`check_parent` adds what only the parent can say: that the parent's chain has the named hash at the
named seq, and that the parent's state there is the one the fork carries (``verify NEW --parent LOG``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plantrail.ledger.vocabulary.errors import error
from plantrail.projections.canonical import state_hash
from plantrail.projections.lineage import carried_state

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import RunForked
    from plantrail.projections.model import Fork, PlanState
    from plantrail.projections.state import StateView

__all__ = ["check_forked", "check_parent"]


def check_forked(state: StateView, data: RunForked, plan_version: int) -> None:
    """Refuse a ``run.forked`` event anywhere but first after the header, or one whose state does not decode,
    holds no plan, is not at ``plan_version``, or does not hash to the ``state_hash`` it names."""
    if state.plan is not None or state.last_seq != 0:
        raise error("FORK_INVALID", "a run.forked event comes first, right after the header", seq=state.last_seq + 1)
    carried = carried_state(data)
    if carried is None or carried.plan is None:
        raise error("FORK_INVALID", "the state a run.forked event carries is not a plan state")
    if carried.version != plan_version:
        raise error(
            "FORK_INVALID",
            f"the carried state is at plan version {carried.version}; the event says {plan_version}",
            expected=carried.version,
            actual=plan_version,
        )
    actual = state_hash(carried)
    if actual != data.state_hash:
        raise error(
            "FORK_INVALID",
            f"the carried state hashes to {actual}, not to the {data.state_hash} the event names",
            expected=data.state_hash,
            actual=actual,
        )


def check_parent(link: Fork, parent: PlanState) -> None:
    """Raise FORK_MISMATCH unless ``parent`` (the parent's state right after seq ``link.seq``) is the parent
    ``link`` names: the same run id, the same hash at that seq, and the same state hash."""
    if parent.run != link.run:
        raise error(
            "FORK_MISMATCH",
            f"the fork names parent run {link.run}; the log given as its parent is run {parent.run}",
            expected=link.run,
            actual=parent.run,
        )
    if parent.head != link.head:
        raise error(
            "FORK_MISMATCH",
            f"the parent's record at seq {link.seq} has hash {parent.head}, not the {link.head} the fork names "
            "(the parent was rewritten, or this is another log)",
            seq=link.seq,
            expected=link.head,
            actual=parent.head,
        )
    actual = state_hash(parent)
    if actual != link.state_hash:
        raise error(
            "FORK_MISMATCH",
            f"the parent's state at seq {link.seq} hashes to {actual}, not to the {link.state_hash} the fork carries",
            seq=link.seq,
            expected=link.state_hash,
            actual=actual,
        )
