"""Artifacts and their lineage (format v2): what a step declares it produces
(``outputs``) and consumes (``inputs``), the task's initial inputs, required artifacts and the observation
versions the plan was made from, and the digests a completion records.

Draft shapes (each optional; docs/contract.md):

- a step's ``outputs``: ``[{"name": "patch", "media_type": "text/x-diff"}]`` (a bare string is a name);
- a step's ``inputs``: each one of ``{"step": S, "output": NAME}`` (an output of a step upstream of it by
  ``depends_on``), ``{"initial": NAME}`` (an initial input the task declares) or ``{"observation": KEY}``
  (an observation key such as ``repo``: its recorded version is its digest);
- the task's ``inputs``: ``[{"name": "spec", "digest": "sha256:...", "uri": "..."}]`` (digest and uri
  optional), ``required_artifacts``: ``[{"step": S, "output": NAME}]``, and ``observed``:
  ``{"repo": "<HEAD>"}`` or ``[{"key": "repo", "version": "<HEAD>", "dirty": ["src/a.py"]}]`` (the run's
  baseline: what the plan was made from).

A digest is ``ALGO:HEX`` (``ALGO`` lower-case letters and digits, ``HEX`` 8 to 128 lower-case hex digits;
``sha256`` needs exactly 64). Pure: :mod:`ledger.vocabulary.plan` parses and validates, :mod:`ledger.rules.decide`
judges a
completion's artifacts, :mod:`projections.lineage_digest` folds them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from plantrail.ledger.vocabulary.errors import PlantrailError, Problems, error

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import PlanSpec, StepSpec

__all__ = [
    "TASK_ARTIFACT_KEYS",
    "Artifact",
    "ArtifactRef",
    "InitialInput",
    "InputRef",
    "ObservedVersion",
    "OutputSpec",
    "TaskArtifacts",
    "check_digest",
    "dangling_inputs",
    "input_key",
    "parse_artifact_option",
    "parse_inputs",
    "parse_outputs",
    "parse_task_artifacts",
    "produced_problems",
    "upstream_of",
]

_STRICT: dict[str, Any] = {"extra": "forbid", "strict": True}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_DIGEST = re.compile(r"([a-z][a-z0-9]{1,15}):([0-9a-f]{8,128})")
_DIGEST_LENGTHS: Final[Mapping[str, int]] = {"sha256": 64, "sha512": 128, "sha1": 40, "md5": 32}
#: The task-level draft keys this module parses.
TASK_ARTIFACT_KEYS: Final = frozenset({"inputs", "required_artifacts", "requiredArtifacts", "observed"})


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """One artifact a step declares it produces: its name and, optionally, its media type."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"media_type"})

    name: str
    media_type: str | None = None


@dataclass(frozen=True, slots=True)
class InputRef:
    """One input a step declares: exactly one of an upstream step's output (``step`` and ``output``), an
    initial input of the task (``initial``) or an observation key (``observation``)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"step", "output", "initial", "observation"})

    step: str | None = None
    output: str | None = None
    initial: str | None = None
    observation: str | None = None

    @property
    def key(self) -> str:
        """The input's one-line name: ``STEP/OUTPUT``, ``initial:NAME`` or ``observation:KEY``."""
        return input_key(self)


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """A required artifact of the task: a step's declared output."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT

    step: str
    output: str


@dataclass(frozen=True, slots=True)
class InitialInput:
    """An initial input of the task: its name and, optionally, its digest and where it lives."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"digest", "uri"})

    name: str
    digest: str | None = None
    uri: str | None = None


