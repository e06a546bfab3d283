"""Forking a run from any point of its log (LangGraph's fork, Temporal's reset).

:func:`fork_run` writes a new run whose first record after its header is a ``run.forked`` event: the parent's
run id, the seq it was forked at and the parent's hash there, the parent's state at that seq (and its hash),
and why. The fork is small (its size follows the state, not the parent's history), has its own chain from
its own header, and verifies on its own; its own events fold on top of the carried state exactly as if they
had been appended to the parent at that seq. The parent is only read, never written.

    from plantrail.ledger.fork import fork_run

    fork_run("run.jsonl", "retry.jsonl", at_seq=12, reason="try the other migration")
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.stores.values import FsyncPolicy, PendingRecord
from plantrail.ledger.vocabulary.clock import utc_now
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Actor, RunForked
from plantrail.ledger.vocabulary.items import as_text
from plantrail.ledger.vocabulary.plan import check_id
from plantrail.projections.canonical import state_hash
from plantrail.projections.lineage import carry
from plantrail.projections.model import PlanState

__all__ = ["ForkResult", "fork_point", "fork_run"]

Path = str | os.PathLike[str]


class ForkResult(NamedTuple):
    """What a fork wrote: the new run, where in which parent it starts, and the state it carries."""

    path: str
    run: str
    parent: str
    seq: int
    head: str
    state_hash: str
    plan_version: int
    last_seq: int
    fork_head: str


def fork_point(parent: Path, *, at_seq: int | None = None, version: int | None = None) -> PlanState:
    """The parent's state where a fork starts: right after record ``at_seq``, or where ``replay --version``
    stands for ``version`` (the version as it stood when superseded, or now for the active one).

    USAGE unless exactly one is given; UNKNOWN_SEQ or UNKNOWN_PLAN_VERSION when the log does not reach it;
    PLAN_NOT_CREATED when the point is before the parent's first plan."""
    from plantrail.projections.history import replay_at_seq

    if (at_seq is None) == (version is None):
        raise error("USAGE", "a fork starts at one point: give a seq or a plan version, not both or neither")
    with as_run(parent) as run:
        if version is not None:
            state, _, _ = run.version_state(version)
        else:
            assert at_seq is not None
            state = replay_at_seq(run.records(), at_seq)
    if state.plan is None or state.head is None:
        raise error("PLAN_NOT_CREATED", f"the parent has no plan at seq {state.last_seq}: there is nothing to fork")
    return state


def fork_run(
    parent: Path,
    path: Path,
    *,
    at_seq: int | None = None,
    version: int | None = None,
    reason: str | None = None,
    run: str | None = None,
    actor: Actor = "user",
    fsync: FsyncPolicy = "always",
    nonce: str | None = None,
    allow_network_fs: bool = False,
    clock: Callable[[], str] = utc_now,
) -> ForkResult:
    """Write a new run at ``path`` forked from the log ``parent`` at seq ``at_seq`` or plan ``version`` (see
    :func:`fork_point`), with an optional ``reason``; ``path`` is a JSONL file or a database run
    (``postgresql://…/db#RUN``), and so may ``parent`` be. ``run`` defaults to the new file's name without
    ``.jsonl`` (a database run's id) and must differ from the parent's run id; the other options are
    :meth:`Ledger.create`'s. LOG_EXISTS when ``path`` exists; the parent is never written."""
    point = fork_point(parent, at_seq=at_seq, version=version)
    assert point.run is not None and point.head is not None
    target = as_run(path)
    new_run = check_id(run, "run id") if run is not None else target.new_run_id(what="the new run")
    if new_run == point.run:
        raise error("USAGE", f"the fork needs a run id of its own (the parent is run {point.run}): pass another run id")
    text = "" if reason is None else as_text(reason, "reason")
    event = RunForked(
        parent=point.run,
        seq=point.last_seq,
        head=point.head,
        state_hash=state_hash(point),
        reason=text.strip(),
        state=carry(point),
    )
    ts = clock()
    first = PendingRecord(ts=ts, plan_version=point.version, actor=actor, data=event)
    store, records = target.create(
        run=new_run,
        first=[first],
        fsync=fsync,
        nonce=nonce,
        ts=ts,
        actor=actor,
        allow_network_fs=allow_network_fs,
        clock=clock,
    )
    store.close()
    return ForkResult(
        path=target.location,
        run=new_run,
        parent=point.run,
        seq=point.last_seq,
        head=point.head,
        state_hash=event.state_hash,
        plan_version=point.version,
        last_seq=records[-1].seq,
        fork_head=records[-1].h,
    )
