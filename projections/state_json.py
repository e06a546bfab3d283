"""A plan state as JSON and back: the state a forked run carries, and the file store's snapshots (a cache: see
:mod:`plantrail.ledger.stores.jsonl.cache`).

Pure and independent of pydantic, so loading a snapshot costs one ``orjson.loads`` and the constructors.
``REDUCER_VERSION`` names the reducer's semantics: a snapshot made by another version is never used.

Large texts need not be copied: given ``refer``, :func:`encode_state` asks it for a reference to every string
of the state longer than :data:`INLINE_MAX` characters (evidence, reasons, errors: whatever workers report)
and writes ``{"$ref": reference}`` in its place when it gets one; :func:`decode_state` asks ``fill`` for the
string behind each reference, or, given ``lazy``, keeps each reference in evidence (steps', criteria's and
late results') as the :class:`~plantrail.ledger.vocabulary.payloads.Payload` it makes, which the encoder writes back
as the same reference without reading it. What a reference is (where the record carrying the text lies in the log) is
the store's business; this module does no I/O. Plans are written inline (they are the agent's own, not what
workers report).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

import orjson

from plantrail.ledger.vocabulary.artifacts import (
    Artifact,
    ArtifactRef,
    InitialInput,
    InputRef,
    ObservedVersion,
    OutputSpec,
    TaskArtifacts,
)
from plantrail.ledger.vocabulary.contract import CheckSpec, StepTerms
from plantrail.ledger.vocabulary.evidence import Usage
from plantrail.ledger.vocabulary.payloads import Payload
from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanSpec, Policy, StepSpec
from plantrail.ledger.vocabulary.scope import StepScope, TaskScope
from plantrail.projections.approvals import Approval, Authority, Violation
from plantrail.projections.effects import Effect
from plantrail.projections.model import (
    Changes,
    Consumed,
    CriterionState,
    CutOff,
    FailureStreak,
    Fork,
    Lease,
    Observed,
    Orphan,
    PlanState,
    RepairRun,
    StepChange,
    StepState,
    VersionInfo,
)
from plantrail.projections.table import Table

__all__ = [
    "INLINE_MAX",
    "KEPT_FIELDS",
    "REDUCER_VERSION",
    "Fill",
    "Lazy",
    "Refer",
    "decode_orphans",
    "decode_state",
    "decode_version",
    "encode_kept",
    "encode_state",
    "encode_version",
    "without_kept",
]

#: Bump whenever evolve's semantics change: snapshots made under another value are ignored. 2: a consumer that
#: completes while its producer is stale records the producer's last artifact as consumed. 3: an approval judges a
#: held scope violation's paths by the paths they name (``./src/a.js`` is ``src/a.js``), as the rules do.
#: 4: a step keeps the seq of each attempt's start, the state the attempts replans cut off in flight and the
#: seq of each version's adoption (a result may name its attempt by its start; format v2's ``step.adopted``).
REDUCER_VERSION: Final = 4


def _default(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return value._asdict()
    if isinstance(value, Table):
        return list(value.values_in_order())
    if isinstance(value, Payload):
        return value.resolve()
    raise TypeError(f"cannot encode {type(value).__name__}")


#: Strings up to this many characters stay inline in a snapshot. A reference (offset, length, a 64-digit hash
#: and a short path) takes about 120 bytes and costs a read and a SHA-256 of its whole record, so texts of
#: the size of an id, a title or a one-line reason are cheaper copied; 1 KiB keeps a 40-step plan's snapshot
#: within tens of KiB of inline text whatever its evidence.
INLINE_MAX: Final = 1024

#: Asked for a reference to a large string of the state; None keeps the string inline.
Refer = Callable[[str], Any]
#: Given a reference :data:`Refer` made, the string behind it (ValueError when it cannot be had).
Fill = Callable[[Any], str]
#: Given a reference in evidence, the :class:`Payload` that stands for it until it is read.
Lazy = Callable[[Any], Payload]

_REF: Final = "$ref"


#: The values :func:`_externalize` gives back as they are: JSON's scalars (orjson writes them, and tuples and
#: lists of nothing else, itself).
_ATOMS: Final = frozenset({int, float, bool, type(None)})


def _externalize(value: Any, refer: Refer) -> Any:
    """``value`` as plain JSON data, every string longer than INLINE_MAX that ``refer`` can name referenced.

    A state's history grows with its log (the adoption seq of every version, the late results, the attempts
    replans cut off), so the common kinds are told by their exact type first, and a tuple or list of scalars
    (every version's adoption seq) is given back whole rather than walked."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is tuple or kind is list:
        if set(map(type, value)) <= _ATOMS:
            return value
        return [_externalize(v, refer) for v in value]
    if isinstance(value, str):
        if len(value) > INLINE_MAX:
            ref = refer(value)
            if ref is not None:
                return {_REF: ref}
        return value
    if isinstance(value, Payload):
        return {_REF: list(value.ref)}  # the reference it was read as: the text itself is not needed
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _externalize(v, refer) for k, v in value._asdict().items()}
    if isinstance(value, Table):
        return [_externalize(v, refer) for v in value.values_in_order()]
    if isinstance(value, tuple | list):
        return [_externalize(v, refer) for v in value]
    return value  # None, numbers, booleans, and plans (orjson writes their dataclasses inline)


