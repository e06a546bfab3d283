"""The draft writer (ledger/draft_writer.py): parsing what it writes gives the step, or the whole plan, back."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.importers import import_transcript
from plantrail.ledger.vocabulary.artifacts import (
    ArtifactRef,
    InitialInput,
    InputRef,
    ObservedVersion,
    OutputSpec,
    TaskArtifacts,
)
from plantrail.ledger.vocabulary.contract import CheckSpec, StepTerms
from plantrail.ledger.vocabulary.draft_writer import plan_draft, policy_draft, step_draft
from plantrail.ledger.vocabulary.errors import PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.plan import (
    CriterionSpec,
    PlanSpec,
    Policy,
    StepSpec,
    build_plan,
    parse_draft,
    parse_patch,
)
from plantrail.ledger.vocabulary.scope import StepScope, TaskScope
from tests.logs import read_records
from tests.strategies import CHECKS, plans

REALDATA = Path(os.environ.get("PLANTRAIL_REALDATA", Path(__file__).resolve().parents[3] / "shared" / "realdata"))

IDS = st.sampled_from(["a", "b", "c", "fix-1", "x.y"])
TEXT = st.text(min_size=1, max_size=10).map(str.strip).filter(bool)
LINES = st.text(min_size=1, max_size=10).filter(lambda t: t.strip() != "")  # notes are kept as written
GLOBS = st.lists(st.sampled_from(["src/**", "docs/*.md", "tests/a.py", "**"]), unique=True, max_size=3).map(tuple)
DIGEST = st.sampled_from(["sha256:" + "a" * 64, "md5:" + "b" * 32, "blake3:0123abcd"])
SCHEMA_CHECK = st.builds(
    CheckSpec, id=st.just("s1"), kind=st.just("schema"), artifact=st.just("o"), schema_id=st.just("v1")
)
ALL_CHECKS = st.lists(CHECKS | SCHEMA_CHECK, max_size=3, unique_by=lambda c: c.id).map(tuple)
AMOUNT = st.floats(min_value=0.001, max_value=1e9, allow_nan=False, allow_infinity=False)

STEP_SCOPES = st.builds(
    StepScope,
    writes=st.none() | GLOBS,
    reads=st.none() | GLOBS,
    allowed_tools=st.none() | st.lists(st.sampled_from(["Bash", "Edit", "Read"]), unique=True, max_size=2).map(tuple),
    requires_approval=st.booleans(),
    effects_require_approval=st.booleans(),
).filter(lambda s: s != StepScope())  # a scope of all defaults is no scope: a draft cannot say it

INPUTS = st.lists(
    st.one_of(
        st.builds(InputRef, step=IDS, output=st.sampled_from(["o", "p"])),
        st.builds(InputRef, initial=st.sampled_from(["spec", "data"])),
        st.builds(InputRef, observation=st.sampled_from(["repo", "schema"])),
    ),
    max_size=3,
    unique_by=lambda r: r.key,
).map(tuple)

TERMS = st.builds(
    StepTerms,
    priority=st.integers(-5, 5),
    checks=ALL_CHECKS,
    timeout_s=st.none() | AMOUNT,
    max_tool_calls=st.none() | st.integers(1, 2**53 - 1),
    max_cost_usd=st.none() | AMOUNT,
    notes=st.lists(LINES, max_size=2).map(tuple),
    covers=st.lists(st.sampled_from(["c1", "c2", "c3"]), unique=True, max_size=2).map(tuple),
    scope=st.none() | STEP_SCOPES,
    outputs=st.lists(
        st.builds(OutputSpec, name=st.sampled_from(["o", "p", "log"]), media_type=st.none() | TEXT),
        max_size=2,
        unique_by=lambda o: o.name,
    ).map(tuple),
    inputs=INPUTS,
    on_failure=st.none() | IDS,
)

#: Every step a draft can say: v1 steps (no terms) and steps with any of the format v2 terms.
STEPS = st.builds(
    StepSpec,
    id=IDS,
    title=TEXT,
    depends_on=st.lists(IDS, unique=True, max_size=3).map(tuple),
    completion_evidence=TEXT,
    max_attempts=st.none() | st.integers(1, 10),
    terms=st.none() | TERMS,
)

POLICIES = st.builds(
    Policy,
    max_in_progress=st.none() | st.integers(1, 8),
    max_turns=st.none() | st.integers(1, 100),
    max_tool_calls=st.none() | st.integers(1, 100),
    max_cost_usd=st.none() | AMOUNT,
    deadline=st.none() | st.just("2026-12-01T18:00:00Z"),
    soft_threshold=st.sampled_from([0.8, 0.5, 1.0]),
    max_repeated_failures=st.none() | st.integers(1, 5),
    allowed_partial=st.booleans(),
)


def _parsed_step(draft: dict[str, Any]) -> StepSpec:
    [step] = parse_draft({"steps": [draft]}).steps
    return step


@settings(max_examples=300, deadline=None)
@given(STEPS)
def test_parsing_a_step_draft_gives_the_step_back(spec: StepSpec) -> None:
    """For any step a draft can say, v1 or with every v2 term, parsing ``step_draft`` of it gives it back."""
    assert _parsed_step(step_draft(spec)) == spec


@settings(max_examples=100, deadline=None)
@given(STEPS)
def test_a_patch_built_from_step_drafts_carries_the_steps(spec: StepSpec) -> None:
    """``add_step`` with a step's draft parses to the same step (the patch path of the parser)."""
    patch = parse_patch({"base_version": 1, "operations": [{"op": "add_step", "step": step_draft(spec)}]})
    assert patch.operations[0].step == spec


