"""The executable plan contract (format v2): typed checks, their validation, and the
judgement of an evidence record against them.

A check (a criterion's acceptance check, or a step's checkpoint) is one of four kinds:

- ``command_exit``: ``command`` and ``expected_exit_code``. An expected failure (a reproduction that must
  exit 1) is a pass; a command that did not start, or whose output was truncated, never is.
- ``state_predicate``: ``predicate`` (an id) and ``expected`` (any JSON value), passed by an observation of
  exactly that value.
- ``human_review``: one bounded ``question``, passed by an ``approved`` decision.
- ``schema``: ``artifact`` (a declared output: the step's own by name, or
  ``STEP/OUTPUT`` on a criterion) and ``schema_id``, passed by an observation of value ``true`` (the runtime
  validated the artifact against the schema).

A check passes only on a reported observation that satisfies it: never vacuously (no observation, no pass).
Pure: :mod:`ledger.vocabulary.plan` calls :func:`validate_contract` from ``validate_plan``, :mod:`ledger.rules.decide`
calls
:func:`unmet`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

import orjson

from plantrail.ledger.vocabulary.artifacts import InputRef, OutputSpec
from plantrail.ledger.vocabulary.durations import MAX_SECONDS, is_seconds
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.evidence import Observation, Report
from plantrail.ledger.vocabulary.scope import StepScope

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec

__all__ = [
    "CHECK_KINDS",
    "DEFAULT_SOFT_THRESHOLD",
    "NO_TERMS",
    "RUN_POLICY_FIELDS",
    "STEP_BUDGET_FIELDS",
    "CheckKind",
    "CheckSpec",
    "StepTerms",
    "parse_checks",
    "parse_run_policy",
    "parse_step_budget",
    "parse_ts",
    "unmet",
    "validate_checks",
    "validate_contract",
    "validate_seconds",
]

_STRICT: dict[str, Any] = {"extra": "forbid", "strict": True}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")

CheckKind = Literal["command_exit", "state_predicate", "human_review", "schema"]
CHECK_KINDS: Final[tuple[str, ...]] = ("command_exit", "state_predicate", "human_review", "schema")


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One typed check of a step or a criterion; only the fields its ``kind`` needs are set (the others are
    left out of the line, :mod:`ledger.vocabulary.versions`)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset(
        {"command", "expected_exit_code", "predicate", "expected", "question", "artifact", "schema_id"}
    )

    id: str
    kind: CheckKind
    command: str | None = None
    expected_exit_code: int | None = None
    predicate: str | None = None
    expected: Any = None
    question: str | None = None
    #: (``schema``) the artifact checked: an output of the step, or ``STEP/OUTPUT`` on a criterion.
    artifact: str | None = None
    #: (``schema``) the schema it must validate against.
    schema_id: str | None = None


@dataclass(frozen=True, slots=True)
class StepTerms:
    """A step's format v2 terms beside its v1 contract: its priority, typed checks and budgets (and its notes,
    the criteria it covers, its scope and ``on_failure``: the id of the step that repairs it when it fails,
    :mod:`ledger.vocabulary.repair_edges`). Kept in one member of the step (``terms``, absent when every term is at its
    default) so that a v1 plan line decodes with one default per step, not five."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset(
        {"priority", "checks", "timeout_s", "max_tool_calls", "max_cost_usd", "notes", "covers", "scope"}
        | {"on_failure"}
        | {"outputs", "inputs"}
    )

    priority: int = 0
    checks: tuple[CheckSpec, ...] = ()
    timeout_s: float | None = None
    max_tool_calls: int | None = None
    max_cost_usd: float | None = None
    #: What the agent wrote about the step beyond its title (a description, its own priority label, the item
    #: it nests under) and what an importer inferred, one fact a line; no part of the step's contract.
    notes: tuple[str, ...] = ()
    #: The task criteria this step's output covers (:mod:`ledger.vocabulary.coverage`): no part of its
    #: contract (a replan that changes only what it covers keeps its work).
    covers: tuple[str, ...] = ()
    #: The step's scope: writes, reads, allowed tools, whether it needs an approval (:mod:`ledger.vocabulary.scope`).
    scope: StepScope | None = None
    #: The artifacts the step produces and consumes (:mod:`ledger.vocabulary.artifacts`): part of its contract.
    outputs: tuple[OutputSpec, ...] = ()
    inputs: tuple[InputRef, ...] = ()
    #: The step's repair step (:mod:`ledger.vocabulary.repair_edges`): after a failure with attempts left the step
    #: waits until that step completes. None: a failure is retried directly (as is naming the step itself).
    on_failure: str | None = None


