"""A bare str where a sequence of strings is expected is one item, at every public entry that takes one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Complete, Replan
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.items import as_items
from plantrail.ledger.vocabulary.plan import StepSpec, build_plan, parse_draft


def _records(path: Path) -> list[Any]:
    with LogReader(path) as reader:
        return list(reader.records())


@pytest.mark.parametrize(
    ("value", "expected"),
    [("pytest: ok", ("pytest: ok",)), (["a", "b"], ("a", "b")), (("a",), ("a",)), ([], ()), (iter(["x"]), ("x",))],
)
def test_a_bare_string_is_one_item_and_other_iterables_keep_their_items(value: Any, expected: tuple[str, ...]) -> None:
    """as_items turns a str into a tuple of one and any other iterable of strings into a tuple of its items."""
    assert as_items(value, str, "evidence") == expected


def test_a_bare_int_is_one_seq() -> None:
    """For seqs, a bare int is one item and a list keeps its order."""
    assert (as_items(3, int, "causes"), as_items([5, 3], int, "causes")) == ((3,), (5, 3))


@pytest.mark.parametrize(
    ("value", "item"),
    [(b"bytes", str), ({"a": 1}, str), (7, str), (["ok", 7], str), ("3", int), ([True], int), (None, str)],
)
def test_values_that_are_no_sequence_of_the_item_type_are_usage_errors(value: Any, item: type[Any]) -> None:
    """Bytes, mappings, numbers for text, text for seqs and booleans are refused with USAGE naming the argument."""
    with pytest.raises(PlantrailError) as caught:
        as_items(value, item, "evidence")
    assert caught.value.code == "USAGE"
    assert "evidence" in caught.value.message


def test_ledger_complete_records_a_string_of_evidence_as_one_item(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """Ledger.complete(step, "pytest: ok") stores ["pytest: ok"], not one item per character."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", "pytest: ok")
    assert ledger.state.steps["reproduce"].evidence == ("pytest: ok",)
    assert _records(tmp_path / "run.jsonl")[-1].data.evidence == ("pytest: ok",)


def test_ledger_replan_takes_one_observation_and_one_cause(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """replan(observations="...", causes=1) records one observation with spaces and one cause."""
    ledger = make_ledger()
    ledger.replan("agent_revision", "split the work", plan=draft, observations="the auth service is down", causes=1)
    data = _records(tmp_path / "run.jsonl")[-1].data
    assert (data.observations, data.causes) == (("the auth service is down",), (1,))


def test_a_blank_string_of_evidence_is_evidence_required_not_split(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """A blank str is one blank item: EVIDENCE_REQUIRED, and the log is unchanged."""
    ledger = make_ledger()
    ledger.start("reproduce")
    before = (tmp_path / "run.jsonl").read_bytes()
    with pytest.raises(PlantrailError) as caught:
        ledger.complete("reproduce", "   ")
    assert caught.value.code == "EVIDENCE_REQUIRED"
    assert (tmp_path / "run.jsonl").read_bytes() == before


def test_the_command_classes_take_a_bare_string_as_one_item(draft: dict[str, Any]) -> None:
    """Complete(evidence=str) and Replan(observations=str, causes=int) hold tuples of one item."""
    assert Complete(step="s", evidence="pytest: ok").evidence == ("pytest: ok",)
    replan = Replan(reason="agent_revision", why="w", plan=parse_draft(draft), observations="one two", causes=2)
    assert (replan.observations, replan.causes) == (("one two",), (2,))


def test_a_command_refuses_evidence_that_is_not_text() -> None:
    """Complete with a number for evidence is a USAGE error, not an AttributeError from deep inside."""
    with pytest.raises(PlantrailError) as caught:
        Complete(step="s", evidence=[1])  # type: ignore[list-item]
    assert caught.value.code == "USAGE"


def test_a_draft_step_may_name_its_one_dependency_as_a_string(draft: dict[str, Any]) -> None:
    """In a draft, "depends_on": "reproduce" is one dependency, as ["reproduce"] is."""
    draft["steps"][1]["dependsOn"] = "reproduce"
    assert parse_draft(draft).steps[1].depends_on == ("reproduce",)


def test_a_draft_dependency_list_of_non_strings_is_draft_invalid(draft: dict[str, Any]) -> None:
    """A draft's depends_on that is neither an id nor a list of ids is DRAFT_INVALID naming where."""
    draft["steps"][1]["dependsOn"] = {"reproduce": True}
    with pytest.raises(PlantrailError) as caught:
        parse_draft(draft)
    assert (caught.value.code, caught.value.fields["path"]) == ("DRAFT_INVALID", "steps[1]")


def test_a_step_spec_built_in_python_takes_a_string_dependency() -> None:
    """StepSpec(depends_on="a") depends on step a, and the plan validates and orders it."""
    steps = (StepSpec("a", "first", (), "out"), StepSpec("b", "second", "a", "out"))  # type: ignore[arg-type]
    assert steps[1].depends_on == ("a",)
    draft = parse_draft({"goal": "g", "acceptance_criteria": [{"id": "c", "description": "d"}]})
    plan = build_plan(replace(draft, steps=steps))
    assert [s.depends_on for s in plan.steps] == [(), ("a",)]


@pytest.mark.parametrize(
    "record",
    [
        lambda ledger: ledger.verify_criterion("login-test-passes", True, ["pytest: ok"]),
        lambda ledger: ledger.block("reproduce", ["no access"]),
        lambda ledger: ledger.fail("reproduce", None),
        lambda ledger: ledger.finish("paused", 3),
        lambda ledger: ledger.replan("agent_revision", ["why"], plan=None),
    ],
    ids=["criterion evidence", "block reason", "fail error", "finish reason", "replan why"],
)
def test_a_list_or_other_value_where_one_text_is_expected_is_refused(
    make_ledger: Callable[..., Ledger], tmp_path: Path, record: Callable[[Ledger], Any], request: pytest.FixtureRequest
) -> None:
    """Where one text is expected, anything but a str is INVALID_ARGUMENT naming the argument, and the log is
    unchanged."""
    ledger = make_ledger()
    ledger.start("reproduce")
    before = (tmp_path / "run.jsonl").read_bytes()
    with pytest.raises(PlantrailError) as caught:
        record(ledger)
    parameter = request.node.callspec.id.split()[-1]
    assert (caught.value.code, caught.value.fields["parameter"]) == ("INVALID_ARGUMENT", parameter)
    assert "takes a text (str)" in caught.value.message
    assert (tmp_path / "run.jsonl").read_bytes() == before