@settings(max_examples=150, deadline=None)
@given(plans(checks=True))
def test_the_shared_strategies_plans_round_trip(plan: PlanSpec) -> None:
    """Every plan the shared strategies draw (v1 and v2, with checks and lineage) is rebuilt from its draft."""
    assert build_plan(parse_draft(plan_draft(plan))) == plan
    assert [_parsed_step(step_draft(s)) for s in plan.steps] == list(plan.steps)


@st.composite
def task_plans(draw: st.DrawFn) -> PlanSpec:
    """A plan of the shared strategies with every task-level part a draft takes: criteria with typed checks,
    a policy, a task scope, initial inputs, required artifacts and observed versions."""
    plan = draw(plans())
    outputs = [ArtifactRef(s.id, o.name) for s in plan.steps for o in s.outputs]
    criteria = tuple(
        CriterionSpec(c.id, c.description, draw(st.lists(CHECKS, max_size=2, unique_by=lambda k: k.id).map(tuple)))
        for c in plan.acceptance_criteria
    )
    observed = st.builds(
        ObservedVersion,
        key=st.sampled_from(["repo", "schema"]),
        version=TEXT,
        dirty=st.lists(st.sampled_from(["a.py", "b/c.py"]), unique=True).map(lambda d: tuple(sorted(d))),
    )
    artifacts = st.builds(
        TaskArtifacts,
        inputs=st.lists(
            st.builds(
                InitialInput, name=st.sampled_from(["spec", "data"]), digest=st.none() | DIGEST, uri=st.none() | TEXT
            ),
            max_size=2,
            unique_by=lambda i: i.name,
        ).map(tuple),
        required=st.lists(st.sampled_from(outputs), unique=True, max_size=2).map(tuple) if outputs else st.just(()),
        observed=st.lists(observed, max_size=2, unique_by=lambda o: o.key).map(tuple),
    )
    kept = plan.artifacts if plan.artifacts is not None else None
    scope = st.none() | st.builds(TaskScope, reads=st.none() | GLOBS, writes=st.none() | GLOBS).filter(
        lambda s: s != TaskScope()
    )
    return PlanSpec(
        goal=draw(TEXT),
        acceptance_criteria=criteria,
        steps=plan.steps,
        policy=draw(POLICIES),
        scope=draw(scope),
        artifacts=kept if kept is not None and draw(st.booleans()) else draw(st.none() | artifacts),
    )


