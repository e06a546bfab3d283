"""Plan drafts: parsing, validation codes, the stable topological order, and patches."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from plantrail.ledger.vocabulary.errors import MAX_PROBLEMS, PlanInvalid
from plantrail.ledger.vocabulary.plan import (
    CriterionSpec,
    Policy,
    StepSpec,
    apply_patch,
    build_plan,
    parse_draft,
    parse_patch,
    topo_order,
    validate_plan,
)
from tests.conftest import LOGIN_DRAFT


def _plan(raw: dict[str, Any]) -> Any:
    return build_plan(parse_draft(raw))


def _refused(raw: dict[str, Any]) -> PlanInvalid:
    with pytest.raises(PlanInvalid) as info:
        _plan(raw)
    return info.value


def _step(step_id: str, *deps: str) -> dict[str, Any]:
    return {"id": step_id, "title": f"do {step_id}", "depends_on": list(deps), "completion_evidence": "output"}


def _draft(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"goal": "g", "acceptance_criteria": [{"id": "c", "description": "d"}], "steps": list(steps)}


def test_camel_and_snake_case_drafts_give_the_same_plan() -> None:
    """The camelCase keys and the snake_case keys parse to identical plans."""
    snake = {
        "goal": LOGIN_DRAFT["goal"],
        "acceptance_criteria": LOGIN_DRAFT["acceptanceCriteria"],
        "steps": [
            {
                "id": s["id"],
                "title": s["title"],
                "depends_on": s["dependsOn"],
                "completion_evidence": s["completionEvidence"],
            }
            for s in LOGIN_DRAFT["steps"]
        ],
    }
    assert _plan(copy.deepcopy(LOGIN_DRAFT)) == _plan(snake)


def test_defaults_fill_max_attempts_and_the_one_focus_policy() -> None:
    """A step defaults to 3 attempts and the policy to one step in progress at a time."""
    plan = _plan(_draft(_step("a")))
    assert plan.steps[0].max_attempts == 3
    assert plan.policy == Policy(max_in_progress=1)


def test_unlimited_policy_is_accepted() -> None:
    """max_in_progress may be "unlimited" because real agents run several steps at once."""
    raw = _draft(_step("a")) | {"policy": {"max_in_progress": "unlimited"}}
    assert _plan(raw).policy.max_in_progress is None


def test_text_is_trimmed() -> None:
    """Titles and evidence requirements are stored trimmed, so contracts compare on content."""
    raw = _draft({"id": "a", "title": "  Inspect  ", "completion_evidence": " files read\n"})
    step = _plan(raw).steps[0]
    assert (step.title, step.completion_evidence) == ("Inspect", "files read")


@pytest.mark.parametrize(
    ("raw", "code", "ids"),
    [
        (_draft(), "EMPTY_PLAN", None),
        ({"goal": "g", "steps": [_step("a")]}, "NO_ACCEPTANCE_CRITERIA", None),
        (_draft(_step("a"), _step("a")), "DUPLICATE_STEP_ID", ["a"]),
        (
            {
                "goal": "g",
                "acceptance_criteria": [{"id": "c", "description": "x"}, {"id": "c", "description": "y"}],
                "steps": [_step("a")],
            },
            "DUPLICATE_CRITERION_ID",
            ["c"],
        ),
        (_draft(_step("a", "ghost")), "UNKNOWN_DEPENDENCY", ["ghost"]),
        (_draft(_step("a", "a")), "SELF_DEPENDENCY", ["a"]),
        (
            _draft(_step("a", "c"), _step("b", "a"), _step("c", "b"), _step("d", "c")),
            "DEPENDENCY_CYCLE",
            ["a", "b", "c"],
        ),
        (_draft({"id": "a", "title": "  ", "completion_evidence": "x"}), "BLANK_FIELD", None),
        (_draft({"id": "a", "title": "t", "completion_evidence": ""}), "BLANK_FIELD", None),
        (_draft({"id": "bad id", "title": "t", "completion_evidence": "x"}), "INVALID_ID", None),
        (_draft({"id": "a\nb", "title": "t", "completion_evidence": "x"}), "INVALID_ID", None),
        (_draft({"id": "a", "title": "t", "completion_evidence": "x", "extra": 1}), "DRAFT_INVALID", ["extra"]),
        (_draft({"id": "a", "title": "t", "completion_evidence": "x", "max_attempts": 0}), "DRAFT_INVALID", None),
    ],
)
def test_invalid_drafts_are_refused_with_a_stable_code_naming_the_ids(
    raw: dict[str, Any], code: str, ids: list[str] | None
) -> None:
    """Every draft defect has its own code, the error names the offending ids, and one defect is one error."""
    exc = _refused(raw)
    assert exc.code == code
    assert exc.errors == (exc,)
    if ids is not None:
        assert exc.fields["ids"] == ids


def test_a_cycle_is_named_by_the_steps_on_it_not_its_downstream() -> None:
    """DEPENDENCY_CYCLE names only the steps on the cycle, in order, not the steps that merely follow it."""
    exc = _refused(_draft(_step("x", "z"), _step("y", "x"), _step("z", "y"), _step("after", "z")))
    assert exc.fields["ids"] == ["x", "y", "z"]
    assert "x -> y -> z -> x" in exc.message


def test_topological_order_breaks_ties_by_id() -> None:
    """Among ready steps the smallest id comes first, whatever the draft order."""
    steps = [StepSpec(i, i, d, "e") for i, d in [("b", ()), ("a", ()), ("d", ("a",)), ("c", ("b",))]]
    assert topo_order(steps) == ("a", "b", "c", "d")
    assert topo_order(list(reversed(steps))) == ("a", "b", "c", "d")


def test_ten_thousand_steps_and_a_ten_thousand_long_chain_validate() -> None:
    """Validation is iterative: a 10,000-step draft and a 10,000-long chain need no recursion."""
    chain = _draft(*[_step(f"s{i:05d}", *([f"s{i - 1:05d}"] if i else [])) for i in range(10_000)])
    assert len(_plan(chain).steps) == 10_000
    wide = _draft(*[_step(f"w{i}") for i in range(10_000)])
    assert len(validate_plan(_plan(wide))) == 10_000


def test_a_ten_thousand_long_cycle_is_found_without_recursion() -> None:
    """A cycle through 10,000 steps is reported, with every step on it."""
    steps = [_step(f"s{i:05d}", f"s{(i - 1) % 10_000:05d}") for i in range(10_000)]
    assert len(_refused(_draft(*steps)).fields["ids"]) == 10_000


def test_a_patch_adds_replaces_removes_and_sets_policy() -> None:
    """Patch operations apply in order to the base version and give the whole next plan."""
    base = _plan(_draft(_step("a"), _step("b", "a"), _step("c")))
    patch = parse_patch(
        {
            "base_version": 1,
            "operations": [
                {"op": "add_step", "step": _step("d", "b")},
                {"op": "replace_step", "step_id": "b", "step": {**_step("b2", "a"), "title": "do b better"}},
                {"op": "remove_step", "step_id": "c"},
                {"op": "add_criterion", "criterion": {"id": "c2", "description": "more"}},
                {"op": "set_policy", "policy": {"max_in_progress": 2}},
            ],
        }
    )
    plan = apply_patch(base, patch)
    assert [s.id for s in plan.steps] == ["a", "b2", "d"]
    assert next(s for s in plan.steps if s.id == "d").depends_on == ("b2",)  # the renamed step keeps its dependents
    assert [c.id for c in plan.acceptance_criteria] == ["c", "c2"]
    assert plan.policy.max_in_progress == 2


def test_a_patch_that_leaves_a_dangling_dependency_is_refused() -> None:
    """Removing a step others depend on fails validation of the patched plan."""
    base = _plan(_draft(_step("a"), _step("b", "a")))
    patch = parse_patch({"base_version": 1, "operations": [{"op": "remove_step", "step_id": "a"}]})
    with pytest.raises(PlanInvalid) as info:
        apply_patch(base, patch)
    assert info.value.code == "UNKNOWN_DEPENDENCY"


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "remove_step", "step_id": "zzz"}],
        [{"op": "add_step", "step": _step("a")}],
        [{"op": "replace_criterion", "criterion_id": "nope", "criterion": {"id": "x", "description": "y"}}],
        [{"op": "explode"}],
    ],
)
def test_impossible_patch_operations_are_refused(operations: list[dict[str, Any]]) -> None:
    """An operation that names a missing id, re-adds an existing one, or is unknown is PATCH_INVALID."""
    base = _plan(_draft(_step("a")))
    with pytest.raises(PlanInvalid) as info:
        apply_patch(base, parse_patch({"base_version": 1, "operations": operations}))
    assert info.value.code == "PATCH_INVALID"


def test_step_contract_compares_dependencies_as_a_set() -> None:
    """Reordering depends_on does not change a step's contract."""
    assert StepSpec("s", "t", ("a", "b"), "e").contract() == StepSpec("s", "t", ("b", "a"), "e", 5).contract()