def encode_state(state: PlanState, refer: Refer | None = None) -> bytes:
    """The state as compact JSON (steps and criteria as lists, in their order); with ``refer``, large strings
    that it names as references (see the module's docstring)."""
    if refer is None:
        return orjson.dumps(state, default=_default)
    return orjson.dumps(_externalize(state, refer), default=_default)


#: The members of a state that grow with its log, kept whole by the reducer: every late result, every attempt a
#: replan cut off whose result has not come, every version's adoption seq (at 10^6 events about 90 % of the
#: state's bytes). A snapshot holds them apart (:func:`encode_kept`), so that a writer whose turn changed none
#: of them writes them again only when another writer replaced them.
KEPT_FIELDS: Final = ("orphans", "cut_off", "adoptions")


def without_kept(state: PlanState) -> PlanState:
    """``state`` with its :data:`KEPT_FIELDS` empty (the rest of a snapshot; :func:`decode_state` puts them back)."""
    return state._replace(orphans=(), cut_off=(), adoptions=())


def encode_kept(state: PlanState, refer: Refer | None = None) -> bytes:
    """The state's :data:`KEPT_FIELDS` as one compact JSON object, large strings referred to as
    :func:`encode_state` refers to them."""
    kept = {name: getattr(state, name) for name in KEPT_FIELDS}
    if refer is None:
        return orjson.dumps(kept, default=_default)
    return orjson.dumps({name: _externalize(value, refer) for name, value in kept.items()}, default=_default)


def _internalize(value: Any, fill: Fill) -> Any:
    """Decoded JSON with every ``{"$ref": r}`` replaced by ``fill(r)``."""
    if isinstance(value, dict):
        if len(value) == 1 and _REF in value:
            text = fill(value[_REF])
            if not isinstance(text, str):
                raise ValueError("a snapshot reference did not give a string")
            return text
        return {k: _internalize(v, fill) for k, v in value.items()}
    if isinstance(value, list):
        return [_internalize(v, fill) for v in value]
    return value


def _plan(d: dict[str, Any] | None) -> PlanSpec | None:
    if d is None:
        return None
    return PlanSpec(
        goal=d["goal"],
        acceptance_criteria=tuple(
            CriterionSpec(c["id"], c["description"], _checks(c)) for c in d["acceptance_criteria"]
        ),
        steps=tuple(_step_spec(s) for s in d["steps"]),
        policy=Policy(**d["policy"]),
        notes=_notes(d),
        scope=_task_scope(d.get("scope")),
        artifacts=_task_artifacts(d.get("artifacts")),
    )


