"""The contract-tour sample (samples/record_contract_tour.sh, docs/contract-tour.md): scopes, an expected failure
that passes, a lease that expires, an abandoned attempt whose late result is an orphan, an approval gate, a scope
violation that pauses the run until an approval widens the scope, and a budget_exhausted end."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.stores.jsonl.reads import read_state
from plantrail.ledger.verify import verify_log
from tests.conftest import SAMPLES, CliResult
from tests.logs import read_records

Cli = Callable[..., CliResult]
SAMPLE = SAMPLES / "contract-tour.jsonl"
DRAFT = SAMPLES / "contract-tour.draft.json"


def _prefix(tmp_path: Path, last_seq: int) -> Path:
    """A copy of the sample up to and including ``last_seq`` (a log's prefix is a log)."""
    out = tmp_path / "prefix.jsonl"
    out.write_bytes(b"".join(SAMPLE.read_bytes().splitlines(keepends=True)[: last_seq + 1]))
    return out


def test_the_tour_draft_declares_scopes_a_read_only_step_and_an_approval_gate() -> None:
    """The sample's plan has a task write scope, per step writes and allowed_tools, a read-only verify and a
    changelog step that requires approval."""
    plan = read_records(SAMPLE)[1].data.plan
    assert plan.scope is not None and plan.scope.writes == ("src/session.js", "test/session.test.js", "CHANGELOG.md")
    scopes = {step.id: step.terms.scope for step in plan.steps}
    assert {sid: (sc.writes, sc.allowed_tools) for sid, sc in scopes.items() if sc is not None} == {
        "reproduce": (("test/session.test.js",), ("Edit", "Bash")),
        "implement": (("src/session.js",), ("Edit", "Bash")),
        "changelog": (("CHANGELOG.md",), ("Edit",)),
        "verify": ((), ("Bash",)),
    }
    assert [sid for sid, sc in scopes.items() if sc is not None and sc.requires_approval] == ["changelog"]


def test_the_tour_draft_with_a_write_outside_the_task_scope_is_refused(tmp_path: Path, run_cli: Cli) -> None:
    """The scope's validation on the sample: verify writing package.json is SCOPE_OUTSIDE_TASK, and no log
    is created."""
    bad = tmp_path / "bad.draft.json"
    text = DRAFT.read_text()
    assert text.count('"writes": [],') == 1
    bad.write_text(text.replace('"writes": [],', '"writes": ["package.json"],'))
    result = run_cli("create", tmp_path / "run.jsonl", "--plan", bad)
    assert result.code == 1 and "error[SCOPE_OUTSIDE_TASK]: step verify writes package.json" in result.err
    assert not (tmp_path / "run.jsonl").exists()


def test_the_tour_sample_gates_changelog_until_an_approval_is_granted(tmp_path: Path, run_cli: Cli) -> None:
    """Before the approval (seq 10), starting changelog is APPROVAL_REQUIRED with the log unchanged; the sample
    then requests and grants it (seq 11, 12) and starts changelog (seq 13)."""
    log = _prefix(tmp_path, 10)
    before = log.read_bytes()
    result = run_cli("start", log, "changelog")
    assert result.code == 1 and result.err.startswith("error[APPROVAL_REQUIRED]: step changelog is waiting_approval")
    assert log.read_bytes() == before
    records = read_records(SAMPLE)
    assert [(r.seq, r.type) for r in records[11:14]] == [
        (11, "approval.requested"),
        (12, "approval.granted"),
        (13, "step.started"),
    ]
    assert (records[11].data.steps, records[12].data.by) == (("changelog",), "ana")


def test_the_tour_sample_pauses_on_a_scope_violation_until_an_approval_widens_the_scope(
    tmp_path: Path, run_cli: Cli
) -> None:
    """changelog's result changing package.json is recorded as its blocked attempt (scope_violation) and pauses
    the run: resume exits 12, a start is PAUSED_SCOPE_VIOLATION with the log unchanged; the grant of version-bump
    (package.json) ends the pause and the retried attempt completes with that path."""
    blocked = read_records(SAMPLE)[14]
    assert (blocked.type, blocked.data.step, blocked.data.attempt) == ("step.blocked", "changelog", 1)
    assert blocked.data.reason.startswith("scope_violation: ") and blocked.data.violation.paths == ("package.json",)
    log = _prefix(tmp_path, 14)
    paused = run_cli("resume", log, "--json")
    assert (paused.code, paused.json()["verdict"]) == (12, "paused")
    before = log.read_bytes()
    refused = run_cli("start", log, "verify")
    assert refused.code == 1 and refused.err.startswith("error[PAUSED_SCOPE_VIOLATION]: the run is paused")
    assert log.read_bytes() == before
    state = read_state(str(SAMPLE), use_cache=False).state
    assert state.authority is not None and state.authority.violation is None
    grants = {a.id: (a.status, a.writes) for a in state.authority.approvals}
    assert grants == {"changelog-entry": ("granted", ()), "version-bump": ("granted", ("package.json",))}
    changelog = state.steps["changelog"]
    assert (changelog.status, changelog.attempt) == ("completed", 2)
    assert read_records(SAMPLE)[18].data.report.changed_paths == ("CHANGELOG.md", "package.json")


def test_the_tour_sample_verifies_and_ends_budget_exhausted(run_cli: Cli) -> None:
    """The sample verifies; it finished budget_exhausted listing verify and the criterion as unmet, and resume
    exits 15."""
    assert verify_log(SAMPLE).records == 22
    finish = read_records(SAMPLE)[-1]
    assert (finish.type, finish.v, finish.data.outcome) == ("run.finished", 2, "budget_exhausted")
    assert finish.data.unmet == ("step:verify", "criterion:expired-gets-401")
    result = run_cli("resume", SAMPLE, "--json")
    assert (result.code, result.json()["verdict"]) == (15, "budget_exhausted")


def test_the_tour_sample_abandons_an_attempt_without_charging_it() -> None:
    """implement allows one attempt: the abandoned first is not charged, the second completes, and the gone
    worker's result is the one orphan (STALE_ATTEMPT)."""
    state = read_state(str(SAMPLE), use_cache=False).state
    implement = state.steps["implement"]
    assert (implement.status, implement.attempt, implement.abandoned, implement.charged) == ("completed", 2, (1,), 1)
    [orphan] = state.orphans
    assert (orphan.step, orphan.attempt, orphan.why) == ("implement", 1, "STALE_ATTEMPT")
    types = [r.type for r in read_records(SAMPLE)]
    assert types.count("step.heartbeat") == 2 and types.count("step.abandoned") == 1


def test_the_tour_script_records_the_same_run(tmp_path: Path, full: bool) -> None:
    """Under --full, re-recording with the script gives the committed log's events (times and hashes aside)."""
    if not full:
        pytest.skip("runs about 20 CLI processes and sleeps for a lease to expire; use --full")
    out = tmp_path / "again.jsonl"
    env = os.environ | {"PLANTRAIL": f"{sys.executable} -m plantrail"}
    subprocess.run(
        ["bash", str(SAMPLES / "record_contract_tour.sh"), str(out)], check=True, env=env, capture_output=True
    )

    def events(path: Path) -> list[tuple[object, ...]]:
        return [(r.seq, r.type, r.actor, r.plan_version, r.data) for r in read_records(path)[1:]]

    assert events(out) == events(SAMPLE)
