"""Replay and audit views: replay a version or a seq, versions, diff, why, orphans and the resume receipt."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import Record
from plantrail.ledger.vocabulary.plan import apply_patch
from plantrail.projections.canonical import state_hash
from plantrail.projections.history import (
    diff_view,
    fold_span,
    history,
    orphans_view,
    replay_at_seq,
    replay_version,
    replay_versions,
    resume_receipt,
    resume_verdict,
    versions_view,
    why_view,
)
from plantrail.projections.model import PlanState
from plantrail.projections.state import fold
from tests.logs import read_records


def _guarded(records: list[Record], last: int) -> Iterator[Record]:
    """Yield records in order and fail the test if anything after seq ``last`` is read."""
    for record in records:
        assert record.seq <= last, f"read seq {record.seq}, past seq {last}"
        yield record


def _retitle(plan: dict[str, Any], step: str, title: str) -> dict[str, Any]:
    new = copy.deepcopy(plan)
    next(s for s in new["steps"] if s["id"] == step)["title"] = title
    return new


class ThreeVersions(NamedTuple):
    """A recorded run with three plan versions, its records, and the states seen just before each replan."""

    ledger: Ledger
    records: list[Record]
    before_v2: PlanState
    before_v3: PlanState


@pytest.fixture
def three_versions(tmp_path: Path, make_ledger: Callable[..., Ledger], name_draft: dict[str, Any]) -> ThreeVersions:
    """inspect and implement done in v1; v2 retitles implement while validate runs; a v1 validate result
    arrives late; implement is redone in v2; v3 (a patch, by the user) adds a docs step."""
    ledger = make_ledger(name_draft)
    for step in ("inspect", "implement"):
        ledger.start(step)
        ledger.complete(step, [f"{step}: done"])
    ledger.verify_criterion("name-success", True, "node cli.js --name Lin printed Lin")
    ledger.start("validate")  # seq 7
    before_v2 = ledger.state
    v2 = _retitle(name_draft, "implement", "Change the CLI, add success, error and help tests")
    ledger.replan("failed_assumption", "the help text also prints the name", plan=v2, causes=[7])  # seq 8
    ledger.complete("validate", ["tests passed at v1"], plan_version=1, attempt=1)  # seq 9: late
    ledger.start("implement")
    ledger.complete("implement", ["implement: done again"])
    before_v3 = ledger.state
    patch = {
        "base_version": 2,
        "operations": [
            {
                "op": "add_step",
                "step": {
                    "id": "docs",
                    "title": "Document --name",
                    "depends_on": ["implement"],
                    "completion_evidence": "README diff",
                },
            }
        ],
    }
    ledger.replan(
        "new_constraint", "the user wants the flag documented", patch=patch, causes=[11], actor="user"
    )  # seq 12
    return ThreeVersions(ledger, read_records(tmp_path / "run.jsonl"), before_v2, before_v3)


def test_replay_version_rebuilds_a_superseded_version_and_reads_no_further(
    three_versions: ThreeVersions,
) -> None:
    """Version 1 replays to the state just before the replan to v2, without reading the replan's successors."""
    records = three_versions.records

    span = replay_version(_guarded(records, last=8), 1)

    assert span.state == three_versions.before_v2
    assert span.superseded_at == 8


def test_replay_of_the_active_version_is_the_state_now(three_versions: ThreeVersions) -> None:
    """The active version replays to the fold of the whole log, with no superseding seq."""
    ledger, records = three_versions.ledger, three_versions.records
    span = replay_version(records, 3)
    assert span.state == ledger.state
    assert span.superseded_at is None


def test_replaying_a_version_the_log_lacks_is_refused(three_versions: ThreeVersions) -> None:
    """Asking for version 4 of a three-version log raises UNKNOWN_PLAN_VERSION."""
    records = three_versions.records
    with pytest.raises(PlantrailError) as raised:
        replay_version(records, 4)
    assert raised.value.code == "UNKNOWN_PLAN_VERSION"


def test_a_span_seeded_by_a_snapshot_equals_the_fold_from_scratch(
    three_versions: ThreeVersions,
) -> None:
    """Folding version 2's span from a snapshot of the state right after its replan equals replaying from seq 0."""
    records = three_versions.records
    snapshot = fold(records[:9])  # up to and including the replan at seq 8

    span, after = fold_span(iter(records[9:]), snapshot)

    assert span.state == three_versions.before_v3
    assert after is not None and after.version == 3
    assert replay_version(records[9:], 2, start=snapshot) == span


def test_replay_at_seq_is_the_fold_of_the_prefix_and_reads_no_further(
    three_versions: ThreeVersions,
) -> None:
    """--at-seq N gives the fold of records 0..N, and seqs beyond the log raise UNKNOWN_SEQ."""
    records = three_versions.records

    assert replay_at_seq(_guarded(records, last=5), 5) == fold(records[:6])
    with pytest.raises(PlantrailError) as raised:
        replay_at_seq(records, 99)
    assert raised.value.code == "UNKNOWN_SEQ"


