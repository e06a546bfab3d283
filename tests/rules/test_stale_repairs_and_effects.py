"""Artifacts and ``stale``, side effects, repair edges and forks together: scenarios that combine them, each
checked against docs/contract.md and docs/semantics.md."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.stop import stop_decision
from plantrail.projections.views import ready_steps, wait_reasons

MakeLedger = Callable[..., Ledger]

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
C = "sha256:" + "c" * 64

#: build -> test (on_failure: fix) -> deploy; fix, the repair step, reads the repository.
TOGETHER: dict[str, Any] = {
    "goal": "Ship the release",
    "acceptance_criteria": [{"id": "green", "description": "the suite passes"}],
    "observed": {"repo": "aaaa"},
    "steps": [
        {"id": "build", "title": "Build", "completion_evidence": "binary", "outputs": ["bin"]},
        {
            "id": "test",
            "title": "Run the suite",
            "completion_evidence": "green run",
            "depends_on": ["build"],
            "inputs": [{"step": "build", "output": "bin"}],
            "on_failure": "fix",
        },
        {
            "id": "fix",
            "title": "Fix what failed",
            "completion_evidence": "patch",
            "outputs": ["patch"],
            "inputs": [{"observation": "repo"}],
        },
        {"id": "deploy", "title": "Deploy", "completion_evidence": "serving", "depends_on": ["test"]},
    ],
}


def _draft(**changes: Any) -> dict[str, Any]:
    draft = copy.deepcopy(TOGETHER)
    draft.update(changes)
    return draft


def _repaired_then_observed(make_ledger: MakeLedger) -> Ledger:
    """A run where test failed, fix repaired it, and then the repository moved (fix read it)."""
    ledger = make_ledger(_draft())
    ledger.start("build")
    ledger.complete("build", "ok", artifacts=[f"bin={A}"])
    ledger.start("test")
    ledger.fail("test", "2 tests fail")
    ledger.start("fix")
    ledger.complete("fix", "patched", artifacts=[f"patch={C}"])
    ledger.observe("repo", "bbbb")
    return ledger


# --------------------------------------------------------------------------- a stale repair step


def test_a_stale_repair_step_nothing_waits_for_is_not_ready(make_ledger: MakeLedger) -> None:
    """A completed repair step whose input changed goes stale, but is ready only while a failed step waits for it."""
    ledger = _repaired_then_observed(make_ledger)
    state = ledger.state
    assert state.steps["fix"].status == "stale"
    assert "fix" not in ready_steps(state)
    assert {"code": "repair_not_needed", "repairs": ["test"]} in wait_reasons(state)["fix"]


def test_starting_a_stale_repair_step_nothing_waits_for_is_refused(make_ledger: MakeLedger) -> None:
    """``start`` refuses a stale repair step no failed step waits for (REPAIR_NOT_NEEDED), the log unchanged."""
    ledger = _repaired_then_observed(make_ledger)
    seq = ledger.state.last_seq
    with pytest.raises(PlantrailError) as caught:
        ledger.start("fix")
    assert caught.value.code == "REPAIR_NOT_NEEDED"
    assert ledger.state.last_seq == seq


def test_a_stale_idle_repair_step_does_not_hold_up_completion(make_ledger: MakeLedger) -> None:
    """Once the repaired step and the rest complete, a stale repair step nothing needs is no open work."""
    ledger = _repaired_then_observed(make_ledger)
    ledger.start("test")
    ledger.complete("test", "green")
    ledger.start("deploy")
    ledger.complete("deploy", "serving")
    ledger.verify_criterion("green", True, "suite output")
    assert stop_decision(ledger.state, None).outcome == "complete"
    ledger.finish("complete", reason="all done")
    assert ledger.state.outcome == "complete"


def test_a_stale_repair_step_runs_again_when_a_failure_calls_it(make_ledger: MakeLedger) -> None:
    """A second failure of the repaired step calls its stale repair step, which is then ready and starts."""
    ledger = _repaired_then_observed(make_ledger)
    ledger.start("test")
    ledger.fail("test", "1 test fails")
    state = ledger.state
    assert ready_steps(state) == ["fix"]
    ledger.start("fix")
    ledger.complete("fix", "patched again", artifacts=[f"patch={B}"])
    assert ready_steps(ledger.state) == ["test"]


# --------------------------------------------------------------------------- an effect of a cancelled attempt

#: build -> deploy (reads build/bin and the repository) -> announce.
DEPLOYING: dict[str, Any] = {
    "goal": "Deploy the build",
    "acceptance_criteria": [{"id": "serving", "description": "the release serves"}],
    "observed": {"repo": "aaaa"},
    "steps": [
        {"id": "build", "title": "Build", "completion_evidence": "binary", "outputs": ["bin"]},
        {
            "id": "deploy",
            "title": "Deploy",
            "completion_evidence": "serving",
            "depends_on": ["build"],
            "inputs": [{"step": "build", "output": "bin"}, {"observation": "repo"}],
            "outputs": ["release"],
        },
        {
            "id": "announce",
            "title": "Announce",
            "completion_evidence": "posted",
            "depends_on": ["deploy"],
            "inputs": [{"step": "deploy", "output": "release"}],
        },
    ],
}


def _cancelled_with_an_effect(make_ledger: MakeLedger) -> Ledger:
    """deploy requested an effect, then the repository moved under its attempt (marked for cancellation)."""
    ledger = make_ledger(copy.deepcopy(DEPLOYING))
    ledger.start("build")
    ledger.complete("build", "ok", artifacts=[f"bin={A}"])
    ledger.start("deploy")
    ledger.request_effect("deploy", "dep-1", "prod", before="1.3 serving")
    ledger.observe("repo", "bbbb")
    return ledger


def test_resume_says_to_abandon_an_attempt_marked_for_cancellation_not_to_record_its_result(
    make_ledger: MakeLedger,
) -> None:
    """resume's next action for a step marked for cancellation is abandon (a result would be an orphan), after
    checking the target of its effect in doubt."""
    from plantrail.projections.history import resume_receipt

    ledger = _cancelled_with_an_effect(make_ledger)
    receipt = resume_receipt(ledger.state)
    assert receipt["verdict"] == "in_doubt"
    assert receipt["cancel"][0]["step"] == "deploy"
    assert "record its result" not in receipt["next"]
    assert "abandon it (plantrail abandon LOG deploy" in receipt["next"]
    assert "dep-1 on 'prod'" in receipt["next"]


def test_resume_with_a_cancelled_and_another_step_in_doubt_names_both_actions(make_ledger: MakeLedger) -> None:
    """With one step marked for cancellation and another in doubt, resume says abandon the first and find out
    about the other."""
    from plantrail.projections.history import resume_receipt

    draft = copy.deepcopy(DEPLOYING)
    draft["policy"] = {"max_in_progress": 2}
    draft["steps"].append({"id": "docs", "title": "Docs", "completion_evidence": "written"})
    ledger = make_ledger(draft)
    ledger.start("build")
    ledger.complete("build", "ok", artifacts=[f"bin={A}"])
    ledger.start("deploy")
    ledger.start("docs")
    ledger.observe("repo", "bbbb")
    text = resume_receipt(ledger.state)["next"]
    assert text.startswith("an input changed under deploy: stop its worker and abandon it")
    assert "for the other steps in doubt, find out whether each step in doubt did its work" in text


def test_an_abandoned_cancelled_attempt_leaves_its_effect_superseded_and_its_step_stale(
    make_ledger: MakeLedger,
) -> None:
    """Abandoning the cancelled attempt makes the step stale (attempt not charged) and its effect superseded;
    the step is ready once its inputs are current, and resume says to check the target before starting it."""
    from plantrail.projections.history import resume_receipt

    ledger = _cancelled_with_an_effect(make_ledger)
    ledger.abandon("deploy", "input changed")
    state = ledger.state
    assert state.steps["deploy"].status == "stale"
    assert ready_steps(state) == ["deploy"]
    receipt = resume_receipt(state)
    assert [e["key"] for e in receipt["effects"]["superseded"]] == ["dep-1"]
    assert receipt["verdict"] == "in_doubt"
    assert receipt["next"].endswith("then start deploy")


def test_next_says_to_check_a_ready_steps_effects_never_known_committed_before_it_starts(
    make_ledger: MakeLedger,
) -> None:
    """``next`` names the effects of a ready step never known committed (check the target first), as resume
    does; a run without effects has no such member."""
    from plantrail.projections.views import next_view

    ledger = _cancelled_with_an_effect(make_ledger)
    ledger.abandon("deploy", "input changed")
    view = next_view(ledger.state)
    assert [c["step"] for c in view["check_first"]] == ["deploy"]
    assert "dep-1 on 'prod'" in view["check_first"][0]["check"]
    assert "check_first" not in next_view(make_ledger(copy.deepcopy(DEPLOYING), name="plain.jsonl").state)


def test_next_text_says_to_check_the_target_first(make_ledger: MakeLedger, run_cli: Any) -> None:
    """The text of ``plantrail next`` carries the check before the start, ending ``then start deploy``."""
    ledger = _cancelled_with_an_effect(make_ledger)
    ledger.abandon("deploy", "input changed")
    ledger.close()
    result = run_cli("next", ledger.location)
    assert result.code == 0
    assert "check the target of deploy's effects never known committed first: dep-1 on 'prod'" in result.out
    assert "then start deploy" in result.out


# --------------------------------------------------------------------------- the brief with repair edges


def test_the_brief_does_not_call_an_idle_repair_step_ready_or_remaining_work(
    make_ledger: MakeLedger, run_cli: Any
) -> None:
    """The brief marks a repair step nothing needs as such (not ``ready``) and leaves it out of the work
    remaining, as the stop policy and the outcome lists do."""
    from plantrail.projections.brief import brief_view

    ledger = make_ledger(_draft())
    ledger.start("build")
    ledger.complete("build", "ok", artifacts=[f"bin={A}"])
    doc = brief_view(ledger.state)
    entries = {e["id"]: e for e in doc["not_run"]}
    assert entries["fix"]["repairs"] == ["test"] and entries["fix"]["needed"] is False
    assert "repairs" not in entries["test"]
    assert doc["remaining"]["steps"] == ["test", "deploy"]
    ledger.close()
    text = run_cli("brief", ledger.location).out
    assert "fix: Fix what failed · repair step of test, not needed now (only a failure calls it)" in text
    assert "fix: Fix what failed · ready" not in text


def test_the_brief_shows_a_needed_repair_step_with_what_waits_for_it(make_ledger: MakeLedger) -> None:
    """While a failed step waits for its repair step, the brief's entry of the repair step says it is needed."""
    from plantrail.projections.brief import brief_view

    ledger = make_ledger(_draft())
    ledger.start("build")
    ledger.complete("build", "ok", artifacts=[f"bin={A}"])
    ledger.start("test")
    ledger.fail("test", "2 tests fail")
    entries = {e["id"]: e for e in brief_view(ledger.state)["not_run"]}
    assert entries["fix"]["repairs"] == ["test"] and entries["fix"]["needed"] is True
    assert "fix" in brief_view(ledger.state)["remaining"]["steps"]


