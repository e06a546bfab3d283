"""Scopes: the glob matcher (its semantics and properties) and scopes in drafts (a bounded plan)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plantrail.ledger.vocabulary.errors import PlanInvalid
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft
from plantrail.ledger.vocabulary.scope import (
    StepScope,
    check_glob,
    covers,
    matches,
    normal_path,
    overlaps,
    violation,
)
from plantrail.projections.state_json import decode_state, encode_state

_LITERAL = st.text(alphabet="ab.", min_size=1, max_size=3).filter(lambda s: s not in (".", ".."))
_PATTERN = st.text(alphabet="ab*?", min_size=1, max_size=4)
_PATHS = st.lists(_LITERAL, min_size=1, max_size=4).map("/".join)
_GLOBS = st.lists(st.one_of(_PATTERN, _LITERAL, st.just("**")), min_size=1, max_size=4).map("/".join)


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("src/session.js", "src/session.js", True),
        ("src/session.js", "src/session.ts", False),
        ("src/*.js", "src/session.js", True),
        ("src/*.js", "src/lib/session.js", False),
        ("src/**", "src/lib/deep/session.js", True),
        ("src/**", "src", True),
        ("src/**", "test/session.js", False),
        ("**/*.md", "README.md", True),
        ("**/*.md", "docs/a/b.md", True),
        ("src/?.js", "src/a.js", True),
        ("src/?.js", "src/ab.js", False),
        ("src/[a].js", "src/[a].js", True),
        ("src/[a].js", "src/a.js", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/x/y/c", False),
    ],
)
def test_matches_follows_the_documented_glob_semantics(glob: str, path: str, expected: bool) -> None:
    """`**` spans whole segments (zero or more), `*` and `?` stay within one segment, other characters are literal."""
    assert matches(glob, path) is expected


@pytest.mark.parametrize("glob", ["", "/etc/passwd", "src/../x", "./src", "src//x", "src\\x", "src/a**", 7])
def test_check_glob_refuses_what_is_not_a_repository_relative_glob(glob: Any) -> None:
    """An empty or absolute glob, an empty, . or .. segment, a backslash or ** inside a segment: SCOPE_INVALID."""
    with pytest.raises(PlanInvalid) as caught:
        check_glob(glob, "scope.writes[0]")
    assert caught.value.code == "SCOPE_INVALID" and caught.value.fields["path"] == "scope.writes[0]"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("src/**", "src/session.js", True),
        ("src/*.js", "src/s*", True),
        ("src/*.js", "src/*.ts", False),
        ("src/**", "test/**", False),
        ("**/x", "a/**", True),
        ("a/b", "a/b/c", False),
        ("a/?", "a/bb", False),
    ],
)
def test_overlaps_says_whether_one_path_matches_both(a: str, b: str, expected: bool) -> None:
    """Two globs overlap exactly when some path matches both."""
    assert overlaps(a, b) is expected and overlaps(b, a) is expected


@given(_GLOBS, _GLOBS)
def test_overlap_is_symmetric(a: str, b: str) -> None:
    """overlaps(a, b) == overlaps(b, a) for any two globs."""
    assert overlaps(a, b) == overlaps(b, a)


@given(_GLOBS, _PATHS)
def test_a_path_inside_a_glob_overlaps_it(glob: str, path: str) -> None:
    """A path a glob matches overlaps the glob (a path is a glob that matches itself), and is covered by it."""
    if matches(glob, path):
        assert overlaps(glob, path) and overlaps(path, glob) and covers(glob, path)
    assert matches(path, path)


@given(_GLOBS, _GLOBS, _PATHS)
def test_a_path_both_globs_match_means_they_overlap(a: str, b: str, path: str) -> None:
    """Whenever one path matches two globs, they overlap; and a covered glob's paths match the covering one."""
    if matches(a, path) and matches(b, path):
        assert overlaps(a, b)
    if covers(a, b) and matches(b, path):
        assert matches(a, path)


def test_covers_is_judged_segment_by_segment() -> None:
    """A glob covers the narrower globs inside it, and not a wider or disjoint one."""
    assert covers("src/**", "src/*.js") and covers("src/**", "src/a/**") and covers("*.js", "a*.js")
    assert not covers("src/*.js", "src/**") and not covers("src/*", "src/a/b") and not covers("a*.js", "*.js")


