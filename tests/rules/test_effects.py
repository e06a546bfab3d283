"""Side effects: effect.requested and effect.committed, fenced like results, one effect per key, the approval gate
for effects, late effects beside the orphans, and what resume, status and brief say about effects in doubt."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.codec import encode
from plantrail.ledger.vocabulary.errors import LogDamaged, PlantrailError
from plantrail.ledger.vocabulary.events import EffectCommitted
from plantrail.projections.brief import brief_view
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.effects import effects_view
from plantrail.projections.history import resume_receipt, resume_verdict
from plantrail.projections.state import fold
from plantrail.projections.state_json import decode_state, encode_state
from plantrail.projections.views import status_view
from tests.conftest import CliResult
from tests.helpers.logs import lines_of, write_lines
from tests.logs import read_records

Cli = Callable[..., CliResult]


def deploy_draft(*, gated: bool = False) -> dict[str, Any]:
    """A build, then a deploy that acts on production (its effects gated by an approval when ``gated``)."""
    deploy: dict[str, Any] = {
        "id": "deploy",
        "title": "Deploy the build",
        "depends_on": ["build"],
        "completion_evidence": "the new version serves",
    }
    if gated:
        deploy["effects_require_approval"] = True
    return {
        "goal": "Ship the fix",
        "acceptance_criteria": [{"id": "live", "description": "the fix is live"}],
        "steps": [{"id": "build", "title": "Build", "completion_evidence": "an artifact"}, deploy],
    }


def _deploying(make_ledger: Callable[..., Ledger], *, gated: bool = False) -> Ledger:
    ledger = make_ledger(deploy_draft(gated=gated), name=LOG)
    ledger.start("build")
    ledger.complete("build", "built artifact 1.4")
    ledger.start("deploy")
    return ledger


def _refused(ledger: Ledger, code: str, call: Callable[[], object]) -> PlantrailError:
    """``call`` is refused with ``code`` and the log keeps every byte."""
    path = _path(ledger)
    before = path.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        call()
    assert caught.value.code == code, caught.value
    assert path.read_bytes() == before
    return caught.value


#: Every ledger of these tests is made under this name, in the test's own tmp_path (``ledger.state.run`` is its
#: run id), so a test finds its log from the ledger.
LOG = "effects-run.jsonl"
_LOGS: dict[str, Path] = {}


@pytest.fixture(autouse=True)
def _log_paths(tmp_path: Path) -> None:
    _LOGS["current"] = tmp_path / LOG


def _path(ledger: Ledger) -> Path:
    return _LOGS["current"]


# -------------------------------------------------------- committed or requested, approvals, repeats, cancellation


def test_committed_effects_are_recorded_apart_from_effects_only_requested(
    make_ledger: Callable[..., Ledger],
) -> None:
    """An effect only requested is in doubt and one committed is committed: two records, two standings."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod", before="1.3 serving")
    ledger.request_effect("deploy", "notify-42", "#releases")
    ledger.commit_effect("deploy", "deploy-42", result="1.4 serving")
    view = effects_view(ledger.state)
    assert [e["key"] for e in view["committed"]] == ["deploy-42"]
    assert [e["key"] for e in view["in_doubt"]] == ["notify-42"]
    committed = view["committed"][0]
    assert (committed["before"], committed["result"], committed["requested_seq"]) == ("1.3 serving", "1.4 serving", 5)
    types = [r.type for r in read_records(_path(ledger))]
    assert types[-3:] == ["effect.requested", "effect.requested", "effect.committed"]


def test_a_high_impact_effect_needs_an_approval_event(make_ledger: Callable[..., Ledger]) -> None:
    """A step whose effects require approval cannot request one until an approval for the version is granted."""
    ledger = _deploying(make_ledger, gated=True)
    refused = _refused(ledger, "APPROVAL_REQUIRED", lambda: ledger.request_effect("deploy", "deploy-42", "prod"))
    assert refused.fields["because"] == "effects_require_approval"
    ledger.request_approval("ship", "May deploy push 1.4 to prod?", "deploy")
    assert _refused(ledger, "APPROVAL_REQUIRED", lambda: ledger.request_effect("deploy", "d", "prod")).fields[
        "requests"
    ] == ["ship"]
    ledger.approve("ship", by="ana", why="reviewed")
    ack = ledger.request_effect("deploy", "deploy-42", "prod")
    assert ack.orphan is None
    assert [r.type for r in read_records(_path(ledger))][-3:] == [
        "approval.requested",
        "approval.granted",
        "effect.requested",
    ]


