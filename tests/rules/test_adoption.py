"""``adopt``: a late completion taken into the active version only when it is its attempt's own and the step's
contract is the one it was made under; every other case refused with ADOPT_REFUSED and nothing written; verify
judges each ``step.adopted`` again."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.helpers.logs import lines_of, rechain, write_lines


def _reworded_criterion(draft: dict[str, Any]) -> dict[str, Any]:
    """The draft with only a criterion's wording changed: every step keeps its contract."""
    new = copy.deepcopy(draft)
    new["acceptanceCriteria"][0]["description"] += " on the first try"
    return new


def _late_completion(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> tuple[Ledger, int]:
    """reproduce started in v1, cut off by a replan that kept its contract, then its worker's completion: its seq."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.replan("new_constraint", "the criterion is stricter", plan=_reworded_criterion(draft))
    ack = ledger.complete("reproduce", "saved the failing output to artifacts/login-fail.txt")
    assert ack.orphan == "SUPERSEDED_VERSION"
    return ledger, ack.seq


def test_a_late_completion_of_an_unchanged_step_is_adopted_as_a_new_attempt(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """The step completes in the active version with the late evidence; the late result stays, marked adopted;
    verify accepts the log and still counts the orphan."""
    ledger, late = _late_completion(make_ledger, draft)

    ack = ledger.adopt(late)

    step = ledger.state.steps["reproduce"]
    assert (step.status, step.attempt, step.evidence) == (
        "completed",
        1,
        ("saved the failing output to artifacts/login-fail.txt",),
    )
    [orphan] = ledger.state.orphans
    assert (orphan.seq, orphan.adopted) == (late, ack.seq)
    assert "diagnose" in [s for s, v in ledger.state.steps.items() if v.status == "pending"]
    ledger.close()
    report = verify_log(tmp_path / "run.jsonl")
    assert report.orphans == 1
    with Ledger.open(tmp_path / "run.jsonl") as reopened:
        assert reopened.state.orphans[0].adopted == ack.seq


def test_an_abandoned_attempts_late_completion_is_adopted(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A gone worker's completion (STALE_ATTEMPT) of a step still pending is taken in: it did the work."""
    ledger = make_ledger(draft)
    first = ledger.start("reproduce").seq
    ledger.abandon("reproduce", "its lease expired")
    late = ledger.complete("reproduce", "the output after all", started_seq=first)
    assert late.orphan == "STALE_ATTEMPT"
    ledger.adopt(late.seq)
    assert ledger.state.steps["reproduce"].status == "completed"


def _refusal(ledger: Ledger, path: Path, seq: int) -> str:
    before = path.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        ledger.adopt(seq)
    assert path.read_bytes() == before
    assert caught.value.code == "ADOPT_REFUSED", caught.value
    return caught.value.message


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("no such orphan", "no late result"),
        ("a failure", "only a completion"),
        ("contract changed", "contract changed"),
        ("started again", "in_progress"),
        ("adopted twice", "adopted already"),
        ("ambiguous", "--started-seq"),
        ("not its attempt's own", "not known"),
        ("removed", "has no step"),
    ],
)
def test_adopt_is_refused_unless_every_condition_holds(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path, case: str, says: str
) -> None:
    """Each condition, broken alone, refuses the adoption with ADOPT_REFUSED naming it; the log is unchanged."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    plan = _reworded_criterion(draft)
    if case == "contract changed":
        plan["steps"][0]["title"] = "Reproduce with the auth logs on"
    if case == "removed":
        plan["steps"] = [{**plan["steps"][1], "dependsOn": []}]
    ledger.replan("new_constraint", "a change", plan=plan)
    if case == "a failure":
        seq = ledger.fail("reproduce", "crashed").seq
    elif case == "ambiguous":
        ledger.start("reproduce")
        seq = ledger.complete("reproduce", "whose?").seq
    elif case == "not its attempt's own":
        seq = ledger.complete("reproduce", "late", plan_version=1, attempt=2).seq  # no attempt 2 was cut off
    else:
        seq = ledger.complete("reproduce", "late").seq
    if case == "started again":
        ledger.start("reproduce")
    if case == "adopted twice":
        ledger.adopt(seq)
    if case == "no such orphan":
        seq = 1
    assert says in _refusal(ledger, tmp_path / "run.jsonl", seq)


def test_adopt_is_refused_for_a_step_with_typed_checks(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """A late result is never judged against typed checks, so a step that declares some is started again."""
    checked = copy.deepcopy(draft)
    checked["steps"][0]["checks"] = [
        {"id": "t", "kind": "command_exit", "command": "npm test", "expected_exit_code": 1}
    ]
    ledger, late = _late_completion(make_ledger, checked)
    assert "typed checks" in _refusal(ledger, tmp_path / "run.jsonl", late)


def test_adopt_waits_for_the_steps_dependencies(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """A late completion of a step whose dependencies are not completed in the active version is refused."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", "done")
    ledger.start("diagnose")
    changed = _reworded_criterion(draft)
    changed["steps"][0]["title"] = "Reproduce it again"  # reproduce's work is lost: diagnose must wait for it
    ledger.replan("new_constraint", "reproduce again", plan=changed)
    late = ledger.complete("diagnose", "the cause").seq
    assert "waits for unfinished dependencies: reproduce" in _refusal(ledger, tmp_path / "run.jsonl", late)


def test_a_hand_made_adoption_of_a_changed_step_fails_verify(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """verify judges each step.adopted again: the replan edited to change the step's title makes it illegal."""
    ledger, late = _late_completion(make_ledger, draft)
    ledger.adopt(late)
    ledger.close()
    path = tmp_path / "run.jsonl"
    lines = lines_of(path)
    replan = next(i for i, line in enumerate(lines) if b'"plan.replanned"' in line)
    edited = lines[replan].replace(b'"title":"Reproduce the login failure"', b'"title":"Something else"', 1)
    assert edited != lines[replan]
    write_lines(path, rechain([*lines[:replan], edited, *lines[replan + 1 :]], replan))
    with pytest.raises(PlantrailError) as caught:
        verify_log(path)
    assert caught.value.code == "ILLEGAL_EVENT" and "ADOPT_REFUSED" in caught.value.message


def test_adopt_on_the_command_line_and_orphans_shows_it(
    tmp_path: Path, draft: dict[str, Any], run_cli: Callable[..., Any]
) -> None:
    """`plantrail adopt LOG SEQ` records step.adopted; `orphans` marks the late result adopted; a refusal exits 1
    with its code and leaves the log as it was."""
    (tmp_path / "d.json").write_text(json.dumps(draft))
    (tmp_path / "d2.json").write_text(json.dumps(_reworded_criterion(draft)))
    log = tmp_path / "run.jsonl"
    for argv in (
        ["create", log, "--plan", tmp_path / "d.json"],
        ["start", log, "reproduce"],
        ["replan", log, "--plan", tmp_path / "d2.json", "--reason", "new_constraint", "--why", "stricter"],
        ["complete", log, "reproduce", "-e", "the failing output"],
    ):
        assert run_cli(*argv).code == 0, argv
    adopted = run_cli("adopt", log, "4", "--json")
    assert adopted.code == 0 and adopted.json()["seq"] == 5
    orphans = run_cli("orphans", log)
    assert "adopted at seq 5" in orphans.out and "taken into the plan by plantrail adopt" in orphans.out
    assert run_cli("orphans", log, "--json").json()["orphans"][0]["adopted"] == 5
    before = log.read_bytes()
    again = run_cli("adopt", log, "4")
    assert again.code == 1 and again.err.startswith("error[ADOPT_REFUSED]: ") and log.read_bytes() == before