def test_violation_lists_paths_outside_the_writes_and_tools_outside_the_allowed() -> None:
    """Changed paths no write glob matches (absolute and .. paths included) and unlisted tools are the violation."""
    found = violation(["src/**"], ["Edit"], ["src/a.js", "package.json", "/etc/x", "src/../x"], ["Edit", "Bash"])
    assert found is not None and found.paths == ("package.json", "/etc/x", "src/../x") and found.tools == ("Bash",)
    assert violation(None, None, ["anything"], ["Bash"]) is None
    assert violation([], None, ["a"], []) is not None  # a read-only step changes nothing


def _spellings(path: str, where: int, how: int) -> str:
    """``path`` spelled another way before segment ``where``: ``./``, a ``d/..`` detour, ``././``, a deeper
    detour or a doubled slash; and with a trailing slash when ``how`` is 5 or more."""
    parts = path.split("/")
    cut = where % len(parts)
    extra = ["./", "d/../", "././", "zz/y/../../", "/"][how % 5]
    if cut == 0 and extra == "/":
        extra = "./"  # a leading slash would make it absolute
    head, tail = "/".join(parts[:cut]), "/".join(parts[cut:])
    spelled = (head + "/" if head else "") + extra + tail
    return spelled + "/" if how >= 5 else spelled


@given(_GLOBS, _PATHS, st.integers(0, 8), st.integers(0, 11))
def test_a_reported_path_is_judged_by_the_path_it_names(glob: str, path: str, where: int, how: int) -> None:
    """Every spelling of a path (``./``, repeated slashes, ``a/..``, ``/./``, a trailing slash) matches exactly the
    globs the path itself matches, and is in a violation exactly when the path is."""
    spelled = _spellings(path, where, how)
    assert normal_path(spelled) == path, spelled
    assert matches(glob, spelled) is matches(glob, path)
    found = violation([glob], None, [spelled], [])
    assert (found is None) is (violation([glob], None, [path], []) is None)


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("./src/session.js", "src/session.js"),
        ("src//session.js", "src/session.js"),
        ("src/lib/../session.js", "src/session.js"),
        ("src/./session.js/", "src/session.js"),
        ("../src/session.js", None),
        ("src/../../session.js", None),
        ("/src/session.js", None),
        ("src\\session.js", None),
        (".", None),
        ("", None),
        ("src/" + "a" * 1100, None),
    ],
)
def test_a_path_that_names_nothing_inside_the_project_is_inside_no_scope(path: str, normal: str | None) -> None:
    """A reported path is normalised; one that is absolute, climbs out of the project or names the project itself
    matches no glob, not even ``**``."""
    assert normal_path(path) == normal
    assert matches("**", path) is (normal is not None)
    assert matches("src/session.js", path) is (normal == "src/session.js")


def test_no_path_is_compared_with_a_glob_but_through_matches() -> None:
    """The one comparison of a path with a glob is :func:`matches` (which normalises the path): no other function
    of the package calls the segment matcher, and no module matches paths with fnmatch, glob or PurePath.match."""
    import ast
    import importlib
    import pkgutil
    from pathlib import Path

    from tests.project.import_graph import packages

    callers: dict[str, set[str]] = {}
    foreign: list[str] = []
    sources = [
        (f"{name}.{info.name}", Path(package.__path__[0], f"{info.name}.py"))
        for name in packages()
        for package in [importlib.import_module(name)]
        for info in pkgutil.iter_modules(package.__path__)
        if not info.ispkg
    ]
    assert len(sources) > 100, "the walk found too few modules: it is broken"
    for module, path in sources:
        source = path.read_text()
        tree = ast.parse(source)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Name) and node.id in ("_match_segments", "_segment_matches"):
                    callers.setdefault(node.id, set()).add(f"{module}.{function.name}")
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
            if name in ("fnmatch", "fnmatchcase", "full_match") or (
                name == "match" and "PurePath" in source and "Path" in ast.unparse(node)
            ):
                foreign.append(f"{module}: {ast.unparse(node)}")
    scope = "plantrail.ledger.vocabulary.scope"
    assert callers == {"_match_segments": {f"{scope}.matches"}, "_segment_matches": {f"{scope}._match_segments"}}
    assert foreign == []