def test_a_replayed_log_gives_the_same_graph(three_versions: ThreeVersions) -> None:
    """Two replays hash alike, and the recorded patch applied to v2 rebuilds v3's plan."""
    ledger, records = three_versions.ledger, three_versions.records
    state = fold(records)
    patch = getattr(records[12].data, "patch", None)

    assert state_hash(fold(records)) == state_hash(state) == state_hash(ledger.state)
    assert patch is not None
    versions = history(records).versions
    assert apply_patch(versions[1].plan, patch) == versions[2].plan


def test_versions_view_lists_when_who_why_causes_and_changes(three_versions: ThreeVersions) -> None:
    """Each version says when and why it was adopted, what superseded it, and what its replan kept or reset."""

    view = versions_view(history(three_versions.records))

    assert [(v["version"], v["reason"], v["causes"], v["superseded_at"]) for v in view] == [
        (1, None, [], 8),
        (2, "failed_assumption", [7], 12),
        (3, "new_constraint", [11], None),
    ]
    assert view[0]["changes"] is None
    v2 = view[1]["changes"]
    assert v2["kept"] == ["inspect"]
    assert {c["step"]: c["cause"] for c in v2["reset"]} == {"implement": "contract_changed", "validate": "superseded"}
    assert v2["criteria_reset"] == [{"criterion": "name-success", "cause": "work_invalidated", "was": "passed"}]
    assert (view[2]["actor"], view[2]["patched"], view[2]["changes"]["added"]) == ("user", True, ["docs"])


def test_diff_of_adjacent_versions_is_what_the_replan_recorded(three_versions: ThreeVersions) -> None:
    """diff 1 2 shows the changed title field by field, inspect kept with its evidence, and the resets."""
    _ledger, records = three_versions.ledger, three_versions.records
    ends = {v: s.state for v, s in replay_versions(records, (1, 2)).items()}

    diff = diff_view(ends, history(records).versions, 1, 2)

    assert diff["changed"] == [
        {
            "step": "implement",
            "fields": {
                "title": {
                    "from": "Change the CLI and add success and error tests",
                    "to": "Change the CLI, add success, error and help tests",
                }
            },
        }
    ]
    assert diff["kept"] == [{"step": "inspect", "attempt": 1, "evidence": ["inspect: done"], "completed_seq": 3}]
    assert [(r["step"], r["cause"], r["was"], r["at_version"]) for r in diff["reset"]] == [
        ("implement", "contract_changed", "completed", 2),
        ("validate", "superseded", "in_progress", 2),
    ]
    assert diff["criteria"]["reset"] == [
        {"criterion": "name-success", "cause": "work_invalidated", "was": "passed", "at_version": 2}
    ]


def test_diff_across_versions_traces_work_through_each_replan(three_versions: ThreeVersions) -> None:
    """diff 1 3: implement's v1 work was lost at v2 even though v2 redid it; inspect's survived both replans."""
    records = three_versions.records
    ends = {v: s.state for v, s in replay_versions(records, (1, 2, 3)).items()}

    diff = diff_view(ends, history(records).versions, 1, 3)

    assert (diff["adjacent"], diff["added"], diff["removed"]) == (False, ["docs"], [])
    assert [k["step"] for k in diff["kept"]] == ["inspect"]
    assert [(r["step"], r["at_version"]) for r in diff["reset"]] == [("implement", 2), ("validate", 2)]
    assert [c["step"] for c in diff["changed"]] == ["implement"]


