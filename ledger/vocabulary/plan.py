"""Plans: the draft format, validation with stable codes, patches, and the stable topological order.

A draft is JSON: ``goal``, ``acceptance_criteria`` (``id``, ``description``), ``steps`` (``id``, ``title``,
``depends_on``, ``completion_evidence``, ``max_attempts`` = 3, or ``"unlimited"``: no limit, format v2) and
``policy`` (``max_in_progress``: a number or ``"unlimited"``, default 1). The camelCase keys
(``acceptanceCriteria``, ``dependsOn``, ``completionEvidence``, ``maxAttempts``, ``maxInProgress``) are accepted
too. Text is trimmed; ids match ``[A-Za-z0-9][A-Za-z0-9._:-]{0,127}``.

Validation reports every problem it finds, not only the first: the :class:`~ledger.vocabulary.errors.PlanInvalid`
raised is the first problem (its code and message), and its ``errors`` lists them all in draft order. A
draft that does not parse is also checked as a graph, as far as its parsed steps allow (a step that failed
to parse still counts as known to the steps that depend on it).

Everything here is pure and iterative (no recursion), so a 10,000-step draft or a 10,000-long chain is fine.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Final, Literal, TypeVar

from plantrail.ledger.vocabulary.arguments import strict
from plantrail.ledger.vocabulary.artifacts import (
    TASK_ARTIFACT_KEYS,
    InputRef,
    OutputSpec,
    TaskArtifacts,
    dangling_inputs,
    parse_inputs,
    parse_outputs,
    parse_task_artifacts,
)
from plantrail.ledger.vocabulary.contract import (
    DEFAULT_SOFT_THRESHOLD,
    NO_TERMS,
    RUN_POLICY_FIELDS,
    STEP_BUDGET_FIELDS,
    CheckSpec,
    StepTerms,
    parse_checks,
    parse_run_policy,
    parse_step_budget,
    validate_contract,
)
from plantrail.ledger.vocabulary.coverage import reference_problems
from plantrail.ledger.vocabulary.errors import PlanInvalid, PlantrailError, Problems, error
from plantrail.ledger.vocabulary.items import as_items
from plantrail.ledger.vocabulary.repair_edges import partial_repair_problems, repair_problems
from plantrail.ledger.vocabulary.scope import (
    STEP_SCOPE_KEYS,
    StepScope,
    TaskScope,
    parse_step_scope,
    parse_task_scope,
    scope_problems,
)

__all__ = [
    "CRITERION_KEYS",
    "DEFAULT_MAX_ATTEMPTS",
    "DRAFT_KEYS",
    "ID_PATTERN",
    "STEP_KEYS",
    "CriterionSpec",
    "Draft",
    "PatchOp",
    "PlanPatch",
    "PlanSpec",
    "Policy",
    "StepSpec",
    "apply_patch",
    "build_plan",
    "carried_order",
    "check_id",
    "did_you_mean",
    "parse_draft",
    "parse_patch",
    "steps_by_id",
    "topo_order",
    "validate_plan",
]

DEFAULT_MAX_ATTEMPTS = 3
T = TypeVar("T")
_STRICT: dict[str, Any] = {"extra": "forbid", "strict": True}  # how pydantic validates these in the log
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
#: What every id matches (a step's, a criterion's, a run's), as a regular expression anchored at both ends.
ID_PATTERN: Final = f"^{_ID.pattern}$"


@dataclass(frozen=True, slots=True)
class StepSpec:
    """One step of a plan version: its contract plus its attempt budget."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT

    id: str
    title: str
    depends_on: tuple[str, ...]
    completion_evidence: str
    #: How many attempts the step may take; None (format v2) is no limit: a step whose author set none, such as
    #: an agent's todo item (an importer invents no limit).
    max_attempts: int | None = DEFAULT_MAX_ATTEMPTS
    terms: StepTerms | None = None  # format v2: priority, typed checks, budgets, notes (None: all at defaults)

    #: Fields format v2 added (ledger.vocabulary.versions): left out of the bytes at their defaults.
    ADDED: ClassVar[frozenset[str]] = frozenset({"terms"})
    #: Fields whose None only format v2 can say (ledger.vocabulary.versions): a v1 step always had an attempt limit.
    V2_NONE: ClassVar[frozenset[str]] = frozenset({"max_attempts"})

    def __post_init__(self) -> None:
        if type(self.depends_on) is not tuple:  # built in Python: a bare str is one dependency
            object.__setattr__(self, "depends_on", as_items(self.depends_on, str, f"step {self.id} depends_on"))
        if self.terms is not None and self.terms == NO_TERMS:  # all defaults: the v1 step it is
            object.__setattr__(self, "terms", None)

    @property
    def priority(self) -> int:
        """Higher first, then id; 0 without one."""
        return 0 if self.terms is None else self.terms.priority

    @property
    def checks(self) -> tuple[CheckSpec, ...]:
        """The step's typed checks (:mod:`ledger.vocabulary.contract`)."""
        return () if self.terms is None else self.terms.checks

    @property
    def notes(self) -> tuple[str, ...]:
        """What the agent wrote about the step beyond its title, and what an importer inferred (no contract)."""
        return () if self.terms is None else self.terms.notes

    @property
    def covers(self) -> tuple[str, ...]:
        """The task criteria this step covers (:mod:`ledger.vocabulary.coverage`); none without any."""
        return () if self.terms is None else self.terms.covers

    @property
    def timeout_s(self) -> float | None:
        """The attempt's lease, in seconds (None: none)."""
        return None if self.terms is None else self.terms.timeout_s

    @property
    def max_tool_calls(self) -> int | None:
        """The step's tool-call budget (None: none)."""
        return None if self.terms is None else self.terms.max_tool_calls

    @property
    def max_cost_usd(self) -> float | None:
        """The step's cost budget in US dollars (None: none)."""
        return None if self.terms is None else self.terms.max_cost_usd

    @property
    def on_failure(self) -> str | None:
        """The step's repair step (:mod:`ledger.vocabulary.repair_edges`); None: none named."""
        return None if self.terms is None else self.terms.on_failure

    @property
    def scope(self) -> StepScope | None:
        """The step's scope (writes, reads, allowed tools, approval; :mod:`ledger.vocabulary.scope`); None: none
        declared."""
        return None if self.terms is None else self.terms.scope

    @property
    def outputs(self) -> tuple[OutputSpec, ...]:
        """The artifacts the step declares it produces (:mod:`ledger.vocabulary.artifacts`)."""
        return () if self.terms is None else self.terms.outputs

    @property
    def inputs(self) -> tuple[InputRef, ...]:
        """The inputs the step declares it consumes (:mod:`ledger.vocabulary.artifacts`); only such a step can be
        stale."""
        return () if self.terms is None else self.terms.inputs

    def contract(self) -> tuple[str, str, frozenset[str], tuple[CheckSpec, ...]]:
        """What a completed step promised: title, completion evidence, dependencies (as a set) and checks."""
        return (self.title, self.completion_evidence, frozenset(self.depends_on), self.checks)