def _bounded(**step_writes: list[str]) -> dict[str, Any]:
    """A bounded plan: two writable files, three steps, the verify step read-only."""
    writes = {"reproduce": ["test/session.test.js"], "implement": ["src/session.js"], "verify": []} | step_writes
    return {
        "goal": "Reject expired sessions with a regression test",
        "scope": {"writes": ["src/session.js", "test/session.test.js"]},
        "acceptance_criteria": [{"id": "c", "description": "expired sessions get 401"}],
        "steps": [
            {"id": step, "title": step, "completion_evidence": "checkpoint", "writes": globs}
            for step, globs in writes.items()
        ],
    }


def test_bounded_plan_validates_and_keeps_the_read_only_step() -> None:
    """The bounded plan inside its scope validates ("scope: OK"); verify writes nothing."""
    plan = build_plan(parse_draft(_bounded()))
    assert plan.scope is not None and plan.scope.writes == ("src/session.js", "test/session.test.js")
    assert [s.scope for s in plan.steps][2] == StepScope(writes=())


def test_bounded_plan_refuses_every_write_outside_the_task_scope() -> None:
    """Out of scope: each step write outside the task scope is named, all at once."""
    with pytest.raises(PlanInvalid) as caught:
        build_plan(parse_draft(_bounded(implement=["src/**", "package.json"], verify=["docs/x.md"])))
    problems = [(e.code, e.fields["step"], e.fields["path"]) for e in caught.value.errors]
    assert problems == [
        ("SCOPE_OUTSIDE_TASK", "implement", "src/**"),
        ("SCOPE_OUTSIDE_TASK", "implement", "package.json"),
        ("SCOPE_OUTSIDE_TASK", "verify", "docs/x.md"),
    ]


def test_scope_problems_are_reported_with_the_drafts_other_problems() -> None:
    """A draft with a parse problem still names its out-of-scope writes (every problem in one run)."""
    draft = _bounded(implement=["package.json"])
    draft["steps"][0]["max_attempts"] = 0
    with pytest.raises(PlanInvalid) as caught:
        parse_draft(draft)
    assert {e.code for e in caught.value.errors} == {"DRAFT_INVALID", "SCOPE_OUTSIDE_TASK"}


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"writes": "src/x"}, "DRAFT_INVALID"),
        ({"writes": ["../x"]}, "SCOPE_INVALID"),
        ({"allowed_tools": [""]}, "DRAFT_INVALID"),
        ({"requires_approval": "yes"}, "DRAFT_INVALID"),
    ],
)
def test_a_malformed_step_scope_is_refused_with_its_code(change: dict[str, Any], code: str) -> None:
    """writes must be a list of globs, allowed_tools a list of names, requires_approval a boolean."""
    draft = _bounded()
    draft["steps"][0] |= change
    with pytest.raises(PlanInvalid) as caught:
        parse_draft(draft)
    assert caught.value.code == code


def test_a_malformed_task_scope_is_refused() -> None:
    """scope must be an object with reads and writes only."""
    for scope, code in (([], "DRAFT_INVALID"), ({"write": []}, "DRAFT_INVALID"), ({"reads": ["/x"]}, "SCOPE_INVALID")):
        with pytest.raises(PlanInvalid) as caught:
            parse_draft(_bounded() | {"scope": scope})
        assert caught.value.code == code


def test_a_plan_with_scopes_survives_a_snapshot(tmp_path: Any) -> None:
    """A state whose plan declares scopes, tools and approvals encodes and decodes to an equal state."""
    from plantrail.ledger.api import Ledger

    draft = _bounded()
    draft["steps"][1] |= {"allowed_tools": ["Edit"], "requires_approval": True, "reads": ["src/**"]}
    draft["scope"]["reads"] = ["**"]
    with Ledger.create(tmp_path / "run.jsonl", draft, nonce="n", cache=False) as ledger:
        state = ledger.state
    assert decode_state(encode_state(state)) == state
