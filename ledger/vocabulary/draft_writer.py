"""The inverse of the draft parser (:mod:`ledger.vocabulary.plan`): a step, a criterion, a policy or a whole plan
written
back as the JSON a draft takes, so that a planner can start the next version from what the log holds.

Flat snake_case keys exactly as :func:`~ledger.vocabulary.plan.parse_draft` takes them, every term at its default left
out (a step always keeps ``id``, ``title``, ``depends_on`` and ``completion_evidence``). Parsing what these
write gives the value back: ``_parse_step(step_draft(s)) == s`` and ``build_plan(parse_draft(plan_draft(p)))
== p`` for every step and plan a draft can say (tests/vocabulary/test_draft_writer.py). A plan's ``notes`` (facts about
the version, such as the adapter that imported it) are no part of a draft and are left out.

Pure: :mod:`projections.brief` renders each step's contract with :func:`step_draft` and the active plan with
:func:`plan_draft`.
"""

from __future__ import annotations

from typing import Any

from plantrail.ledger.vocabulary.artifacts import InputRef, OutputSpec, TaskArtifacts
from plantrail.ledger.vocabulary.contract import DEFAULT_SOFT_THRESHOLD, CheckSpec
from plantrail.ledger.vocabulary.plan import DEFAULT_MAX_ATTEMPTS, CriterionSpec, PlanSpec, Policy, StepSpec
from plantrail.ledger.vocabulary.scope import StepScope, TaskScope

__all__ = ["criterion_draft", "plan_draft", "policy_draft", "step_draft"]

_CHECK_FIELDS = ("command", "expected_exit_code", "predicate", "expected", "question", "artifact", "schema_id")


def _check(check: CheckSpec) -> dict[str, Any]:
    """A typed check as a draft writes it: its id, kind and the fields its kind takes (a state predicate's
    ``expected`` even when it is null)."""
    draft: dict[str, Any] = {"id": check.id, "kind": check.kind}
    for name in _CHECK_FIELDS:
        value = getattr(check, name)
        if value is not None or (name == "expected" and check.kind == "state_predicate"):
            draft[name] = value
    return draft


def _output(output: OutputSpec) -> dict[str, Any]:
    return {"name": output.name} | ({} if output.media_type is None else {"media_type": output.media_type})


def _input(ref: InputRef) -> dict[str, Any]:
    """An input in the one shape a draft takes for it: ``{step, output}``, ``{initial}`` or ``{observation}``."""
    if ref.step is not None:
        return {"step": ref.step, "output": ref.output}
    if ref.initial is not None:
        return {"initial": ref.initial}
    return {"observation": ref.observation}


def _step_scope(scope: StepScope) -> dict[str, Any]:
    """A step's scope as the flat keys of its draft (``writes: []`` is a read-only step, so it is written)."""
    draft: dict[str, Any] = {}
    for name in ("writes", "reads", "allowed_tools"):
        globs = getattr(scope, name)
        if globs is not None:
            draft[name] = list(globs)
    if scope.requires_approval:
        draft["requires_approval"] = True
    if scope.effects_require_approval:
        draft["effects_require_approval"] = True
    return draft


def step_draft(spec: StepSpec) -> dict[str, Any]:
    """A step as a draft writes it (what ``add_step`` and ``replace_step`` take), defaults left out."""
    draft: dict[str, Any] = {
        "id": spec.id,
        "title": spec.title,
        "depends_on": list(spec.depends_on),
        "completion_evidence": spec.completion_evidence,
    }
    if spec.max_attempts != DEFAULT_MAX_ATTEMPTS:
        draft["max_attempts"] = "unlimited" if spec.max_attempts is None else spec.max_attempts
    terms = spec.terms
    if terms is None:
        return draft
    if terms.priority:
        draft["priority"] = terms.priority
    if terms.checks:
        draft["checks"] = [_check(c) for c in terms.checks]
    for name in ("timeout_s", "max_tool_calls", "max_cost_usd"):
        if getattr(terms, name) is not None:
            draft[name] = getattr(terms, name)
    if terms.notes:
        draft["notes"] = list(terms.notes)
    if terms.covers:
        draft["covers"] = list(terms.covers)
    if terms.scope is not None:
        draft |= _step_scope(terms.scope)
    if terms.outputs:
        draft["outputs"] = [_output(o) for o in terms.outputs]
    if terms.inputs:
        draft["inputs"] = [_input(i) for i in terms.inputs]
    if terms.on_failure is not None:
        draft["on_failure"] = terms.on_failure
    return draft


def criterion_draft(criterion: CriterionSpec) -> dict[str, Any]:
    """An acceptance criterion as a draft writes it (its typed checks only when it has some)."""
    draft: dict[str, Any] = {"id": criterion.id, "description": criterion.description}
    if criterion.checks:
        draft["checks"] = [_check(c) for c in criterion.checks]
    return draft


def policy_draft(policy: Policy) -> dict[str, Any]:
    """A run policy as a draft writes it (``set_policy`` takes it too), defaults left out: ``{}`` is the
    default policy."""
    draft: dict[str, Any] = {}
    if policy.max_in_progress != 1:
        draft["max_in_progress"] = "unlimited" if policy.max_in_progress is None else policy.max_in_progress
    for name in ("max_turns", "max_tool_calls", "max_cost_usd", "deadline", "max_repeated_failures"):
        if getattr(policy, name) is not None:
            draft[name] = getattr(policy, name)
    if policy.soft_threshold != DEFAULT_SOFT_THRESHOLD:
        draft["soft_threshold"] = policy.soft_threshold
    if policy.allowed_partial:
        draft["allowed_partial"] = True
    return draft


def _task_scope(scope: TaskScope) -> dict[str, Any]:
    return {name: list(globs) for name in ("reads", "writes") if (globs := getattr(scope, name)) is not None}


def _task_artifacts(artifacts: TaskArtifacts) -> dict[str, Any]:
    """The task's initial inputs, required artifacts and observed versions as the draft's top-level keys (an
    empty declaration as ``inputs: []``, which declares it)."""
    draft: dict[str, Any] = {}
    if artifacts.inputs or not (artifacts.required or artifacts.observed):
        draft["inputs"] = [
            {"name": i.name}
            | ({} if i.digest is None else {"digest": i.digest})
            | ({} if i.uri is None else {"uri": i.uri})
            for i in artifacts.inputs
        ]
    if artifacts.required:
        draft["required_artifacts"] = [{"step": r.step, "output": r.output} for r in artifacts.required]
    if artifacts.observed:
        draft["observed"] = [
            {"key": o.key, "version": o.version} | ({"dirty": list(o.dirty)} if o.dirty else {})
            for o in artifacts.observed
        ]
    return draft


def plan_draft(plan: PlanSpec) -> dict[str, Any]:
    """A whole plan version as a draft writes it (what ``create`` and ``replan --plan`` take): goal,
    criteria, steps in draft order, and the policy, task scope and task artifacts when it has them."""
    draft: dict[str, Any] = {
        "goal": plan.goal,
        "acceptance_criteria": [criterion_draft(c) for c in plan.acceptance_criteria],
        "steps": [step_draft(s) for s in plan.steps],
    }
    policy = policy_draft(plan.policy)
    if policy:
        draft["policy"] = policy
    if plan.scope is not None:
        draft["scope"] = _task_scope(plan.scope)
    if plan.artifacts is not None:
        draft |= _task_artifacts(plan.artifacts)
    return draft
