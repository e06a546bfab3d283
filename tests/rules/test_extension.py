"""Extending a plan version in place (plan.extended): what it records, how state and views see it, every refusal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import check
from plantrail.ledger.rules.extension import touched
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import PlanExtended
from plantrail.ledger.vocabulary.extension import parse_additions
from plantrail.ledger.vocabulary.plan import CriterionSpec, StepSpec
from plantrail.projections.canonical import state_hash
from plantrail.projections.history import history, versions_view
from plantrail.projections.state import evolve, fold
from tests.conftest import CliResult
from tests.logs import read_records

TEST_STEP = StepSpec("test", "Run the login test", ("diagnose",), "the test output")


def _refused(log: Path, code: str, call: Callable[[], object]) -> None:
    """Assert that ``call`` raises ``code`` and leaves the log's bytes as they were."""
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as raised:
        call()
    assert raised.value.code == code
    assert log.read_bytes() == before


def test_an_extension_adds_pending_steps_and_criteria_to_the_same_version(
    tmp_path: Path, make_ledger: Callable[..., Ledger]
) -> None:
    """Extending an untouched version appends its steps (pending) and criteria; the version number stays."""
    ledger = make_ledger()
    ledger.extend(steps=TEST_STEP, criteria=CriterionSpec("docs", "the docs say so"))
    state = ledger.state

    assert state.version == 1
    assert [s.id for s in state.plan.steps] == ["reproduce", "diagnose", "test"]  # type: ignore[union-attr]
    assert state.steps["test"].status == "pending" and state.steps["test"].attempt == 0
    assert list(state.criteria) == ["login-test-passes", "docs"]
    assert state.adopted is not None and state.adopted.plan == state.plan and state.adopted.extended == (2,)
    record = read_records(tmp_path / "run.jsonl")[-1]
    assert record.type == "plan.extended" and record.v == 2 and record.plan_version == 1


def test_an_extended_log_verifies_and_folds_to_the_state_the_ledger_holds(
    tmp_path: Path, make_ledger: Callable[..., Ledger]
) -> None:
    """verify replays an extension's rule, and a fold of the log (evolve record by record too) gives the same state."""
    ledger = make_ledger()
    ledger.extend(steps=TEST_STEP)
    ledger.start("reproduce")
    records = read_records(tmp_path / "run.jsonl")
    state = fold(records)
    one_by_one = ledger.state.__class__()
    for record in records:
        one_by_one = evolve(one_by_one, record)

    assert state_hash(state) == state_hash(one_by_one) == state_hash(ledger.state)
    assert verify_log(tmp_path / "run.jsonl").state_hash == state_hash(state)


def test_a_version_touched_by_any_work_is_not_extended(tmp_path: Path, make_ledger: Callable[..., Ledger]) -> None:
    """After a start, a result, a verdict or a pause, extending is VERSION_TOUCHED and nothing is written."""
    log = tmp_path / "run.jsonl"
    ledger = make_ledger()
    ledger.start("reproduce")
    _refused(log, "VERSION_TOUCHED", lambda: ledger.extend(steps=TEST_STEP))

    other = make_ledger(name="verdict.jsonl")
    other.verify_criterion("login-test-passes", passed=False, evidence="still fails")
    _refused(tmp_path / "verdict.jsonl", "VERSION_TOUCHED", lambda: other.extend(steps=TEST_STEP))

    paused = make_ledger(name="paused.jsonl")
    paused.finish("paused", "lunch")
    _refused(tmp_path / "paused.jsonl", "VERSION_TOUCHED", lambda: paused.extend(steps=TEST_STEP))


def test_a_new_version_can_be_extended_until_work_touches_it(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A replan makes a fresh, untouched version: it may be extended, and two extensions in a row both apply."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", "saved failing test output")
    ledger.replan("agent_revision", "more to do", plan=draft | {"goal": None})
    ledger.extend(steps=TEST_STEP)
    ledger.extend(steps=StepSpec("docs", "Document it", (), "the docs"))

    assert ledger.state.version == 2
    assert list(ledger.state.steps) == ["docs", "reproduce", "diagnose", "test"]  # the stable order
    assert ledger.state.steps["reproduce"].status == "completed"  # the replan kept it; extensions never touch it


def test_an_extension_that_repeats_an_id_or_breaks_the_plan_is_refused(
    tmp_path: Path, make_ledger: Callable[..., Ledger]
) -> None:
    """An id the version has is STEP_EXISTS / CRITERION_EXISTS; an unknown dependency fails validation; an empty
    extension is USAGE."""
    log = tmp_path / "run.jsonl"
    ledger = make_ledger()
    again = StepSpec("diagnose", "Diagnose again", (), "notes")
    _refused(log, "STEP_EXISTS", lambda: ledger.extend(steps=again))
    criterion = CriterionSpec("login-test-passes", "again")
    _refused(log, "CRITERION_EXISTS", lambda: ledger.extend(criteria=criterion))
    orphan = StepSpec("deploy", "Deploy", ("ghost",), "the deploy log")
    _refused(log, "UNKNOWN_DEPENDENCY", lambda: ledger.extend(steps=orphan))
    _refused(log, "USAGE", lambda: ledger.extend(steps=()))


