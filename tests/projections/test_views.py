"""Readiness and replan advice (which step comes next, and when to replan), and `plantrail next`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from plantrail.ledger.api import Ledger
from plantrail.projections.views import (
    advice,
    capacity_view,
    ready_steps,
    startable_steps,
    status_view,
    wait_reasons,
)
from tests.conftest import CliResult

FAN_OUT: dict[str, Any] = {
    "goal": "Audit three modules",
    "acceptance_criteria": [{"id": "report", "description": "the audit report lists every module"}],
    "policy": {"max_in_progress": "unlimited"},
    "steps": [
        {"id": "list", "title": "List the modules", "completion_evidence": "module list"},
        {"id": "zeta", "title": "Audit zeta", "depends_on": ["list"], "completion_evidence": "zeta notes"},
        {
            "id": "alpha",
            "title": "Audit alpha",
            "depends_on": ["list"],
            "completion_evidence": "alpha notes",
            "max_attempts": 1,
        },
        {"id": "mid", "title": "Audit mid", "depends_on": ["list"], "completion_evidence": "mid notes"},
        {
            "id": "merge",
            "title": "Merge the notes",
            "depends_on": ["zeta", "alpha", "mid"],
            "completion_evidence": "report",
        },
    ],
}


def test_ready_steps_come_in_a_stable_order(make_ledger: Callable[..., Ledger]) -> None:
    """Steps whose dependencies are done are listed in the stable topological order (smallest id first)."""
    ledger = make_ledger(FAN_OUT)
    ledger.start("list")
    ledger.complete("list", ["alpha, mid, zeta"])
    assert ready_steps(ledger.state) == ["alpha", "mid", "zeta"]


def test_two_failures_in_a_row_advise_a_replan(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """Two consecutive failed attempts advise repeated_tool_failure even though a step is ready."""
    ledger = make_ledger(draft)
    for _ in range(2):
        ledger.start("reproduce")
        ledger.fail("reproduce", "npm install: ETIMEDOUT")
    assert (ready_steps(ledger.state), advice(ledger.state)) == (["reproduce"], "repeated_tool_failure")


def test_a_completion_breaks_the_failure_streak(make_ledger: Callable[..., Ledger]) -> None:
    """A failure, a completion, then a failure are not two consecutive failures."""
    ledger = make_ledger(FAN_OUT)
    ledger.start("list")
    ledger.fail("list", "ls: permission denied")
    ledger.start("list")
    ledger.complete("list", ["alpha, mid, zeta"])
    ledger.start("zeta")
    ledger.fail("zeta", "parser crashed")
    assert advice(ledger.state) is None


def test_a_step_out_of_attempts_advises_retries_exhausted(make_ledger: Callable[..., Ledger]) -> None:
    """alpha allows one attempt: its failure blocks it and advises retries_exhausted."""
    ledger = make_ledger(FAN_OUT)
    ledger.start("list")
    ledger.complete("list", ["alpha, mid, zeta"])
    ledger.start("alpha")
    ledger.fail("alpha", "timeout")
    assert (ledger.state.steps["alpha"].status, advice(ledger.state)) == ("blocked", "retries_exhausted")


def test_nothing_ready_and_nothing_running_advises_no_ready_step(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A blocked first step leaves work that nothing can start: no_ready_step."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.block("reproduce", "staging is down")
    assert (ready_steps(ledger.state), advice(ledger.state)) == ([], "no_ready_step")


def test_a_replan_clears_the_advice(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """After a replan the failure streak starts again and a blocked step is pending again."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.block("reproduce", "staging is down")
    ledger.replan("no_ready_step", "reproduce against a local database", plan=draft)
    assert (ready_steps(ledger.state), advice(ledger.state)) == (["reproduce"], None)


def test_next_prints_the_ready_steps_or_the_advice(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any], run_cli: Callable[..., CliResult]
) -> None:
    """plantrail next lists what can start, then the advice once nothing can."""
    ledger = make_ledger(draft)
    log = tmp_path / "run.jsonl"
    assert run_cli("next", log, "--json").json() == {
        "plan_version": 1,
        "outcome": None,
        "ready": ["reproduce"],
        "can_start": ["reproduce"],
        "waiting": [],
        "capacity": {"max_in_progress": 1, "in_progress": 0, "free": 1},
        "in_progress": [],
        "advice": None,
        "stop": {"outcome": "continue", "rule": "continue", "reason": "next bounded step", "unmet": []},
        "leases": [],
        "approvals": {"requests": [], "waiting_approval": [], "violation": None, "denied": []},
        "repairs": [],
        "snapshot_seq": None,
    }
    ledger.start("reproduce")
    ledger.block("reproduce", "staging is down")
    result = run_cli("next", log)
    assert result.out == "no step is ready\nadvice: replan with --reason no_ready_step\n"