def test_a_denied_or_stale_approval_does_not_open_the_effect_gate(
    make_ledger: Callable[..., Ledger],
) -> None:
    """An approval granted for an earlier plan version does not cover the effects of the version after a replan."""
    ledger = _deploying(make_ledger, gated=True)
    ledger.request_approval("ship", "May deploy push 1.4 to prod?", "deploy")
    ledger.approve("ship")
    draft = deploy_draft(gated=True)
    draft["steps"][1]["title"] = "Deploy the build to prod"
    ledger.replan("new_constraint", "deploy names its target", plan=draft)
    ledger.start("deploy")
    _refused(ledger, "APPROVAL_REQUIRED", lambda: ledger.request_effect("deploy", "deploy-42", "prod"))


def test_a_repeated_request_follows_an_explicit_conflict_contract(
    make_ledger: Callable[..., Ledger],
) -> None:
    """The same key again is refused by the same attempt and after its commit, and for another target or step."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod")
    duplicate = _refused(ledger, "EFFECT_DUPLICATE", lambda: ledger.request_effect("deploy", "deploy-42", "prod"))
    assert duplicate.fields["seq"] == 5
    conflict = _refused(ledger, "EFFECT_KEY_CONFLICT", lambda: ledger.request_effect("deploy", "deploy-42", "staging"))
    assert "prod" in conflict.message
    ledger.commit_effect("deploy", "deploy-42")
    assert (
        "do not perform it again"
        in _refused(ledger, "EFFECT_DUPLICATE", lambda: ledger.request_effect("deploy", "deploy-42", "prod")).message
    )
    _refused(ledger, "EFFECT_DUPLICATE", lambda: ledger.commit_effect("deploy", "deploy-42"))


def test_a_retried_command_with_its_idempotency_key_gets_the_original_ack(make_ledger: Callable[..., Ledger]) -> None:
    """A request retried under the envelope's idempotency key returns the original seq and writes nothing."""
    ledger = _deploying(make_ledger)
    first = ledger.request_effect("deploy", "deploy-42", "prod", idempotency_key="req-1")
    before = _path(ledger).read_bytes()
    again = ledger.request_effect("deploy", "deploy-42", "prod", idempotency_key="req-1")
    assert (again.seq, again.duplicate) == (first.seq, True)
    assert _path(ledger).read_bytes() == before
    _refused(
        ledger, "IDEMPOTENCY_CONFLICT", lambda: ledger.request_effect("deploy", "x", "prod", idempotency_key="req-1")
    )