def test_criterion_spec_is_immutable() -> None:
    """Plan values are frozen."""
    with pytest.raises(AttributeError):
        CriterionSpec("c", "d").description = "other"  # type: ignore[misc]


def test_every_problem_of_a_draft_is_reported_at_once() -> None:
    """A draft with several defects lists them all in errors, in draft order; the error itself is the first."""
    raw = {
        "goal": "g",
        "acceptance_criteria": [],
        "steps": [
            {"id": "a", "title": " ", "completion_evidence": "x"},
            {"id": "b", "title": "B", "depends_on": ["a", "revew"], "completion_evidence": ""},
            _step("review", "c"),
            {**_step("c", "review"), "dependson": []},
        ],
    }
    exc = _refused(raw)
    codes = [e.code for e in exc.errors]
    assert codes == [
        "BLANK_FIELD",
        "BLANK_FIELD",
        "DRAFT_INVALID",
        "NO_ACCEPTANCE_CRITERIA",
        "UNKNOWN_DEPENDENCY",
        "DEPENDENCY_CYCLE",
    ]
    assert exc is exc.errors[0] and exc.fields["path"] == "steps[0].title"
    assert all(isinstance(e, PlanInvalid) for e in exc.errors)


def test_a_draft_that_parses_reports_every_graph_problem() -> None:
    """Duplicate ids, unknown and self dependencies and a cycle elsewhere are all reported together."""
    exc = _refused(_draft(_step("a", "a"), _step("b", "ghost"), _step("x", "y"), _step("y", "x"), _step("b")))
    assert [e.code for e in exc.errors] == [
        "DUPLICATE_STEP_ID",
        "SELF_DEPENDENCY",
        "UNKNOWN_DEPENDENCY",
        "DEPENDENCY_CYCLE",
    ]
    assert exc.errors[-1].fields["ids"] == ["x", "y"]


