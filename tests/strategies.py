"""Hypothesis strategies shared by the property tests: plans, commands, and logs built through the real codec."""

from __future__ import annotations

import base64
from typing import Any, NamedTuple

from hypothesis import strategies as st

from plantrail.ledger.rules.approvals import Decide, RequestApproval
from plantrail.ledger.rules.decide import (
    Block,
    Command,
    Complete,
    Create,
    Extend,
    Fail,
    Finish,
    Replan,
    Start,
    VerifyCriterion,
    decide,
)
from plantrail.ledger.rules.leases import Abandon, Heartbeat
from plantrail.ledger.rules.observations import Observe
from plantrail.ledger.vocabulary.artifacts import Artifact, InputRef, ObservedVersion, OutputSpec, TaskArtifacts
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode
from plantrail.ledger.vocabulary.contract import CheckSpec, StepTerms
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import (
    REASON_CODES,
    ApprovalDenied,
    ApprovalGranted,
    ApprovalRequested,
    CriterionVerified,
    EffectCommitted,
    EffectRequested,
    LogBatch,
    LogCheckpoint,
    LogOpened,
    LogRepaired,
    LogSigned,
    ObservationRecorded,
    PlanCreated,
    PlanExtended,
    PlanReplanned,
    Record,
    RunFinished,
    RunForked,
    Source,
    StepAbandoned,
    StepAdopted,
    StepBlocked,
    StepCompleted,
    StepFailed,
    StepHeartbeat,
    StepStarted,
    Trace,
)
from plantrail.ledger.vocabulary.evidence import Observation, Report, Usage
from plantrail.ledger.vocabulary.plan import CriterionSpec, PatchOp, PlanPatch, PlanSpec, Policy, StepSpec, topo_order
from plantrail.projections.model import PlanState
from plantrail.projections.state import evolve, initial

STEP_IDS = ("a", "b", "c", "d", "e")
#: Observation versions and artifacts of the lineage commands (format v2).
VERSIONS = ("r1", "r2")
ARTIFACTS = st.sampled_from([(Artifact("o", "sha256:" + "a" * 64),), (Artifact("o", "sha256:" + "b" * 64),)])
CRITERIA = ("c1", "c2")
#: Ids only an extension in place adds (with an id a plan may already have, which the rule refuses).
EXTRA_STEP_IDS = ("x", "y", "a")
EXTRA_CRITERIA = ("c3", "c1")
text = st.text(min_size=1, max_size=12).filter(lambda t: t.strip() != "")


CHECKS = st.one_of(
    st.builds(
        CheckSpec,
        id=st.sampled_from(["c1", "c2"]),
        kind=st.just("command_exit"),
        command=st.just("pytest -q"),
        expected_exit_code=st.sampled_from([0, 1]),
    ),
    st.builds(
        CheckSpec,
        id=st.sampled_from(["c1", "c2"]),
        kind=st.just("state_predicate"),
        predicate=st.just("folder_exists_once"),
        expected=st.sampled_from([1, {"count": 1}, None, "x"]),
    ),
    st.builds(CheckSpec, id=st.sampled_from(["c1", "c2"]), kind=st.just("human_review"), question=st.just("ok?")),
)


@st.composite
def plans(draw: st.DrawFn, goal: str = "ship it", checks: bool = False) -> PlanSpec:
    """A small valid plan: 1-5 steps, each depending only on earlier ones (so it is a DAG); with ``checks``,
    some steps carry typed checks (format v2)."""
    n = draw(st.integers(min_value=1, max_value=len(STEP_IDS)))
    ids = list(STEP_IDS[:n])
    lineage = draw(st.sampled_from([False, False, False, True]))  # format v2 artifacts: now and then
    steps = []
    for i, step_id in enumerate(ids):
        deps = draw(st.lists(st.sampled_from(ids[:i]), unique=True, max_size=2)) if i else []
        title = draw(st.sampled_from(["do " + step_id, "redo " + step_id]))
        attempts = draw(st.integers(min_value=1, max_value=3))
        priority = draw(st.sampled_from([0, 0, 0, 1, 2]))  # format v2: mostly absent, so most plans stay v1
        step_checks = draw(st.lists(CHECKS, max_size=2, unique_by=lambda c: c.id).map(tuple)) if checks else ()
        terms = StepTerms(priority=priority, checks=step_checks, **_lineage_terms(draw, lineage, deps))
        steps.append(StepSpec(step_id, title, tuple(deps), "evidence of " + step_id, attempts, terms))
    criteria = tuple(
        CriterionSpec(c, draw(st.sampled_from(["works", "still works"])))
        for c in draw(st.lists(st.sampled_from(CRITERIA), min_size=1, unique=True))
    )
    limit = draw(st.sampled_from([1, 1, 2, None]))
    observed = TaskArtifacts(observed=(ObservedVersion("repo", draw(st.sampled_from(VERSIONS))),))
    plan = PlanSpec(
        goal=goal,
        acceptance_criteria=criteria,
        steps=tuple(steps),
        policy=Policy(limit),
        artifacts=observed if lineage else None,
    )
    topo_order(plan.steps)
    return plan


