"""What torn bytes read as, where a person meets them: a repair says what it moved aside, salvage what a
damaged range and a quarantine file hold, a run what its torn tail and its quarantine files hold."""

from __future__ import annotations

import os
from pathlib import Path

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Complete, Start
from plantrail.ledger.stores.jsonl.log import repair
from plantrail.ledger.stores.jsonl.run import FileRun
from plantrail.ledger.stores.jsonl.salvage import salvage
from tests.conftest import Clock


def _torn(tmp_path: Path, clock: Clock, draft: dict[str, object], grouped: bool = False) -> tuple[Path, bytes]:
    """A log whose last write (a completion of reproduce, or with ``grouped`` a group commit of it and a start
    of diagnose) is cut 40 bytes short; and the bytes the cut left."""
    log = tmp_path / "run.jsonl"
    with Ledger.create(log, draft, clock=clock, fsync="none", nonce="0" * 32) as ledger:
        ledger.start("reproduce")
        before = log.stat().st_size
        if grouped:
            ledger.execute_many([Complete(step="reproduce", evidence=["it fails"]), Start(step="diagnose")])
        else:
            ledger.complete("reproduce", ["it fails"])
    os.truncate(log, log.stat().st_size - 40)
    return log, log.read_bytes()[before:]


def test_a_repair_says_what_it_moved_aside(tmp_path: Path, clock: Clock, draft: dict[str, object]) -> None:
    """repair's result reads the quarantined bytes: the completion cut short, with its step and attempt; a torn
    group commit reads as each of its records, the whole ones and the cut one."""
    log, _ = _torn(tmp_path, clock, draft)
    [moved] = repair(log).reads_as
    assert (moved.type, moved.seq, moved.step, moved.attempt, moved.whole) == (
        "step.completed",
        3,
        "reproduce",
        1,
        False,
    )
    assert moved.summary.startswith("seq 3 step.completed: step reproduce, attempt 1 (plan v1), cut short after")
    (tmp_path / "group").mkdir()
    grouped, _ = _torn(tmp_path / "group", clock, draft, grouped=True)
    moved_group = repair(grouped).reads_as
    assert [(r.type, r.whole) for r in moved_group] == [
        ("log.batch", True),
        ("step.completed", True),
        ("step.started", True),
        ("log.batch", False),
    ]


def test_salvage_says_what_a_torn_range_and_a_quarantine_file_hold(
    tmp_path: Path, clock: Clock, draft: dict[str, object]
) -> None:
    """salvage reads a torn tail's bytes and a quarantine file's as records as far as they go."""
    log, _ = _torn(tmp_path, clock, draft)
    [damage] = salvage(log).damaged
    assert damage.code == "TORN_TAIL" and [r.type for r in damage.reads_as] == ["step.completed"]
    repair(log)
    [quarantine] = salvage(log).quarantine
    assert quarantine.recorded and [(r.type, r.step) for r in quarantine.reads_as] == [("step.completed", "reproduce")]


def test_a_run_reads_its_torn_tail_and_only_its_users_quarantine_files(
    tmp_path: Path, clock: Clock, draft: dict[str, object]
) -> None:
    """A file run describes the torn tail a read ended on and its quarantine files; a link planted under a
    quarantine file's name is not followed (salvage lists it, reading nothing from it)."""
    log, left = _torn(tmp_path, clock, draft)
    with FileRun(log) as run:
        torn = run.current().torn
        assert torn is not None
        assert [r.step for r in run.torn_records(torn)] == ["reproduce"]
        assert run.quarantined() == ()
    repair(log)
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(left)
    os.symlink(secret, f"{log}.quarantine.1.planted")
    with FileRun(log) as run:
        [found] = run.quarantined()
    assert found.offset > 1 and [r.step for r in found.records] == ["reproduce"]
    planted = [q for q in salvage(log).quarantine if q.name.endswith(".planted")]
    assert [q.reads_as for q in planted] == [()]