def test_a_cancelled_steps_effect_is_recorded_before_compensation_is_judged(
    make_ledger: Callable[..., Ledger],
) -> None:
    """A step in progress when a replan lands still records its effect's commit: late, and the effect committed."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod")
    draft = deploy_draft()
    draft["steps"][1]["completion_evidence"] = "the new version serves, checked by a probe"
    ledger.replan("new_constraint", "a probe must confirm the deploy", plan=draft)
    ack = ledger.commit_effect("deploy", "deploy-42", result="1.4 serving")
    assert ack.orphan == "SUPERSEDED_VERSION"
    [effect] = effects_view(ledger.state)["committed"]
    assert (effect["commit_late"], effect["plan_version"]) == ("SUPERSEDED_VERSION", 1)
    assert ledger.state.steps["deploy"].status == "pending"
    assert verify_log(_path(ledger)).last_seq == ack.seq


# --------------------------------------------------------------------------- fencing


def test_requesting_needs_the_step_in_progress(make_ledger: Callable[..., Ledger]) -> None:
    """A request for a pending or completed step, or a step that does not exist, is refused."""
    ledger = make_ledger(deploy_draft(), name=LOG)
    _refused(ledger, "INVALID_TRANSITION", lambda: ledger.request_effect("build", "k", "disk"))
    _refused(ledger, "STEP_NOT_FOUND", lambda: ledger.request_effect("ship", "k", "disk"))
    ledger.start("build")
    ledger.complete("build", "built")
    _refused(ledger, "INVALID_TRANSITION", lambda: ledger.request_effect("build", "k", "disk"))
    _refused(ledger, "INVALID_TRANSITION", lambda: ledger.request_effect("build", "k", "disk", attempt=7))


def test_a_request_names_a_key_and_a_target(make_ledger: Callable[..., Ledger]) -> None:
    """A blank target, or a key with spaces or none at all, is refused."""
    ledger = _deploying(make_ledger)
    _refused(ledger, "REASON_REQUIRED", lambda: ledger.request_effect("deploy", "k", "  "))
    _refused(ledger, "INVALID_ID", lambda: ledger.request_effect("deploy", "two words", "prod"))
    _refused(ledger, "INVALID_ID", lambda: ledger.request_effect("deploy", "", "prod"))
    ledger.request_effect("deploy", "s3://bucket/release-1.4?v=2", "prod")


def test_a_request_of_a_superseded_version_lands_beside_the_orphans(make_ledger: Callable[..., Ledger]) -> None:
    """A request stamped with a superseded version is recorded late, changes no step, and verify accepts it."""
    ledger = _deploying(make_ledger)
    draft = deploy_draft()
    draft["steps"][1]["completion_evidence"] = "probed"
    ledger.replan("new_constraint", "probe", plan=draft)
    steps = ledger.state.steps
    ack = ledger.request_effect("deploy", "deploy-42", "prod", plan_version=1, attempt=1)
    assert ack.orphan == "SUPERSEDED_VERSION"
    assert ledger.state.steps == steps
    assert ledger.state.orphans == ()
    [late] = effects_view(ledger.state)["superseded"]
    assert (late["late"], late["plan_version"]) == ("SUPERSEDED_VERSION", 1)
    verify_log(_path(ledger))


def test_a_request_of_an_abandoned_attempt_is_late_and_a_later_attempt_requests_it_again(
    make_ledger: Callable[..., Ledger],
) -> None:
    """After abandon, the gone worker's request is STALE_ATTEMPT; the next attempt may request the key again."""
    ledger = _deploying(make_ledger)
    ledger.abandon("deploy", reason="worker gone")
    ledger.start("deploy")
    late = ledger.request_effect("deploy", "deploy-42", "prod", attempt=1)
    assert late.orphan == "STALE_ATTEMPT"
    assert [e["key"] for e in effects_view(ledger.state)["superseded"]] == ["deploy-42"]
    _refused(ledger, "EFFECT_DUPLICATE", lambda: ledger.request_effect("deploy", "deploy-42", "prod", attempt=1))
    again = ledger.request_effect("deploy", "deploy-42", "prod")
    [effect] = effects_view(ledger.state)["in_doubt"]
    assert (effect["attempt"], effect["earlier_seqs"], effect["requested_seq"]) == (2, [late.seq], again.seq)
    ledger.commit_effect("deploy", "deploy-42")
    assert effects_view(ledger.state)["committed"][0]["attempt"] == 2


def test_a_commit_needs_its_request_and_names_its_attempt(make_ledger: Callable[..., Ledger]) -> None:
    """A commit of an unknown key, of another step, or of another attempt than its request's is refused."""
    ledger = _deploying(make_ledger)
    _refused(ledger, "EFFECT_NOT_REQUESTED", lambda: ledger.commit_effect("deploy", "deploy-42"))
    ledger.request_effect("deploy", "deploy-42", "prod")
    assert (
        "did you mean deploy-42"
        in _refused(ledger, "EFFECT_NOT_REQUESTED", lambda: ledger.commit_effect("deploy", "deploy-24")).message
    )
    _refused(ledger, "EFFECT_MISMATCH", lambda: ledger.commit_effect("build", "deploy-42"))
    _refused(ledger, "EFFECT_MISMATCH", lambda: ledger.commit_effect("deploy", "deploy-42", attempt=2))
    _refused(ledger, "UNKNOWN_PLAN_VERSION", lambda: ledger.commit_effect("deploy", "deploy-42", plan_version=2))
    assert ledger.commit_effect("deploy", "deploy-42", attempt=1, plan_version=1).orphan is None


