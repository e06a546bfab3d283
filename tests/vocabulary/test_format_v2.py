"""Format v2: v1 logs keep their bytes and state hashes, a line carries the lowest version that holds it, and
a v1 log appended to by a v2 writer stays v1 until it adopts a v2 feature (docs/format-v2.md)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl import reads
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.codec import decode, encode, line_version
from plantrail.ledger.vocabulary.contract import StepTerms
from plantrail.ledger.vocabulary.errors import LogDamaged, PlanInvalid
from plantrail.ledger.vocabulary.events import PlanCreated
from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanSpec, StepSpec
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.history import resume_receipt
from plantrail.projections.state_json import decode_state, encode_state
from plantrail.projections.views import ready_steps, status_view
from tests.helpers.logs import lines_of, rechain, write_lines
from tests.logs import read_records

SAMPLES = Path(__file__).parents[2] / "samples"

#: The state hash of every sample log, as main computed it before format v2 existed (seq 0..end, v1 code);
#: claude-session.v1.plantrail.jsonl is the v1 importer's log of samples/claude-session.jsonl, kept as it was
#: (the importer now writes v2: claude-session.plantrail.jsonl).
V1_STATE_HASHES = {
    "claude-session.v1.plantrail.jsonl": "1edd9fc2f2de7ff8ea090aacf74c2845287cdff6ad1cafdc5da2da201d245e3b",
    "cli-name-flag.jsonl": "e3f5c3875aa417d8af57db5d97b23b2f73442a94e18e61a3cec0341dc9a6dd52",
    "login-fix-replans.jsonl": "bfef47aaca5694de36829265848df7ec03ea3f1779a4d6efd3e29da1d4456743",
    "login-fix.jsonl": "bd9c57c7799470c6a0986e15ebd75383f46d4ba92fd2caaf9de49900993ee122",
}


def _versions(path: Path) -> list[int]:
    return [orjson.loads(line)["v"] for line in lines_of(path)]


@pytest.mark.parametrize("name", sorted(V1_STATE_HASHES))
def test_v1_samples_keep_the_state_hash_they_had(name: str) -> None:
    """Every v1 sample log folds, under the v2 code, to exactly the state hash the v1 code gave it."""
    state = reads.read_state(str(SAMPLES / name), use_cache=False).state
    assert state_hash(state) == V1_STATE_HASHES[name]
    assert verify_log(SAMPLES / name).state_hash == V1_STATE_HASHES[name]


@pytest.mark.parametrize("name", sorted(V1_STATE_HASHES))
def test_v1_samples_re_encode_to_their_own_bytes(name: str) -> None:
    """Each record of a v1 sample, read as the v2 models and written again, gives back its line byte for byte."""
    for record, line in zip(read_records(SAMPLES / name), lines_of(SAMPLES / name), strict=True):
        assert record.v == 1
        again, _ = encode(
            seq=record.seq,
            ts=record.ts,
            run=record.run,
            plan_version=record.plan_version,
            actor=record.actor,
            data=record.data,
            prev=record.prev,
            source=record.source,
            key=record.key,
        )
        assert again == line + b"\n"


def test_a_v1_log_appended_by_a_v2_writer_stays_v1_until_it_uses_a_v2_feature(
    make_ledger: Callable[..., Ledger], tmp_path: Path, draft: dict[str, Any]
) -> None:
    """Plain events keep a v1 log v1; the replan that adopts priorities is a v2 line; the header stays v1."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", ["the test fails with 500"])
    log = tmp_path / "run.jsonl"
    v1_prefix = log.read_bytes()
    hash_before = state_hash(ledger.state)
    assert _versions(log) == [1, 1, 1, 1]
    assert orjson.loads(lines_of(log)[0])["data"]["format"] == "plantrail/1"

    v2_draft = copy.deepcopy(draft)
    v2_draft["steps"][-1]["priority"] = 5
    ledger.replan("agent_revision", "the last step matters most", plan=v2_draft)
    ledger.start(draft["steps"][1]["id"])

    assert log.read_bytes().startswith(v1_prefix)
    assert _versions(log) == [1, 1, 1, 1, 2, 1]
    assert orjson.loads(lines_of(log)[0])["data"]["format"] == "plantrail/1"
    report = verify_log(log)
    assert report.state_hash == state_hash(ledger.state) != hash_before
    assert state_hash(reads.read_state(str(log), use_cache=False).state) == report.state_hash