NO_TERMS: Final = StepTerms()


# --------------------------------------------------------------------------- parsing

_KEYS: Final = frozenset(
    {"id", "kind", "command", "expected_exit_code", "expectedExitCode", "predicate", "predicateId", "expected"}
    | {"question", "artifact", "artifactRef", "schema_id", "schemaId"}
)
_ALIASES: Final[Mapping[str, str]] = {
    "expectedExitCode": "expected_exit_code",
    "predicateId": "predicate",
    "artifactRef": "artifact",
    "schemaId": "schema_id",
}
_NEEDS: Final[Mapping[str, tuple[str, ...]]] = {
    "command_exit": ("command", "expected_exit_code"),
    "state_predicate": ("predicate", "expected"),
    "human_review": ("question",),
    "schema": ("artifact", "schema_id"),
}


def _invalid(where: str, what: str, **fields: Any) -> Exception:
    return error("DRAFT_INVALID", f"{where} {what}", path=where, **fields)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(where, "must be a non-blank string")
    return value.strip()


def _parse_check(raw: Any, where: str) -> CheckSpec:
    if not isinstance(raw, Mapping):
        raise _invalid(where, "must be a JSON object")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise _invalid(where, f"has unknown keys: {', '.join(unknown)}", ids=unknown)
    check_id = raw.get("id")
    if not isinstance(check_id, str) or not _ID.fullmatch(check_id):
        raise error("INVALID_ID", f"{where}.id {check_id!r} is not a valid id", path=f"{where}.id")
    kind = raw.get("kind")
    if kind not in CHECK_KINDS:
        raise _invalid(f"{where}.kind", f"must be one of {', '.join(CHECK_KINDS)}")
    given = {_ALIASES.get(name, name): value for name, value in raw.items() if name not in ("id", "kind")}
    needed = _NEEDS[kind]
    extra = sorted(set(given) - set(needed))
    if extra:
        raise _invalid(where, f"({kind}) does not take {', '.join(extra)}", ids=extra)
    missing = [name for name in needed if name not in given]
    if missing:
        raise _invalid(where, f"({kind}) needs {', '.join(missing)}", ids=missing)
    if kind == "command_exit":
        code = given["expected_exit_code"]
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
            raise _invalid(f"{where}.expected_exit_code", "must be an exit code (0-255)")
        return CheckSpec(check_id, kind, command=_text(given["command"], f"{where}.command"), expected_exit_code=code)
    if kind == "state_predicate":
        predicate = _text(given["predicate"], f"{where}.predicate")
        return CheckSpec(check_id, kind, predicate=predicate, expected=given["expected"])
    if kind == "schema":
        artifact = _text(given["artifact"], f"{where}.artifact")
        return CheckSpec(check_id, kind, artifact=artifact, schema_id=_text(given["schema_id"], f"{where}.schema_id"))
    return CheckSpec(check_id, kind, question=_text(given["question"], f"{where}.question"))