def test_an_extension_of_a_superseded_version_is_stale(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """An extension against an older version is STALE_PLAN_VERSION; against a future one, UNKNOWN_PLAN_VERSION."""
    log = tmp_path / "run.jsonl"
    ledger = make_ledger()
    ledger.replan("agent_revision", "again", plan=draft | {"goal": None})
    _refused(log, "STALE_PLAN_VERSION", lambda: ledger.extend(steps=TEST_STEP, plan_version=1))
    _refused(log, "UNKNOWN_PLAN_VERSION", lambda: ledger.extend(steps=TEST_STEP, plan_version=3))


def test_the_rule_is_a_pure_function_of_the_state(tmp_path: Path, make_ledger: Callable[..., Ledger]) -> None:
    """``touched`` turns true with the first start; check() refuses the same event then (as verify replays it)."""
    ledger = make_ledger()
    event = PlanExtended(steps=(TEST_STEP,))
    assert not touched(ledger.state)
    assert check(ledger.state, event, 1) is None
    ledger.start("reproduce")

    assert touched(ledger.state)
    with pytest.raises(PlantrailError) as raised:
        check(ledger.state, event, 1)
    assert raised.value.code == "VERSION_TOUCHED"


def test_a_retried_extension_with_its_key_writes_nothing(tmp_path: Path, make_ledger: Callable[..., Ledger]) -> None:
    """The same extension under the same idempotency key is acknowledged as a duplicate; other content conflicts."""
    ledger = make_ledger()
    first = ledger.extend(steps=TEST_STEP, idempotency_key="more")
    second = ledger.extend(steps=TEST_STEP, idempotency_key="more")
    assert second.duplicate and second.seq == first.seq
    other = StepSpec("docs", "Document it", (), "the docs")
    _refused(tmp_path / "run.jsonl", "IDEMPOTENCY_CONFLICT", lambda: ledger.extend(steps=other, idempotency_key="more"))


def test_history_shows_each_version_with_its_extensions(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A superseded version's history entry is the version as extended; versions --json counts and names them."""
    ledger = make_ledger()
    ledger.extend(steps=TEST_STEP)
    ledger.start("reproduce")
    ledger.replan("agent_revision", "drop the test step", plan=draft | {"goal": None})
    log = history(read_records(tmp_path / "run.jsonl"))
    view = versions_view(log)

    assert [s.id for s in log.versions[0].plan.steps] == ["reproduce", "diagnose", "test"]
    assert (view[0]["steps"], view[0]["extended"], view[1]["extended"]) == (3, [2], [])
    assert [c["step"] for c in view[1]["changes"]["removed"]] == ["test"]


def test_an_extension_document_is_a_patch_of_additions_or_the_draft_shapes() -> None:
    """parse_additions takes add_step/add_criterion patches (with their base version) or steps and criteria;
    any other operation is PATCH_INVALID, a goal or policy DRAFT_INVALID."""
    step = {"id": "test", "title": "Run it", "completion_evidence": "output", "depends_on": ["diagnose"]}
    patch = parse_additions({"base_version": 2, "operations": [{"op": "add_step", "step": step}]})
    plain = parse_additions({"steps": [step], "acceptance_criteria": [{"id": "c", "description": "d"}]})

    assert (patch.steps[0].id, patch.criteria, patch.base_version) == ("test", (), 2)
    assert (plain.steps[0].id, plain.criteria[0].id, plain.base_version) == ("test", "c", None)
    for raw, code in (
        ({"base_version": 1, "operations": [{"op": "remove_step", "step_id": "a"}]}, "PATCH_INVALID"),
        ({"goal": "another", "steps": [step]}, "DRAFT_INVALID"),
    ):
        with pytest.raises(PlantrailError) as raised:
            parse_additions(raw)
        assert raised.value.code == code


def test_the_cli_extends_and_prints_each_refusal_with_its_code(
    tmp_path: Path,
    run_cli: Callable[..., CliResult],
    write_json: Callable[[str, Any], Path],
    draft: dict[str, Any],
) -> None:
    """plantrail extend records the extension (exit 0) and refuses a touched version with error[VERSION_TOUCHED]."""
    log = tmp_path / "run.jsonl"
    assert run_cli("create", log, "--plan", write_json("draft.json", draft)).code == 0
    more = write_json("more.json", {"steps": [{"id": "test", "title": "Run it", "completion_evidence": "output"}]})
    done = run_cli("extend", log, more, "--json")
    assert done.code == 0 and json.loads(done.out)["seq"] == 2
    assert run_cli("start", log, "reproduce").code == 0
    again = write_json("again.json", {"steps": [{"id": "docs", "title": "Docs", "completion_evidence": "docs"}]})
    before = log.read_bytes()
    refused = run_cli("extend", log, again)

    assert refused.code == 1 and refused.err.startswith("error[VERSION_TOUCHED]: ") and "Traceback" not in refused.err
    assert log.read_bytes() == before


def test_a_forked_run_is_never_extended_in_place(tmp_path: Path, make_ledger: Callable[..., Ledger]) -> None:
    """A fork carries the parent's seqs, which its own do not continue: its versions count as touched."""
    make_ledger().close()
    with Ledger.fork(tmp_path / "run.jsonl", tmp_path / "fork.jsonl", version=1, fsync="none") as fork:
        assert touched(fork.state)
        _refused(tmp_path / "fork.jsonl", "VERSION_TOUCHED", lambda: fork.extend(steps=TEST_STEP))
