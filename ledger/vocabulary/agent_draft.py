"""The plan an agent writes through the plan server: the draft's agent-facing fields, typed, and every other
term of the contract in one ``terms`` object that is merged into the draft as given.

An agent gives each step its ``id``, ``title``, ``completion_evidence`` (required: the draft refuses a step
without them), and optionally ``depends_on``, ``max_attempts`` (a whole number >= 1, or ``"unlimited"``) and
``covers``; each criterion its ``id`` and ``description``. :data:`AGENT_STEP` and :data:`AGENT_CRITERION` say
so as JSON Schema, beside the parser that judges the draft (:mod:`plantrail.ledger.vocabulary.plan`).

The other terms (a step's priority, typed checks, budgets, scope, outputs, inputs, repair step and notes; a
criterion's checks; the run policy's budgets; the task's scope and artifacts) go in ``terms``, shaped as
:data:`TERMS_SHAPE` says: ``{"steps": {STEP_ID: {...}}, "criteria": {CRITERION_ID: {...}}, "policy": {...},
"scope": {...}, "inputs": [...], "required_artifacts": [...], "observed": {...}}``. :func:`with_terms` puts
them where the draft has them; the draft's own validation judges the result, so a wrong term is refused with
the code the draft gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.plan import DEFAULT_MAX_ATTEMPTS, ID_PATTERN

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec

__all__ = [
    "AGENT_CRITERION",
    "AGENT_STEP",
    "TERMS_KEYS",
    "TERMS_SHAPE",
    "carried_terms",
    "with_terms",
]

_ID: Final = {"type": "string", "pattern": ID_PATTERN}
_TEXT: Final = {"type": "string", "minLength": 1}
_IDS: Final = {"type": "array", "items": {"type": "string"}}

#: An agent's step, as JSON Schema (every field the draft requires is required here).
AGENT_STEP: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "id": _ID,
        "title": _TEXT,
        "completion_evidence": {**_TEXT, "description": "what proves it done"},
        "depends_on": _IDS,
        "max_attempts": {
            "anyOf": [{"type": "integer", "minimum": 1}, {"const": "unlimited"}],
            "default": DEFAULT_MAX_ATTEMPTS,
        },
        "covers": {**_IDS, "description": "criterion ids"},
    },
    "required": ["id", "title", "completion_evidence"],
}

#: An agent's acceptance criterion, as JSON Schema.
AGENT_CRITERION: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"id": _ID, "description": _TEXT},
    "required": ["id", "description"],
}

#: The keys of a step the agent gives in the step itself (with their camelCase spellings).
_STEP_OWN: Final = frozenset(
    {*AGENT_STEP["properties"], "dependsOn", "completionEvidence", "maxAttempts"},
)
_CRITERION_OWN: Final = frozenset(AGENT_CRITERION["properties"])
#: The task-level keys of ``terms`` beside ``steps``, ``criteria`` and ``policy``: the draft's own.
_TASK_KEYS: Final = ("scope", "inputs", "required_artifacts", "observed")
#: Every key ``terms`` takes.
TERMS_KEYS: Final = ("steps", "criteria", "policy", *_TASK_KEYS)

#: What ``terms`` holds, each member said in a few words (a read tool returns it to the agent).
TERMS_SHAPE: Final[dict[str, Any]] = {
    "steps": {
        "<step id>": {
            "priority": "whole number, higher first (default 0)",
            "checks": "typed checks: [{id, kind: command_exit|file_exists|..., ...}]",
            "timeout_s": "seconds an attempt's lease runs",
            "max_tool_calls": "whole number >= 1",
            "max_cost_usd": "number > 0",
            "writes": "globs the step may write ([] = read-only)",
            "reads": "globs the step may read",
            "allowed_tools": "tool names",
            "requires_approval": "true: waits for a granted approval",
            "effects_require_approval": "true: its side effects wait for one",
            "outputs": "[{name, media_type?}]: artifacts it must produce",
            "inputs": "[{step, output} | {initial} | {observation}]",
            "on_failure": "id of its repair step",
            "notes": "non-blank lines about the step",
        }
    },
    "criteria": {"<criterion id>": {"checks": "typed checks, as a step's"}},
    "policy": {
        "max_turns": "whole number >= 1",
        "max_tool_calls": "whole number >= 1",
        "max_cost_usd": "number > 0",
        "deadline": "UTC timestamp",
        "soft_threshold": "share of a budget that starts advice (default 0.8)",
        "max_repeated_failures": "whole number >= 1",
        "allowed_partial": "true: the run may finish partial",
    },
    "scope": "{writes: [glob], reads: [glob]} for the whole task",
    "inputs": "the task's initial inputs: [{name, digest?, uri?}]",
    "required_artifacts": "artifact names the task must produce",
    "observed": "versions observed: {name: version}",
}


def with_terms(draft: Mapping[str, Any], terms: Any, *, allowed: tuple[str, ...] = TERMS_KEYS) -> dict[str, Any]:
    """``draft`` (a draft's JSON value whose steps and criteria are the agent's) with ``terms`` put in place:
    each step's and criterion's terms into the step or criterion of that id, the policy's over the draft's
    policy (whose members win), the task's keys at the top. DRAFT_INVALID for ``terms`` of another shape, a
    term for a step or criterion the draft does not have, or a field the agent gives in the step or criterion
    itself (or a member of ``terms`` not ``allowed``: an extension takes its steps' and criteria's terms only);
    what the terms say is judged by the draft's validation, not here."""
    given = dict(draft)
    if terms is None:
        return given
    _require_mapping(terms, "terms")
    unknown = sorted(set(terms) - set(allowed))
    if unknown:
        raise _invalid("terms", f"terms takes no {', '.join(unknown)} here (it takes {', '.join(allowed)})")
    if "steps" in terms:
        given["steps"] = _merged(given.get("steps"), terms["steps"], "steps", _STEP_OWN)
    if "criteria" in terms:
        criteria = given.get("acceptance_criteria")
        given["acceptance_criteria"] = _merged(criteria, terms["criteria"], "criteria", _CRITERION_OWN)
    if "policy" in terms:
        policy = _require_mapping(terms["policy"], "terms.policy")
        own = given.get("policy")
        given["policy"] = {**policy, **(own if isinstance(own, Mapping) else {})}
    for key in _TASK_KEYS:
        if key in terms:
            given[key] = terms[key]
    return given


