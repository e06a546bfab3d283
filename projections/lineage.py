"""A forked run's carried state, and the lineage of runs as a view (pure: no I/O).

A fork (:mod:`ledger.fork`) begins with a ``run.forked`` event that carries its parent's state at the seq it
was forked at, as the JSON :func:`projections.state_json.encode_state` writes (without references: the event
holds every text). The reducer adopts that state whole; the fork's own records then fold on top of it
exactly as they would have folded on the parent at that seq. Seqs inside the carried state (a step's
``last_seq``, an orphan's ``seq``, the adopted version's ``seq``) are the parent's: the lineage link says
which run they belong to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from plantrail.projections.model import Fork, PlanState

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import RunForked

__all__ = ["carried_state", "carry", "lineage_view"]


def carry(state: PlanState) -> str:
    """The text a ``run.forked`` event carries for ``state`` (every string inline)."""
    from plantrail.projections.state_json import encode_state  # only a fork needs it: status stays light

    return encode_state(state).decode()


def carried_state(data: RunForked) -> PlanState | None:
    """The parent's state a ``run.forked`` event carries, or None when its text is not a state (a hand-made
    log; ``verify`` names it)."""
    from plantrail.projections.state_json import decode_state

    try:
        return decode_state(data.state.encode())
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _link_view(link: Fork) -> dict[str, Any]:
    return {"run": link.run, "seq": link.seq, "head": link.head, "state_hash": link.state_hash, "reason": link.reason}


def lineage_view(lineage: PlanState | Iterable[Fork]) -> list[dict[str, Any]]:
    """The runs a state's run was forked from (given the state or its ``lineage``), the nearest parent last:
    each with ``run``, ``seq`` (where in the parent), ``head`` (the parent's hash there), ``state_hash`` (of the
    parent's state there) and ``reason``."""
    links = lineage.lineage if isinstance(lineage, PlanState) else lineage
    return [_link_view(link) for link in links]