def test_diff_reports_a_verdict_replaced_inside_a_version_between(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A v1 verdict kept into v2 and verified again there was not carried to v3: it is listed as reverified."""
    ledger = make_ledger(draft)
    ledger.verify_criterion("login-test-passes", False, "login.test.ts: 1 failed")
    ledger.replan("agent_revision", "clearer title", plan=_retitle(draft, "diagnose", "Find the root cause"))
    ledger.verify_criterion("login-test-passes", True, "login.test.ts: 3 passed")
    ledger.replan("agent_revision", "clearer title", plan=_retitle(draft, "diagnose", "Locate the root cause"))
    records = read_records(tmp_path / "run.jsonl")
    ends = {v: s.state for v, s in replay_versions(records, (1, 2, 3)).items()}
    versions = history(records).versions

    criteria = diff_view(ends, versions, 1, 3)["criteria"]

    assert (criteria["kept"], criteria["reset"]) == ([], [])
    assert criteria["reverified"] == [{"criterion": "login-test-passes", "at_version": 2}]
    assert diff_view(ends, versions, 2, 3)["criteria"]["kept"][0]["evidence"] == "login.test.ts: 3 passed"


def test_why_quotes_the_causes_and_lists_kept_work_and_late_results(
    three_versions: ThreeVersions,
) -> None:
    """why v2 quotes the causing step.started in full, shows kept work, and the v1 result that came late."""
    _ledger, records = three_versions.ledger, three_versions.records

    why = why_view(records, history(records), 2)

    assert (why["reason"], why["why"], why["actor"], why["patch"]) == (
        "failed_assumption",
        "the help text also prints the name",
        "planner",
        None,
    )
    assert [(c["seq"], c["type"], c["data"]) for c in why["causes"]] == [
        (7, "step.started", {"step": "validate", "attempt": 1})
    ]
    assert why["causes"][0]["h"] == records[7].h
    assert [k["step"] for k in why["changes"]["kept"]] == ["inspect"]
    assert [(o["seq"], o["step"], o["why"]) for o in why["late_results"]] == [(9, "validate", "SUPERSEDED_VERSION")]


def test_why_defaults_to_the_latest_replan_and_shows_its_patch(three_versions: ThreeVersions) -> None:
    """Without a version, why explains v3, quoting the patch it was made from."""
    _ledger, records = three_versions.ledger, three_versions.records

    why = why_view(records, history(records))

    assert (why["version"], why["replaced"], why["actor"]) == (3, 2, "user")
    assert why["patch"]["base_version"] == 2
    assert [op["op"] for op in why["patch"]["operations"]] == ["add_step"]
    assert why["late_results"] == []


@pytest.mark.parametrize(("version", "code"), [(1, "USAGE"), (4, "UNKNOWN_PLAN_VERSION")])
def test_why_refuses_a_version_no_replan_created(three_versions: ThreeVersions, version: int, code: str) -> None:
    """Version 1 was created, not replanned, and version 4 does not exist."""
    _ledger, records = three_versions.ledger, three_versions.records
    with pytest.raises(PlantrailError) as raised:
        why_view(records, history(records), version)
    assert raised.value.code == code


def test_orphans_view_shows_each_late_result_and_the_step_now(three_versions: ThreeVersions) -> None:
    """The late validate result is listed with its stamp, the version it arrived in, and validate's status now."""
    ledger = three_versions.ledger

    [orphan] = orphans_view(ledger.state)

    assert (orphan["seq"], orphan["step"], orphan["plan_version"], orphan["active_version"]) == (9, "validate", 1, 2)
    assert (orphan["evidence"], orphan["status_now"]) == (["tests passed at v1"], "pending")


def test_resume_verdicts_follow_their_priority(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """continue, in doubt, paused beneath in doubt, stuck, finished, and damaged above everything."""
    ledger = make_ledger(draft)
    assert resume_verdict(ledger.state) == "continue"
    ledger.start("reproduce")
    assert resume_verdict(ledger.state) == "in_doubt"
    ledger.finish("paused", "lunch")
    assert resume_verdict(ledger.state) == "in_doubt"
    ledger.block("reproduce", "the staging database is down")
    assert resume_verdict(ledger.state) == "paused"
    ledger.replan("no_ready_step", "staging is down", plan=_retitle(draft, "diagnose", "Diagnose from logs"))
    assert resume_verdict(ledger.state) == "continue"
    ledger.start("reproduce")
    ledger.block("reproduce", "still down")
    assert resume_verdict(ledger.state) == "stuck"
    ledger.finish("cancelled", "gave up")
    assert resume_verdict(ledger.state) == "finished"
    assert resume_verdict(ledger.state, damaged=True) == "damaged"


def test_the_resume_receipt_names_what_to_do(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """The receipt lists done work, steps in doubt with their attempt, ready steps and open criteria."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 500"])
    ledger.start("diagnose")

    receipt = resume_receipt(ledger.state)

    assert receipt["verdict"] == "in_doubt"
    assert receipt["done"] == [
        {"step": "reproduce", "attempt": 1, "evidence": ["login.test.ts fails with 500"], "completed_seq": 3}
    ]
    assert receipt["in_doubt"] == [{"step": "diagnose", "attempt": 1, "started_seq": 4, "lease_expired": None}]
    assert (receipt["ready"], receipt["criteria_unverified"], receipt["damage"]) == ([], ["login-test-passes"], None)
    assert "record its result" in receipt["next"]


def test_a_damaged_receipt_says_to_repair_first(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """With a torn tail the verdict is damaged and the next action is the repair."""
    ledger = make_ledger(draft)

    receipt = resume_receipt(ledger.state, {"code": "TORN_TAIL", "message": "torn"})

    assert (receipt["verdict"], receipt["damage"]["code"]) == ("damaged", "TORN_TAIL")
    assert receipt["next"].startswith("repair the torn tail")
