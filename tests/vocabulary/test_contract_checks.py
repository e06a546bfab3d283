"""Typed checks (of criteria and of steps) and the evidence record: a completion or a
passing verdict stands only on reported observations that satisfy every check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.codec import encode
from plantrail.ledger.vocabulary.errors import LogDamaged, PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.events import StepCompleted
from plantrail.ledger.vocabulary.evidence import Observation, Report, Usage, parse_report
from tests.helpers.logs import lines_of, write_lines
from tests.logs import read_records


def _exit_check(check_id: str, code: int) -> dict[str, Any]:
    return {"id": check_id, "kind": "command_exit", "command": "npm test -- session", "expected_exit_code": code}


def session_draft() -> dict[str, Any]:
    """The session-expiry plan: reproduce (must exit 1), implement (exit 0), verify (exit 0)."""
    return {
        "goal": "Reject expired sessions with a regression test",
        "acceptance_criteria": [
            {
                "id": "expired-gets-401",
                "description": "an expired session gets 401",
                "checks": [{"id": "review", "kind": "human_review", "question": "Is 401 the right status here?"}],
            }
        ],
        "steps": [
            {
                "id": "reproduce",
                "title": "Add a regression test",
                "completion_evidence": "the new test fails with status 200",
                "checks": [_exit_check("new-test-fails", 1)],
            },
            {
                "id": "implement",
                "title": "Check expiry",
                "depends_on": ["reproduce"],
                "completion_evidence": "the new test passes with 401",
                "checks": [_exit_check("new-test-passes", 0)],
            },
            {
                "id": "verify",
                "title": "Run the suite and lint",
                "depends_on": ["implement"],
                "completion_evidence": "suite and lint pass",
                "checks": [_exit_check("lint", 0)],
            },
        ],
    }


def observed(check: str, exit_code: int, **fields: Any) -> Report:
    """A report of one command check with its exit code."""
    return Report(
        command="npm test", exit_code=exit_code, observations=(Observation(check, exit_code=exit_code, **fields),)
    )


def _refused(ledger: Ledger, log: Path, code: str, action: Callable[[], object]) -> PlantrailError:
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        action()
    assert caught.value.code == code
    assert log.read_bytes() == before
    return caught.value


def test_command_checks_expect_their_exit_codes(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """Each check expects its exit code: exit 1 passes the reproduction, exit 0 the fix, exit 2 refuses verify;
    completed = reproduce, implement, and the failed check is recorded as a fail with the same record."""
    ledger = make_ledger(session_draft())
    log = tmp_path / "run.jsonl"
    ledger.start("reproduce")
    ledger.complete("reproduce", ["test exposed the bug"], report=observed("new-test-fails", 1))
    ledger.start("implement")
    ledger.complete("implement", ["target test passed"], report=observed("new-test-passes", 0))
    ledger.start("verify")
    lint = observed("lint", 2)
    refused = _refused(
        ledger, log, "CHECK_NOT_MET", lambda: ledger.complete("verify", ["lint found an error"], report=lint)
    )
    assert refused.fields["checks"] == ["lint"] and "exit code 2, expected 0" in refused.message
    ledger.fail("verify", "lint found an error", report=lint)
    assert [s.id for s in ledger.state.steps.values() if s.status == "completed"] == ["reproduce", "implement"]
    assert ledger.state.steps["verify"].status == "pending"
    assert verify_log(log).records == 8


def test_an_expected_failure_fails_a_check_that_expects_success(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """The same exit code 1 that passes the reproduction refuses the implementation."""
    ledger = make_ledger(session_draft())
    ledger.start("reproduce")
    ledger.complete("reproduce", ["test exposed the bug"], report=observed("new-test-fails", 1))
    ledger.start("implement")
    exit_1 = observed("new-test-passes", 1)
    _refused(
        ledger, tmp_path / "run.jsonl", "CHECK_NOT_MET", lambda: ledger.complete("implement", ["?"], report=exit_1)
    )


@pytest.mark.parametrize(
    ("report", "why"),
    [
        (None, "no observation reported"),
        (Report(), "no observation reported"),
        (Report(observations=(Observation("other", exit_code=1),)), "no observation reported"),
        (observed("new-test-fails", 1, truncated=True), "truncated"),
        (observed("new-test-fails", 1, started=False), "did not start"),
        (Report(truncated=True, observations=(Observation("new-test-fails", exit_code=1),)), "truncated"),
        (Report(started=False, observations=(Observation("new-test-fails", exit_code=1),)), "did not start"),
        (Report(observations=(Observation("new-test-fails"),)), "no exit code"),
    ],
)
def test_a_check_never_passes_vacuously_or_on_spoilt_output(
    make_ledger: Callable[..., Ledger], tmp_path: Path, report: Report | None, why: str
) -> None:
    """No report, no matching observation, truncated output or a command that did not start: never a pass."""
    ledger = make_ledger(session_draft())
    ledger.start("reproduce")
    refused = _refused(
        ledger, tmp_path / "run.jsonl", "CHECK_NOT_MET", lambda: ledger.complete("reproduce", ["ran"], report=report)
    )
    assert why in refused.message


def test_a_state_predicate_needs_exactly_the_expected_json_value(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """The observed value must be the expected JSON value exactly (1, 1.0 and true differ)."""
    expected = {"parentId": "root", "name": "Agent基础", "count": 1}
    draft = session_draft()
    draft["steps"][0]["checks"] = [
        {"id": "once", "kind": "state_predicate", "predicateId": "folder_exists_once", "expected": expected}
    ]
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    for wrong in ({**expected, "count": 2}, {**expected, "count": True}, {**expected, "count": 1.0}, None):
        report = Report(observations=(Observation("once", value=wrong),))
        _refused(
            ledger,
            tmp_path / "run.jsonl",
            "CHECK_NOT_MET",
            lambda r=report: ledger.complete("reproduce", ["q"], report=r),
        )
    ledger.complete(
        "reproduce",
        ["queried"],
        report=Report(observations=(Observation("once", value=dict(reversed(expected.items()))),)),
    )
    assert ledger.state.steps["reproduce"].status == "completed"


def test_a_criterion_with_a_human_review_passes_only_when_approved(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """A passing verdict needs the review approved (rejected or missing: CHECK_NOT_MET); failing needs none."""
    ledger = make_ledger(session_draft())
    log = tmp_path / "run.jsonl"
    rejected = Report(observations=(Observation("review", decision="rejected"),))
    _refused(ledger, log, "CHECK_NOT_MET", lambda: ledger.verify_criterion("expired-gets-401", True, "saw 401"))
    _refused(
        ledger, log, "CHECK_NOT_MET", lambda: ledger.verify_criterion("expired-gets-401", True, "x", report=rejected)
    )
    ledger.verify_criterion("expired-gets-401", False, "the reviewer wants 403", report=rejected)
    approved = Report(observations=(Observation("review", decision="approved", note="401 per RFC 6750"),))
    ledger.verify_criterion("expired-gets-401", True, "reviewed", report=approved)
    assert ledger.state.criteria["expired-gets-401"].status == "passed"


def test_a_late_result_that_meets_no_check_still_lands_on_the_orphan_path(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A completion stamped with a superseded version is a fact: recorded as an orphan whatever its checks say."""
    ledger = make_ledger(session_draft())
    ledger.start("reproduce")
    ledger.replan(
        "agent_revision",
        "reword",
        plan={**session_draft(), "steps": [{**session_draft()["steps"][0], "title": "Add the test"}]},
    )
    ack = ledger.complete("reproduce", ["late"], plan_version=1, attempt=1)
    assert ack.orphan == "SUPERSEDED_VERSION"
    assert ledger.state.steps["reproduce"].status == "pending"