def parse_checks(raw: Any, where: str) -> tuple[CheckSpec, ...]:
    """Parse a step's or criterion's ``checks`` list (absent: none)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _invalid(where, "must be a list of checks")
    return tuple(_parse_check(c, f"{where}[{i}]") for i, c in enumerate(raw))


def validate_checks(checks: Sequence[CheckSpec], owner: str) -> None:
    """Refuse duplicate check ids within one step or criterion (``owner`` names it), and a check without
    what its kind needs (only a hand-made log holds one: drafts go through :func:`parse_checks`)."""
    seen: set[str] = set()
    for check in checks:
        if check.id in seen:
            raise error("DUPLICATE_CHECK_ID", f"{owner} has two checks with id {check.id}", ids=[check.id])
        seen.add(check.id)
        needs = _NEEDS.get(check.kind, ())
        if any(getattr(check, name) is None for name in needs if name != "expected"):
            raise error("DRAFT_INVALID", f"{owner}: check {check.id} ({check.kind}) needs {', '.join(needs)}")


def validate_seconds(steps: Iterable[StepSpec]) -> None:
    """Refuse a step whose ``timeout_s`` is no number of seconds plantrail turns into a time (DRAFT_INVALID;
    :mod:`ledger.vocabulary.durations`). A draft's parsing checks it too; this is for a plan given as a spec.
    The rules call it where steps enter a log (create, replan, extend), not ``validate_plan``: the reducer
    validates every plan it adopts, and a log written before the bound keeps its plan (its lease is clamped)."""
    for step in steps:
        if step.terms is not None and step.terms.timeout_s is not None:
            _seconds(step.terms.timeout_s, f"step {step.id}: timeout_s")


def validate_contract(plan: PlanSpec) -> None:
    """The contract part of ``validate_plan``: every step's and criterion's checks."""
    for step in plan.steps:
        if step.terms is not None and step.terms.checks:
            validate_checks(step.terms.checks, f"step {step.id}")
            _schema_artifacts(step.terms.checks, f"step {step.id}", {o.name for o in step.terms.outputs})
    outputs = {f"{s.id}/{o.name}" for s in plan.steps if s.terms is not None for o in s.terms.outputs}
    for criterion in plan.acceptance_criteria:
        if criterion.checks:
            validate_checks(criterion.checks, f"criterion {criterion.id}")
            _schema_artifacts(criterion.checks, f"criterion {criterion.id}", outputs)


def _schema_artifacts(checks: Sequence[CheckSpec], owner: str, known: set[str]) -> None:
    """Refuse a ``schema`` check whose artifact is not a declared output (a step's own output by name; on a
    criterion, ``STEP/OUTPUT``): ARTIFACT_UNKNOWN."""
    for check in checks:
        if check.kind == "schema" and check.artifact not in known:
            raise error(
                "ARTIFACT_UNKNOWN",
                f"{owner}: schema check {check.id} names artifact {check.artifact}, which is not a declared output",
                ids=[check.id],
            )


# --------------------------------------------------------------------------- budgets

#: A step's budgets beside ``max_attempts``.
STEP_BUDGET_FIELDS: Final = ("timeout_s", "max_tool_calls", "max_cost_usd")
#: The run policy's fields beside ``max_in_progress``.
RUN_POLICY_FIELDS: Final = (
    "max_turns",
    "max_tool_calls",
    "max_cost_usd",
    "deadline",
    "soft_threshold",
    "max_repeated_failures",
    "allowed_partial",
)
#: The share of a budget at which status starts giving advice (never an outcome).
DEFAULT_SOFT_THRESHOLD: Final = 0.8


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**53:
        raise _invalid(where, "must be a whole number >= 1")
    return value


def _amount(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e15:
        raise _invalid(where, "must be a number > 0")
    return float(value)


def _seconds(value: Any, where: str) -> float:
    """A number of seconds that becomes a time (:mod:`ledger.vocabulary.durations`): DRAFT_INVALID unless
    0 < value <= MAX_SECONDS."""
    if not is_seconds(value):
        raise _invalid(where, f"must be a number of seconds > 0 and at most {MAX_SECONDS:,} (about 31 years)")
    return float(value)


def _timestamp(value: Any, where: str) -> str:
    if not isinstance(value, str) or parse_ts(value) is None:
        raise _invalid(where, "must be a UTC timestamp such as 2026-12-01T18:00:00Z")
    return value


def parse_ts(value: str) -> datetime | None:
    """A log timestamp (or a deadline) as an aware datetime; None when it is not one."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def parse_step_budget(obj: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A step draft's ``timeout_s``, ``max_tool_calls`` and ``max_cost_usd`` (each optional)."""
    budget: dict[str, Any] = {}
    if obj.get("timeout_s") is not None:
        budget["timeout_s"] = _seconds(obj["timeout_s"], f"{where}.timeout_s")
    if obj.get("max_tool_calls") is not None:
        budget["max_tool_calls"] = _count(obj["max_tool_calls"], f"{where}.max_tool_calls")
    if obj.get("max_cost_usd") is not None:
        budget["max_cost_usd"] = _amount(obj["max_cost_usd"], f"{where}.max_cost_usd")
    return budget