# ----------------------------------------------------- a consumer finishing while its producer is stale

#: make reads the repository; use consumes make/o. Two may run at once.
CHAIN: dict[str, Any] = {
    "goal": "Make and use",
    "acceptance_criteria": [{"id": "used", "description": "it is used"}],
    "observed": {"repo": "r1"},
    "policy": {"max_in_progress": 2},
    "steps": [
        {
            "id": "make",
            "title": "Make",
            "completion_evidence": "o",
            "outputs": ["o"],
            "inputs": [{"observation": "repo"}],
        },
        {
            "id": "use",
            "title": "Use",
            "completion_evidence": "u",
            "depends_on": ["make"],
            "inputs": [{"step": "make", "output": "o"}],
            "outputs": ["u"],
        },
    ],
}


def _used_while_make_went_stale(make_ledger: MakeLedger) -> Ledger:
    """use started on make's o, then the repository moved (make went stale) and use completed."""
    ledger = make_ledger(copy.deepcopy(CHAIN))
    ledger.start("make")
    ledger.complete("make", "made", artifacts=[f"o={A}"])
    ledger.start("use")
    ledger.observe("repo", "r2")
    assert ledger.state.steps["make"].status == "stale"
    ledger.complete("use", "used", artifacts=[f"u={B}"])
    return ledger