@dataclass(frozen=True, slots=True)
class ObservedVersion:
    """The version of one observation (a repository HEAD, a schema version ...) and, for a repository, the
    files that were dirty then."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"dirty"})

    key: str
    version: str
    dirty: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskArtifacts:
    """The task's lineage terms: its initial inputs, the artifacts it requires, and the observation versions
    the plan was made from (the run's baseline)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"inputs", "required", "observed"})

    inputs: tuple[InitialInput, ...] = ()
    required: tuple[ArtifactRef, ...] = ()
    observed: tuple[ObservedVersion, ...] = ()


@dataclass(frozen=True, slots=True)
class Artifact:
    """An artifact a completion produced: the declared output's name, its digest and (optionally) where it is."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"uri"})

    name: str
    digest: str
    uri: str | None = None


def input_key(ref: InputRef) -> str:
    """An input's one-line name: ``STEP/OUTPUT``, ``initial:NAME`` or ``observation:KEY``."""
    if ref.step is not None:
        return f"{ref.step}/{ref.output}"
    if ref.initial is not None:
        return f"initial:{ref.initial}"
    return f"observation:{ref.observation}"


# --------------------------------------------------------------------------- parsing


def _invalid(where: str, what: str, **fields: Any) -> PlantrailError:
    return error("DRAFT_INVALID", f"{where} {what}", path=where, **fields)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise error(
            "INVALID_ID",
            f"{where} {repr(value)[:80]} is not a valid name (letters, digits and ._:- only, at most 128)",
            path=where,
        )
    return value


def _optional_text(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _invalid(where, "must be a non-blank string")
    return value.strip()


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid(where, "must be a list")
    return value


def _unique(names: Iterable[str], what: str, where: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise error("DUPLICATE_ARTIFACT", f"{where} declares {what} {name} twice", path=where, ids=[name])
        seen.add(name)


def check_digest(value: Any, where: str) -> str:
    """``value`` when it is a digest ``ALGO:HEX`` (module docstring), else DIGEST_INVALID naming ``where``."""
    match = _DIGEST.fullmatch(value) if isinstance(value, str) else None
    wanted = None if match is None else _DIGEST_LENGTHS.get(match.group(1))
    if match is None or (wanted is not None and len(match.group(2)) != wanted):
        shown = repr(value)[:80]
        raise error(
            "DIGEST_INVALID",
            f"{where} {shown} is not a digest (ALGO:HEX in lower case, e.g. sha256: and 64 hex digits)",
            path=where,
            actual=str(value)[:80],
        )
    return match.string


def parse_outputs(raw: Any, where: str) -> tuple[OutputSpec, ...]:
    """A step draft's ``outputs`` (absent: none)."""
    outputs = []
    for i, item in enumerate(_list(raw, where)):
        at = f"{where}[{i}]"
        if isinstance(item, str):
            outputs.append(OutputSpec(_name(item, at)))
            continue
        if not isinstance(item, Mapping):
            raise _invalid(at, "must be a name or a JSON object with a name")
        unknown = sorted(set(item) - {"name", "media_type", "mediaType"})
        if unknown:
            raise _invalid(at, f"has unknown keys: {', '.join(unknown)}", ids=unknown)
        media = item.get("media_type", item.get("mediaType"))
        outputs.append(OutputSpec(_name(item.get("name"), f"{at}.name"), _optional_text(media, f"{at}.media_type")))
    _unique((o.name for o in outputs), "output", where)
    return tuple(outputs)


_INPUT_SHAPES: Final = ("{step, output}", "{initial}", "{observation}")


def _parse_input(item: Any, at: str) -> InputRef:
    if not isinstance(item, Mapping):
        raise _invalid(at, f"must be a JSON object: one of {', '.join(_INPUT_SHAPES)}")
    keys = set(item)
    if keys == {"step", "output"}:
        return InputRef(step=_name(item["step"], f"{at}.step"), output=_name(item["output"], f"{at}.output"))
    if keys == {"initial"}:
        return InputRef(initial=_name(item["initial"], f"{at}.initial"))
    if keys == {"observation"}:
        return InputRef(observation=_name(item["observation"], f"{at}.observation"))
    raise _invalid(at, f"must be one of {', '.join(_INPUT_SHAPES)}, not {{{', '.join(sorted(keys))}}}")


def parse_inputs(raw: Any, where: str) -> tuple[InputRef, ...]:
    """A step draft's ``inputs`` (absent: none)."""
    inputs = tuple(_parse_input(item, f"{where}[{i}]") for i, item in enumerate(_list(raw, where)))
    _unique((r.key for r in inputs), "input", where)
    return inputs


def _parse_initial(item: Any, at: str) -> InitialInput:
    if isinstance(item, str):
        return InitialInput(_name(item, at))
    if not isinstance(item, Mapping):
        raise _invalid(at, "must be a name or a JSON object with a name")
    unknown = sorted(set(item) - {"name", "digest", "uri"})
    if unknown:
        raise _invalid(at, f"has unknown keys: {', '.join(unknown)}", ids=unknown)
    digest = item.get("digest")
    return InitialInput(
        _name(item.get("name"), f"{at}.name"),
        None if digest is None else check_digest(digest, f"{at}.digest"),
        _optional_text(item.get("uri"), f"{at}.uri"),
    )


def _parse_required(item: Any, at: str) -> ArtifactRef:
    if not isinstance(item, Mapping) or set(item) != {"step", "output"}:
        raise _invalid(at, "must be a JSON object {step, output}")
    return ArtifactRef(_name(item["step"], f"{at}.step"), _name(item["output"], f"{at}.output"))


def _parse_observed(raw: Any, where: str) -> tuple[ObservedVersion, ...]:
    if raw is None:
        return ()
    if isinstance(raw, Mapping):
        raw = [{"key": k, "version": v} for k, v in raw.items()]
    observed = []
    for i, item in enumerate(_list(raw, where)):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or not {"key", "version"} <= set(item) <= {"key", "version", "dirty"}:
            raise _invalid(at, "must be a JSON object {key, version, dirty?}")
        dirty = item.get("dirty", [])
        if not isinstance(dirty, list) or not all(isinstance(p, str) and p.strip() for p in dirty):
            raise _invalid(f"{at}.dirty", "must be a list of paths")
        version = _optional_text(item["version"], f"{at}.version")
        if version is None:
            raise _invalid(f"{at}.version", "must be a non-blank string")
        observed.append(ObservedVersion(_name(item["key"], f"{at}.key"), version, tuple(sorted(set(dirty)))))
    _unique((o.key for o in observed), "observation", where)
    return tuple(observed)


def parse_task_artifacts(obj: Mapping[str, Any]) -> TaskArtifacts | None:
    """A draft's task-level ``inputs``, ``required_artifacts`` and ``observed`` (None: none of them given)."""
    if not any(obj.get(k) is not None for k in TASK_ARTIFACT_KEYS):
        return None
    inputs = tuple(_parse_initial(item, f"inputs[{i}]") for i, item in enumerate(_list(obj.get("inputs"), "inputs")))
    _unique((i.name for i in inputs), "initial input", "inputs")
    raw_required = obj.get("required_artifacts", obj.get("requiredArtifacts"))
    required = tuple(
        _parse_required(item, f"required_artifacts[{i}]")
        for i, item in enumerate(_list(raw_required, "required_artifacts"))
    )
    return TaskArtifacts(inputs, required, _parse_observed(obj.get("observed"), "observed"))


def parse_artifact_option(text: str) -> Artifact:
    """``NAME=DIGEST[@URI]`` (the CLI's ``--artifact``) as an artifact; DIGEST_INVALID or USAGE when malformed."""
    name, sep, rest = text.partition("=")
    if not sep or not name.strip():
        raise error("USAGE", f"artifact {text!r} must be NAME=DIGEST[@URI]")
    digest, _, uri = rest.partition("@")
    return Artifact(
        _name(name.strip(), "artifact name"), check_digest(digest.strip(), f"artifact {name.strip()}"), uri or None
    )


# --------------------------------------------------------------------------- validation


def upstream_of(steps: Sequence[StepSpec]) -> dict[str, set[str]]:
    """Each step's transitive upstream by ``depends_on`` (steps with unknown dependencies or in a cycle see
    only what can be reached; iterative)."""
    deps = {s.id: tuple(s.depends_on) for s in steps}
    memo: dict[str, set[str]] = {}
    for start in deps:
        if start in memo:
            continue
        stack = [start]
        visiting: set[str] = set()
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            pending = [d for d in deps.get(node, ()) if d in deps and d not in memo and d not in visiting]
            if pending and node not in visiting:
                visiting.add(node)
                stack.extend(pending)
                continue
            found: set[str] = set()
            for d in deps.get(node, ()):
                if d in deps:
                    found.add(d)
                    found |= memo.get(d, set())
            memo[node] = found
            visiting.discard(node)
            stack.pop()
    return memo


def dangling_inputs(plan: PlanSpec) -> list[PlantrailError]:
    """Every dangling input of the plan (naming nothing it can consume), one INPUT_DANGLING each naming the step
    and the input, in draft order; and the task's required artifacts that no step declares
    (ARTIFACT_UNKNOWN)."""
    outputs = {s.id: {o.name for o in _outputs(s)} for s in plan.steps}
    task = plan.artifacts
    initial = set() if task is None else {i.name for i in task.inputs}
    problems: list[PlantrailError] = Problems()
    upstream: dict[str, set[str]] | None = None
    for step in plan.steps:
        for ref in _inputs(step):
            why = None
            if ref.initial is not None and ref.initial not in initial:
                why = f"names initial input {ref.initial}, which the task does not declare"
            elif ref.step is not None:
                if ref.step not in outputs:
                    why = f"names unknown step {ref.step}"
                elif ref.output not in outputs[ref.step]:
                    why = f"names output {ref.output}, which step {ref.step} does not declare"
                else:
                    upstream = upstream_of(plan.steps) if upstream is None else upstream
                    if ref.step not in upstream.get(step.id, set()):
                        why = f"comes from step {ref.step}, which is not upstream of it by depends_on"
            if why is not None:
                problems.append(
                    error(
                        "INPUT_DANGLING",
                        f"step {step.id}: input {ref.key} {why}",
                        step=step.id,
                        ids=[ref.key],
                    )
                )
    for required in () if task is None else task.required:
        if required.output not in outputs.get(required.step, set()):
            problems.append(
                error(
                    "ARTIFACT_UNKNOWN",
                    f"required artifact {required.step}/{required.output}: no step declares that output",
                    step=required.step,
                    ids=[f"{required.step}/{required.output}"],
                )
            )
    return problems


def _outputs(step: StepSpec) -> tuple[OutputSpec, ...]:
    return () if step.terms is None else step.terms.outputs


def _inputs(step: StepSpec) -> tuple[InputRef, ...]:
    return () if step.terms is None else step.terms.inputs


def produced_problems(step: StepSpec, artifacts: Sequence[Artifact]) -> PlantrailError | None:
    """Why a completion's ``artifacts`` do not fit the step's declared outputs (None: they do): an undeclared
    artifact (ARTIFACT_UNDECLARED), one given twice (DUPLICATE_ARTIFACT), a malformed digest (DIGEST_INVALID),
    or a declared output missing (ARTIFACT_MISSING: a completion produces every output it declares)."""
    declared = [o.name for o in _outputs(step)]
    names = [a.name for a in artifacts]
    undeclared = [n for n in names if n not in declared]
    if undeclared:
        shown = ", ".join(declared) or "none"
        return error(
            "ARTIFACT_UNDECLARED",
            f"step {step.id} does not declare output {undeclared[0]} (it declares: {shown})",
            step=step.id,
            ids=undeclared,
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return error("DUPLICATE_ARTIFACT", f"step {step.id}: artifact {twice[0]} given twice", step=step.id, ids=twice)
    for artifact in artifacts:
        try:
            check_digest(artifact.digest, f"artifact {artifact.name}")
        except PlantrailError as exc:
            return exc
    missing = [n for n in declared if n not in names]
    if missing:
        return error(
            "ARTIFACT_MISSING",
            f"completing {step.id} needs an artifact for every output it declares; missing: {', '.join(missing)}",
            step=step.id,
            ids=missing,
        )
    return None
