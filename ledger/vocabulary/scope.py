"""Scopes (what a task and its steps may read and write, and with which tools): globs over repository paths, the task's
and the steps' scopes in a draft, and the judgement of a result's changed paths and tools against them.

Globs are repository-relative POSIX paths (``src/session.js``), split into segments at ``/``:

- ``**`` as a whole segment matches zero or more whole segments (``src/**`` is everything under ``src``,
  ``**/*.md`` every Markdown file);
- ``*`` matches any run of characters within one segment (never a ``/``), ``?`` exactly one;
- every other character is itself (there are no character classes and no escapes: ``[`` is a ``[``).

A glob is never absolute, never holds an empty, ``.`` or ``..`` segment, nor a backslash. A path a worker
reports is first brought to that form by :func:`normal_path` (``./src/a.js``, ``src//a.js`` and
``src/x/../a.js`` are ``src/a.js``; a path that is absolute, holds a backslash, or climbs out of the project
is inside no scope), in :func:`matches`, which every comparison of a path with a glob goes through. A path
matches a glob when the glob's segments match the path's; two globs *overlap* when some path matches both
(:func:`overlaps`, symmetric); a glob is *inside* another when every path it matches, the other matches
(:func:`covers`, judged segment by segment: a ``**`` in the inner glob needs a ``**`` in the outer one).

Everything here is pure, iterative and small: :mod:`ledger.vocabulary.plan` parses and validates scopes,
:mod:`ledger.rules.decide`
judges results and starts, :mod:`projections.approvals` folds what approvals grant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Final

from plantrail.ledger.vocabulary.errors import PlantrailError, Problems, error

__all__ = [
    "STEP_SCOPE_KEYS",
    "ScopeViolation",
    "StepScope",
    "TaskScope",
    "as_written_violation",
    "check_glob",
    "covered",
    "covers",
    "matches",
    "normal_path",
    "overlaps",
    "parse_globs",
    "parse_step_scope",
    "parse_task_scope",
    "scope_problems",
    "violation",
]

_STRICT: dict[str, Any] = {"extra": "forbid", "strict": True}
_DEEP: Final = "**"


@dataclass(frozen=True, slots=True)
class TaskScope:
    """The task's read and write scope (globs); None: not declared (unrestricted)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"reads", "writes"})

    reads: tuple[str, ...] | None = None
    writes: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class StepScope:
    """A step's scope: the globs it may write (``()``: a read-only step; None: the task's), the globs it
    reads, the tools it may use (None: any), whether it needs an approval before it starts, and whether each
    side effect it requests needs one (``effects_require_approval``, :mod:`ledger.rules.effects`)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset(
        {"writes", "reads", "allowed_tools", "requires_approval", "effects_require_approval"}
    )

    writes: tuple[str, ...] | None = None
    reads: tuple[str, ...] | None = None
    allowed_tools: tuple[str, ...] | None = None
    requires_approval: bool = False
    effects_require_approval: bool = False


@dataclass(frozen=True, slots=True)
class ScopeViolation:
    """What a result reported outside its step's scope: changed paths and tools (both always written)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT

    paths: tuple[str, ...]
    tools: tuple[str, ...]


# --------------------------------------------------------------------------- globs


def check_glob(value: Any, where: str) -> str:
    """``value`` when it is a glob (or a path) as documented above, else SCOPE_INVALID naming ``where``."""
    if not isinstance(value, str) or not value or len(value) > 1024:
        raise error("SCOPE_INVALID", f"{where} must be a non-empty glob of at most 1024 characters", path=where)
    why = None
    if value.startswith("/"):
        why = "is absolute (globs are repository-relative)"
    elif "\\" in value:
        why = "holds a backslash (use / between segments)"
    elif any(part in ("", ".", "..") for part in value.split("/")):
        why = "holds an empty, . or .. segment"
    elif any(_DEEP in part and part != _DEEP for part in value.split("/")):
        why = "uses ** inside a segment (** stands alone between slashes)"
    if why is not None:
        raise error("SCOPE_INVALID", f"{where} {value!r} {why}", path=where, actual=value)
    return value


def _segments(glob: str) -> tuple[str, ...]:
    return tuple(glob.split("/"))


def _segment_matches(pattern: str, text: str) -> bool:
    """Whether one segment pattern (``*``, ``?``, literals) matches one segment (iterative, with backtracking
    to the last star only: linear for practical patterns)."""
    p = t = 0
    star, mark = -1, 0
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]) and pattern[p] != "*":
            p, t = p + 1, t + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, t, p + 1
        elif star >= 0:
            mark += 1
            p, t = star + 1, mark
        else:
            return False
    return all(c == "*" for c in pattern[p:])


#: The longest path judged against a scope; a longer one is inside none (as a glob that long is refused).
_PATH_MAX: Final = 1024


def normal_path(path: str) -> str | None:
    """The repository-relative path a reported ``path`` names, lexically: empty and ``.`` segments (``./``,
    repeated and trailing slashes) dropped and each ``..`` taking back the segment before it; None for a path
    that names nothing inside the project: empty, absolute, holding a backslash, longer than 1024 characters,
    or climbing out of the project (``../x``, ``a/../../x``), or the project itself (``.``)."""
    if not path or path.startswith("/") or "\\" in path or len(path) > _PATH_MAX:
        return None
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts) or None