@dataclass(frozen=True, slots=True)
class CriterionSpec:
    """One acceptance criterion of the goal."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT

    id: str
    description: str
    checks: tuple[CheckSpec, ...] = ()

    #: Fields format v2 added (ledger.vocabulary.versions): left out of the bytes at their defaults.
    ADDED: ClassVar[frozenset[str]] = frozenset({"checks"})


@dataclass(frozen=True, slots=True)
class Policy:
    """Run policy; ``max_in_progress`` None means unlimited. Format v2 adds the run's budgets (turns, tool
    calls, cost, a hard ``deadline``), the soft threshold at which they give advice, how many times the same
    failure may repeat before the stop policy calls the run failed, and whether a partial outcome is allowed
    (:mod:`ledger.vocabulary.contract`)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset(RUN_POLICY_FIELDS)

    max_in_progress: int | None = 1
    max_turns: int | None = None
    max_tool_calls: int | None = None
    max_cost_usd: float | None = None
    deadline: str | None = None
    soft_threshold: float = DEFAULT_SOFT_THRESHOLD
    max_repeated_failures: int | None = None
    allowed_partial: bool = False


@dataclass(frozen=True, slots=True)
class PlanSpec:
    """A whole plan version as recorded in the log (steps in draft order)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT

    goal: str
    acceptance_criteria: tuple[CriterionSpec, ...]
    steps: tuple[StepSpec, ...]
    policy: Policy = Policy()
    #: Facts about the version that are no part of the plan itself, one a line: e.g. the adapter that
    #: imported it and its version, the user's follow-up messages (docs/importers.md).
    notes: tuple[str, ...] = ()
    #: The task's read and write scope (globs; :mod:`ledger.vocabulary.scope`); None: not declared.
    scope: TaskScope | None = None
    #: The task's initial inputs, required artifacts and observed versions (:mod:`ledger.vocabulary.artifacts`).
    artifacts: TaskArtifacts | None = None

    #: Fields format v2 added (ledger.vocabulary.versions): left out of the bytes at their defaults.
    ADDED: ClassVar[frozenset[str]] = frozenset({"notes", "scope", "artifacts"})


@dataclass(frozen=True, slots=True)
class Draft:
    """A parsed draft before defaults are filled in: goal and policy may be absent (a replan keeps them)."""

    goal: str | None
    acceptance_criteria: tuple[CriterionSpec, ...]
    steps: tuple[StepSpec, ...]
    policy: Policy | None
    scope: TaskScope | None = None  # absent: a replan keeps the task scope it had
    artifacts: TaskArtifacts | None = None  # absent: a replan keeps the task's inputs and observed versions


PatchOpName = Literal[
    "add_step", "replace_step", "remove_step", "add_criterion", "replace_criterion", "remove_criterion", "set_policy"
]


@dataclass(frozen=True, slots=True)
class PatchOp:
    """One patch operation; only the fields its ``op`` needs are set."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT

    op: PatchOpName
    step_id: str | None = None
    step: StepSpec | None = None
    criterion_id: str | None = None
    criterion: CriterionSpec | None = None
    policy: Policy | None = None