def test_a_commit_after_the_attempt_failed_is_recorded_and_commits_the_effect(
    make_ledger: Callable[..., Ledger],
) -> None:
    """The worker learns its effect happened only after its attempt failed and the next started: still committed."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod")
    ledger.fail("deploy", "timed out waiting for the rollout")
    ledger.start("deploy")
    ack = ledger.commit_effect("deploy", "deploy-42", result="the rollout finished late")
    assert ack.orphan == "STALE_ATTEMPT"
    assert effects_view(ledger.state)["committed"][0]["commit_late"] == "STALE_ATTEMPT"
    verify_log(_path(ledger))


def test_an_effect_after_the_run_finished_is_recorded_late(make_ledger: Callable[..., Ledger]) -> None:
    """A request or commit after a final outcome is appended as RUN_FINISHED; a pending step's still refused."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod")
    ledger.finish("cancelled", "the release was called off")
    assert ledger.commit_effect("deploy", "deploy-42").orphan == "RUN_FINISHED"
    assert ledger.request_effect("deploy", "rollback-42", "prod").orphan == "RUN_FINISHED"
    _refused(ledger, "RUN_FINISHED", lambda: ledger.request_effect("build", "k", "disk"))


# --------------------------------------------------------------------------- resume, status, brief


def test_resume_lists_effects_in_doubt_apart_from_committed_and_superseded_ones(
    make_ledger: Callable[..., Ledger],
) -> None:
    """The receipt sorts effects into in doubt, superseded and committed, and says to check the target."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod")
    ledger.commit_effect("deploy", "deploy-42")
    ledger.request_effect("deploy", "notify-42", "#releases")
    receipt = resume_receipt(ledger.state)
    assert receipt["verdict"] == "in_doubt"
    assert [e["key"] for e in receipt["effects"]["in_doubt"]] == ["notify-42"]
    assert [e["key"] for e in receipt["effects"]["committed"]] == ["deploy-42"]
    assert "notify-42 on '#releases'" in receipt["next"]
    assert "never perform it blindly" in receipt["next"]
    ledger.abandon("deploy", reason="worker gone")
    receipt = resume_receipt(ledger.state)
    assert [e["key"] for e in receipt["effects"]["superseded"]] == ["notify-42"]
    assert receipt["verdict"] == "in_doubt"
    assert receipt["next"].endswith("then start deploy")
    assert receipt["next"].startswith("check the target of deploy's effects")


def test_resume_without_effects_in_doubt_proposes_the_start_as_before(make_ledger: Callable[..., Ledger]) -> None:
    """A committed effect changes nothing resume proposes; a run with no effects has an empty effects member."""
    ledger = make_ledger(deploy_draft(), name=LOG)
    assert resume_receipt(ledger.state)["effects"] == {"in_doubt": [], "superseded": [], "committed": []}
    ledger.start("build")
    ledger.complete("build", "built")
    ledger.start("deploy")
    ledger.request_effect("deploy", "deploy-42", "prod")
    ledger.commit_effect("deploy", "deploy-42")
    ledger.fail("deploy", "the probe failed")
    assert resume_receipt(ledger.state)["next"] == "start deploy"
    assert resume_verdict(ledger.state) == "continue"


def test_status_and_brief_carry_the_effects(make_ledger: Callable[..., Ledger]) -> None:
    """status --json has every effect by standing; the brief lists the effects never known committed."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod", before="1.3")
    status = status_view(ledger.state)
    assert status["effects"]["in_doubt"][0] | {"target": "prod"} == status["effects"]["in_doubt"][0]
    brief = brief_view(ledger.state)
    assert [(e["key"], e["status"]) for e in brief["effects_in_doubt"]] == [("deploy-42", "in_doubt")]
    ledger.commit_effect("deploy", "deploy-42")
    assert brief_view(ledger.state)["effects_in_doubt"] == []


# --------------------------------------------------------------------------- the state and the log


