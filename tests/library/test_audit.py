"""The audit API: each view returns exactly the document its command prints with --json."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail import audit
from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import LogDamaged, PlantrailError
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@pytest.fixture
def log(tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> Path:
    """A run with two versions (v2 retitles diagnose while it runs) and a late v1 result."""
    revised = copy.deepcopy(draft)
    revised["steps"][1]["title"] = "Check what the auth service returns"
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.complete("reproduce", "login.test.ts: expected 200, got 500")
    ledger.start("diagnose")
    ledger.replan("failed_assumption", "the 500 comes from the auth service", causes=3, plan=revised)
    ledger.complete("diagnose", "token check looks fine", plan_version=1)  # late
    ledger.close()
    return tmp_path / "run.jsonl"


def _same(document: dict[str, Any]) -> Any:
    """The document as the CLI's JSON encoder sees it (tuples become lists)."""
    return orjson.loads(orjson.dumps(document))


#: (library call, CLI arguments after the log) for every audit view.
VIEWS: dict[str, tuple[Callable[[Path], dict[str, Any]], list[str]]] = {
    "versions": (audit.versions, ["versions"]),
    "replay now": (audit.replay, ["replay"]),
    "replay version": (lambda p: audit.replay(p, version=1), ["replay", "--version", "1"]),
    "replay at seq": (lambda p: audit.replay(p, at_seq=3), ["replay", "--at-seq", "3"]),
    "diff": (lambda p: audit.diff(p, 1, 2), ["diff", "1", "2"]),
    "why": (audit.why, ["why"]),
    "why version": (lambda p: audit.why(p, version=2), ["why", "--version", "2"]),
    "orphans": (audit.orphans, ["orphans"]),
    "resume": (audit.resume, ["resume"]),
}


def _cli(run_cli: Cli, log: Path, args: list[str]) -> CliResult:
    command, *rest = args
    return run_cli(command, log, *rest, "--json")


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_each_view_returns_what_the_cli_prints_with_json(view: str, log: Path, run_cli: Cli) -> None:
    """The library document equals the CLI's --json output, member for member."""
    call, args = VIEWS[view]
    assert call(log) == _cli(run_cli, log, args).json()


SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "login-fix-replans.jsonl"


@pytest.mark.parametrize(
    "args",
    [["versions"], ["replay", "--version", "2"], ["diff", "1", "3"], ["why", "--version", "3"], ["resume"]],
    ids=" ".join,
)
def test_the_sample_run_with_a_patch_reads_alike_through_both_doors(
    args: list[str], tmp_path: Path, run_cli: Cli
) -> None:
    """On the three-version sample (v3 from a patch) every view's library document is the CLI's --json."""
    log = tmp_path / SAMPLE.name
    log.write_bytes(SAMPLE.read_bytes())
    command, *rest = args
    calls: dict[str, Callable[[], dict[str, Any]]] = {
        "versions": lambda: audit.versions(log),
        "replay": lambda: audit.replay(log, version=2),
        "diff": lambda: audit.diff(log, 1, 3),
        "why": lambda: audit.why(log, version=3),
        "resume": lambda: audit.resume(log),
    }
    assert calls[command]() == run_cli(command, log, *rest, "--json").json()