@dataclass(frozen=True, slots=True)
class PlanPatch:
    """Operations applied to plan version ``base_version`` to give the whole next draft."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT

    base_version: int
    operations: tuple[PatchOp, ...]


# --------------------------------------------------------------------------- problems


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean X?)`` naming the closest of ``candidates`` to a mistyped ``word``, or ``""``."""
    import difflib  # only when an id is unknown

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _all_of(problems: Sequence[PlantrailError]) -> PlantrailError:
    """One error for every problem found: the first, carrying them all in ``errors`` (at most
    :data:`~ledger.vocabulary.errors.MAX_PROBLEMS` of them; the field ``more_problems`` counts the others)."""
    first = problems[0]
    if isinstance(first, PlanInvalid):
        first.errors = tuple(problems)
        more = getattr(problems, "more", 0)
        if more:
            first.fields = {**first.fields, "more_problems": more}
    return first


def _noted(problems: list[PlantrailError], default: T, check: Callable[..., T], *args: Any) -> T:
    """``check(*args)``, or ``default`` after noting the problems it raised."""
    try:
        return check(*args)
    except PlanInvalid as exc:
        problems.extend(exc.errors)
        return default


def _raise_if_any(problems: Sequence[PlantrailError]) -> None:
    if problems:
        raise _all_of(problems)


# --------------------------------------------------------------------------- parsing