TWO_AT_A_TIME: dict[str, Any] = {**FAN_OUT, "policy": {"max_in_progress": 2}}


def test_a_ready_step_waits_for_capacity_when_the_limit_is_reached(make_ledger: Callable[..., Ledger]) -> None:
    """With max_in_progress 2 and two steps running, the third ready step is ready but cannot start: capacity."""
    ledger = make_ledger(TWO_AT_A_TIME)
    ledger.start("list")
    ledger.complete("list", ["alpha, mid, zeta"])
    ledger.start("alpha")
    assert (startable_steps(ledger.state), capacity_view(ledger.state)["free"]) == (["mid", "zeta"], 1)
    ledger.start("mid")
    state = ledger.state
    assert ready_steps(state) == ["zeta"]
    assert startable_steps(state) == []
    assert wait_reasons(state)["zeta"] == [{"code": "capacity", "max_in_progress": 2, "in_progress": ["alpha", "mid"]}]
    assert capacity_view(state) == {"max_in_progress": 2, "in_progress": 2, "free": 0}
    view = status_view(state)
    assert (view["ready"], view["can_start"]) == (["zeta"], [])  # ready as docs/semantics.md defines it, capacity aside
    assert [s["id"] for s in view["steps"] if s["ready"]] == ["zeta"]


def test_wait_reasons_name_every_cause_in_a_fixed_order(make_ledger: Callable[..., Ledger]) -> None:
    """A pending step lists its unfinished dependencies (then capacity); other steps their status."""
    ledger = make_ledger(FAN_OUT | {"policy": {"max_in_progress": 1}})
    ledger.start("list")
    waits = wait_reasons(ledger.state)
    assert waits["list"] == [{"code": "status", "status": "in_progress"}]
    assert waits["merge"] == [
        {"code": "dependencies", "waiting": ["zeta", "alpha", "mid"]},
        {"code": "capacity", "max_in_progress": 1, "in_progress": ["list"]},
    ]


def test_status_view_carries_can_start_per_step_and_for_the_run(make_ledger: Callable[..., Ledger]) -> None:
    """status --json's steps say can_start and why not; the run lists what can start and its capacity."""
    ledger = make_ledger(FAN_OUT)
    view = status_view(ledger.state)
    by_id = {s["id"]: s for s in view["steps"]}
    assert (by_id["list"]["can_start"], by_id["list"]["wait_reasons"]) == (True, [])
    assert by_id["merge"]["can_start"] is False
    assert (view["ready"], view["can_start"]) == (["list"], ["list"])
    assert view["capacity"] == {"max_in_progress": "unlimited", "in_progress": 0, "free": None}


def test_a_finished_run_can_start_nothing(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """After finish --outcome cancelled every step waits on run_finished."""
    ledger = make_ledger(draft)
    ledger.finish("cancelled", "abandoned")
    assert startable_steps(ledger.state) == []
    assert all(w[0] == {"code": "run_finished", "outcome": "cancelled"} for w in wait_reasons(ledger.state).values())


def test_next_and_acks_show_what_can_start_now(
    tmp_path: Path, make_ledger: Callable[..., Ledger], run_cli: Callable[..., CliResult]
) -> None:
    """next and a recording command print 'can start now' apart from 'ready' when capacity holds a step back."""
    ledger = make_ledger(TWO_AT_A_TIME)
    log = tmp_path / "run.jsonl"
    ledger.start("list")
    ledger.complete("list", ["alpha, mid, zeta"])
    ledger.start("alpha")
    ack = run_cli("start", log, "mid")
    assert ack.code == 0
    assert "ready: zeta\ncan start now: none (max_in_progress 2 reached: alpha, mid)" in ack.out
    shown = run_cli("next", log)
    assert shown.out.startswith("ready: zeta\ncan start now: none (max_in_progress 2 reached: alpha, mid)\n")
    data = run_cli("next", log, "--json").json()
    assert (data["ready"], data["can_start"]) == (["zeta"], [])
    assert data["waiting"] == [
        {"step": "zeta", "wait_reasons": [{"code": "capacity", "max_in_progress": 2, "in_progress": ["alpha", "mid"]}]}
    ]
    assert run_cli("complete", log, "mid", "-e", "mid notes", "--json").json()["can_start"] == ["zeta"]