def test_a_log_created_with_a_v2_plan_has_a_v2_header(
    make_ledger: Callable[..., Ledger], tmp_path: Path, draft: dict[str, Any]
) -> None:
    """A first plan using a v2 field makes the header v2 (plantrail/2); later v1-expressible events stay v1."""
    draft["steps"][0]["priority"] = 1
    ledger = make_ledger(draft)
    ledger.start(draft["steps"][0]["id"])
    log = tmp_path / "run.jsonl"
    assert _versions(log) == [2, 2, 1]
    assert orjson.loads(lines_of(log)[0])["data"]["format"] == "plantrail/2"
    assert verify_log(log).records == 3


def test_a_v1_line_holding_v2_content_is_corrupt(
    make_ledger: Callable[..., Ledger], tmp_path: Path, draft: dict[str, Any]
) -> None:
    """A plan line that says v1 but holds a priority (re-sealed, so the hash agrees) is refused as CORRUPT_LINE."""
    draft["steps"][0]["priority"] = 1
    ledger = make_ledger(draft)
    log = tmp_path / "run.jsonl"
    ledger.close()
    lines = lines_of(log)
    lines[0] = lines[0].replace(b'{"v":2,', b'{"v":1,', 1).replace(b"plantrail/2", b"plantrail/1")
    lines[1] = lines[1].replace(b'{"v":2,', b'{"v":1,', 1)
    write_lines(log, rechain(lines, 0))
    with pytest.raises(LogDamaged) as caught:
        read_records(log)
    assert (caught.value.code, caught.value.fields.get("line")) == ("CORRUPT_LINE", 2)


def test_a_v2_field_at_its_default_is_left_out_of_the_line_and_the_state() -> None:
    """priority 0 is not written (the v1 bytes), a set priority is, and the canonical state follows suit."""
    plain_step = StepSpec("a", "A", (), "done")
    ranked = StepSpec("a", "A", (), "done", terms=StepTerms(priority=3))

    def line_of(step: StepSpec) -> bytes:
        plan = PlanSpec(goal="g", acceptance_criteria=(CriterionSpec("c", "d"),), steps=(step,))
        line, _ = encode(seq=1, ts="t", run="r", plan_version=1, actor="planner", data=PlanCreated(plan), prev="0" * 64)
        return line

    assert b'"priority"' not in line_of(plain_step) and line_of(plain_step).startswith(b'{"v":1,')
    assert b'"priority":3' in line_of(ranked) and line_of(ranked).startswith(b'{"v":2,')
    assert decode(line_of(ranked)[:-1], 2).data.plan.steps[0] == ranked
    assert line_version(PlanCreated(PlanSpec("g", (CriterionSpec("c", "d"),), (plain_step,)))) == 1