def _json_types(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_types(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_types(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_each_document_holds_only_json_types(view: str, log: Path) -> None:
    """A document is made of dicts, lists, strings, numbers, booleans and None: it equals its JSON as is."""
    assert _json_types(VIEWS[view][0](log))


def test_the_resume_receipt_carries_its_exit_code(log: Path, run_cli: Cli) -> None:
    """resume() says the exit code `plantrail resume` exits with (10: diagnose is in doubt after the replan)."""
    receipt = audit.resume(log)
    assert receipt["exit_code"] == audit.RESUME_EXIT_CODES[receipt["verdict"]] == run_cli("resume", log).code


@pytest.mark.parametrize("view", ["versions", "replay now", "why", "orphans"])
def test_a_torn_tail_raises_with_the_valid_parts_document(view: str, log: Path, run_cli: Cli) -> None:
    """On a torn log the view raises TORN_TAIL carrying, as .partial, the document the CLI printed before exit 3."""
    with log.open("ab") as f:
        f.write(b'{"v":1,"seq":7,"ts":"2026-')
    call, args = VIEWS[view]
    with pytest.raises(LogDamaged) as caught:
        call(log)
    printed = _cli(run_cli, log, args)
    assert (caught.value.code, printed.code) == ("TORN_TAIL", 3)
    assert _same(caught.value.partial) == printed.json()


def test_resume_reports_a_torn_tail_in_the_receipt_instead_of_raising(log: Path) -> None:
    """resume() on a torn log returns the damaged receipt (exit code 3) with the damage's code."""
    with log.open("ab") as f:
        f.write(b'{"v":1,"seq":7')
    receipt = audit.resume(log)
    assert (receipt["verdict"], receipt["exit_code"], receipt["damage"]["code"]) == ("damaged", 3, "TORN_TAIL")


def test_a_reading_gives_the_state_beside_the_document(log: Path) -> None:
    """read_replay returns the folded state the document describes, and no damage for an intact log."""
    reading = audit.read_replay(log, version=1)
    assert (reading.state.version, reading.document["plan_version"], reading.damage) == (1, 1, None)


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda p: audit.replay(p, version=1, at_seq=2), "USAGE"),
        (lambda p: audit.replay(p, version=9), "UNKNOWN_PLAN_VERSION"),
        (lambda p: audit.replay(p, at_seq=99), "UNKNOWN_SEQ"),
        (lambda p: audit.diff(p, 2, 1), "USAGE"),
        (lambda p: audit.why(p.with_name("missing.jsonl")), "LOG_NOT_FOUND"),
    ],
    ids=["both points", "unknown version", "unknown seq", "diff backwards", "missing log"],
)
def test_impossible_requests_raise_with_a_stable_code(log: Path, call: Callable[[Path], Any], code: str) -> None:
    """A request the log cannot answer raises a PlantrailError with its code, as the CLI reports it."""
    with pytest.raises(PlantrailError) as caught:
        call(log)
    assert caught.value.code == code


def test_the_audit_module_is_the_front_doors_audit() -> None:
    """`from plantrail import audit` and plantrail.ledger.audit are one module."""
    import plantrail.ledger

    assert audit is plantrail.ledger.audit


def test_the_audit_surface_is_pinned() -> None:
    """audit.__all__ is exactly the seven views, their readings, the exit codes and the torn-tail error."""
    views = ["brief", "diff", "orphans", "replay", "resume", "versions", "why"]
    assert audit.__all__ == sorted(
        ["RESUME_EXIT_CODES", "Reading", "torn_tail_error", *views, *(f"read_{v}" for v in views)]
    )
    assert all(callable(getattr(audit, name)) for name in audit.__all__ if name != "RESUME_EXIT_CODES")


def test_resume_says_what_a_crash_cut_off_before_and_after_the_repair(
    tmp_path: Path, draft: dict[str, Any], run_cli: Cli
) -> None:
    """A worker's completion cut short by a crash: the receipt reads the torn bytes (torn), and after the repair
    the quarantine file (quarantined); either way the step in doubt says its result was cut off, and the text
    receipt says so (a step in doubt with no such record says nothing)."""
    from plantrail.ledger.stores.jsonl.log import repair

    log = tmp_path / "run.jsonl"
    with Ledger.create(log, draft, fsync="none") as ledger:
        ledger.start("reproduce")
        ledger.complete("reproduce", ["the 401 reproduces"])
        ledger.start("diagnose")
        ledger.complete("diagnose", ["session.ts:42 compares the wrong clock"])
    os.truncate(log, log.stat().st_size - 60)

    torn = audit.resume(log)
    assert [(r["type"], r["step"], r["attempt"]) for r in torn["torn"]] == [("step.completed", "diagnose", 1)]
    [doubt] = torn["in_doubt"]
    assert doubt["step"] == "diagnose" and doubt["cut_off"] == torn["torn"][0]["summary"]

    repair(log)
    after = audit.resume(log)
    assert after["torn"] == [] and after["verdict"] == "in_doubt"
    [quarantined] = after["quarantined"]
    assert [(r["type"], r["step"]) for r in quarantined["records"]] == [("step.completed", "diagnose")]
    assert after["in_doubt"][0]["cut_off"] == quarantined["records"][0]["summary"]
    text = run_cli("resume", log).out
    assert "diagnose attempt 1: a result of it was cut off by a crash" in text
    assert "seq 5 step.completed: step diagnose, attempt 1 (plan v1), cut short after" in text

    with Ledger.open(log, fsync="none") as ledger:
        ledger.abandon("diagnose", "the worker is gone")
        ledger.start("diagnose")
    assert audit.resume(log)["in_doubt"][0]["cut_off"] is None  # attempt 2 lost nothing