def test_checks_are_part_of_a_steps_contract(make_ledger: Callable[..., Ledger]) -> None:
    """A replan that changes a completed step's checks resets it (contract_changed, field checks)."""
    ledger = make_ledger(session_draft())
    ledger.start("reproduce")
    ledger.complete("reproduce", ["test exposed the bug"], report=observed("new-test-fails", 1))
    draft = session_draft()
    draft["steps"][0]["checks"] = [_exit_check("new-test-fails", 2)]
    ledger.replan("failed_assumption", "the runner exits 2 on assertion failures", plan=draft)
    assert ledger.state.steps["reproduce"].status == "pending"
    assert ledger.state.adopted is not None and ledger.state.adopted.changes is not None
    [change] = [c for c in ledger.state.adopted.changes.reset if c.step == "reproduce"]
    assert (change.cause, change.fields) == ("contract_changed", ("checks",))


@pytest.mark.parametrize(
    ("check", "fragment"),
    [
        ({"id": "x", "kind": "json_schema"}, "kind must be one of"),
        ({"id": "x", "kind": "schema", "artifact": "patch"}, "needs schema_id"),
        ({"id": "x", "kind": "command_exit", "command": "make"}, "needs expected_exit_code"),
        ({"id": "x", "kind": "command_exit", "command": "make", "expected_exit_code": 300}, "0-255"),
        ({"id": "x", "kind": "command_exit", "command": "make", "expected_exit_code": True}, "0-255"),
        ({"id": "x", "kind": "human_review", "question": "ok?", "command": "make"}, "does not take command"),
        ({"id": "x", "kind": "state_predicate", "predicate": "p"}, "needs expected"),
        ({"id": "x", "kind": "human_review", "question": "  "}, "non-blank"),
        ({"id": "x", "kind": "human_review", "question": "ok?", "timeout": 3}, "unknown keys"),
    ],
)
def test_a_malformed_check_is_refused_naming_it(tmp_path: Path, check: dict[str, Any], fragment: str) -> None:
    """Each malformed check is DRAFT_INVALID, naming where it is; nothing is created."""
    draft = session_draft()
    draft["steps"][1]["checks"] = [check]
    with pytest.raises(PlanInvalid) as caught:
        Ledger.create(tmp_path / "run.jsonl", draft)
    assert caught.value.code == "DRAFT_INVALID" and fragment in caught.value.message
    assert "steps[1].checks[0]" in caught.value.message
    assert not (tmp_path / "run.jsonl").exists()


