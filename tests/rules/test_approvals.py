"""Scope violations, write conflicts, approvals and replans that widen a scope: each rule recorded as an event,
judged before a byte is written, replayed by verify, shown by status/next/resume."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.codec import encode
from plantrail.ledger.vocabulary.errors import LogDamaged, PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.events import StepBlocked, StepCompleted
from plantrail.ledger.vocabulary.evidence import parse_report
from plantrail.ledger.vocabulary.scope import ScopeViolation, TaskScope
from plantrail.projections.canonical import state_hash
from plantrail.projections.history import resume_receipt
from plantrail.projections.state_json import decode_state, encode_state
from plantrail.projections.stop import stop_decision
from plantrail.projections.views import next_view, status_view, wait_reasons
from tests.helpers.logs import lines_of, write_lines
from tests.logs import read_records

SESSION = "src/session.js"
TEST = "test/session.test.js"


def scoped_draft() -> dict[str, Any]:
    """A bounded plan with an approval gate and overlapping writes: two writable files, a read-only verify step, a
    deploy step that needs an approval, and a step that edits the same file as implement."""
    return {
        "goal": "Reject expired sessions with a regression test",
        "scope": {"writes": ["src/**", TEST], "reads": ["**"]},
        "acceptance_criteria": [{"id": "expired-gets-401", "description": "an expired session gets 401"}],
        "policy": {"max_in_progress": "unlimited"},
        "steps": [
            {"id": "reproduce", "title": "Add a regression test", "completion_evidence": "fails", "writes": [TEST]},
            {
                "id": "implement",
                "title": "Check expiry",
                "completion_evidence": "passes",
                "writes": [SESSION],
                "allowed_tools": ["Edit", "Bash"],
            },
            {"id": "refactor", "title": "Tidy the session module", "completion_evidence": "tidy", "writes": ["src/*"]},
            {"id": "verify", "title": "Run the suite", "completion_evidence": "green", "writes": []},
            {"id": "deploy", "title": "Deploy", "completion_evidence": "deployed", "requires_approval": True},
        ],
    }


def _report(*paths: str, tools: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"changed_paths": list(paths), "tools": list(tools)}


def _refused(ledger: Ledger, log: Path, code: str, call: Callable[[], object]) -> PlantrailError:
    """``call`` is refused with ``code`` and the log keeps every byte."""
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        call()
    assert caught.value.code == code, caught.value
    assert log.read_bytes() == before
    return caught.value


@pytest.fixture
def scoped(make_ledger: Callable[..., Ledger]) -> Ledger:
    """A ledger on the scoped draft."""
    return make_ledger(scoped_draft())


# --------------------------------------------------------------------------- scopes, approvals, write conflicts


def test_a_step_writing_outside_the_write_scope_never_enters_ready(tmp_path: Path) -> None:
    """A step writing outside the write scope never enters ready: a plan whose step writes outside the task scope
    is never adopted."""
    draft = scoped_draft()
    draft["steps"][0]["writes"] = ["package.json"]
    with pytest.raises(PlanInvalid) as caught:
        Ledger.create(tmp_path / "run.jsonl", draft)
    assert (caught.value.code, caught.value.fields["step"], caught.value.fields["path"]) == (
        "SCOPE_OUTSIDE_TASK",
        "reproduce",
        "package.json",
    )
    assert not (tmp_path / "run.jsonl").exists()


def test_a_high_impact_step_produces_approval_events(scoped: Ledger, tmp_path: Path) -> None:
    """A high-impact step produces approval events: deploy waits for an approval, which is requested and granted
    as events."""
    log = tmp_path / "run.jsonl"
    assert wait_reasons(scoped.state)["deploy"] == [
        {"code": "waiting_approval", "because": "requires_approval", "requests": []}
    ]
    assert "deploy" in next_view(scoped.state)["ready"] and "deploy" not in next_view(scoped.state)["can_start"]
    error = _refused(scoped, log, "APPROVAL_REQUIRED", lambda: scoped.start("deploy"))
    assert error.fields["step"] == "deploy"
    scoped.request_approval("ship", "May we deploy the expiry fix today?", ["deploy"])
    assert status_view(scoped.state)["approvals"]["waiting_approval"] == [
        {"step": "deploy", "because": "requires_approval", "requests": ["ship"]}
    ]
    scoped.approve("ship", by="ana", why="the fix is reviewed")
    scoped.start("deploy")
    types = [r.type for r in read_records(log)]
    assert types[-3:] == ["approval.requested", "approval.granted", "step.started"]
    request = next(a for a in scoped.state.authority.approvals if a.id == "ship")  # type: ignore[union-attr]
    assert (request.status, request.by, request.why, request.plan_version) == (
        "granted",
        "ana",
        "the fix is reviewed",
        1,
    )
    verify_log(log)


def test_two_steps_whose_write_scopes_conflict_never_run_at_once(scoped: Ledger, tmp_path: Path) -> None:
    """Two steps whose write scopes conflict never run at once: refactor (src/*) waits while implement
    (src/session.js) runs, even with max_in_progress unlimited; disjoint and read-only steps run alongside."""
    log = tmp_path / "run.jsonl"
    scoped.start("implement")
    error = _refused(scoped, log, "WRITE_SCOPE_CONFLICT", lambda: scoped.start("refactor"))
    assert (error.fields["step"], error.fields["other"]) == ("refactor", "implement")
    assert {"code": "write_conflict", "step": "implement", "glob": SESSION} in wait_reasons(scoped.state)["refactor"]
    assert "refactor" not in next_view(scoped.state)["can_start"]
    scoped.start("reproduce")
    scoped.start("verify")
    scoped.complete("implement", "expiry checked", report=_report(SESSION))
    scoped.start("refactor")
    verify_log(log)


# --------------------------------------------------------------------------- scope violations


def test_stop_policy_a_change_outside_scope_pauses(scoped: Ledger, tmp_path: Path) -> None:
    """A proposed change outside the scope pauses the run: a completion that changed package.json is
    recorded as the blocked attempt scope_violation, and the stop policy says paused (rule 2)."""
    scoped.start("implement")
    ack = scoped.complete("implement", "checked expiry", report=_report(SESSION, "package.json"))
    record = read_records(tmp_path / "run.jsonl")[ack.seq]
    assert isinstance(record.data, StepBlocked)
    assert record.data.violation == ScopeViolation(("package.json",), ())
    assert record.data.reason.startswith("scope_violation: changed paths outside the step's writes: package.json")
    step = scoped.state.steps["implement"]
    assert (step.status, step.evidence) == ("blocked", ())
    decision = stop_decision(scoped.state)
    assert (decision.outcome, decision.rule) == ("paused", "scope_violation")
    assert "package.json" in decision.reason
    verify_log(tmp_path / "run.jsonl")


def test_a_scope_violation_comes_before_completion(make_ledger: Callable[..., Ledger]) -> None:
    """The scope is judged before completion: a green last step cannot mask an out-of-scope edit (rule 2 before 3)."""
    draft = scoped_draft()
    draft["steps"] = [draft["steps"][0]]
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", "fails as expected", report=_report(TEST, SESSION))
    ledger.verify_criterion("expired-gets-401", True, "401 seen")
    assert stop_decision(ledger.state).rule == "scope_violation"


@pytest.mark.parametrize("how", ["complete", "fail", "block"])
def test_every_result_outside_scope_is_recorded_as_the_blocked_attempt(scoped: Ledger, how: str) -> None:
    """complete, fail and block alike: a report outside the scope ends the attempt blocked with the violation."""
    scoped.start("verify")
    report = _report("src/session.js")  # verify is read-only: any change is outside
    {
        "complete": lambda: scoped.complete("verify", "green", report=report),
        "fail": lambda: scoped.fail("verify", "red", report=report),
        "block": lambda: scoped.block("verify", "stuck", report=report),
    }[how]()
    step = scoped.state.steps["verify"]
    assert step.status == "blocked" and step.reason is not None and f"(reported {how}" in step.reason
    assert scoped.state.authority is not None and scoped.state.authority.violation is not None


def test_a_tool_outside_allowed_tools_is_a_violation(scoped: Ledger) -> None:
    """A report using a tool the step does not allow is a scope violation listing the tool."""
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report(SESSION, tools=("Edit", "WebFetch")))
    held = scoped.state.authority.violation  # type: ignore[union-attr]
    assert held is not None and (held.paths, held.tools) == ((), ("WebFetch",))


def test_a_plain_start_does_not_end_a_scope_violations_pause(scoped: Ledger, tmp_path: Path) -> None:
    """While paused by a violation every start is PAUSED_SCOPE_VIOLATION, the log unchanged; next says why."""
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report("package.json"))
    _refused(scoped, tmp_path / "run.jsonl", "PAUSED_SCOPE_VIOLATION", lambda: scoped.start("reproduce"))
    assert next_view(scoped.state)["can_start"] == []
    assert wait_reasons(scoped.state)["reproduce"][0]["code"] == "scope_violation"
    receipt = resume_receipt(scoped.state)
    assert receipt["verdict"] == "paused" and "left its scope" in receipt["next"]


def test_an_approval_that_widens_the_scope_ends_the_pause(scoped: Ledger, tmp_path: Path) -> None:
    """A granted approval whose writes cover the violating paths ends the pause; the step is pending again and its
    next attempt may write there (in this plan version)."""
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report(SESSION, "package-lock.json"))
    scoped.request_approval("lockfile", "May implement update the lockfile?", "implement", writes="package-lock.json")
    assert stop_decision(scoped.state).rule == "scope_violation"  # a request alone changes nothing
    scoped.approve("lockfile", by="ana")
    assert stop_decision(scoped.state).outcome == "continue"
    assert scoped.state.steps["implement"].status == "pending"
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report(SESSION, "package-lock.json"))
    assert scoped.state.steps["implement"].status == "completed"
    verify_log(tmp_path / "run.jsonl")


def test_an_approval_that_does_not_cover_the_violation_keeps_the_pause(scoped: Ledger) -> None:
    """A grant for other paths, or for another step, leaves the run paused."""
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report("package.json"))
    scoped.request_approval("other", "May implement touch docs?", "implement", writes="docs/**")
    scoped.approve("other")
    assert stop_decision(scoped.state).rule == "scope_violation"


def test_a_replan_ends_a_scope_violations_pause(scoped: Ledger) -> None:
    """A replan (here one that keeps the plan) ends the pause; the blocked step is pending in the new version."""
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report("package.json"))
    scoped.replan("failed_assumption", "package.json is not ours to change", plan=scoped_draft())
    assert stop_decision(scoped.state).outcome == "continue"
    scoped.start("implement")


def test_a_late_result_outside_scope_stays_on_the_orphan_path(scoped: Ledger) -> None:
    """A result for a superseded version is recorded as reported (an orphan), and pauses nothing."""
    scoped.start("implement")
    scoped.replan("agent_revision", "same plan again", plan=scoped_draft())
    ack = scoped.complete("implement", "late", plan_version=1, attempt=1, report=_report("package.json"))
    assert ack.orphan == "SUPERSEDED_VERSION" and stop_decision(scoped.state).outcome == "continue"


def test_a_retried_completion_recorded_as_a_violation_is_a_duplicate(scoped: Ledger) -> None:
    """A retry (same key, same report) of a completion recorded as the blocked attempt gets the original seq."""
    scoped.start("implement")
    first = scoped.complete("implement", "done", report=_report("package.json"), idempotency_key="c1")
    again = scoped.complete("implement", "done", report=_report("package.json"), idempotency_key="c1")
    assert (again.seq, again.duplicate) == (first.seq, True)


def test_verify_refuses_a_hand_made_completion_outside_scope(scoped: Ledger, tmp_path: Path) -> None:
    """A completion whose report left the scope, chained correctly by hand, is ILLEGAL_EVENT (rule SCOPE_VIOLATION);
    so is a blocked attempt that claims a violation the rules do not find."""
    scoped.start("implement")
    scoped.close()
    log = tmp_path / "run.jsonl"
    original = lines_of(log)
    last = read_records(log)[-1]
    for data in (
        StepCompleted(step="implement", attempt=1, evidence=("x",), report=parse_report(_report("package.json"))),
        StepBlocked(
            step="implement",
            attempt=1,
            reason="scope_violation: made up",
            report=parse_report(_report(SESSION)),
            violation=ScopeViolation((SESSION,), ()),
        ),
    ):
        line, _ = encode(
            seq=last.seq + 1, ts=last.ts, run=last.run, plan_version=1, actor="agent", data=data, prev=last.h
        )
        write_lines(log, [*original, line[:-1]])
        with pytest.raises(LogDamaged) as caught:
            verify_log(log)
        assert (caught.value.code, caught.value.fields["rule"]) == ("ILLEGAL_EVENT", "SCOPE_VIOLATION")


@pytest.mark.parametrize("spelled", ["./src/session.js", "src//session.js", "src/lib/../session.js", "src/session.js/"])
def test_a_changed_path_is_judged_by_the_path_it_names(scoped: Ledger, tmp_path: Path, spelled: str) -> None:
    """A reported path spelled with ``./``, a repeated slash or ``a/..`` is the path it names: inside the step's
    writes, the completion is recorded as reported and the run goes on."""
    scoped.start("implement")
    ack = scoped.complete("implement", "checked expiry", report=_report(spelled))
    assert isinstance(read_records(tmp_path / "run.jsonl")[ack.seq].data, StepCompleted)
    assert scoped.state.steps["implement"].status == "completed"
    verify_log(tmp_path / "run.jsonl")


@pytest.mark.parametrize("spelled", ["../src/session.js", "src/../../src/session.js", "/src/session.js"])
def test_a_changed_path_outside_the_project_is_a_violation(scoped: Ledger, spelled: str) -> None:
    """A reported path that climbs out of the project (or is absolute) is inside no scope: the run pauses."""
    scoped.start("implement")
    scoped.complete("implement", "checked expiry", report=_report(spelled))
    held = scoped.state.authority.violation  # type: ignore[union-attr]
    assert held is not None and held.paths == (spelled,)


def test_an_approval_releases_a_violation_by_the_paths_it_names(scoped: Ledger, tmp_path: Path) -> None:
    """The pause a reported ``./package-lock.json`` caused ends when an approval grants ``package-lock.json``: the
    fold judges the held paths as the rules do."""
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report("./package-lock.json"))
    scoped.request_approval("lockfile", "May implement update the lockfile?", "implement", writes="package-lock.json")
    scoped.approve("lockfile", by="ana")
    assert stop_decision(scoped.state).outcome == "continue"
    verify_log(tmp_path / "run.jsonl")


def test_verify_accepts_a_violation_an_earlier_plantrail_recorded_for_a_path_as_written(
    scoped: Ledger, tmp_path: Path
) -> None:
    """An earlier plantrail compared reported paths as written, so ``./src/session.js`` paused the run: a log it
    wrote still verifies, and reads as it did."""
    scoped.start("implement")
    scoped.close()
    log = tmp_path / "run.jsonl"
    last = read_records(log)[-1]
    blocked = StepBlocked(
        step="implement",
        attempt=1,
        reason="scope_violation: changed paths outside the step's writes: ./src/session.js (reported complete: x)",
        report=parse_report(_report("./src/session.js", SESSION)),
        violation=ScopeViolation(("./src/session.js",), ()),
    )
    line, _ = encode(
        seq=last.seq + 1, ts=last.ts, run=last.run, plan_version=1, actor="agent", data=blocked, prev=last.h
    )
    write_lines(log, [*lines_of(log), line[:-1]])
    verify_log(log)
    with Ledger.open(log, fsync="none") as reopened:
        assert stop_decision(reopened.state).rule == "scope_violation"


# --------------------------------------------------------------------------- approvals and replans


def test_a_denied_approval_pauses_until_a_replan_changes_the_denied_steps(scoped: Ledger, tmp_path: Path) -> None:
    """A denial pauses the run (rule 4); a replan keeping the denied step unchanged does not end it; one that
    removes it does."""
    log = tmp_path / "run.jsonl"
    scoped.request_approval("ship", "Deploy today?", "deploy")
    scoped.deny("ship", by="ana", why="not before the release")
    decision = stop_decision(scoped.state)
    assert (decision.outcome, decision.rule) == ("paused", "approval_denied")
    _refused(scoped, log, "PAUSED_APPROVAL_DENIED", lambda: scoped.start("reproduce"))
    scoped.replan("user_request", "keep everything", plan=scoped_draft())
    assert stop_decision(scoped.state).rule == "approval_denied"
    draft = scoped_draft()
    draft["steps"] = draft["steps"][:-1]
    scoped.replan("user_request", "no deploy in this run", plan=draft)
    assert stop_decision(scoped.state).outcome == "continue"
    scoped.start("reproduce")
    verify_log(log)


def test_a_replan_never_widens_scope_by_itself(scoped: Ledger, tmp_path: Path) -> None:
    """Widening the scope on a replan: a replan that widens implement's writes is adopted, with implement
    waiting_approval (widened) until an approval for the new version covers it."""
    log = tmp_path / "run.jsonl"
    draft = scoped_draft()
    draft["scope"]["writes"].append("package.json")
    draft["steps"][1]["writes"] = [SESSION, "package.json"]
    scoped.replan("new_constraint", "the fix needs a dependency bump", plan=draft)
    assert scoped.state.version == 2
    assert wait_reasons(scoped.state)["implement"] == [
        {"code": "waiting_approval", "because": "widened", "requests": []}
    ]
    assert "reproduce" in next_view(scoped.state)["can_start"]  # the steps it did not widen go on
    _refused(scoped, log, "APPROVAL_REQUIRED", lambda: scoped.start("implement"))
    scoped.request_approval("bump", "May implement change package.json?", "implement", writes="package.json")
    scoped.approve("bump")
    scoped.start("implement")
    verify_log(log)


def test_a_replan_widening_the_task_scope_widens_every_step_that_relied_on_it(scoped: Ledger) -> None:
    """A new version whose task scope writes everywhere widens the steps that declared no writes of their own."""
    draft = scoped_draft()
    draft["scope"] = {"writes": ["**"], "reads": ["**"]}
    draft["steps"][4]["requires_approval"] = False
    scoped.replan("agent_revision", "the whole repository", plan=draft)
    waiting = {w["step"]: w["because"] for w in status_view(scoped.state)["approvals"]["waiting_approval"]}
    assert waiting == {"deploy": "widened"}


def test_a_replan_keeps_the_task_scope_in_the_state(scoped: Ledger) -> None:
    """The task scope of a new version is the active plan's, whether the draft restates it or leaves it out
    (a draft without one keeps the scope it had): a later step write outside it is still refused."""
    restated = scoped.replan("agent_revision", "same scope", plan=scoped_draft())
    assert scoped.state.plan is not None and scoped.state.plan.scope == restated_scope()
    draft = scoped_draft()
    del draft["scope"]
    scoped.replan("agent_revision", "scope left out", plan=draft)
    assert scoped.state.plan is not None and scoped.state.plan.scope == restated_scope()
    outside = scoped_draft()
    del outside["scope"]
    outside["steps"][3]["writes"] = ["package.json"]
    with pytest.raises(PlantrailError) as caught:
        scoped.replan("agent_revision", "writes outside", plan=outside)
    assert caught.value.code == "SCOPE_OUTSIDE_TASK" and restated.seq > 0


def restated_scope() -> TaskScope:
    """The scoped draft's task scope, parsed."""
    return TaskScope(reads=("**",), writes=("src/**", TEST))


def test_a_narrowing_replan_needs_no_approval(scoped: Ledger) -> None:
    """Narrowing a step's writes, or making it read-only, is never a widening."""
    draft = scoped_draft()
    draft["steps"][2]["writes"] = [SESSION]
    draft["steps"][0]["writes"] = []
    scoped.replan("agent_revision", "narrower", plan=draft)
    assert status_view(scoped.state)["approvals"]["waiting_approval"] == [
        {"step": "deploy", "because": "requires_approval", "requests": []}
    ]


def test_an_approval_is_bound_to_its_plan_version(scoped: Ledger, tmp_path: Path) -> None:
    """A request asked for version 1 cannot be granted once version 2 is active (APPROVAL_STALE), and a grant
    for version 1 does not cover the step in version 2."""
    log = tmp_path / "run.jsonl"
    scoped.request_approval("old", "Deploy?", "deploy")
    scoped.request_approval("granted", "Deploy now?", "deploy")
    scoped.approve("granted")
    scoped.replan("agent_revision", "again", plan=scoped_draft())
    _refused(scoped, log, "APPROVAL_STALE", lambda: scoped.approve("old"))
    _refused(scoped, log, "APPROVAL_REQUIRED", lambda: scoped.start("deploy"))


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda ledger: ledger.approve("nope"), "APPROVAL_NOT_FOUND"),
        (lambda ledger: ledger.deny("nope"), "APPROVAL_NOT_FOUND"),
        (lambda ledger: ledger.approve("asked", by=" "), "REASON_REQUIRED"),
        (lambda ledger: ledger.request_approval("asked", "again?", "deploy"), "DUPLICATE_APPROVAL_ID"),
        (lambda ledger: ledger.request_approval("q", "?", "no-such-step"), "STEP_NOT_FOUND"),
        (lambda ledger: ledger.request_approval("q", "?", ()), "USAGE"),
        (lambda ledger: ledger.request_approval("q", "?", "deploy", writes="../x"), "SCOPE_INVALID"),
        (lambda ledger: ledger.request_approval("bad id", "?", "deploy"), "INVALID_ID"),
        (lambda ledger: ledger.request_approval("q", "?", "deploy", plan_version=2), "UNKNOWN_PLAN_VERSION"),
    ],
)
def test_a_bad_approval_command_is_refused_with_the_log_unchanged(
    scoped: Ledger, tmp_path: Path, call: Callable[[Ledger], object], code: str
) -> None:
    """Each malformed or illegal approval command has its stable code and writes nothing."""
    scoped.request_approval("asked", "Deploy?", "deploy")
    _refused(scoped, tmp_path / "run.jsonl", code, lambda: call(scoped))


def test_a_decided_approval_cannot_be_decided_again(scoped: Ledger, tmp_path: Path) -> None:
    """A second grant or a denial after a grant is APPROVAL_DECIDED."""
    scoped.request_approval("ship", "Deploy?", "deploy")
    scoped.approve("ship")
    _refused(scoped, tmp_path / "run.jsonl", "APPROVAL_DECIDED", lambda: scoped.deny("ship"))


def test_a_blank_question_is_refused(scoped: Ledger) -> None:
    """An approval request needs one bounded question."""
    with pytest.raises(PlantrailError) as caught:
        scoped.request_approval("q", "  ", "deploy")
    assert caught.value.code == "REASON_REQUIRED"


def test_authority_survives_a_snapshot(scoped: Ledger, tmp_path: Path) -> None:
    """Approvals, widened and denied steps and a violation encode into a snapshot and decode to the same state,
    and a ledger reopened from its cache sees the state a full read gives."""
    scoped.start("implement")
    scoped.complete("implement", "done", report=_report("package.json"))
    scoped.request_approval("a", "Deploy?", "deploy", writes=["docs/**"], tools="Bash")
    scoped.deny("a", why="no")
    state = scoped.state
    assert decode_state(encode_state(state)) == state
    scoped.close()
    with Ledger.open(tmp_path / "run.jsonl") as again:
        assert state_hash(again.state) == state_hash(state)
    with Ledger.open(tmp_path / "run.jsonl", cache=False) as fresh:
        assert state_hash(fresh.state) == state_hash(state)


def test_a_v1_log_that_records_an_approval_becomes_a_mixed_log(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """An approval on a v1 log is a v2 line: the header stays plantrail/1, earlier lines keep their bytes and the
    state hash before it is the one the log had; plain events after it stay v1 lines."""
    ledger = make_ledger()
    log = tmp_path / "run.jsonl"
    prefix, before = log.read_bytes(), state_hash(ledger.state)
    step = next(iter(ledger.state.steps))
    ledger.request_approval("go", "Go ahead?", step)
    ledger.approve("go")
    ledger.start(step)
    versions = [orjson.loads(line)["v"] for line in lines_of(log)]
    assert versions == [1, 1, 2, 2, 1]
    assert log.read_bytes().startswith(prefix)
    assert orjson.loads(lines_of(log)[0])["data"]["format"] == "plantrail/1"
    assert verify_log(log).state_hash == state_hash(ledger.state) != before


def test_plans_without_scope_keep_their_state_untouched(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A v1 plan run through starts, results and replans never gains an authority (no new state, same hash)."""
    ledger = make_ledger(draft)
    step = next(iter(ledger.state.steps))
    ledger.start(step)
    ledger.complete(step, "done")
    ledger.replan("agent_revision", "same", plan=copy.deepcopy(draft))
    assert ledger.state.authority is None


# --------------------------------------------------------------------------- CLI


def test_the_cli_requests_approves_and_denies(scoped: Ledger, tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    """request-approval, approve and deny record their events; a refusal is error[CODE] with exit 1."""
    scoped.close()
    log = tmp_path / "run.jsonl"
    asked = run_cli("request-approval", log, "ship", "--steps", "deploy", "--question", "Deploy today?", "--json")
    assert asked.code == 0 and asked.json()["ok"]
    assert "approval requested: ship for deploy: Deploy today?" in run_cli("status", log).out
    assert "waiting approval: deploy (requires approval; asked in ship)" in run_cli("next", log).out
    assert run_cli("approve", log, "ship", "--by", "ana", "--why", "reviewed").code == 0
    again = run_cli("deny", log, "ship")
    assert again.code == 1 and again.err.startswith("error[APPROVAL_DECIDED]")
    assert run_cli("start", log, "deploy").code == 0
    assert run_cli("verify", log).code == 0


def test_the_cli_says_when_a_completion_was_recorded_as_a_violation(
    scoped: Ledger, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    """complete --report outside the scope: exit 0 (recorded), the acknowledgement says blocked and paused, the
    JSON carries scope_violation, and start is then refused with exit 1."""
    scoped.start("implement")
    scoped.close()
    log = tmp_path / "run.jsonl"
    (tmp_path / "r.json").write_text('{"changed_paths": ["package.json"]}')
    done = run_cli("complete", log, "implement", "-e", "done", "--report", tmp_path / "r.json", "--json")
    assert done.code == 0 and done.json()["scope_violation"] == {
        "step": "implement",
        "paths": ["package.json"],
        "tools": [],
    }
    refused = run_cli("start", log, "reproduce")
    assert refused.code == 1 and refused.err.startswith("error[PAUSED_SCOPE_VIOLATION]")
    resumed = run_cli("resume", log)
    assert resumed.code == 12 and "scope_violation" not in resumed.err


def test_the_schema_names_the_new_events_and_fields() -> None:
    """plantrail schema holds the approval events, the blocked attempt's violation and the scopes, all optional
    in the older types (one schema validates v1 and v2 lines)."""
    from plantrail.ledger.vocabulary.codec import json_schema

    defs = json_schema()["$defs"]
    assert {
        "ApprovalRequested",
        "ApprovalGranted",
        "ApprovalDenied",
        "ScopeViolation",
        "TaskScope",
        "StepScope",
    } <= set(defs)
    assert "violation" in defs["StepBlocked"]["properties"] and "violation" not in defs["StepBlocked"]["required"]
    assert set(defs["ApprovalRequested"]["required"]) == {"request", "question", "steps", "writes", "tools"}