def _step_spec(s: dict[str, Any]) -> StepSpec:
    if len(s) == _SPEC_FIELDS and s.get("terms", 0) is None:  # a v1 step (every late result's, every cut-off's)
        return StepSpec(s["id"], s["title"], tuple(s["depends_on"]), s["completion_evidence"], s["max_attempts"])
    return StepSpec(**{**s, "depends_on": tuple(s["depends_on"]), "terms": _terms(s)})


#: How many fields a step's spec is written with (every one of its dataclass's).
_SPEC_FIELDS: Final = len(dataclasses.fields(StepSpec))


def _optional_spec(s: dict[str, Any] | None) -> StepSpec | None:
    return None if s is None else _step_spec(s)


def _observed(items: list[dict[str, Any]]) -> tuple[ObservedVersion, ...]:
    return tuple(ObservedVersion(o["key"], o["version"], tuple(o.get("dirty", ()))) for o in items)


def _task_artifacts(d: dict[str, Any] | None) -> TaskArtifacts | None:
    """A plan's initial inputs, required artifacts and observed versions (format v2; absent: none)."""
    if d is None:
        return None
    return TaskArtifacts(
        tuple(InitialInput(**i) for i in d.get("inputs", ())),
        tuple(ArtifactRef(**r) for r in d.get("required", ())),
        _observed(d.get("observed", ())),
    )