def test_a_consumer_completing_while_its_producer_is_stale_records_the_digest_it_consumed(
    make_ledger: MakeLedger,
) -> None:
    """A consumer that started on its producer's artifact records that digest as consumed, even when the
    producer went stale before the consumer completed."""
    ledger = _used_while_make_went_stale(make_ledger)
    consumed = {c.input: c.digest for c in ledger.state.steps["use"].consumed}
    assert consumed == {"make/o": A}


def test_a_producer_rerun_with_the_same_digest_keeps_the_consumer_that_completed_meanwhile(
    make_ledger: MakeLedger,
) -> None:
    """Completed work whose input did not change is kept: the stale producer runs again to the same digest."""
    ledger = _used_while_make_went_stale(make_ledger)
    ledger.start("make")
    ledger.complete("make", "made again", artifacts=[f"o={A}"])
    assert ledger.state.steps["use"].status == "completed"


def test_a_producer_rerun_with_another_digest_makes_the_consumer_that_completed_meanwhile_stale(
    make_ledger: MakeLedger,
) -> None:
    """The consumer that completed while its producer was stale goes stale when the producer's digest changes,
    and its reason names both digests."""
    ledger = _used_while_make_went_stale(make_ledger)
    ledger.start("make")
    ledger.complete("make", "made again", artifacts=[f"o={C}"])
    use = ledger.state.steps["use"]
    assert use.status == "stale"
    assert use.reason == f"input make/o changed: {A[:23]}… -> {C[:23]}…"
