"""verify over logs with replans and late results: late results pass as orphans, illegal ones do not."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import JsonlStore
from plantrail.ledger.stores.protocol import PendingRecord
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import StepCompleted
from plantrail.projections.canonical import state_hash


def _replanned_with_a_late_result(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> Ledger:
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    revised = copy.deepcopy(draft)
    revised["steps"][0]["title"] = "Reproduce with the auth logs on"
    ledger.replan("failed_assumption", "need the auth logs", plan=revised, causes=[2])
    ledger.complete("reproduce", ["old output"], plan_version=1)
    return ledger


def _append_raw(path: Path, plan_version: int, data: StepCompleted) -> None:
    """Append a record the way a foreign writer could, without plantrail's decision step."""
    store = JsonlStore.open(path)
    try:
        with store.session() as session:
            list(session.new_records())
            session.stage(PendingRecord(ts="2026-01-01T00:00:01Z", plan_version=plan_version, actor="agent", data=data))
            session.commit()
    finally:
        store.close()


def test_verify_accepts_late_results_as_orphans(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A log with a replan and a late result verifies, counting the orphan and printing the fold's hash."""
    ledger = _replanned_with_a_late_result(make_ledger, draft)

    report = verify_log(tmp_path / "run.jsonl")

    assert (report.versions, report.orphans, report.state_hash) == (2, 1, state_hash(ledger.state))


@pytest.mark.parametrize(
    ("plan_version", "step", "rule"),
    [(0, "reproduce", "UNKNOWN_PLAN_VERSION"), (1, "no such step", "INVALID_ID")],
)
def test_verify_refuses_a_result_no_plan_version_could_have_issued(
    tmp_path: Path,
    make_ledger: Callable[..., Ledger],
    draft: dict[str, Any],
    plan_version: int,
    step: str,
    rule: str,
) -> None:
    """A result stamped with version 0, or naming a step no plan could have (not an id), is ILLEGAL_EVENT."""
    _replanned_with_a_late_result(make_ledger, draft)
    _append_raw(tmp_path / "run.jsonl", plan_version, StepCompleted(step=step, attempt=1, evidence=("x",)))

    with pytest.raises(PlantrailError) as raised:
        verify_log(tmp_path / "run.jsonl")

    assert (raised.value.code, raised.value.fields["rule"]) == ("ILLEGAL_EVENT", rule)


def test_a_late_result_is_recorded_as_reported(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A result stamped with a superseded version is a fact: it is not judged against that version's plan."""
    ledger = _replanned_with_a_late_result(make_ledger, draft)
    ack = ledger.complete("renamed-later", ["a worker's report"], plan_version=1)
    assert ack.orphan == "SUPERSEDED_VERSION"
    assert verify_log(tmp_path / "run.jsonl").orphans == 2


@pytest.mark.parametrize("starts", [1, 3000])
def test_verify_refuses_a_fold_that_is_not_deterministic(
    tmp_path: Path,
    make_ledger: Callable[..., Ledger],
    draft: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    starts: int,
) -> None:
    """A transition that gives another state the second time it sees the same record is NONDETERMINISTIC_FOLD,
    on a short log and on one longer than the determinism check's window (the latest records are re-applied)."""
    from plantrail.ledger import verify as verify_module
    from plantrail.projections import state as state_module

    draft["steps"][0]["max_attempts"] = starts + 1
    ledger = make_ledger(draft)
    for _ in range(starts):
        ledger.start("reproduce")
        ledger.fail("reproduce", "flaky", attempt=ledger.state.steps["reproduce"].attempt)
    assert starts == 1 or ledger.state.last_seq > 2 * verify_module.WINDOW
    ledger.close()
    original = state_module._HANDLERS["step.started"]
    seen: set[int] = set()

    def flaky(state: Any, record: Any, data: Any) -> Any:
        change = original(state, record, data)
        if record.seq in seen:  # the second application of the same record
            return change._replace(reason="different the second time")
        seen.add(record.seq)
        return change

    monkeypatch.setitem(state_module._HANDLERS, "step.started", flaky)  # type: ignore[arg-type]
    with pytest.raises(PlantrailError) as caught:
        verify_log(tmp_path / "run.jsonl")
    assert caught.value.code == "NONDETERMINISTIC_FOLD"