def test_a_failed_step_still_counts_as_known_to_its_dependents() -> None:
    """A step with a blank title is not reported again as an unknown dependency of the steps after it."""
    exc = _refused(_draft({"id": "a", "title": "", "completion_evidence": "x"}, _step("b", "a")))
    assert [e.code for e in exc.errors] == ["BLANK_FIELD"]


def test_unknown_names_suggest_the_closest_one() -> None:
    """A mistyped dependency, draft key or patch target names the closest real one in the message."""
    assert "(did you mean review?)" in _refused(_draft(_step("review"), _step("b", "revew"))).message
    assert "(did you mean depends_on?)" in _refused(_draft({**_step("a"), "depends_onn": []})).message
    base = _plan(_draft(_step("review")))
    with pytest.raises(PlanInvalid) as info:
        apply_patch(base, parse_patch({"base_version": 1, "operations": [{"op": "remove_step", "step_id": "reviw"}]}))
    assert "(did you mean review?)" in info.value.message and info.value.code == "PATCH_INVALID"


def test_a_patch_reports_every_operation_that_cannot_apply() -> None:
    """Two impossible operations in one patch are both reported; the possible ones between them still apply."""
    base = _plan(_draft(_step("a")))
    operations = [
        {"op": "remove_step", "step_id": "zzz"},
        {"op": "add_step", "step": _step("b")},
        {"op": "add_step", "step": _step("a")},
    ]
    with pytest.raises(PlanInvalid) as info:
        apply_patch(base, parse_patch({"base_version": 1, "operations": operations}))
    assert [e.code for e in info.value.errors] == ["PATCH_INVALID", "PATCH_INVALID"]
    assert "operations[2]" in info.value.errors[1].message


def test_a_patch_that_does_not_parse_reports_every_operation() -> None:
    """Every malformed operation of a patch is reported, not only the first."""
    with pytest.raises(PlanInvalid) as info:
        parse_patch({"base_version": 0, "operations": [{"op": "explode"}, {"op": "remove_step"}]})
    assert [e.fields.get("path") for e in info.value.errors] == [
        "patch.base_version",
        "operations[0]",
        "operations[1].step_id",
    ]


@pytest.mark.parametrize("what", ["draft", "patch"])
def test_validation_lists_at_most_a_hundred_problems_and_says_there_were_more(what: str) -> None:
    """A draft or patch of a thousand bad items is refused with the first MAX_PROBLEMS problems, the first
    carrying ``more_problems``; the items past them are not looked at."""
    with pytest.raises(PlanInvalid) as caught:
        if what == "draft":
            parse_draft({**LOGIN_DRAFT, "steps": [0] * 1000})
        else:
            parse_patch({"base_version": 1, "operations": [0] * 1000})
    assert len(caught.value.errors) == MAX_PROBLEMS
    assert caught.value.fields["more_problems"] >= 1
    assert all(e.__traceback__ is None for e in caught.value.errors[1:])
