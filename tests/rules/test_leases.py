"""Leases, heartbeats and abandon: an attempt's lease from its step's timeout_s or its heartbeats, judged at the
time a command asks (never in the state hash), late heartbeats refused, and abandon that does not charge the
attempt while a result from the gone worker lands on the orphan path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.reads import read_state
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.canonical import state_hash
from plantrail.projections.history import resume_receipt
from plantrail.projections.leases import expired_leases, lease_view
from plantrail.projections.model import Lease
from plantrail.projections.views import next_view, status_view
from tests.logs import read_records

#: The test clock's timestamps are 2026-01-01T00:00:00.<tick>Z, one microsecond per event.
EARLY = "2026-01-01T00:00:30Z"
LATE = "2026-01-01T00:02:00Z"


def leased_draft(timeout_s: float | None = 60, max_attempts: int = 3) -> dict[str, Any]:
    """A two-step plan whose first step declares a timeout (its attempts' lease) unless ``timeout_s`` is None."""
    implement: dict[str, Any] = {
        "id": "implement",
        "title": "Check expiry",
        "completion_evidence": "the new test passes",
        "max_attempts": max_attempts,
    }
    if timeout_s is not None:
        implement["timeout_s"] = timeout_s
    return {
        "goal": "Reject expired sessions",
        "acceptance_criteria": [{"id": "expired-gets-401", "description": "an expired session gets 401"}],
        "steps": [
            implement,
            {"id": "verify", "title": "Suite", "depends_on": ["implement"], "completion_evidence": "suite passes"},
        ],
    }


def refused(ledger: Ledger, path: Path, call: Callable[[], object]) -> PlantrailError:
    """Run a call that must be refused; return the error after checking the log kept its bytes."""
    before = path.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        call()
    assert path.read_bytes() == before
    return caught.value


def test_a_step_with_timeout_s_has_a_lease_from_its_start(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """Starting a step that declares timeout_s gives its attempt a lease of that many seconds from the start."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    ack = ledger.start("implement")
    start = read_records(path)[-1]
    assert ledger.state.steps["implement"].lease == Lease(start.ts, 60.0, ack.seq)


def test_a_lease_expires_only_after_the_time_asked_passes_it(make_ledger: Callable[..., Ledger]) -> None:
    """A lease is expired when the caller's time is past its start plus its seconds, and not before."""
    ledger = make_ledger(leased_draft(60))
    ledger.start("implement")
    assert [e["expired"] for e in lease_view(ledger.state, EARLY)] == [False]
    assert [e["step"] for e in expired_leases(ledger.state, LATE)] == ["implement"]
    assert lease_view(ledger.state, None)[0]["expired"] is None
    assert lease_view(ledger.state, EARLY)[0]["expires_at"] == "2026-01-01T00:01:00.000002Z"


def test_a_heartbeat_renews_the_lease_from_its_own_time(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A heartbeat records step.heartbeat (a v2 line) and the lease runs from its timestamp, for its lease_s."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    ledger.start("implement")
    ack = ledger.heartbeat("implement", lease_s=600)
    record = read_records(path)[-1]
    assert (record.type, record.v, record.data.lease_s) == ("step.heartbeat", 2, 600.0)
    assert ledger.state.steps["implement"].lease == Lease(record.ts, 600.0, ack.seq)
    assert expired_leases(ledger.state, LATE) == []
    ledger.heartbeat("implement")
    assert ledger.state.steps["implement"].lease.seconds == 60.0  # type: ignore[union-attr]


def test_a_heartbeat_gives_a_step_without_timeout_a_lease(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A v1 plan's step has no lease until a heartbeat names one; without --lease nor timeout_s it is refused."""
    ledger = make_ledger(leased_draft(None))
    path = tmp_path / "run.jsonl"
    ledger.start("implement")
    assert ledger.state.steps["implement"].lease is None
    error = refused(ledger, path, lambda: ledger.heartbeat("implement"))
    assert error.code == "LEASE_REQUIRED" and "lease_s=SECONDS" in str(error)
    ledger.heartbeat("implement", lease_s=30)
    assert [e["expired"] for e in lease_view(ledger.state, LATE)] == [True]


@pytest.mark.parametrize("lease", [0, -1, float("inf"), float("nan")])
def test_a_heartbeat_with_a_bad_lease_is_refused(
    make_ledger: Callable[..., Ledger], tmp_path: Path, lease: float
) -> None:
    """A lease that is not a finite number of seconds > 0 is LEASE_REQUIRED, the log unchanged."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    ledger.start("implement")
    assert refused(ledger, path, lambda: ledger.heartbeat("implement", lease_s=lease)).code == "LEASE_REQUIRED"


def test_a_late_heartbeat_is_refused_so_its_worker_stops(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A heartbeat for a stale attempt is STALE_ATTEMPT, for a superseded version STALE_PLAN_VERSION, for a
    step not in progress INVALID_TRANSITION, after the run finished RUN_FINISHED; each leaves the log as it was."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    ledger.start("implement")
    ledger.fail("implement", "flaky")
    assert refused(ledger, path, lambda: ledger.heartbeat("implement")).code == "INVALID_TRANSITION"
    ledger.start("implement")
    assert refused(ledger, path, lambda: ledger.heartbeat("implement", attempt=1)).code == "STALE_ATTEMPT"
    assert refused(ledger, path, lambda: ledger.heartbeat("nope")).code == "STEP_NOT_FOUND"
    ledger.replan("user_request", "tighter timeout", plan=leased_draft(30))
    late = refused(ledger, path, lambda: ledger.heartbeat("implement", plan_version=1, attempt=2))
    assert late.code == "STALE_PLAN_VERSION"
    ledger.finish("cancelled", "stopped")
    assert refused(ledger, path, lambda: ledger.heartbeat("implement")).code == "RUN_FINISHED"


def test_a_replan_gives_a_restarted_step_the_new_timeout(make_ledger: Callable[..., Ledger]) -> None:
    """The lease follows the active version: a step restarted after a replan gets the new timeout_s."""
    ledger = make_ledger(leased_draft(60))
    ledger.start("implement")
    ledger.replan("user_request", "tighter timeout", plan=leased_draft(30))
    ledger.start("implement")
    assert ledger.state.steps["implement"].lease.seconds == 30.0  # type: ignore[union-attr]


def test_whether_a_lease_expired_never_enters_the_state_hash(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """Expiry is derived at the time asked: status says expired or not, and the state hash is the same."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    ledger.start("implement")
    early, late = status_view(ledger.state, EARLY), status_view(ledger.state, LATE)
    assert (early["leases"][0]["expired"], late["leases"][0]["expired"]) == (False, True)
    assert next_view(ledger.state, LATE)["leases"] == late["leases"]
    hash_before = state_hash(ledger.state)
    assert state_hash(ledger.state) == hash_before == state_hash(read_state(str(path)).state)


def test_abandon_returns_the_step_to_pending_without_charging_the_attempt(
    make_ledger: Callable[..., Ledger],
) -> None:
    """With two attempts allowed, an abandoned attempt then a failed one leaves the step pending (one charged),
    where two failures would have blocked it; the attempt number still moves on."""
    ledger = make_ledger(leased_draft(60, max_attempts=2))
    ledger.start("implement")
    ledger.abandon("implement", "worker w1 was killed")
    step = ledger.state.steps["implement"]
    assert (step.status, step.attempt, step.charged, step.abandoned, step.lease) == ("pending", 1, 0, (1,), None)
    ledger.start("implement")
    ledger.fail("implement", "assertion failed")
    step = ledger.state.steps["implement"]
    assert (step.status, step.attempt, step.charged) == ("pending", 2, 1)
    ledger.start("implement")
    ledger.fail("implement", "assertion failed")
    assert ledger.state.steps["implement"].reason.startswith("attempts exhausted (2 of 2)")  # type: ignore[union-attr]


def test_a_result_from_the_abandoned_worker_lands_on_the_orphan_path(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """A result for an abandoned attempt is recorded as STALE_ATTEMPT, before and after the step restarts,
    and changes nothing in the plan; verify proves it."""
    ledger = make_ledger(leased_draft(60))
    ledger.start("implement")
    ledger.abandon("implement", "lease expired")
    assert ledger.complete("implement", "late worker finished").orphan == "STALE_ATTEMPT"
    assert ledger.state.steps["implement"].status == "pending"
    ledger.start("implement")
    assert ledger.fail("implement", "late worker failed", attempt=1).orphan == "STALE_ATTEMPT"
    assert ledger.state.steps["implement"].status == "in_progress"
    assert [o.why for o in ledger.state.orphans] == ["STALE_ATTEMPT", "STALE_ATTEMPT"]
    assert verify_log(tmp_path / "run.jsonl").records == 7


def test_abandon_is_refused_without_a_running_attempt_or_a_reason(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """Abandon needs a reason (REASON_REQUIRED) and a running attempt (INVALID_TRANSITION, STALE_ATTEMPT twice)."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    assert refused(ledger, path, lambda: ledger.abandon("implement", "gone")).code == "INVALID_TRANSITION"
    ledger.start("implement")
    assert refused(ledger, path, lambda: ledger.abandon("implement", "   ")).code == "REASON_REQUIRED"
    assert refused(ledger, path, lambda: ledger.abandon("implement", "gone", attempt=2)).code == "STALE_ATTEMPT"
    ledger.abandon("implement", "gone")
    assert refused(ledger, path, lambda: ledger.abandon("implement", "gone", attempt=1)).code == "STALE_ATTEMPT"


def test_resume_proposes_abandon_only_for_an_expired_lease(make_ledger: Callable[..., Ledger]) -> None:
    """A step in doubt whose lease expired gets 'abandon' as the next action; one whose lease runs does not."""
    ledger = make_ledger(leased_draft(60))
    ledger.start("implement")
    early, late = resume_receipt(ledger.state, now=EARLY), resume_receipt(ledger.state, now=LATE)
    assert (early["verdict"], late["verdict"]) == ("in_doubt", "in_doubt")
    assert "abandon" not in early["next"] and early["in_doubt"][0]["lease_expired"] is False
    assert "plantrail abandon LOG implement" in late["next"] and late["in_doubt"][0]["lease_expired"] is True


def test_the_cli_records_heartbeat_and_abandon_and_resume_exits_10(
    run_cli: Callable[..., Any], write_json: Callable[[str, Any], Path], tmp_path: Path
) -> None:
    """plantrail heartbeat and abandon record their events; resume on an expired lease exits 10 proposing abandon;
    a refused heartbeat prints error[STALE_ATTEMPT] and exits 1."""
    log = tmp_path / "cli.jsonl"
    assert run_cli("create", log, "--plan", write_json("d.json", leased_draft(1))).code == 0
    assert run_cli("start", log, "implement").code == 0
    beat = run_cli("heartbeat", log, "implement", "--lease", "0.001", "--json")
    assert beat.code == 0 and beat.json()["seq"] == 3
    result = run_cli("resume", log, "--json")
    assert (result.code, result.json()["leases"][0]["expired"]) == (10, True)
    assert "plantrail abandon" in result.json()["next"]
    assert "EXPIRED" in run_cli("status", log).out
    late = run_cli("heartbeat", log, "implement", "--attempt", "2")
    assert (late.code, late.err.startswith("error[STALE_ATTEMPT]")) == (1, True)
    assert run_cli("abandon", log, "implement", "--reason", "worker gone").code == 0
    assert run_cli("resume", log, "--json").json()["verdict"] == "continue"
    assert run_cli("verify", log).code == 0


def test_a_retried_heartbeat_with_its_key_writes_once(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A heartbeat retried with its idempotency key returns the original ack; another lease under it conflicts."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    ledger.start("implement")
    first = ledger.heartbeat("implement", idempotency_key="hb-1")
    again = ledger.heartbeat("implement", idempotency_key="hb-1")
    assert (again.seq, again.duplicate) == (first.seq, True)
    error = refused(ledger, path, lambda: ledger.heartbeat("implement", lease_s=5, idempotency_key="hb-1"))
    assert error.code == "IDEMPOTENCY_CONFLICT"


def test_leases_survive_the_snapshot_cache(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A state read through the cache's snapshot has the same leases and abandoned attempts as a full fold."""
    ledger = make_ledger(leased_draft(60))
    path = tmp_path / "run.jsonl"
    ledger.start("implement")
    ledger.abandon("implement", "gone")
    ledger.start("implement")
    ledger.heartbeat("implement", lease_s=90)
    expected = ledger.state.steps["implement"]
    ledger.close()  # a writer leaves its snapshot
    full = read_state(str(path), use_cache=False).state
    cached = read_state(str(path))
    assert cached.snapshot_seq == full.last_seq
    assert cached.state.steps["implement"] == full.steps["implement"] == expected
    assert state_hash(cached.state) == state_hash(full)


def _append_raw(path: Path, data: Any, plan_version: int = 1) -> None:
    """Append a record the way a foreign writer could, without plantrail's decision step."""
    from plantrail.ledger.stores.jsonl.log import JsonlStore
    from plantrail.ledger.stores.protocol import PendingRecord

    store = JsonlStore.open(path)
    try:
        with store.session() as session:
            list(session.new_records())
            session.stage(PendingRecord(ts="2026-01-01T00:00:01Z", plan_version=plan_version, actor="agent", data=data))
            session.commit()
    finally:
        store.close()


@pytest.mark.parametrize(
    ("event", "rule"),
    [
        ("heartbeat", "STALE_ATTEMPT"),
        ("abandon", "STALE_ATTEMPT"),
        ("partial", "PARTIAL_NOT_ALLOWED"),
        ("budget_exhausted", "OUTCOME_CONTRADICTS_STOP"),
    ],
)
def test_verify_replays_the_lease_and_outcome_rules_on_a_hand_made_log(
    make_ledger: Callable[..., Ledger], tmp_path: Path, event: str, rule: str
) -> None:
    """A heartbeat or abandon for an attempt that is not running, a partial the plan does not allow and a
    budget_exhausted whose unmet list is not the state's are ILLEGAL_EVENT, each naming its rule; the fold does
    not apply the heartbeat or abandon (a finish is applied as v1 applies one, and verify reports it)."""
    from plantrail.ledger.vocabulary.events import RunFinished, StepAbandoned, StepHeartbeat

    ledger = make_ledger(leased_draft(60))
    ledger.start("implement")
    ledger.close()
    path = tmp_path / "run.jsonl"
    data = {
        "heartbeat": StepHeartbeat(step="implement", attempt=2, lease_s=60.0),
        "abandon": StepAbandoned(step="implement", attempt=2, reason="gone"),
        "partial": RunFinished(outcome="partial", reason="out of time", not_done=("step:implement",)),
        "budget_exhausted": RunFinished(outcome="budget_exhausted", reason="spent", unmet=("step:verify",)),
    }[event]
    before = read_state(str(path), use_cache=False).state
    _append_raw(path, data)
    with pytest.raises(PlantrailError) as caught:
        verify_log(path)
    assert caught.value.code == "ILLEGAL_EVENT" and rule in str(caught.value)
    after = read_state(str(path), use_cache=False).state
    assert after.steps == before.steps


def test_status_next_and_resume_judge_the_deadline_and_leases_at_the_same_time(
    make_ledger: Callable[..., Ledger], run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    """The command's time is one moment for both rules of time: a deadline and a lease that have both passed
    (the log was written in January, the commands run later) show as such in status, next and resume alike."""
    ledger = make_ledger(leased_draft(60) | {"policy": {"deadline": "2026-06-01T00:00:00Z"}})
    ledger.start("implement")
    ledger.close()
    for command in ("status", "next", "resume"):
        document = run_cli(command, tmp_path / "run.jsonl", "--json").json()
        assert (document["stop"]["rule"], document["leases"][0]["expired"]) == ("deadline", True), command


@pytest.mark.parametrize(
    "data",
    [
        "heartbeat",
        "abandon",
        "forked",
    ],
)
def test_a_v2_event_type_on_a_v1_line_is_corrupt(data: str) -> None:
    """A line of an event type format v2 added, re-sealed as "v":1 (a correct hash), is CORRUPT_LINE: the
    fast path of the reader asks these types too."""
    import hashlib

    from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode
    from plantrail.ledger.vocabulary.events import RunForked, StepAbandoned, StepHeartbeat

    event = {
        "heartbeat": StepHeartbeat(step="a", attempt=1, lease_s=5.0),
        "abandon": StepAbandoned(step="a", attempt=1, reason="gone"),
        "forked": RunForked(parent="p", seq=1, head="0" * 64, state_hash="0" * 64, reason="try", state="{}"),
    }[data]
    line, _ = encode(seq=2, ts=EARLY, run="r", plan_version=1, actor="runtime", data=event, prev=GENESIS_PREV)
    assert line.startswith(b'{"v":2,')
    body = b'{"v":1,' + line[len(b'{"v":2,') : -73] + b"}"
    forged = body[:-1] + b',"h":"%s"}' % hashlib.sha256(body).hexdigest().encode()
    with pytest.raises(PlantrailError) as caught:
        decode(forged, 3)
    assert caught.value.code == "CORRUPT_LINE"