def _lineage_terms(draw: st.DrawFn, lineage: bool, deps: list[str]) -> dict[str, Any]:
    """A step's outputs and inputs in a plan with lineage: every step outputs ``o``; a step with dependencies
    consumes its first dependency's ``o``, and some steps consume the repository observation."""
    if not lineage:
        return {}
    inputs = [InputRef(step=deps[0], output="o")] if deps else []
    if draw(st.booleans()):
        inputs.append(InputRef(observation="repo"))
    return {"outputs": (OutputSpec("o"),), "inputs": tuple(inputs)}


def commands() -> st.SearchStrategy[Command]:
    """Any command, legal or not: unknown steps, stale versions and attempts, replans, finishes."""
    step = st.sampled_from([*STEP_IDS, "x", "ghost"])
    version = st.none() | st.integers(min_value=1, max_value=4)
    attempt = st.none() | st.integers(min_value=1, max_value=3)
    return st.one_of(
        st.builds(Start, step=step, plan_version=version),
        st.builds(Start, step=step),
        st.builds(
            Complete, step=step, evidence=st.lists(text, min_size=0, max_size=2), plan_version=version, attempt=attempt
        ),
        st.builds(Complete, step=step, evidence=st.just(["done"]), artifacts=ARTIFACTS),
        st.builds(Observe, name=st.just("repo"), version=st.sampled_from(VERSIONS), dirty=st.just(("a.py",))),
        st.builds(Block, step=step, reason=text, plan_version=version, attempt=attempt),
        st.builds(Fail, step=step, error=text, plan_version=version, attempt=attempt),
        st.builds(
            VerifyCriterion, criterion=st.sampled_from([*CRITERIA, "ghost"]), passed=st.booleans(), evidence=text
        ),
        st.builds(Finish, outcome=st.sampled_from(["complete", "paused", "failed", "cancelled"]), reason=text),
        st.builds(
            Replan,
            reason=st.sampled_from(REASON_CODES),
            why=text,
            plan=plans(),
            causes=st.lists(st.integers(min_value=1, max_value=6), max_size=2).map(tuple),
        ),
        st.builds(
            Extend,
            steps=st.lists(_extra_steps(), max_size=2, unique_by=lambda s: s.id),
            criteria=st.lists(
                st.builds(CriterionSpec, st.sampled_from(EXTRA_CRITERIA), st.just("also works")),
                max_size=1,
            ),
            plan_version=version,
        ).filter(lambda e: e.steps or e.criteria),  # an empty extension is a usage error, not a rule's refusal
        st.builds(Heartbeat, step=step, lease_s=st.sampled_from([None, 30.0]), attempt=attempt),
        st.builds(Abandon, step=step, reason=st.just("worker gone"), attempt=attempt),
        st.builds(
            RequestApproval,
            request=st.sampled_from(["r1", "r2"]),
            question=st.just("may this go on?"),
            steps=st.lists(step, min_size=1, max_size=2, unique=True),
        ),
        st.builds(Decide, request=st.sampled_from(["r1", "r2", "ghost"]), granted=st.booleans()),
    )


def _extra_steps() -> st.SearchStrategy[StepSpec]:
    """A step an extension adds: maybe depending on a plan's first step, maybe with a priority (format v2)."""
    return st.builds(
        StepSpec,
        id=st.sampled_from(EXTRA_STEP_IDS),
        title=st.just("more work"),
        depends_on=st.sampled_from([(), ("a",), ("ghost",)]),
        completion_evidence=st.just("evidence of more"),
        terms=st.sampled_from([None, StepTerms(priority=1)]),
    )