def matches(glob: str, path: str) -> bool:
    """Whether ``path`` (a path a worker reported, normalised by :func:`normal_path`) matches ``glob``; a path
    that names nothing inside the project matches no glob."""
    normal = normal_path(path)
    return normal is not None and _match_segments(_segments(glob), _segments(normal))


def _match_segments(glob: tuple[str, ...], path: tuple[str, ...]) -> bool:
    # states: glob positions reachable after consuming a prefix of the path
    states = _closure({0}, glob)
    for segment in path:
        following: set[int] = set()
        for i in states:
            if i < len(glob):
                if glob[i] == _DEEP:
                    following.add(i)  # ** absorbs this segment and may absorb more
                elif _segment_matches(glob[i], segment):
                    following.add(i + 1)
        states = _closure(following, glob)
        if not states:
            return False
    return len(glob) in states


def _closure(states: set[int], glob: tuple[str, ...]) -> set[int]:
    """``states`` plus every position reached by letting a ``**`` match zero segments."""
    result = set(states)
    todo = list(states)
    while todo:
        i = todo.pop()
        if i < len(glob) and glob[i] == _DEEP and i + 1 not in result:
            result.add(i + 1)
            todo.append(i + 1)
    return result


def _reach(start: tuple[int, int], moves: Any, goal: tuple[int, int]) -> bool:
    """Whether ``goal`` is reachable from ``start`` by ``moves(i, j)`` (an iterative search)."""
    seen = {start}
    todo = [start]
    while todo:
        state = todo.pop()
        if state == goal:
            return True
        for nxt in moves(*state):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


@lru_cache(maxsize=4096)
def _segments_overlap(a: str, b: str) -> bool:
    """Whether some segment matches both segment patterns."""

    def moves(i: int, j: int) -> Iterable[tuple[int, int]]:
        x = a[i] if i < len(a) else None
        y = b[j] if j < len(b) else None
        if x == "*":
            yield i + 1, j  # the star matches nothing more
        if y == "*":
            yield i, j + 1
        if x is not None and y is not None and (x in "*?" or y in "*?" or x == y):  # one character both accept
            yield (i if x == "*" else i + 1), (j if y == "*" else j + 1)

    return _reach((0, 0), moves, (len(a), len(b)))


@lru_cache(maxsize=4096)
def _segment_covers(outer: str, inner: str) -> bool:
    """Whether every segment ``inner`` matches, ``outer`` matches (a star of ``inner`` needs one of ``outer``)."""

    def moves(i: int, j: int) -> Iterable[tuple[int, int]]:
        x = outer[i] if i < len(outer) else None
        y = inner[j] if j < len(inner) else None
        if x == "*":
            yield i + 1, j
            if y is not None:
                yield i, j + 1  # outer's star absorbs whatever inner's character (or star) matches
        elif x is not None and y is not None and y != "*" and (x == "?" or x == y):
            yield i + 1, j + 1

    return _reach((0, 0), moves, (len(outer), len(inner)))


def overlaps(a: str, b: str) -> bool:
    """Whether some path matches both globs (symmetric)."""
    x, y = _segments(a), _segments(b)

    def moves(i: int, j: int) -> Iterable[tuple[int, int]]:
        p = x[i] if i < len(x) else None
        q = y[j] if j < len(y) else None
        if p == _DEEP:
            yield i + 1, j  # a's ** matches no more segments
            if q is not None:
                yield i, j + 1  # a's ** absorbs what b's segment (or **) matches
        if q == _DEEP:
            yield i, j + 1
            if p is not None:
                yield i + 1, j
        if p is not None and q is not None and p != _DEEP and q != _DEEP and _segments_overlap(p, q):
            yield i + 1, j + 1

    return _reach((0, 0), moves, (len(x), len(y)))


def covers(outer: str, inner: str) -> bool:
    """Whether every path ``inner`` matches, ``outer`` matches (segment by segment; a ``**`` of ``inner``
    needs a ``**`` of ``outer``)."""
    x, y = _segments(outer), _segments(inner)

    def moves(i: int, j: int) -> Iterable[tuple[int, int]]:
        p = x[i] if i < len(x) else None
        q = y[j] if j < len(y) else None
        if p == _DEEP:
            yield i + 1, j
            if q is not None:
                yield i, j + 1
        elif p is not None and q is not None and q != _DEEP and _segment_covers(p, q):
            yield i + 1, j + 1

    return _reach((0, 0), moves, (len(x), len(y)))


def covered(globs: Sequence[str], outer: Sequence[str]) -> list[str]:
    """The globs of ``globs`` that no glob of ``outer`` covers (empty: all inside)."""
    return [g for g in globs if not any(covers(o, g) for o in outer)]


# --------------------------------------------------------------------------- drafts