def _get(obj: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    return None


def _require_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise error("DRAFT_INVALID", f"{where} must be a JSON object", path=where)
    return value


def _reject_unknown(obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        shown = ", ".join(k + did_you_mean(k, allowed) for k in unknown)
        raise error("DRAFT_INVALID", f"{where} has unknown keys: {shown}", path=where, ids=unknown)


def _text(value: Any, where: str) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise error("DRAFT_INVALID", f"{where} must be a string", path=where)
    text = value.strip()
    if not text:
        raise error("BLANK_FIELD", f"{where} is blank", path=where)
    return text


def check_id(value: Any, where: str) -> str:
    """Return ``value`` if it is a valid id, else raise INVALID_ID naming where it came from."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        shown = repr(value)[:80]
        raise error(
            "INVALID_ID",
            f"{where} {shown} is not a valid id (letters, digits and ._:- only, at most 128, no spaces)",
            path=where,
        )
    return value


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error("DRAFT_INVALID", f"{where} must be a whole number >= 1", path=where)
    return value


_STEP_KEYS = {
    "covers",
    "id",
    "title",
    "depends_on",
    "dependsOn",
    "completion_evidence",
    "completionEvidence",
    "max_attempts",
    "maxAttempts",
    "priority",
    "checks",
    "on_failure",
    "onFailure",
    *STEP_BUDGET_FIELDS,
    *STEP_SCOPE_KEYS,
    "outputs",
    "inputs",
    "notes",
}
#: Every key a step of a draft may have (camelCase spellings included).
STEP_KEYS: Final = frozenset(_STEP_KEYS)
#: Every key a criterion of a draft may have.
CRITERION_KEYS: Final = frozenset({"id", "description", "checks"})


def _step_id(raw: Any) -> str | None:
    """The id of a raw step when it is a valid one (whatever else is wrong with the step), else None."""
    value = raw.get("id") if isinstance(raw, Mapping) else None
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def _dependencies(obj: Mapping[str, Any], where: str, step_id: str | None) -> Sequence[Any]:
    """A raw step's dependencies (none when absent; a bare string is one); DRAFT_INVALID when they are not a
    string or a list of strings."""
    deps = _get(obj, "depends_on", "dependsOn")
    if deps is None:
        return ()
    return as_items(deps, str, f"{where}.depends_on", code="DRAFT_INVALID", path=where, step=step_id)


def _skeleton(raw: Any) -> StepSpec | None:
    """A raw step's place in the graph (its id and dependencies, when both are readable), whatever else is
    wrong with it: what a draft that does not parse can still be judged on as a graph."""
    step_id = _step_id(raw)
    if step_id is None:
        return None
    try:
        deps = _dependencies(raw, "", step_id)
    except PlanInvalid:
        return None
    if not all(isinstance(d, str) and _ID.fullmatch(d) for d in deps):
        return None
    return StepSpec(id=step_id, title="", depends_on=tuple(deps), completion_evidence="")


def _parse_step(raw: Any, where: str) -> StepSpec:
    obj = _require_mapping(raw, where)
    problems: list[PlantrailError] = Problems()
    _noted(problems, None, _reject_unknown, obj, _STEP_KEYS, where)
    step_id = _noted(problems, "", check_id, obj.get("id"), f"{where}.id")
    no_deps: Sequence[Any] = ()
    deps = _noted(problems, no_deps, _dependencies, obj, where, step_id or None)
    title = _noted(problems, "", _text, obj.get("title"), f"{where}.title")
    depends_on = tuple(_noted(problems, "", check_id, d, f"{where}.depends_on") for d in deps)
    evidence = _noted(
        problems, "", _text, _get(obj, "completion_evidence", "completionEvidence"), f"{where}.completion_evidence"
    )
    attempts = _get(obj, "max_attempts", "maxAttempts")
    max_attempts: int | None = (
        DEFAULT_MAX_ATTEMPTS
        if attempts is None
        else None
        if attempts == "unlimited"
        else _noted(problems, DEFAULT_MAX_ATTEMPTS, _positive_int, attempts, f"{where}.max_attempts")
    )
    priority = _noted(problems, 0, _priority, obj.get("priority", 0), f"{where}.priority")
    checks = _noted(problems, _NO_CHECKS, parse_checks, obj.get("checks"), f"{where}.checks")
    no_budget: dict[str, Any] = {}
    budget = _noted(problems, no_budget, parse_step_budget, obj, where)
    no_covers: tuple[str, ...] = ()
    covers = _noted(problems, no_covers, _covers, obj.get("covers"), f"{where}.covers")
    scope = _noted(problems, None, parse_step_scope, obj, where)
    on_failure = _noted(problems, None, _on_failure, _get(obj, "on_failure", "onFailure"), f"{where}.on_failure")
    no_outputs: tuple[OutputSpec, ...] = ()
    outputs = _noted(problems, no_outputs, parse_outputs, obj.get("outputs"), f"{where}.outputs")
    no_inputs: tuple[InputRef, ...] = ()
    inputs = _noted(problems, no_inputs, parse_inputs, obj.get("inputs"), f"{where}.inputs")
    no_notes: tuple[str, ...] = ()
    notes = _noted(problems, no_notes, _notes, obj.get("notes"), f"{where}.notes")
    _raise_if_any(problems)
    return StepSpec(
        id=step_id,
        title=title,
        depends_on=depends_on,
        completion_evidence=evidence,
        max_attempts=max_attempts,
        terms=StepTerms(
            priority=priority,
            checks=checks,
            covers=covers,
            **budget,
            scope=scope,
            outputs=outputs,
            inputs=inputs,
            on_failure=on_failure,
            notes=notes,
        ),
    )


def _notes(value: Any, where: str) -> tuple[str, ...]:
    """A step's ``notes``: lines about the step beyond its title, each kept as written (none when absent)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(line, str) and line.strip() for line in value):
        raise error("DRAFT_INVALID", f"{where} must be a list of non-blank strings", path=where)
    return tuple(value)


def _covers(value: Any, where: str) -> tuple[str, ...]:
    """A step's ``covers``: the ids of the task criteria it covers (a list of ids; none when absent)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise error("DRAFT_INVALID", f"{where} must be a list of criterion ids", path=where)
    return tuple(dict.fromkeys(check_id(item, where) for item in value))


def _on_failure(value: Any, where: str) -> str | None:
    """A step's ``on_failure``: the id of its repair step (none when absent)."""
    return None if value is None else check_id(value, where)


_NO_CHECKS: tuple[CheckSpec, ...] = ()


def _priority(value: Any, where: str) -> int:
    """A step's priority: any whole number (higher first; 0 when absent)."""
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise error("DRAFT_INVALID", f"{where} must be a whole number", path=where)
    return value


def _parse_criterion(raw: Any, where: str) -> CriterionSpec:
    obj = _require_mapping(raw, where)
    problems: list[PlantrailError] = Problems()
    _noted(problems, None, _reject_unknown, obj, CRITERION_KEYS, where)
    criterion_id = _noted(problems, "", check_id, obj.get("id"), f"{where}.id")
    description = _noted(problems, "", _text, obj.get("description"), f"{where}.description")
    checks = _noted(problems, _NO_CHECKS, parse_checks, obj.get("checks"), f"{where}.checks")
    _raise_if_any(problems)
    return CriterionSpec(id=criterion_id, description=description, checks=checks)


def _parse_policy(raw: Any, where: str) -> Policy:
    obj = _require_mapping(raw, where)
    _reject_unknown(obj, {"max_in_progress", "maxInProgress", *RUN_POLICY_FIELDS}, where)
    value = _get(obj, "max_in_progress", "maxInProgress")
    contract = parse_run_policy(obj, where)
    if value is None:
        return Policy(**contract)
    if value == "unlimited":
        return Policy(max_in_progress=None, **contract)
    return Policy(max_in_progress=_positive_int(value, f"{where}.max_in_progress"), **contract)


def _parse_list(raw: Any, where: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise error("DRAFT_INVALID", f"{where} must be a list", path=where)
    return raw


def _parse_all(problems: list[PlantrailError], parse: Callable[[Any, str], T], items: list[Any], name: str) -> list[T]:
    """Every item that parses; the problems of the others are noted (the items after the problems are
    :attr:`~ledger.vocabulary.errors.Problems.full` are not looked at: no more problems would be listed)."""
    parsed: list[T] = []
    for i, item in enumerate(items):
        if isinstance(problems, Problems) and problems.full:
            problems.more += 1
            break
        try:
            parsed.append(parse(item, f"{name}[{i}]"))
        except PlanInvalid as exc:
            problems.extend(exc.errors)
    return parsed


_DRAFT_KEYS = {"goal", "acceptance_criteria", "acceptanceCriteria", "steps", "policy", "scope", *TASK_ARTIFACT_KEYS}
#: Every key a draft may have (camelCase spellings included).
DRAFT_KEYS: Final = frozenset(_DRAFT_KEYS)


@strict
def parse_draft(raw: Any) -> Draft:
    """Parse a draft's JSON value (snake_case or camelCase keys); every problem is reported at once.

    When a part does not parse, the graph of the steps that did is judged too (:func:`validate_plan`'s
    checks), so one run names every problem; a draft that parses is judged when it is built or adopted.
    """
    obj = _require_mapping(raw, "draft")
    problems: list[PlantrailError] = Problems()
    _noted(problems, None, _reject_unknown, obj, _DRAFT_KEYS, "draft")
    raw_criteria: list[Any] = _noted(
        problems, [], _parse_list, _get(obj, "acceptance_criteria", "acceptanceCriteria"), "acceptance_criteria"
    )
    raw_steps: list[Any] = _noted(problems, [], _parse_list, obj.get("steps"), "steps")
    goal = obj.get("goal")
    goal_text = None if goal is None else _noted(problems, "", _text, goal, "goal")
    criteria = _parse_all(problems, _parse_criterion, raw_criteria, "acceptance_criteria")
    steps = _parse_all(problems, _parse_step, raw_steps, "steps")
    policy = obj.get("policy")
    parsed_policy = None if policy is None else _noted(problems, None, _parse_policy, policy, "policy")
    task_scope = _noted(problems, None, parse_task_scope, obj.get("scope"))
    task_artifacts = _noted(problems, None, parse_task_artifacts, obj)
    if problems:
        problems += scope_problems(task_scope, ((s.id, s.scope) for s in steps))
        known = {i for i in map(_step_id, raw_steps) if i is not None}
        graph = [s for s in map(_skeleton, raw_steps) if s is not None]
        problems += _graph_problems(
            criteria, graph, known, criteria_given=bool(raw_criteria), steps_given=bool(raw_steps)
        )
        problems += partial_repair_problems(steps, known)
        raise _all_of(problems)
    return Draft(
        goal=goal_text,
        acceptance_criteria=tuple(criteria),
        steps=tuple(steps),
        policy=parsed_policy,
        scope=task_scope,
        artifacts=task_artifacts,
    )


def build_plan(
    draft: Draft,
    *,
    goal: str | None = None,
    policy: Policy | None = None,
    scope: TaskScope | None = None,
    artifacts: TaskArtifacts | None = None,
    previous: tuple[PlanSpec, tuple[str, ...]] | None = None,
) -> PlanSpec:
    """Fill in a draft's goal, policy and task scope (``goal``/``policy``/``scope`` are what it inherits) and
    validate it (``previous``: the plan it replaces and that plan's order, which :func:`validate_plan` may carry
    over)."""
    plan_goal = draft.goal if draft.goal is not None else goal
    problems: list[PlantrailError] = Problems()
    if plan_goal is None:
        problems.append(error("BLANK_FIELD", "the draft has no goal", path="goal"))
    spec = PlanSpec(
        goal=plan_goal or "",
        acceptance_criteria=draft.acceptance_criteria,
        steps=draft.steps,
        policy=draft.policy or policy or Policy(),
        scope=draft.scope if draft.scope is not None else scope,
        artifacts=draft.artifacts if draft.artifacts is not None else artifacts,
    )
    try:
        validate_plan(spec, previous)
    except PlanInvalid as exc:
        problems.extend(exc.errors)
    _raise_if_any(problems)
    return spec


#: The last two plans :func:`steps_by_id` indexed, each with its index, newest first (one tuple, read and
#: replaced whole: another thread may replace it). A log's records are judged against one version at a time,
#: and a replan reads the version it replaces and the new one.
_BY_ID: list[tuple[tuple[PlanSpec, dict[str, StepSpec]], ...]] = [()]


def steps_by_id(plan: PlanSpec) -> Mapping[str, StepSpec]:
    """The plan's steps by id (its last step of an id, should a plan that never validated repeat one); the
    index of either of the last two plans asked for is the same object (not to be changed)."""
    entries = _BY_ID[0]
    for known, index in entries:
        if known is plan:
            return index
    index = {s.id: s for s in plan.steps}
    _BY_ID[0] = ((plan, index), *entries[:1])
    return index


# --------------------------------------------------------------------------- validation


def _duplicates(ids: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    dups: set[str] = set()
    for i in ids:
        (dups if i in seen else seen).add(i)
    return sorted(dups)


#: The last plan :func:`validate_plan` accepted and the order it gave it. A replan's plan is validated twice
#: on the same object: by the rules (:func:`ledger.rules.decide.check`) and by the fold adopting it; a plan is
#: immutable, so the second answer is the first.
_VALIDATED: list[tuple[PlanSpec, tuple[str, ...]]] = []


def validate_plan(plan: PlanSpec, previous: tuple[PlanSpec, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """Check a plan's structure and graph; return its stable topological order, or raise every problem found
    (a :class:`~ledger.vocabulary.errors.PlanInvalid` with a draft code, listing them all in ``errors``).

    ``previous`` (a valid plan and the order this gave it) lets a replan that only adds or removes steps
    reuse that order instead of sorting again (:func:`carried_order`, the same order). The plan validated
    last is not judged again (the same object: its order is remembered).
    """
    entry = _VALIDATED[0] if _VALIDATED else None  # read once: another thread may replace it
    if entry is not None and entry[0] is plan:
        return entry[1]
    order = _validated_order(plan, previous)
    _VALIDATED[:] = [(plan, order)]
    return order


def validated_as(plan: Any, same: PlanSpec) -> None:
    """Take ``plan`` as validated with the order :func:`validate_plan` gave ``same`` when ``same`` is the plan
    validated last and ``plan`` equals it: the writer's record of a replan holds the plan decoded from the line
    it wrote (what a reader decodes), equal to the one the rules validated, and the fold adopting it would
    otherwise validate it again."""
    entry = _VALIDATED[0] if _VALIDATED else None  # read once: another thread may replace it
    if entry is not None and entry[0] is same and isinstance(plan, PlanSpec) and plan is not same and plan == same:
        _VALIDATED[:] = [(plan, entry[1])]


def _validated_order(plan: PlanSpec, previous: tuple[PlanSpec, tuple[str, ...]] | None) -> tuple[str, ...]:
    """:func:`validate_plan` without its memory."""
    problems = _graph_problems(plan.acceptance_criteria, plan.steps) + reference_problems(plan)
    problems += repair_problems(plan.steps)
    if plan.artifacts is not None or any(s.terms is not None and s.terms.inputs for s in plan.steps):
        problems += dangling_inputs(plan)
    if plan.scope is not None:
        problems += scope_problems(plan.scope, ((s.id, s.scope) for s in plan.steps))
    _raise_if_any(problems)
    validate_contract(plan)
    order = None if previous is None else carried_order(previous[0].steps, previous[1], plan.steps)
    return topo_order(plan.steps) if order is None else order


def _graph_problems(
    criteria: Sequence[CriterionSpec],
    steps: Sequence[StepSpec],
    known: Collection[str] | None = None,
    *,
    criteria_given: bool | None = None,
    steps_given: bool | None = None,
) -> list[PlantrailError]:
    """Every structural problem of a plan's criteria and steps, in a fixed order (a cycle is looked for only
    once nothing else is wrong, or among the steps whose dependencies are sound).

    ``known`` is every step id the draft holds, parsed or not (default: the ids of ``steps``), so a step that
    failed to parse is not reported again as an unknown dependency; ``criteria_given`` and ``steps_given``
    say whether the draft listed any (default: whether ``criteria`` and ``steps`` hold any).
    """
    problems: list[PlantrailError] = Problems()
    if not (bool(criteria) if criteria_given is None else criteria_given):
        problems.append(error("NO_ACCEPTANCE_CRITERIA", "the plan needs at least one acceptance criterion"))
    if not (bool(steps) if steps_given is None else steps_given):
        problems.append(error("EMPTY_PLAN", "the plan needs at least one step"))
    if len({c.id for c in criteria}) != len(criteria):
        dup_criteria = _duplicates(c.id for c in criteria)
        problems.append(
            error("DUPLICATE_CRITERION_ID", f"duplicate criterion ids: {', '.join(dup_criteria)}", ids=dup_criteria)
        )
    ids = {s.id for s in steps}
    if len(ids) != len(steps):
        dup_steps = _duplicates(s.id for s in steps)
        problems.append(error("DUPLICATE_STEP_ID", f"duplicate step ids: {', '.join(dup_steps)}", ids=dup_steps))
    all_ids = ids if known is None else set(known) | ids
    sound = len(ids) == len(steps)  # a cycle check needs unique ids and known dependencies
    for step in steps:
        if not all_ids.issuperset(step.depends_on):
            missing = sorted(set(step.depends_on) - all_ids)
            hints = "".join(did_you_mean(m, all_ids) for m in missing[:1])
            problems.append(
                error(
                    "UNKNOWN_DEPENDENCY",
                    f"step {step.id} depends on unknown steps: {', '.join(missing)}{hints}",
                    step=step.id,
                    ids=missing,
                )
            )
            sound = False
        if step.id in step.depends_on:
            problems.append(error("SELF_DEPENDENCY", f"step {step.id} depends on itself", step=step.id, ids=[step.id]))
            sound = False
    if problems or not sound or known is not None:
        problems += _cycle_problems(steps, ids)
    return problems


def _cycle_problems(steps: Sequence[StepSpec], ids: set[str]) -> list[PlantrailError]:
    """A dependency cycle among ``steps`` once duplicate ids, unknown and self dependencies are left out."""
    seen: set[str] = set()
    graph: list[StepSpec] = []
    for s in steps:
        if s.id in seen:
            continue
        seen.add(s.id)
        deps = tuple(d for d in s.depends_on if d in ids and d != s.id)
        graph.append(s if deps == s.depends_on else replace(s, depends_on=deps))
    try:
        topo_order(graph)
    except PlanInvalid as exc:
        return list(exc.errors)
    return []


def topo_order(steps: Sequence[StepSpec]) -> tuple[str, ...]:
    """Kahn's algorithm, always taking the ready step of highest priority, then smallest id:
    the one stable order of every listing. Without priorities (all 0) it takes the smallest ready id."""
    if any(s.terms is not None and s.terms.priority for s in steps):
        return _prioritised_order(steps)
    indegree: dict[str, int] = {}
    dependents: dict[str, list[str]] = {s.id: [] for s in steps}
    for s in steps:
        deps = set(s.depends_on)
        indegree[s.id] = len(deps)
        for dep in deps:
            dependents[dep].append(s.id)
    ready = [i for i, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        current = heapq.heappop(ready)
        order.append(current)
        for child in dependents[current]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, child)
    if len(order) != len(steps):
        cycle = _find_cycle({s.id: s.depends_on for s in steps if indegree[s.id] > 0})
        shown = [*cycle, cycle[0]] if len(cycle) <= 12 else [*cycle[:10], f"... {len(cycle) - 10} more", cycle[0]]
        raise error("DEPENDENCY_CYCLE", f"dependency cycle: {' -> '.join(shown)}", ids=cycle)
    return tuple(order)


def _prioritised_order(steps: Sequence[StepSpec]) -> tuple[str, ...]:
    """:func:`topo_order` for a plan with priorities: the ready heap is keyed by (-priority, id)."""
    priority = {s.id: s.priority for s in steps}
    indegree: dict[str, int] = {}
    dependents: dict[str, list[str]] = {s.id: [] for s in steps}
    for s in steps:
        deps = set(s.depends_on)
        indegree[s.id] = len(deps)
        for dep in deps:
            dependents[dep].append(s.id)
    ready = [(-priority[i], i) for i, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, current = heapq.heappop(ready)
        order.append(current)
        for child in dependents[current]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, (-priority[child], child))
    if len(order) != len(steps):
        return topo_order([replace(s, terms=None) for s in steps])  # raises DEPENDENCY_CYCLE, naming the cycle
    return tuple(order)


def carried_order(
    previous: Sequence[StepSpec], previous_order: Sequence[str], steps: Sequence[StepSpec]
) -> tuple[str, ...] | None:
    """``topo_order(steps)`` worked out from ``previous_order`` (``topo_order(previous)``); None when a step
    both lists hold has other dependencies, or the added steps form a cycle (then sort from scratch).

    ``steps`` must have unique ids and known dependencies. A step both lists hold cannot depend on an added
    step (its id did not exist) nor on a removed one (its id is unknown now), so Kahn's smallest-ready-first
    choices among those steps are the same as before: they keep their previous order. Each added step is
    taken as Kahn would take it: once its dependencies are placed, before the next kept step with a larger id.
    With priorities in either list it returns None (sort from scratch: a changed priority reorders kept steps).
    """
    before: dict[str, tuple[str, ...]] = {}
    for s in previous:
        if s.terms is not None:
            return None  # terms may hold priorities: sort from scratch
        before[s.id] = s.depends_on
    added: list[StepSpec] = []
    for s in steps:
        if s.terms is not None:
            return None
        deps = before.get(s.id)
        if deps is None:
            added.append(s)
        elif deps != s.depends_on:
            return None
    if len(steps) - len(added) == len(previous):  # every previous step is kept (ids are unique)
        kept: Sequence[str] = previous_order
    else:
        ids = {s.id for s in steps}
        kept = [i for i in previous_order if i in ids]
    if not added:
        return tuple(kept)
    return _merged(kept, added)


def _merged(kept: Sequence[str], added: list[StepSpec]) -> tuple[str, ...] | None:
    """Kahn's order of the kept steps (in their order) and the added ones, None when the added form a cycle.

    Kept steps come in runs, up to the first one an added step waits for (which is taken on its own) or one
    larger than the smallest ready added step: a run is a slice, not a step at a time."""
    waiting = {s.id: len(set(s.depends_on)) for s in added}  # dependencies not yet placed
    dependents: dict[str, list[str]] = {}
    for s in added:
        for dep in set(s.depends_on):
            dependents.setdefault(dep, []).append(s.id)
    ready = [i for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order: list[str] = []
    k, n = 0, len(kept)
    while ready or k < n:
        if ready and (k == n or ready[0] < kept[k]):
            current = heapq.heappop(ready)
            order.append(current)
        else:  # kept[k] comes next: take it and the kept steps after it that nothing ready precedes
            j = k + 1
            if kept[k] not in dependents:  # (the ready set does not change within the run)
                smallest = ready[0] if ready else None
                while j < n and (smallest is None or kept[j] < smallest) and kept[j] not in dependents:
                    j += 1
            order.extend(kept[k:j])
            current, k = kept[j - 1], j
        for child in dependents.get(current, ()):
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, child)
    return tuple(order) if len(order) == len(kept) + len(added) else None


def _find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """One cycle among steps that Kahn could not order, rotated to start at its smallest id."""
    # Every remaining node has a remaining dependency, so walking dependencies must revisit a node.
    node = min(graph)
    position: dict[str, int] = {}
    path: list[str] = []
    while node not in position:
        position[node] = len(path)
        path.append(node)
        node = min(d for d in graph[node] if d in graph)
    cycle = path[position[node] :]
    cycle.reverse()  # list it in execution order: each step depends on the one before it
    start = cycle.index(min(cycle))
    return cycle[start:] + cycle[:start]


# --------------------------------------------------------------------------- patches

_OP_NAMES = {
    "add_step",
    "replace_step",
    "remove_step",
    "add_criterion",
    "replace_criterion",
    "remove_criterion",
    "set_policy",
}
_OP_KEYS = {"op", "step_id", "stepId", "step", "criterion_id", "criterionId", "criterion", "policy"}


def _parse_op(raw: Any, where: str) -> PatchOp:
    obj = _require_mapping(raw, where)
    op = obj.get("op")
    if op not in _OP_NAMES:
        hint = did_you_mean(op, _OP_NAMES) if isinstance(op, str) else ""
        raise error("PATCH_INVALID", f"{where}.op must be one of {', '.join(sorted(_OP_NAMES))}{hint}", path=where)
    _reject_unknown(obj, _OP_KEYS, where)
    step_id = _get(obj, "step_id", "stepId")
    criterion_id = _get(obj, "criterion_id", "criterionId")
    needs_step = op in ("add_step", "replace_step")
    needs_criterion = op in ("add_criterion", "replace_criterion")
    if op in ("replace_step", "remove_step"):
        step_id = check_id(step_id, f"{where}.step_id")
    if op in ("replace_criterion", "remove_criterion"):
        criterion_id = check_id(criterion_id, f"{where}.criterion_id")
    if op == "set_policy" and obj.get("policy") is None:
        raise error("PATCH_INVALID", f"{where}: set_policy needs a policy", path=where)
    return PatchOp(
        op=op,
        step_id=step_id,
        step=_parse_step(obj.get("step"), f"{where}.step") if needs_step else None,
        criterion_id=criterion_id,
        criterion=_parse_criterion(obj.get("criterion"), f"{where}.criterion") if needs_criterion else None,
        policy=_parse_policy(obj["policy"], f"{where}.policy") if op == "set_policy" else None,
    )


@strict
def parse_patch(raw: Any) -> PlanPatch:
    """Parse a patch's JSON value: ``{"base_version": N, "operations": [...]}``; every problem at once."""
    obj = _require_mapping(raw, "patch")
    problems: list[PlantrailError] = Problems()
    _noted(problems, None, _reject_unknown, obj, {"base_version", "baseVersion", "operations"}, "patch")
    base = _get(obj, "base_version", "baseVersion")
    if isinstance(base, bool) or not isinstance(base, int) or base < 1:
        problems.append(
            error("PATCH_INVALID", "patch.base_version must be a plan version (>= 1)", path="patch.base_version")
        )
    ops = obj.get("operations")
    if not isinstance(ops, list) or not ops:
        problems.append(error("PATCH_INVALID", "patch.operations must be a non-empty list", path="patch.operations"))
        ops = []
    operations = _parse_all(problems, _parse_op, ops, "operations")
    _raise_if_any(problems)
    return PlanPatch(base_version=base, operations=tuple(operations))


def _index_of(items: Sequence[Any], item_id: str, what: str, where: str) -> int:
    for i, item in enumerate(items):
        if item.id == item_id:
            return i
    hint = did_you_mean(item_id, (item.id for item in items))
    raise error("PATCH_INVALID", f"{where}: no {what} {item_id} in the base version{hint}", ids=[item_id])


def _apply_op(plan: PlanSpec, op: PatchOp, where: str) -> PlanSpec:
    steps = list(plan.steps)
    criteria = list(plan.acceptance_criteria)
    if op.op == "add_step" and op.step is not None:
        if any(s.id == op.step.id for s in steps):
            raise error("PATCH_INVALID", f"{where}: step {op.step.id} already exists", ids=[op.step.id])
        steps.append(op.step)
    elif op.op == "replace_step" and op.step is not None and op.step_id is not None:
        steps[_index_of(steps, op.step_id, "step", where)] = op.step
        if op.step.id != op.step_id:  # a renamed step keeps its dependents pointing at it
            steps = [
                replace(s, depends_on=tuple(op.step.id if d == op.step_id else d for d in s.depends_on)) for s in steps
            ]
    elif op.op == "remove_step" and op.step_id is not None:
        del steps[_index_of(steps, op.step_id, "step", where)]
    elif op.op == "add_criterion" and op.criterion is not None:
        if any(c.id == op.criterion.id for c in criteria):
            raise error("PATCH_INVALID", f"{where}: criterion {op.criterion.id} already exists", ids=[op.criterion.id])
        criteria.append(op.criterion)
    elif op.op == "replace_criterion" and op.criterion is not None and op.criterion_id is not None:
        criteria[_index_of(criteria, op.criterion_id, "criterion", where)] = op.criterion
    elif op.op == "remove_criterion" and op.criterion_id is not None:
        del criteria[_index_of(criteria, op.criterion_id, "criterion", where)]
    elif op.op == "set_policy" and op.policy is not None:
        return replace(plan, policy=op.policy)
    return replace(plan, steps=tuple(steps), acceptance_criteria=tuple(criteria))


def apply_patch(base: PlanSpec, patch: PlanPatch) -> PlanSpec:
    """Apply every operation in order to ``base`` and validate the whole result; every operation that cannot
    apply is reported (the others still apply, in order), and the result is validated once all apply."""
    plan = base
    problems: list[PlantrailError] = Problems()
    for i, op in enumerate(patch.operations):
        plan = _noted(problems, plan, _apply_op, plan, op, f"operations[{i}] ({op.op})")
    _raise_if_any(problems)
    validate_plan(plan)
    return plan