def test_a_state_with_effects_round_trips_a_snapshot_and_a_fork(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """encode_state/decode_state keep every effect, and a fork carries them with the parent's state hash."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod", before="1.3")
    ledger.abandon("deploy", reason="gone")
    ledger.start("deploy")
    ledger.request_effect("deploy", "deploy-42", "prod", before="1.3")
    ledger.commit_effect("deploy", "deploy-42", result="1.4")
    ledger.request_effect("deploy", "notify", "#releases")
    state = ledger.state
    again = decode_state(encode_state(state))
    assert again == state
    assert state_hash(again) == state_hash(state)
    with Ledger.fork(_path(ledger), tmp_path / "fork.jsonl", at_seq=state.last_seq, reason="try again") as fork:
        assert fork.state.effects == state.effects
        fork.commit_effect("deploy", "notify")
        assert effects_view(fork.state)["in_doubt"] == []
    assert verify_log(tmp_path / "fork.jsonl", parent=_path(ledger)).parent == (state.run, state.last_seq)


def test_a_state_without_effects_keeps_its_canonical_bytes(make_ledger: Callable[..., Ledger]) -> None:
    """No effect recorded: the canonical state has no effects member (v1 logs keep their state hashes)."""
    ledger = _deploying(make_ledger)
    assert b'"effects"' not in canonical_bytes(ledger.state)
    ledger.request_effect("deploy", "deploy-42", "prod")
    assert b'"effects"' in canonical_bytes(ledger.state)


def test_an_effect_on_a_v1_log_is_a_v2_line_and_the_rest_stays_v1(make_ledger: Callable[..., Ledger]) -> None:
    """A v1 run that records an effect becomes mixed at that line; the step events around it stay v1."""
    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod")
    ledger.complete("deploy", "1.4 serves")
    versions = [(r.type, r.v) for r in read_records(_path(ledger))]
    assert versions[0] == ("log.opened", 1)
    assert versions[-2:] == [("effect.requested", 2), ("step.completed", 1)]
    fresh = fold(read_records(_path(ledger)))
    assert state_hash(fresh) == state_hash(ledger.state)


def test_verify_refuses_a_hand_made_commit_without_its_request(make_ledger: Callable[..., Ledger]) -> None:
    """A commit a writer would have refused, sealed into the chain by hand, is ILLEGAL_EVENT in verify."""
    ledger = _deploying(make_ledger)
    path = _path(ledger)
    last = read_records(path)[-1]
    line, _ = encode(
        seq=last.seq + 1,
        ts=last.ts,
        run=last.run,
        plan_version=1,
        actor="runtime",
        data=EffectCommitted(step="deploy", attempt=1, key="deploy-42", result=""),
        prev=last.h,
    )
    write_lines(path, [*lines_of(path), line.rstrip(b"\n")])
    with pytest.raises(LogDamaged) as caught:
        verify_log(path)
    assert caught.value.code == "ILLEGAL_EVENT"
    assert "EFFECT_NOT_REQUESTED" in str(caught.value)


# --------------------------------------------------------------------------- the CLI

CLI_CASES: dict[str, tuple[list[list[str]], list[str]]] = {
    "APPROVAL_REQUIRED": ([], ["effect", "LOG", "gated", "--requested", "k", "--target", "prod"]),
    "EFFECT_DUPLICATE": (
        [["effect", "LOG", "deploy", "--requested", "k", "--target", "prod"]],
        ["effect", "LOG", "deploy", "--requested", "k", "--target", "prod"],
    ),
    "EFFECT_KEY_CONFLICT": (
        [["effect", "LOG", "deploy", "--requested", "k", "--target", "prod"]],
        ["effect", "LOG", "deploy", "--requested", "k", "--target", "staging"],
    ),
    "EFFECT_NOT_REQUESTED": ([], ["effect", "LOG", "deploy", "--committed", "k"]),
    "EFFECT_MISMATCH": (
        [["effect", "LOG", "deploy", "--requested", "k", "--target", "prod"]],
        ["effect", "LOG", "deploy", "--committed", "k", "--attempt", "2"],
    ),
    "INVALID_TRANSITION": ([], ["effect", "LOG", "build", "--requested", "k", "--target", "disk"]),
    "INVALID_ID": ([], ["effect", "LOG", "deploy", "--requested", "a key", "--target", "prod"]),
    "REASON_REQUIRED": ([], ["effect", "LOG", "deploy", "--requested", "k", "--target", " "]),
    "USAGE": ([], ["effect", "LOG", "deploy", "--requested", "k"]),
}


@pytest.mark.parametrize("code", sorted(CLI_CASES))
def test_every_effect_refusal_through_the_cli_leaves_the_log_byte_identical(
    code: str, tmp_path: Path, run_cli: Cli
) -> None:
    """Each refusal of plantrail effect exits 1 (2 for a usage error) with its code, and writes no byte."""
    draft = deploy_draft()
    draft["policy"] = {"max_in_progress": 2}
    draft["steps"].append(
        {"id": "gated", "title": "Pay", "completion_evidence": "paid", "effects_require_approval": True}
    )
    path, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    path.write_text(json.dumps(draft))
    for argv in (["create", log, "--plan", path], ["start", log, "build"], ["complete", log, "build", "-e", "ok"]):
        assert run_cli(*argv).code == 0
    assert run_cli("start", log, "deploy").code == 0
    assert run_cli("start", log, "gated").code == 0
    setup, refused = CLI_CASES[code]
    for argv in setup:
        assert run_cli(*[log if a == "LOG" else a for a in argv]).code == 0
    before = log.read_bytes()
    result = run_cli(*[log if a == "LOG" else a for a in refused])
    assert (result.code, result.err.splitlines()[0].split(":")[0]) == (2 if code == "USAGE" else 1, f"error[{code}]")
    assert log.read_bytes() == before


def test_the_cli_records_and_acknowledges_effects(tmp_path: Path, run_cli: Cli) -> None:
    """plantrail effect records a request and a commit, says where each stands, and --json holds the effect."""
    path, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    path.write_text(json.dumps(deploy_draft()))
    for argv in (["create", log, "--plan", path], ["start", log, "build"], ["complete", log, "build", "-e", "ok"]):
        assert run_cli(*argv).code == 0
    assert run_cli("start", log, "deploy").code == 0
    asked = run_cli("effect", log, "deploy", "--requested", "deploy-42", "--target", "prod", "--before", "1.3")
    assert asked.code == 0, asked.err
    assert "effect deploy-42: in_doubt (target prod)" in asked.out
    resumed = run_cli("resume", log)
    assert resumed.code == 10
    assert "effects in doubt: requested, never known committed" in resumed.out
    done = run_cli("effect", log, "deploy", "--committed", "deploy-42", "--result", "1.4", "--json")
    assert done.code == 0
    body = orjson.loads(done.out)
    assert (body["effect"]["status"], body["effect"]["result"], body["orphan"]) == ("committed", "1.4", None)
    status = run_cli("status", log, "--json").json()
    assert [e["key"] for e in status["effects"]["committed"]] == ["deploy-42"]


def test_replay_of_a_version_from_the_version_index_carries_the_effects_of_the_fold(
    make_ledger: Callable[..., Ledger], run_cli: Cli
) -> None:
    """replay --version answers alike from a cold cache, the warm version index and no cache, effects included."""
    from plantrail.ledger.stores.jsonl import cache

    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod")
    ledger.commit_effect("deploy", "deploy-42")
    ledger.request_effect("deploy", "notify-42", "#releases")
    draft = deploy_draft()
    draft["steps"][1]["title"] = "Deploy and probe"
    ledger.replan("new_constraint", "probe", plan=draft)
    ledger.start("deploy")
    ledger.request_effect("deploy", "probe-42", "prod")
    ledger.request_effect("deploy", "late-42", "prod", plan_version=1, attempt=1)
    ledger.close()
    path = _path(ledger)

    def answers() -> list[Any]:
        replies = [run_cli("replay", path, "--version", str(v), "--json") for v in (1, 2)]
        assert all(r.code == 0 for r in replies), [r.err for r in replies]
        return [(r.json()["state_hash"], r.json()["effects"]) for r in replies]

    cold = answers()
    assert answers() == cold
    shutil.rmtree(cache.cache_dir(str(path)), ignore_errors=True)
    assert answers() == cold
    assert [e["key"] for e in cold[0][1]["in_doubt"]] == ["notify-42"]
    assert [e["key"] for e in cold[1][1]["superseded"]] == ["notify-42", "late-42"]
    assert state_hash(fold(read_records(path))) == cold[1][0]


def test_the_timeline_says_what_each_effect_record_did(make_ledger: Callable[..., Ledger]) -> None:
    """plantrail log summarises a request with its key, target and state before, and a commit with its result."""
    from plantrail.ledger.timeline import summary

    ledger = _deploying(make_ledger)
    ledger.request_effect("deploy", "deploy-42", "prod", before="1.3 serving")
    ledger.commit_effect("deploy", "deploy-42", result="1.4 serving")
    ledger.request_effect("deploy", "notify-42", "#releases")
    lines = [summary(r) for r in read_records(_path(ledger))[-3:]]
    assert lines == [
        "deploy attempt 1: effect deploy-42 requested on prod (before: 1.3 serving)",
        "deploy attempt 1: effect deploy-42 committed: 1.4 serving",
        "deploy attempt 1: effect notify-42 requested on #releases",
    ]