def _globs(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _task_scope(d: dict[str, Any] | None) -> TaskScope | None:
    """A plan's task scope (format v2; a snapshot of a plan without one has none)."""
    return None if d is None else TaskScope(_globs(d.get("reads")), _globs(d.get("writes")))


def _step_scope(d: dict[str, Any] | None) -> StepScope | None:
    """A step's scope (format v2; a snapshot of a step without one has none)."""
    if d is None:
        return None
    tools = _globs(d.get("allowed_tools"))
    approval = d.get("requires_approval", False)
    effects = d.get("effects_require_approval", False)
    return StepScope(_globs(d.get("writes")), _globs(d.get("reads")), tools, approval, effects)


def _notes(d: dict[str, Any]) -> tuple[str, ...]:
    """A plan's or step's notes (format v2; a snapshot of a plan without notes has none)."""
    return tuple(d.get("notes", ()))


def _terms(d: dict[str, Any]) -> StepTerms | None:
    """A step's format v2 terms (a snapshot of a v1 plan has none)."""
    terms = d.get("terms")
    return (
        None
        if terms is None
        else StepTerms(
            **{
                **terms,
                "checks": _checks(terms),
                "notes": _notes(terms),
                "covers": tuple(terms.get("covers", ())),
                "scope": _step_scope(terms.get("scope")),
                "outputs": tuple(OutputSpec(**o) for o in terms.get("outputs", ())),
                "inputs": tuple(InputRef(**i) for i in terms.get("inputs", ())),
            }
        )
    )


def _checks(d: dict[str, Any]) -> tuple[CheckSpec, ...]:
    """A spec's typed checks (format v2; a snapshot of a v1 plan has none)."""
    return tuple(CheckSpec(**c) for c in d.get("checks", ()))


def _change(d: dict[str, Any]) -> StepChange:
    return StepChange(**{**d, "fields": tuple(d["fields"])})


def _changes(d: dict[str, Any] | None) -> Changes | None:
    if d is None:
        return None
    return Changes(
        kept=tuple(d["kept"]),
        reset=tuple(_change(c) for c in d["reset"]),
        added=tuple(d["added"]),
        removed=tuple(_change(c) for c in d["removed"]),
        criteria_kept=tuple(d["criteria_kept"]),
        criteria_reset=tuple(_change(c) for c in d["criteria_reset"]),
        criteria_added=tuple(d["criteria_added"]),
        criteria_removed=tuple(d["criteria_removed"]),
        policy_changed=d["policy_changed"],
    )


def _adopted(d: dict[str, Any] | None, plan: PlanSpec | None) -> VersionInfo | None:
    if d is None:
        return None
    recorded = _plan(d["plan"])
    return VersionInfo(
        version=d["version"],
        seq=d["seq"],
        ts=d["ts"],
        actor=d["actor"],
        plan=plan if recorded == plan and plan is not None else recorded,  # type: ignore[arg-type]
        reason=d["reason"],
        why=d["why"],
        causes=tuple(d["causes"]),
        observations=tuple(d["observations"]),
        patched=d["patched"],
        changes=_changes(d["changes"]),
        extended=tuple(d.get("extended", ())),
    )


def decode_orphans(items: list[dict[str, Any]], *, up_to: int | None = None) -> tuple[Orphan, ...]:
    """Orphans as :func:`encode_state` wrote them (only those recorded at or before seq ``up_to``, when given).

    Built positionally: a long run keeps every late result, and the version index decodes them per rebuild.
    """
    return tuple(
        Orphan(
            o["seq"],
            o["type"],
            o["step"],
            o["plan_version"],
            o["attempt"],
            o["active_version"],
            o["why"],
            tuple(o["evidence"]),
            o["reason"],
            _optional_spec(o.get("contract")),
            o.get("adopted"),
        )
        for o in items
        if up_to is None or o["seq"] <= up_to
    )


def _no_fill(ref: Any) -> str:
    raise ValueError("a snapshot with references was read without a way to fill them")


def _ref_of(value: Any) -> Any:
    """The reference ``value`` is (``{"$ref": r}``), else None."""
    return value[_REF] if isinstance(value, dict) and len(value) == 1 and _REF in value else None


def _keep_lazy(d: dict[str, Any], lazy: Lazy) -> int:
    """Replace, in place, each reference in the evidence of the decoded state ``d`` by ``lazy(reference)``;
    return how many there were."""
    made = 0

    def kept(value: Any) -> Any:
        nonlocal made
        ref = _ref_of(value)
        if ref is None:
            return value
        made += 1
        return lazy(ref)

    for holder in (*d["steps"], *d["orphans"]):
        if any(isinstance(e, dict) for e in holder["evidence"]):
            holder["evidence"] = [kept(e) for e in holder["evidence"]]
    for c in d["criteria"]:
        c["evidence"] = kept(c["evidence"])
    return made


def decode_state(
    raw: bytes, fill: Fill | None = None, lazy: Lazy | None = None, kept: bytes | None = None
) -> PlanState:
    """The state :func:`encode_state` encoded; ``fill`` gives the string behind each reference (a reference
    without ``fill`` is a ValueError), but with ``lazy`` each reference in evidence is kept as the
    :class:`Payload` ``lazy`` makes of it (not read). ``kept`` is the state's :data:`KEPT_FIELDS` as
    :func:`encode_kept` wrote them, when ``raw`` is the rest (:func:`without_kept`)."""
    d = orjson.loads(raw)
    if kept is not None:
        members = orjson.loads(kept)
        if not isinstance(members, dict) or set(members) != set(KEPT_FIELDS):
            raise ValueError("a snapshot's kept members are not the state's")
        d.update(members)
        raw += kept  # the references below are counted over both
    # Each reference is an object ``{"$ref": ...}`` and a string holds its quotes escaped: when every such
    # object is evidence kept lazy, none is left to fill.
    lazy_only = lazy is not None and b'"$ref"' in raw and _keep_lazy(d, lazy) == raw.count(b'{"$ref":')
    if b'"$ref"' in raw and not lazy_only:
        d = _internalize(d, fill or _no_fill)
    plan = _plan(d["plan"])
    steps = [StepState(**_step_fields(s)) for s in d["steps"]]
    criteria = [CriterionState(**c) for c in d["criteria"]]
    return PlanState(
        run=d["run"],
        plan=plan,
        version=d["version"],
        steps=Table(tuple(s.id for s in steps), steps),
        criteria=Table(tuple(c.id for c in criteria), criteria),
        outcome=d["outcome"],
        outcome_reason=d["outcome_reason"],
        outcome_seq=d["outcome_seq"],
        adopted=_adopted(d["adopted"], plan),
        orphans=decode_orphans(d["orphans"]),
        consecutive_failures=d["consecutive_failures"],
        last_seq=d["last_seq"],
        head=d["head"],
        usage=_usage(d.get("usage")),
        failure_streak=None if d.get("failure_streak") is None else FailureStreak(**d["failure_streak"]),
        contract=d.get("contract", False),
        lineage=tuple(Fork(**link) for link in d.get("lineage", ())),
        authority=_authority(d.get("authority")),
        effects=_effects(d.get("effects", ())),
        observations=tuple(
            Observed(o["key"], o["version"], tuple(o["dirty"]), o["seq"]) for o in d.get("observations", ())
        ),
        cut_off=tuple(
            CutOff(c["step"], c["version"], c["attempt"], c["started_seq"], _optional_spec(c["contract"]))
            for c in d.get("cut_off", ())
        ),
        adoptions=tuple(d.get("adoptions", ())),
    )


def _step_fields(s: dict[str, Any]) -> dict[str, Any]:
    """A step's fields as :func:`encode_state` wrote them, its values rebuilt (the format v2 ones when set)."""
    fields = {**s, "evidence": tuple(s["evidence"]), "usage": _usage(s.get("usage"))}
    if s.get("lease") is not None:
        fields["lease"] = Lease(**s["lease"])
    if "started" in s:
        fields["started"] = tuple(s["started"])
    if "abandoned" in s:
        fields["abandoned"] = tuple(s["abandoned"])
    if "artifacts" in s:
        fields["artifacts"] = tuple(Artifact(**a) for a in s["artifacts"])
    if "consumed" in s:
        fields["consumed"] = tuple(Consumed(**c) for c in s["consumed"])
    if s.get("repair") is not None:
        run = s["repair"]
        fields["repair"] = RepairRun(tuple((step, attempt) for step, attempt in run["waiting"]), run["spent"])
    return fields


def _authority(d: dict[str, Any] | None) -> Authority | None:
    """The state's approvals and pauses (format v2; a snapshot of a run without any has none)."""
    if d is None:
        return None
    approvals = tuple(
        Approval(**{**a, "steps": tuple(a["steps"]), "writes": tuple(a["writes"]), "tools": tuple(a["tools"])})
        for a in d["approvals"]
    )
    held = d["violation"]
    violation = (
        None if held is None else Violation(**{**held, "paths": tuple(held["paths"]), "tools": tuple(held["tools"])})
    )
    return Authority(approvals, violation, tuple(d["widened"]), tuple(d["denied"]))


def _effects(items: list[dict[str, Any]]) -> tuple[Effect, ...]:
    """The state's side effects (format v2; a snapshot of a run without any has none)."""
    return tuple(Effect(**{**e, "earlier": tuple(e["earlier"])}) for e in items)


def _usage(d: dict[str, Any] | None) -> Usage | None:
    return None if d is None else Usage(**d)


def encode_version(info: VersionInfo, ended: tuple[tuple[str, int], ...] | None) -> bytes:
    """One plan version's adoption record as compact JSON, with ``ended``: the verdict seq of each criterion
    at the end of the version before it (None for version 1), as the history index stores them."""
    return orjson.dumps({"adopted": info, "ended": ended}, default=_default)


def decode_version(raw: bytes) -> tuple[VersionInfo, tuple[tuple[str, int], ...] | None]:
    """What :func:`encode_version` encoded."""
    d = orjson.loads(raw)
    info = _adopted(d["adopted"], None)
    assert info is not None  # encode_version always writes one
    ended = d["ended"]
    return info, None if ended is None else tuple((c, s) for c, s in ended)