def test_two_checks_with_one_id_are_refused(tmp_path: Path) -> None:
    """Check ids are unique within their step: DUPLICATE_CHECK_ID."""
    draft = session_draft()
    draft["steps"][0]["checks"] = [_exit_check("a", 1), _exit_check("a", 0)]
    with pytest.raises(PlanInvalid) as caught:
        Ledger.create(tmp_path / "run.jsonl", draft)
    assert caught.value.code == "DUPLICATE_CHECK_ID"


def test_verify_replays_the_check_rule_over_a_hand_made_log(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A completion that does not meet its checks, written by hand and correctly chained, is ILLEGAL_EVENT."""
    ledger = make_ledger(session_draft())
    ledger.start("reproduce")
    ledger.close()
    log = tmp_path / "run.jsonl"
    last = read_records(log)[-1]
    line, _ = encode(
        seq=last.seq + 1,
        ts=last.ts,
        run=last.run,
        plan_version=1,
        actor="agent",
        data=StepCompleted(step="reproduce", attempt=1, evidence=("trust me",), report=observed("new-test-fails", 0)),
        prev=last.h,
    )
    write_lines(log, [*lines_of(log), line[:-1]])
    with pytest.raises(LogDamaged) as caught:
        verify_log(log)
    assert (caught.value.code, caught.value.fields["rule"]) == ("ILLEGAL_EVENT", "CHECK_NOT_MET")


def test_an_evidence_record_round_trips_through_the_log(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """Every field of a report, free metadata included, reads back as written, on a v2 line."""
    report = parse_report(
        {
            "command": "npm test -- session",
            "exit_code": 1,
            "changed_paths": ["test/session.test.js"],
            "observations": [{"check": "new-test-fails", "exit_code": 1}],
            "tools": ["Bash", "Edit"],
            "usage": {"turns": 3, "tool_calls": 7, "tokens": 12000, "cost_usd": 0.04},
            "duration_s": 12.5,
            "meta": {"tool_call_id": "toolu_01", "model": "some-model", "nested": {"k": [1, 2]}},
        }
    )
    assert report.usage == Usage(turns=3, tool_calls=7, tokens=12000, cost_usd=0.04)
    ledger = make_ledger(session_draft())
    ledger.start("reproduce")
    ledger.complete("reproduce", ["test exposed the bug"], report=report)
    ledger.close()
    last = read_records(tmp_path / "run.jsonl")[-1]
    assert last.v == 2 and isinstance(last.data, StepCompleted) and last.data.report == report


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"exit_code": "1"}, "report.exit_code"),
        ({"usage": {"turns": -1}}, "report.usage.turns"),
        ({"usage": {"cost_usd": "free"}}, "report.usage.cost_usd"),
        ({"observations": [{"exit_code": 1}]}, "report.observations[0].check"),
        ({"observations": [{"check": "a", "decision": "maybe"}]}, "report.observations[0].decision"),
        ({"stdout": "..."}, "report"),
        ({"changed_paths": "src/a.py"}, "report.changed_paths"),
    ],
)
def test_a_malformed_report_is_refused_naming_the_field(raw: dict[str, Any], where: str) -> None:
    """parse_report refuses each malformed field with REPORT_INVALID (exit 2) and its path."""
    with pytest.raises(PlantrailError) as caught:
        parse_report(raw)
    assert (caught.value.code, caught.value.exit_code, caught.value.fields["path"]) == ("REPORT_INVALID", 2, where)


def test_the_cli_takes_a_report_and_refuses_an_unmet_check(
    run_cli: Callable[..., Any], write_json: Callable[[str, Any], Path], tmp_path: Path
) -> None:
    """complete --report: exit 1 and error[CHECK_NOT_MET] with the log unchanged, then accepted on a passing record."""
    log = tmp_path / "cli.jsonl"
    assert run_cli("create", log, "--plan", write_json("draft.json", session_draft())).code == 0
    assert run_cli("start", log, "reproduce").code == 0
    before = log.read_bytes()
    wrong = write_json("wrong.json", {"exit_code": 0, "observations": [{"check": "new-test-fails", "exit_code": 0}]})
    result = run_cli("complete", log, "reproduce", "-e", "ran it", "--report", wrong)
    assert result.code == 1 and result.err.startswith("error[CHECK_NOT_MET]") and log.read_bytes() == before
    right = write_json("right.json", {"exit_code": 1, "observations": [{"check": "new-test-fails", "exit_code": 1}]})
    assert run_cli("complete", log, "reproduce", "-e", "the test fails with 200", "--report", right, "--json").json()[
        "ok"
    ]
    bad = write_json("bad.json", {"exit_code": "one"})
    result = run_cli("fail", log, "implement", "--error", "x", "--report", bad)
    assert result.code == 2 and result.err.startswith("error[REPORT_INVALID]")
