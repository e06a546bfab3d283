"""Adopting a late result: the one way a result on the orphan path reaches the active plan (format v2).

A completion that arrives after a replan reset or removed its step is kept on the orphan path and never
applied. When the work it reports is still what the active version asks for, redoing it is waste, so
``plantrail adopt LOG SEQ`` records ``step.adopted``: the step completes in the active version as a new
attempt, with the late completion's evidence, and the late result stays on the orphan path, marked adopted.

It is refused (``ADOPT_REFUSED``, with the reason) unless every one of these holds, and ``verify`` checks
them again for each ``step.adopted`` in a log:

- the record at SEQ is a late completion (not a block or failure), not adopted before;
- the result is known to be its attempt's own, with the step's contract in the version it was made under:
  the attempt was cut off in flight by a replan, or abandoned in the active version with its inputs still
  current (a result that named no attempt, ``AMBIGUOUS_ATTEMPT``, or that was sent after the run finished,
  is not);
- its step is pending in the active version, with every dependency completed, and whatever else a start of it
  would need: its repair step completed if it waits for one, its approvals, no overlapping write scope in
  progress;
- the step's contract there (title, completion evidence, dependencies, declared inputs, checks, outputs) is
  the one the result was made under;
- the step declares no typed checks and no outputs: a late result is recorded as the worker reported it and
  never judged, and its evidence record and artifacts are not carried into the plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

import msgspec

from plantrail.ledger.rules.approvals import check_start_authority
from plantrail.ledger.rules.commands import LATE_REFUSED, Envelope, Help, declare, fields, timeless
from plantrail.ledger.rules.guards import issued_version, not_stale, require_next_attempt, require_open
from plantrail.ledger.rules.repair_edges import check_start_repair
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Actor, Source, StepAdopted
from plantrail.ledger.vocabulary.plan import steps_by_id
from plantrail.projections.reconcile import contract_changes
from plantrail.projections.repair_edges import edges_of
from plantrail.projections.state import find_orphan

if TYPE_CHECKING:
    from plantrail.projections.model import Orphan
    from plantrail.projections.state import StateView

__all__ = ["ADOPT", "Adopt", "adopt", "check_adopt"]


class Adopt(msgspec.Struct, frozen=True, kw_only=True):
    """Take the late completion recorded at ``orphan_seq`` into the active version."""

    orphan_seq: int
    plan_version: int | None = None
    actor: Actor = "user"
    source: Source | None = None
    key: str | None = None


def _refused(orphan_seq: int, why: str, **more: Any) -> Exception:
    return error("ADOPT_REFUSED", f"cannot adopt the late result at seq {orphan_seq}: {why}", seq=orphan_seq, **more)


def _orphan(state: StateView, seq: int) -> Orphan:
    found = find_orphan(state.orphans, seq)
    if found is None:
        raise _refused(seq, "no late result was recorded at that seq (plantrail orphans lists them)")
    return state.orphans[found]


def _build_adopt(state: StateView, command: Adopt) -> tuple[StepAdopted, int]:
    version = issued_version(state, command.plan_version)
    orphan = _orphan(state, command.orphan_seq)
    step = state.steps.get(orphan.step)
    attempt = 1 if step is None else step.attempt + 1
    return StepAdopted(step=orphan.step, attempt=attempt, orphan_seq=command.orphan_seq), version


def check_adopt(state: StateView, data: StepAdopted, plan_version: int) -> None:
    """Refuse an adoption that does not meet every condition (see the module's docstring)."""
    not_stale(state, plan_version, f"adopt seq {data.orphan_seq}")
    require_open(state)
    seq = data.orphan_seq
    orphan = _orphan(state, seq)
    if orphan.step != data.step:
        raise _refused(seq, f"it is a result for step {orphan.step}, not {data.step}")
    if orphan.type != "step.completed":
        raise _refused(seq, f"it is a {orphan.type.removeprefix('step.')} result; only a completion can be adopted")
    if orphan.adopted is not None:
        raise _refused(seq, f"it was adopted already, at seq {orphan.adopted}")
    if orphan.contract is None:
        raise _refused(seq, _unknown_contract(orphan.why))
    assert state.plan is not None
    spec = steps_by_id(state.plan).get(orphan.step)
    step = state.steps.get(orphan.step)
    if spec is None or step is None:
        raise _refused(seq, f"plan version {state.version} has no step {orphan.step}", step=orphan.step)
    if step.status != "pending":
        raise _refused(
            seq, f"step {step.id} is {step.status} in plan version {state.version}, not pending", step=step.id
        )
    require_next_attempt(step, data.attempt, "completes, by adoption,")
    changed = contract_changes(orphan.contract, spec)
    if changed:
        raise _refused(
            seq,
            f"step {step.id}'s contract changed since the result was made ({', '.join(changed)}): start it again",
            step=step.id,
            changed=list(changed),
        )
    if spec.checks or spec.outputs:
        what = "typed checks" if spec.checks else "outputs"
        raise _refused(
            seq,
            f"step {step.id} declares {what}, which a late result is never judged against: start it again",
            step=step.id,
        )
    waiting = sorted({d for d in spec.depends_on if state.steps[d].status != "completed"})
    if waiting:
        raise _refused(seq, f"step {step.id} waits for unfinished dependencies: {', '.join(waiting)}", step=step.id)
    if state.contract and edges_of(state.plan):  # repair edges: a failed step waits for its repair, as a start
        check_start_repair(state, step)
    if state.contract or state.authority is not None:  # scopes and approvals: as a start of the step would be
        check_start_authority(state, spec)


def _unknown_contract(why: str) -> str:
    """Why a late result's contract is not known (so it cannot be adopted)."""
    if why == "AMBIGUOUS_ATTEMPT":
        return "it named no attempt while more than one could be its own; send it again with --started-seq"
    if why == "RUN_FINISHED":
        return "it arrived after the run finished"
    return (
        "it is not known to be the result of an attempt cut off in flight by a replan, or of an attempt abandoned "
        "with its inputs current, so the contract it was made under is not known"
    )


ADOPT = declare(
    Adopt,
    build=_build_adopt,
    rules={StepAdopted: timeless(lambda state, data, version: check_adopt(state, data, version))},
    superseded=f"{LATE_REFUSED}.",
    refusals=(
        "PLAN_NOT_CREATED",
        "UNKNOWN_PLAN_VERSION",
        "STALE_PLAN_VERSION",
        "RUN_FINISHED",
        "ADOPT_REFUSED",
        "INVALID_TRANSITION",
        "AWAITING_REPAIR",
        "REPAIR_NOT_NEEDED",
        "APPROVAL_REQUIRED",
        "PAUSED_SCOPE_VIOLATION",
        "PAUSED_APPROVAL_DENIED",
        "WRITE_SCOPE_CONFLICT",
    ),
    cli={
        "adopt": Help(
            "Take the late completion at SEQ (plantrail orphans lists them) into the active plan version: its step,\n"
            "pending there, completes as a new attempt with that evidence. Format v2 (step.adopted).",
            "Only when the result is known to be its attempt's own (cut off in flight by a replan, or abandoned)\n"
            "and the step's contract is the one it was made under; ADOPT_REFUSED says which condition failed.",
            examples=("plantrail adopt run.jsonl 42",),
        )
    },
    tools={"step_adopt": "Take a late completion (by its seq, from the orphans) into the active plan version."},
)


@ADOPT.method
def adopt(orphan_seq: int, **envelope: Unpack[Envelope]) -> Adopt:
    """Take the late completion recorded at ``orphan_seq`` into the active plan version: its step completes as a
    new attempt with that evidence (``plantrail adopt``; refused with ADOPT_REFUSED and the reason)."""
    return Adopt(orphan_seq=orphan_seq, **fields(envelope))