@settings(max_examples=150, deadline=None)
@given(task_plans())
def test_a_whole_plan_round_trips_through_its_draft(plan: PlanSpec) -> None:
    """Goal, criteria with checks, policy, task scope and task artifacts come back from the plan's draft."""
    assert build_plan(parse_draft(plan_draft(plan))) == plan


def test_defaults_are_left_out_and_the_core_keys_kept() -> None:
    """A v1 step at its defaults writes only its four core keys; the default policy writes nothing."""
    spec = StepSpec("a", "Do a", (), "proof")
    assert step_draft(spec) == {"id": "a", "title": "Do a", "depends_on": [], "completion_evidence": "proof"}
    assert policy_draft(Policy()) == {}
    assert step_draft(StepSpec("a", "Do a", (), "proof", None))["max_attempts"] == "unlimited"


def test_a_step_draft_writes_every_term_flat() -> None:
    """Checks, budgets, notes, scope, lineage and on_failure appear as the flat keys a draft takes."""
    spec = StepSpec(
        "fix",
        "Fix it",
        ("a",),
        "tests pass",
        2,
        StepTerms(
            priority=1,
            checks=(CheckSpec("t", "state_predicate", predicate="ok", expected=None),),
            timeout_s=30.0,
            max_tool_calls=5,
            max_cost_usd=0.5,
            notes=("from the todo list",),
            scope=StepScope(writes=(), allowed_tools=("Bash",), requires_approval=True),
            outputs=(OutputSpec("patch", "text/x-diff"),),
            inputs=(InputRef(step="a", output="o"),),
            on_failure="repair",
        ),
    )
    assert step_draft(spec) == {
        "id": "fix",
        "title": "Fix it",
        "depends_on": ["a"],
        "completion_evidence": "tests pass",
        "max_attempts": 2,
        "priority": 1,
        "checks": [{"id": "t", "kind": "state_predicate", "predicate": "ok", "expected": None}],
        "timeout_s": 30.0,
        "max_tool_calls": 5,
        "max_cost_usd": 0.5,
        "notes": ["from the todo list"],
        "writes": [],
        "allowed_tools": ["Bash"],
        "requires_approval": True,
        "outputs": [{"name": "patch", "media_type": "text/x-diff"}],
        "inputs": [{"step": "a", "output": "o"}],
        "on_failure": "repair",
    }


@pytest.mark.parametrize("notes", [[""], ["  "], "one line", [1]])
def test_a_draft_refuses_notes_that_are_not_lines(notes: Any) -> None:
    """A step's ``notes`` must be a list of non-blank strings: anything else is DRAFT_INVALID naming it."""
    step = {"id": "a", "title": "Do a", "completion_evidence": "proof", "notes": notes}
    with pytest.raises(PlanInvalid) as caught:
        parse_draft({"steps": [step]})
    assert caught.value.code == "DRAFT_INVALID" and "steps[0].notes" in str(caught.value)


@pytest.mark.skipif(not REALDATA.is_dir(), reason=f"no real transcripts at {REALDATA}")
def test_every_plan_imported_from_a_real_transcript_round_trips(tmp_path: Path) -> None:
    """Each plan version imported from the real transcripts (notes, priorities, unlimited attempts) is rebuilt
    from its draft, all but the version's own notes, which a draft does not carry."""
    plans_seen = 0
    for i, transcript in enumerate(sorted(p for p in REALDATA.iterdir() if p.suffix in (".json", ".jsonl"))):
        log = tmp_path / f"{i}.jsonl"
        try:
            import_transcript(transcript, log)
        except PlantrailError:
            continue  # a transcript with nothing to import has no plan (tests/importers/test_import_realdata.py)
        for record in read_records(log):
            plan = getattr(record.data, "plan", None)
            if isinstance(plan, PlanSpec):
                plans_seen += 1
                assert build_plan(parse_draft(plan_draft(plan))) == dataclasses.replace(plan, notes=()), transcript
    assert plans_seen > 0