#: A step draft's scope keys (flat on the step).
STEP_SCOPE_KEYS: Final = frozenset(
    {"writes", "reads", "allowed_tools", "requires_approval", "effects_require_approval"}
)


def parse_globs(raw: Any, where: str) -> tuple[str, ...] | None:
    """A list of globs (absent: None); DRAFT_INVALID when it is not a list, SCOPE_INVALID for a bad glob."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise error("DRAFT_INVALID", f"{where} must be a list of globs", path=where)
    return tuple(dict.fromkeys(check_glob(g, f"{where}[{i}]") for i, g in enumerate(raw)))


def _tools(raw: Any, where: str) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(t, str) and t.strip() for t in raw):
        raise error("DRAFT_INVALID", f"{where} must be a list of tool names", path=where)
    return tuple(dict.fromkeys(t.strip() for t in raw))


def parse_step_scope(obj: Mapping[str, Any], where: str) -> StepScope | None:
    """A step draft's ``writes``, ``reads``, ``allowed_tools``, ``requires_approval`` and
    ``effects_require_approval`` (None: none given)."""
    if not any(obj.get(key) is not None for key in STEP_SCOPE_KEYS):
        return None
    approval = obj.get("requires_approval", False)
    if not isinstance(approval, bool):
        raise error("DRAFT_INVALID", f"{where}.requires_approval must be true or false", path=where)
    effects = obj.get("effects_require_approval", False)
    if not isinstance(effects, bool):
        raise error("DRAFT_INVALID", f"{where}.effects_require_approval must be true or false", path=where)
    scope = StepScope(
        writes=parse_globs(obj.get("writes"), f"{where}.writes"),
        reads=parse_globs(obj.get("reads"), f"{where}.reads"),
        allowed_tools=_tools(obj.get("allowed_tools"), f"{where}.allowed_tools"),
        requires_approval=approval,
        effects_require_approval=effects,
    )
    return None if scope == StepScope() else scope


def parse_task_scope(raw: Any) -> TaskScope | None:
    """A draft's ``scope`` object: ``{"reads": [...], "writes": [...]}`` (absent: None)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise error("DRAFT_INVALID", "scope must be a JSON object", path="scope")
    unknown = sorted(set(raw) - {"reads", "writes"})
    if unknown:
        raise error("DRAFT_INVALID", f"scope has unknown keys: {', '.join(unknown)}", path="scope", ids=unknown)
    scope = TaskScope(
        reads=parse_globs(raw.get("reads"), "scope.reads"), writes=parse_globs(raw.get("writes"), "scope.writes")
    )
    return None if scope == TaskScope() else scope


def scope_problems(task: TaskScope | None, steps: Iterable[tuple[str, StepScope | None]]) -> list[PlantrailError]:
    """Every step glob outside the task scope (SCOPE_OUTSIDE_TASK naming step, kind and glob), in order."""
    problems: list[PlantrailError] = Problems()
    if task is None:
        return problems
    for step_id, scope in steps:
        if scope is None:
            continue
        for kind, globs, outer in (("writes", scope.writes, task.writes), ("reads", scope.reads, task.reads)):
            if globs is None or outer is None:
                continue
            for glob in covered(globs, outer):
                problems.append(
                    error(
                        "SCOPE_OUTSIDE_TASK",
                        f"step {step_id} {kind} {glob}, outside the task's {kind} scope ({', '.join(outer) or 'none'})",
                        step=step_id,
                        path=glob,
                        kind=kind,
                    )
                )
    return problems


# --------------------------------------------------------------------------- results


def _inside(writes: Sequence[str], path: str) -> bool:
    """Whether some glob of ``writes`` matches a reported path (:func:`matches`: the path normalised)."""
    return any(matches(g, path) for g in writes)


def violation(
    writes: Sequence[str] | None, tools: Sequence[str] | None, changed: Sequence[str], used: Sequence[str]
) -> ScopeViolation | None:
    """The changed paths outside ``writes`` and the tools outside ``tools`` (None: unrestricted); None when
    the result stayed inside."""
    paths = () if writes is None else tuple(p for p in dict.fromkeys(changed) if not _inside(writes, p))
    extra = () if tools is None else tuple(t for t in dict.fromkeys(used) if t not in tools)
    return ScopeViolation(paths, extra) if paths or extra else None


def as_written_violation(
    writes: Sequence[str] | None, tools: Sequence[str] | None, changed: Sequence[str], used: Sequence[str]
) -> ScopeViolation | None:
    """:func:`violation` as an earlier plantrail judged it: it compared reported paths as written, so a path
    not already in a glob's form (``./src/a.js``, ``src//a.js``, ``src/x/../a.js``) was outside every scope. A
    log it wrote records that violation; ``verify`` accepts it beside the one :func:`violation` finds."""

    def inside(path: str) -> bool:
        try:
            check_glob(path, "path")
        except PlantrailError:
            return False
        return _inside(writes or (), path)

    paths = () if writes is None else tuple(p for p in dict.fromkeys(changed) if not inside(p))
    extra = () if tools is None else tuple(t for t in dict.fromkeys(used) if t not in tools)
    return ScopeViolation(paths, extra) if paths or extra else None