class Simulation(NamedTuple):
    """A log produced by deciding commands in order: its lines, records, and the state after each record."""

    lines: list[bytes]
    records: list[Record]
    states: list[PlanState]
    refused: int


def simulate(plan: PlanSpec, cmds: list[Command], run: str = "r") -> Simulation:
    """Decide ``cmds`` against the evolving state and encode every accepted event through the real codec."""
    lines: list[bytes] = []
    records: list[Record] = []
    states: list[PlanState] = []
    state = initial()
    prev = GENESIS_PREV
    refused = 0

    def append(data: Any, plan_version: int, actor: str = "agent") -> None:
        nonlocal prev, state
        seq = len(records)
        line, prev = encode(
            seq=seq,
            ts=f"2026-01-01T00:00:{seq:02d}.000000Z",
            run=run,
            plan_version=plan_version,
            actor=actor,
            data=data,
            prev=prev,
        )
        record = decode(line[:-1], line_no=seq + 1)
        lines.append(line)
        records.append(record)
        state = evolve(state, record)
        states.append(state)

    append(LogOpened(format="plantrail/1", run=run, nonce="0" * 32, fsync="none", created_by="tests"), 0, "runtime")
    for command in [Create(plan=plan), *cmds]:
        try:
            events = decide(state, command)
        except PlantrailError:
            refused += 1
            continue
        for event in events:
            append(event.data, event.plan_version, event.actor)
    return Simulation(lines, records, states, refused)


# --------------------------------------------------------------------------- any event of any type

anything = st.text()  # any Unicode text hypothesis can make (it excludes lone surrogates)
ident = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,20}", fullmatch=True)
counts = st.integers(min_value=0, max_value=2**53)
hex64 = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)

json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
json_value = st.recursive(
    json_leaf | anything,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ident, inner, max_size=3),
    max_leaves=6,
)
#: Format v2 evidence records: every field optional, most of them absent.
REPORTS = st.none() | st.builds(
    Report,
    command=st.none() | anything,
    exit_code=st.none() | st.integers(-1, 255),
    started=st.booleans(),
    truncated=st.booleans(),
    changed_paths=st.lists(anything, max_size=2).map(tuple),
    observations=st.lists(
        st.builds(
            Observation,
            check=ident,
            exit_code=st.none() | st.integers(0, 255),
            value=json_value,
            decision=st.sampled_from([None, "approved", "rejected"]),
            started=st.booleans(),
            truncated=st.booleans(),
        ),
        max_size=2,
    ).map(tuple),
    tools=st.lists(ident, max_size=2).map(tuple),
    usage=st.none() | st.builds(Usage, turns=counts, tool_calls=counts, tokens=counts, cost_usd=st.floats(0, 10)),
    duration_s=st.none() | st.floats(0, 100),
    meta=st.dictionaries(ident, json_value, max_size=2),
)