def carried_terms(plan: PlanSpec, draft: Mapping[str, Any], terms: Any) -> Any:
    """``terms`` for a replan of ``plan`` to ``draft``, with the terms each step and criterion the draft keeps
    (by id) had in ``plan`` when ``terms`` gives it none: an agent that restates a step or a criterion by its
    own fields keeps what it said of it in ``terms`` before. ``terms`` that are not an object are returned as
    they are (:func:`with_terms` refuses them)."""
    from plantrail.ledger.vocabulary.draft_writer import criterion_draft, step_draft

    if terms is not None and not isinstance(terms, Mapping):
        return terms
    given = dict(terms or {})
    written: dict[str, list[dict[str, Any]]] = {
        "steps": [step_draft(s) for s in plan.steps],
        "criteria": [criterion_draft(c) for c in plan.acceptance_criteria],
    }
    for what, key, own in (("steps", "steps", _STEP_OWN), ("criteria", "acceptance_criteria", _CRITERION_OWN)):
        named = given.get(what, {})
        if not isinstance(named, Mapping):
            continue
        wanted = {i.get("id") for i in draft.get(key) or () if isinstance(i, Mapping)} - set(named)
        kept = {}
        for item in written[what]:
            extra = {k: v for k, v in item.items() if k not in own}
            if item["id"] in wanted and extra:
                kept[item["id"]] = extra
        if kept:
            given[what] = {**kept, **named}
    return given or None


def _merged(items: Any, terms: Any, what: str, own: frozenset[str]) -> list[Any]:
    """The ``items`` (steps or criteria: ``what``) with the terms of each id merged in."""
    where = f"terms.{what}"
    one = "step" if what == "steps" else "criterion"
    by_id = _require_mapping(terms, where)
    listed = list(items) if isinstance(items, list | tuple) else []
    ids = {item.get("id") for item in listed if isinstance(item, Mapping)}
    for item_id, extra in by_id.items():
        place = f"{where}.{item_id}"
        if item_id not in ids:
            raise _invalid(place, f"{place} names no {one} of the plan")
        mine = sorted(set(_require_mapping(extra, place)) & own)
        if mine:
            raise _invalid(place, f"{place} gives {', '.join(mine)}: give it in the {one} itself")
    merged = []
    for item in listed:
        extra = by_id.get(str(item.get("id"))) if isinstance(item, Mapping) else None
        merged.append({**item, **extra} if extra else item)
    return merged


def _require_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _invalid(where, f"{where} must be an object")
    return value


def _invalid(where: str, message: str) -> Exception:
    return error("DRAFT_INVALID", message, path=where)