def test_the_canonical_state_and_the_snapshot_hold_a_priority_only_when_set(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """The canonical bytes name priority only for a plan that sets one; a snapshot round-trips it."""
    plain = make_ledger(copy.deepcopy(draft), name="plain.jsonl").state
    draft["steps"][0]["priority"] = 2
    ranked = make_ledger(draft, name="ranked.jsonl").state
    assert b"priority" not in canonical_bytes(plain)
    assert b'"priority":2' in canonical_bytes(ranked)
    assert canonical_bytes(decode_state(encode_state(ranked))) == canonical_bytes(ranked)


# --------------------------------------------------------------------------- priority


def _ranked_draft() -> dict[str, Any]:
    """Three independent steps and one that waits for two of them; ``b`` and ``c`` are ranked."""
    steps = [
        {"id": "a", "title": "A", "completion_evidence": "a done"},
        {"id": "b", "title": "B", "completion_evidence": "b done", "priority": 1},
        {"id": "c", "title": "C", "completion_evidence": "c done", "priority": 7},
        {"id": "d", "title": "D", "completion_evidence": "d done", "depends_on": ["a", "b"], "priority": 9},
    ]
    return {
        "goal": "rank the work",
        "acceptance_criteria": [{"id": "ok", "description": "it works"}],
        "steps": steps,
        "policy": {"max_in_progress": "unlimited"},
    }


def test_steps_are_ordered_by_priority_then_id(make_ledger: Callable[..., Ledger]) -> None:
    """Higher priority first, then id; a dependency still comes before its dependents whatever their rank."""
    ledger = make_ledger(_ranked_draft())
    assert list(ledger.state.steps) == ["c", "b", "a", "d"]
    assert ready_steps(ledger.state) == ["c", "b", "a"]
    assert resume_receipt(ledger.state)["next"] == "start c, b, a"  # every step that can start now, as next says
    assert [s["priority"] for s in status_view(ledger.state)["steps"]] == [7, 1, 0, 9]


def test_resume_names_the_steps_there_is_room_for(make_ledger: Callable[..., Ledger]) -> None:
    """Under max_in_progress 2 with three steps ready, resume's next lists all three (in the stable order) and
    says how many may start, as next does; with one running, the room left is one."""
    draft = _ranked_draft()
    draft["policy"] = {"max_in_progress": 2}
    ledger = make_ledger(draft)
    room = "room for 2 more: max_in_progress 2, 0 in progress"
    assert resume_receipt(ledger.state)["next"] == f"start c, b, a ({room})"
    ledger.start("c")
    ledger.complete("c", ["c done"])
    assert resume_receipt(ledger.state)["next"] == "start b, a"


def test_without_priorities_the_order_is_by_id(make_ledger: Callable[..., Ledger]) -> None:
    """A draft with no priorities keeps today's order: the smallest ready id first."""
    draft = _ranked_draft()
    for step in draft["steps"]:
        step.pop("priority", None)
    assert list(make_ledger(draft).state.steps) == ["a", "b", "c", "d"]


def test_a_replan_that_changes_priorities_reorders_without_resetting(make_ledger: Callable[..., Ledger]) -> None:
    """Priority is not part of a step's contract: re-ranking keeps completed work and only changes the order."""
    ledger = make_ledger(_ranked_draft())
    ledger.start("c")
    ledger.complete("c", ["c is done"])
    draft = _ranked_draft()
    draft["steps"][0]["priority"] = 8
    ledger.replan("agent_revision", "a turned out to be urgent", plan=draft)
    assert list(ledger.state.steps) == ["a", "c", "b", "d"]
    assert ledger.state.steps["c"].status == "completed"


def test_a_priority_must_be_a_whole_number(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A priority that is not an integer (a string, a bool, a float) is refused as DRAFT_INVALID naming the step."""
    for bad in ("high", True, 1.5):
        draft = _ranked_draft()
        draft["steps"][1]["priority"] = bad
        with pytest.raises(PlanInvalid) as caught:
            Ledger.create(tmp_path / f"bad-{bad}.jsonl", draft)
        assert caught.value.code == "DRAFT_INVALID" and "steps[1].priority" in caught.value.message
        assert not (tmp_path / f"bad-{bad}.jsonl").exists()


def test_a_step_without_an_attempt_limit_is_a_v2_value_and_fails_without_blocking(
    make_ledger: Callable[..., Ledger], tmp_path: Path, draft: dict[str, Any]
) -> None:
    """max_attempts "unlimited" is None on the step, a v2 plan line (a v1 line saying so is CORRUPT_LINE), and a
    failed attempt of such a step always goes back to pending."""
    draft["steps"][0]["max_attempts"] = "unlimited"
    ledger = make_ledger(draft)
    step = draft["steps"][0]["id"]
    for error in ("a timeout", "a crash", "a hang", "out of memory", "a flaky network"):  # no failure repeats
        ledger.start(step)
        ledger.fail(step, error)
    log = tmp_path / "run.jsonl"

    assert ledger.state.steps[step].status == "pending" and ledger.state.steps[step].max_attempts is None
    assert b'"max_attempts":null' in lines_of(log)[1] and _versions(log)[:2] == [2, 2]
    ledger.close()
    lines = lines_of(log)[:2]
    lines[0] = lines[0].replace(b'{"v":2,', b'{"v":1,', 1).replace(b"plantrail/2", b"plantrail/1")
    lines[1] = lines[1].replace(b'{"v":2,', b'{"v":1,', 1)
    write_lines(log, rechain(lines, 0))
    with pytest.raises(LogDamaged) as caught:
        read_records(log)
    assert (caught.value.code, caught.value.fields.get("line")) == ("CORRUPT_LINE", 2)
