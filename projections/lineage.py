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

__all__ = ["carried_state", "carry", "forked_summary", "lineage_view", "parent_event"]


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


def forked_summary(data: RunForked) -> str:
    """A ``run.forked`` event in one line (the state it carries is never shown, only named by its hash)."""
    reason = f": {data.reason}" if data.reason else ""
    return f"forked from run {data.parent} at seq {data.seq} (state {data.state_hash[:12]}…){reason}"


def parent_event(carried: PlanState | None, link: Fork, seq: int) -> str:
    """One line on event ``seq`` of the run a fork was forked from (``link``), from what the state the fork
    carries says happened at that seq (a step's or a criterion's last change there, the plan version adopted
    there, a late result, the outcome); the parent's log is not read, so an event the state keeps nothing of is
    named by its seq alone."""
    said: list[str] = []
    if carried is not None:
        steps = [s for s in carried.steps.values() if s.last_seq == seq]
        said += [f"step {s.id} {s.status}{_why(s.reason or s.error or _first(s.evidence))}" for s in steps]
        said += [f"criterion {c.id} {c.status}" for c in carried.criteria.values() if c.last_seq == seq]
        if carried.adopted is not None and carried.adopted.seq == seq:
            said.append(f"plan v{carried.adopted.version} adopted{_why(carried.adopted.why)}")
        said += [f"late {o.type} of step {o.step} (kept off the plan)" for o in carried.orphans if o.seq == seq]
        if carried.outcome_seq == seq:
            said.append(f"run finished {carried.outcome}")
    what = "; ".join(said) if said else "an event the carried state keeps nothing of (the parent's log shows it)"
    return f"seq {seq} of run {link.run} (the parent, forked at seq {link.seq}): {what}"


def _first(texts: tuple[object, ...]) -> str | None:
    return texts[0] if texts and isinstance(texts[0], str) else None


def _why(text: str | None) -> str:
    return f" ({text})" if text else ""