def parse_run_policy(obj: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A policy draft's budgets and stop settings (each optional)."""
    policy: dict[str, Any] = {}
    for name in ("max_turns", "max_tool_calls", "max_repeated_failures"):
        if obj.get(name) is not None:
            policy[name] = _count(obj[name], f"{where}.{name}")
    if obj.get("max_cost_usd") is not None:
        policy["max_cost_usd"] = _amount(obj["max_cost_usd"], f"{where}.max_cost_usd")
    if obj.get("deadline") is not None:
        policy["deadline"] = _timestamp(obj["deadline"], f"{where}.deadline")
    if obj.get("soft_threshold") is not None:
        threshold = obj["soft_threshold"]
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
            raise _invalid(f"{where}.soft_threshold", "must be a share of the budget (0 < x <= 1)")
        policy["soft_threshold"] = float(threshold)
    if obj.get("allowed_partial") is not None:
        if not isinstance(obj["allowed_partial"], bool):
            raise _invalid(f"{where}.allowed_partial", "must be true or false")
        policy["allowed_partial"] = obj["allowed_partial"]
    return policy


# --------------------------------------------------------------------------- judging


def _json(value: Any) -> bytes:
    """A JSON value's canonical bytes: 1, 1.0 and true are three different observations."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _why_not(check: CheckSpec, seen: Observation | None) -> str | None:
    """Why ``seen`` does not satisfy ``check`` (None: it does)."""
    if seen is None:
        return "no observation reported"
    if not seen.started:
        return "the check did not start"
    if seen.truncated:
        return "its output was truncated"
    if check.kind == "command_exit":
        if seen.exit_code is None:
            return "no exit code reported"
        if seen.exit_code != check.expected_exit_code:
            return f"exit code {seen.exit_code}, expected {check.expected_exit_code}"
        return None
    if check.kind == "state_predicate":
        if _json(seen.value) != _json(check.expected):
            return f"observed {_json(seen.value).decode()}, expected {_json(check.expected).decode()}"
        return None
    if check.kind == "schema":
        if seen.value is not True:
            return f"{check.artifact} was not reported valid against {check.schema_id} (value true)"
        return None
    if seen.decision != "approved":
        return f"the review was {seen.decision or 'not decided'}"
    return None


def unmet(checks: Sequence[CheckSpec], report: Report | None) -> list[tuple[str, str]]:
    """Each check the report's observations do not satisfy, with why; the last observation of a check counts.

    A report whose output was truncated, or whose command did not start, satisfies nothing.
    """
    observed = {} if report is None else {o.check: o for o in report.observations}
    spoilt = None
    if report is not None and report.truncated:
        spoilt = "the report's output was truncated"
    if report is not None and not report.started:
        spoilt = "the reported command did not start"
    result = []
    for check in checks:
        why = spoilt or _why_not(check, observed.get(check.id))
        if why is not None:
            result.append((check.id, why))
    return result