EVENTS = st.one_of(
    st.builds(PlanCreated, plan=plans(checks=True)),
    st.builds(StepStarted, step=ident, attempt=counts),
    st.builds(
        StepCompleted,
        step=ident,
        attempt=counts,
        evidence=st.lists(anything, max_size=3).map(tuple),
        report=REPORTS,
        ambiguous=st.booleans(),
    ),
    st.builds(StepBlocked, step=ident, attempt=counts, reason=anything, report=REPORTS, ambiguous=st.booleans()),
    st.builds(StepFailed, step=ident, attempt=counts, error=anything, report=REPORTS, ambiguous=st.booleans()),
    st.builds(
        CriterionVerified,
        criterion=ident,
        verdict=st.sampled_from(["passed", "failed"]),
        evidence=anything,
        report=REPORTS,
    ),
    st.builds(RunFinished, outcome=st.sampled_from(["complete", "paused", "failed", "cancelled"]), reason=anything),
    st.builds(
        PlanReplanned,
        new_version=counts,
        reason=st.sampled_from(REASON_CODES),
        why=anything,
        causes=st.lists(counts, max_size=3).map(tuple),
        observations=st.lists(anything, max_size=2).map(tuple),
        plan=plans(),
        patch=st.none()
        | st.builds(
            PlanPatch,
            base_version=counts,
            operations=st.lists(
                st.one_of(
                    st.builds(PatchOp, op=st.just("remove_step"), step_id=ident),
                    st.builds(
                        PatchOp,
                        op=st.just("add_step"),
                        step=st.builds(
                            StepSpec,
                            id=ident,
                            title=anything,
                            depends_on=st.just(()),
                            completion_evidence=anything,
                            terms=st.sampled_from([None, None, StepTerms(priority=1), StepTerms(priority=-2)]),
                        ),
                    ),
                    st.builds(
                        PatchOp, op=st.just("add_criterion"), criterion=st.builds(CriterionSpec, ident, anything)
                    ),
                    st.builds(PatchOp, op=st.just("set_policy"), policy=st.builds(Policy, st.none() | counts)),
                ),
                max_size=3,
            ).map(tuple),
        ),
    ),
    st.builds(
        LogOpened,
        format=st.sampled_from(["plantrail/1", "plantrail/2"]),
        run=ident,
        nonce=hex64,
        fsync=st.sampled_from(["always", "batch", "none"]),
        created_by=anything,
    ),
    st.builds(
        LogRepaired, truncated_at=counts, bytes=counts, sha256=hex64, kind=st.just("torn_tail"), quarantine=anything
    ),
    st.builds(LogCheckpoint, covers_seq=counts, head=hex64, algorithm=st.just("hmac-sha256"), key_id=ident, mac=hex64),
    st.builds(
        LogSigned,
        covers_seq=counts,
        head=hex64,
        root=hex64,
        signer=ident,
        key_id=st.text("0123456789abcdef", min_size=8, max_size=8),
        signature=st.binary(min_size=64, max_size=64).map(lambda b: base64.b64encode(b).decode()),
    ),
    st.builds(LogBatch, part=st.sampled_from(["begin", "end"])),
    st.builds(StepHeartbeat, step=ident, attempt=counts, lease_s=st.floats(min_value=0.5, max_value=86_400.0)),
    st.builds(StepAbandoned, step=ident, attempt=counts, reason=anything),
    st.builds(StepAdopted, step=ident, attempt=counts, orphan_seq=counts),
    st.builds(ObservationRecorded, key=ident, version=anything, dirty=st.lists(anything, max_size=2).map(tuple)),
    st.builds(
        PlanExtended,
        steps=st.lists(_extra_steps(), max_size=2).map(tuple),
        criteria=st.lists(st.builds(CriterionSpec, ident, anything), max_size=2).map(tuple),
        observations=st.lists(anything, max_size=2).map(tuple),
    ),
    st.builds(
        ApprovalRequested,
        request=ident,
        question=anything,
        steps=st.lists(ident, max_size=2).map(tuple),
        writes=st.lists(st.sampled_from(["src/**", "docs/*.md"]), max_size=2).map(tuple),
        tools=st.lists(ident, max_size=2).map(tuple),
    ),
    st.builds(ApprovalGranted, request=ident, by=anything, why=anything),
    st.builds(ApprovalDenied, request=ident, by=anything, why=anything),
    st.builds(EffectRequested, step=ident, attempt=counts, key=ident, target=anything, before=anything),
    st.builds(EffectCommitted, step=ident, attempt=counts, key=ident, result=anything),
    st.builds(RunForked, parent=ident, seq=counts, head=hex64, state_hash=hex64, reason=anything, state=anything),
)
SOURCES = st.none() | st.builds(
    Source,
    file=anything,
    line=st.none() | counts,
    id=st.none() | anything,
    timestamp=st.none() | anything,
    tool=st.none() | anything,
    inferred=st.booleans(),
    meta=st.just({}) | st.dictionaries(st.text(max_size=6), anything | counts, max_size=2),
)

#: W3C trace contexts a command may carry (format v2): any valid traceparent, with or without a tracestate.
_hex = "0123456789abcdef"
TRACEPARENTS = st.builds(
    "00-{}-{}-{}".format,
    st.text(alphabet=_hex, min_size=32, max_size=32).filter(lambda t: set(t) != {"0"}),
    st.text(alphabet=_hex, min_size=16, max_size=16).filter(lambda t: set(t) != {"0"}),
    st.text(alphabet=_hex, min_size=2, max_size=2),
)
TRACESTATES = st.lists(
    st.tuples(
        st.from_regex(r"[a-z][a-z0-9_*/-]{0,8}", fullmatch=True),
        st.from_regex(r"[!-+\--<>-~]{1,8}", fullmatch=True),
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda member: member[0],
).map(lambda members: ",".join(f"{k}={v}" for k, v in members))
TRACES = st.none() | st.builds(Trace, traceparent=TRACEPARENTS, tracestate=st.none() | TRACESTATES)
