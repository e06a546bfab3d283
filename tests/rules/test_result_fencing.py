"""Which attempt a result belongs to: named exactly by the seq of its start, or, named by nothing, the one attempt
it can be; a result that could be more than one attempt's is kept as AMBIGUOUS_ATTEMPT, and no result is refused
only because it did not say which version it worked on."""

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
from plantrail.projections.canonical import state_hash
from plantrail.projections.state_json import decode_state, encode_state
from tests.helpers.logs import lines_of, rechain, write_lines


def _retitled(draft: dict[str, Any], title: str = "Reproduce it with the auth logs on") -> dict[str, Any]:
    new = copy.deepcopy(draft)
    new["steps"][0]["title"] = title
    return new


def _cut_off(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> tuple[Ledger, int]:
    """A run whose step ``reproduce`` was started in v1 and reset by a replan while it ran; the seq of its start."""
    ledger = make_ledger(draft)
    started = ledger.start("reproduce").seq
    ledger.replan("failed_assumption", "need the auth logs", plan=_retitled(draft))
    return ledger, started


def test_a_start_acknowledges_its_attempt_and_the_seq_a_result_names_it_by(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Every start's acknowledgement gives its attempt and started_seq, the seq of its step.started."""
    ledger = make_ledger(draft)
    ack = ledger.start("reproduce")
    first = ledger.acknowledgement(ack)
    ledger.fail("reproduce", "timed out")
    again = ledger.start("reproduce")
    second = ledger.acknowledgement(again)
    assert (first["attempt"], first["started_seq"]) == (1, ack.seq)
    assert (second["attempt"], second["started_seq"]) == (2, again.seq)


def test_an_unnamed_result_of_a_cut_off_attempt_lands_on_the_orphan_path_stamped_with_its_own_attempt(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A superseded worker that says neither version nor attempt is recorded as its v1 attempt's late result."""
    ledger, _ = _cut_off(make_ledger, draft)
    before = ledger.state

    ack = ledger.complete("reproduce", "the old run's output")

    assert ack.orphan == "SUPERSEDED_VERSION"
    orphan = ledger.state.orphans[-1]
    assert (orphan.plan_version, orphan.attempt, orphan.active_version) == (1, 1, 2)
    assert ledger.state.steps["reproduce"] == before.steps["reproduce"]
    assert ledger.state.cut_off == ()  # its result came: the attempt is no longer awaited


def test_an_attempt_number_alone_finds_the_version_it_was_started_in(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """``attempt=1`` after a replan reset the step is v1's attempt 1, not a refusal for v2 having none."""
    ledger, _ = _cut_off(make_ledger, draft)
    ack = ledger.fail("reproduce", "crashed", attempt=1)
    assert ack.orphan == "SUPERSEDED_VERSION"
    assert ledger.state.orphans[-1][3:5] == (1, 1)


def test_an_unnamed_result_that_could_be_two_attempts_is_kept_as_ambiguous(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """When the step started again since a replan cut an attempt off, a result naming nothing is neither
    attempt's: it is kept on the orphan path as AMBIGUOUS_ATTEMPT (attempt 0), and both attempts still await."""
    ledger, _ = _cut_off(make_ledger, draft)
    ledger.start("reproduce")
    before = ledger.state

    ack = ledger.complete("reproduce", "whose output is this?")

    assert ack.orphan == "AMBIGUOUS_ATTEMPT"
    orphan = ledger.state.orphans[-1]
    assert (orphan.plan_version, orphan.attempt, orphan.why) == (2, 0, "AMBIGUOUS_ATTEMPT")
    assert ledger.state.steps == before.steps and ledger.state.cut_off == before.cut_off
    line = json.loads(lines_of(tmp_path / "run.jsonl")[-1])
    assert (line["v"], line["data"]["attempt"], line["data"]["ambiguous"]) == (2, 0, True)


def test_a_result_named_by_its_start_is_exactly_that_attempts(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """--started-seq tells v1's attempt 1 from v2's attempt 1: the old one lands late, the new one applies."""
    ledger, old = _cut_off(make_ledger, draft)
    new = ledger.start("reproduce").seq

    late = ledger.complete("reproduce", "old output", started_seq=old)
    applied = ledger.complete("reproduce", "new output", started_seq=new)

    assert (late.orphan, applied.orphan) == ("SUPERSEDED_VERSION", None)
    assert ledger.state.orphans[-1][3:5] == (1, 1)
    assert ledger.state.steps["reproduce"].status == "completed"


def test_an_unnamed_result_for_a_step_a_replan_removed_while_it_ran_is_kept(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A step removed while in progress has no step to refuse the result for: its worker's result lands late."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", "done")
    ledger.start("diagnose")
    removal = {"base_version": 1, "operations": [{"op": "remove_step", "step_id": "diagnose"}]}
    ledger.replan("user_request", "diagnose elsewhere", patch=removal)

    ack = ledger.complete("diagnose", "the cause")

    assert ack.orphan == "SUPERSEDED_VERSION"
    assert "diagnose" not in ledger.state.steps
    assert ledger.state.orphans[-1][3:5] == (1, 1)


@pytest.mark.parametrize("case", ["not a start", "another step's start", "says another attempt", "already reported"])
def test_a_started_seq_that_names_no_awaited_attempt_is_refused_and_nothing_is_written(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path, case: str
) -> None:
    """UNKNOWN_ATTEMPT for a seq that is no start of the step, or one whose result is recorded, or that disagrees
    with the attempt given with it; the log is byte for byte as it was."""
    ledger, old = _cut_off(make_ledger, draft)
    step = "reproduce"
    named: dict[str, int] = {"started_seq": old}
    if case == "not a start":
        named = {"started_seq": old + 1}  # the replan
    elif case == "another step's start":
        ledger.complete("reproduce", "late", started_seq=old)
        ledger.start("reproduce")
        ledger.complete("reproduce", "done")
        named = {"started_seq": ledger.start("diagnose").seq}
    elif case == "says another attempt":
        named = {"started_seq": old, "attempt": 2}
    else:
        ledger.complete("reproduce", "late", started_seq=old)
    path = tmp_path / "run.jsonl"
    before = path.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        ledger.complete(step, "output", **named)
    assert caught.value.code == "UNKNOWN_ATTEMPT"
    assert path.read_bytes() == before


def test_an_abandoned_attempt_named_by_its_start_is_a_stale_attempt_of_its_own_number(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Within one version, the gone worker's result names its attempt by its start: attempt 1, not the current 2."""
    ledger = make_ledger(draft)
    first = ledger.start("reproduce").seq
    ledger.abandon("reproduce", "its worker is gone")
    ledger.start("reproduce")
    ack = ledger.complete("reproduce", "late after all", started_seq=first)
    assert ack.orphan == "STALE_ATTEMPT"
    assert ledger.state.orphans[-1][3:5] == (1, 1)
    assert ledger.state.steps["reproduce"].status == "in_progress"


def test_what_locates_attempts_is_kept_by_the_snapshot_and_left_out_of_the_state_hash(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """Starts' seqs, attempts cut off in flight and adoptions survive a reopen from the snapshot, and a state
    hashes the same with them emptied (so no log's state hash moved when they were added)."""
    ledger, _ = _cut_off(make_ledger, draft)
    ledger.start("reproduce")
    state = ledger.state
    assert state.cut_off and state.adoptions == (1, 3) and state.steps["reproduce"].started == (4,)
    assert decode_state(encode_state(state)) == state
    emptied = state._replace(
        cut_off=(),
        adoptions=(),
        steps=state.steps.set("reproduce", state.steps["reproduce"]._replace(started=())),
    )
    assert state_hash(emptied) == state_hash(state)
    ledger.close()
    with Ledger.open(tmp_path / "run.jsonl") as reopened:
        assert reopened.state == state


def test_a_result_forged_as_ambiguous_when_it_was_not_fails_verify(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path
) -> None:
    """verify replays the judgement: a result marked ambiguous that could belong to one attempt only is illegal."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", "done")
    ledger.close()
    path = tmp_path / "run.jsonl"
    lines = lines_of(path)
    forged = lines[-1].replace(b'{"v":1,', b'{"v":2,', 1).replace(b'"attempt":1,', b'"attempt":0,', 1)
    forged = forged.replace(b'"evidence":["done"]}', b'"evidence":["done"],"ambiguous":true}', 1)
    write_lines(path, rechain([*lines[:-1], forged], len(lines) - 1))
    with pytest.raises(PlantrailError) as caught:
        verify_log(path)
    assert caught.value.code == "ILLEGAL_EVENT"


def test_the_command_line_says_how_to_name_an_attempt(
    tmp_path: Path, draft: dict[str, Any], run_cli: Callable[..., Any]
) -> None:
    """`start` prints the --started-seq a result names it by; an ambiguous result's answer says to use it."""
    (tmp_path / "d.json").write_text(json.dumps(draft))
    (tmp_path / "d2.json").write_text(json.dumps(_retitled(draft)))
    log = tmp_path / "run.jsonl"
    assert run_cli("create", log, "--plan", tmp_path / "d.json").code == 0
    started = run_cli("start", log, "reproduce")
    assert "its result names it with --started-seq 2" in started.out
    replan = ("replan", log, "--plan", tmp_path / "d2.json", "--reason", "new_constraint", "--why", "logs")
    assert run_cli(*replan).code == 0
    assert run_cli("start", log, "reproduce").code == 0
    unnamed = run_cli("complete", log, "reproduce", "-e", "output")
    assert unnamed.code == 0
    assert "AMBIGUOUS_ATTEMPT" in unnamed.out and "--started-seq" in unnamed.out
    named = run_cli("complete", log, "reproduce", "-e", "old output", "--started-seq", "2", "--json")
    assert named.json()["orphan"] == "SUPERSEDED_VERSION"
