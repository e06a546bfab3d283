"""Crash trials: writers are SIGKILLed at random moments, and reopening loses no acknowledged event.

Each trial creates a log (fsync policy drawn from the seed), sometimes leaves a torn tail for the writers
to repair as they open, forks one or three writers (tests/stores/crash.py), kills them all 2-80 ms later,
and checks the log: mid-file damage would raise, a torn tail is repaired with its bytes quarantined and
recorded, every acked (seq, hash) is present, seqs are contiguous, no key appears twice, the whole log
verifies, and every quarantine file is recorded by a log.repaired record. One trial in ten writes 1-8 MiB
evidence, so that SIGKILL can tear a single large write. Seeds are fixed; a failing trial names its seed
(rerun one with PLANTRAIL_TRIAL_SEED=<seed>).
"""

from __future__ import annotations

import collections
import copy
import multiprocessing
import os
import random
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.stores.jsonl.salvage import salvage
from plantrail.ledger.verify import verify_log
from tests.conftest import LOGIN_DRAFT
from tests.stores.crash import Acked, crash_writer, drain, parse_acks

SINGLE_WRITER = (20, 1000)  # trials: default run, --full
THREE_WRITERS = (10, 300)
_POLICIES = ("always", "always", "batch", "none")


class Trial(NamedTuple):
    """A trial's parameters, all drawn from its seed."""

    seed: int
    writers: int
    big: bool
    policy: str
    torn_before: bool
    delay: float


class Outcome(NamedTuple):
    """What a trial found after the kill."""

    acked: int
    torn: bool
    finished_repair: bool


def draw(seed: int, writers: int) -> Trial:
    """The trial a seed stands for."""
    rng = random.Random(seed)
    return Trial(
        seed=seed,
        writers=writers,
        big=rng.random() < 0.1,
        policy=rng.choice(_POLICIES),
        torn_before=rng.random() < 0.2,
        delay=rng.uniform(0.002, 0.080),
    )


def seeds(base: int, count: int) -> Sequence[int]:
    """The fixed seeds of a run, or the one seed in PLANTRAIL_TRIAL_SEED."""
    one = os.environ.get("PLANTRAIL_TRIAL_SEED")
    return [int(one)] if one else range(base, base + count)


def tear(path: Path, seed: int) -> None:
    """Leave the start of a record without its newline, as a writer killed mid-write would."""
    fragment = b'{"v":1,"seq":2,"ts":"2026-01-01T00:00:00Z","run":"' + random.Random(seed).randbytes(40).hex().encode()
    with open(path, "ab") as f:
        f.write(fragment)


def run_writers(trial: Trial, path: Path) -> list[Acked]:
    """Fork the writers, kill them all after the trial's delay, and return what they acknowledged."""
    read_fd, write_fd = os.pipe()
    context = multiprocessing.get_context("fork")
    writers = [
        context.Process(target=crash_writer, args=(str(path), write_fd, trial.seed, w, trial.big), daemon=True)
        for w in range(trial.writers)
    ]
    try:
        for writer in writers:
            writer.start()
        os.close(write_fd)
        data = drain(read_fd, time.monotonic() + trial.delay)
        for writer in writers:
            writer.kill()
        data += drain(read_fd, None)
    finally:
        for writer in writers:
            writer.kill()
            writer.join()
        os.close(read_fd)
    assert [w.exitcode for w in writers] == [-signal.SIGKILL] * trial.writers, "a writer died before the kill"
    return parse_acks(data)


def check_after_crash(path: Path, acks: list[Acked]) -> Outcome:
    """Reopen as a recovering writer would and check every promise; return what was found."""
    with LogReader(path) as reader:
        repairs_before = sum(r.type == "log.repaired" for r in reader.records())
        torn = reader.torn is not None
    watermark = max(acks, default=None)
    with Ledger.open(path, repair=True, acked=watermark):
        pass
    report = verify_log(path)
    assert report.torn is None
    with LogReader(path) as reader:
        records = list(reader.records())
    new_repairs = sum(r.type == "log.repaired" for r in records) - repairs_before
    assert new_repairs == 1 if torn else new_repairs in (0, 1)
    for ack in acks:
        assert ack.seq < len(records), f"acked seq {ack.seq} lost: the log ends at seq {len(records) - 1}"
        assert records[ack.seq].h == ack.hash, f"acked seq {ack.seq} holds another record"
    assert len({a.seq for a in acks}) == len(acks), "a seq was acknowledged twice"
    keys = [r.key for r in records if r.key is not None]
    assert len(keys) == len(set(keys)), "an idempotency key appears twice"
    assert all(q.recorded for q in salvage(path).quarantine), "a quarantine file has no log.repaired record"
    return Outcome(acked=len(acks), torn=torn, finished_repair=new_repairs == 1 and not torn)


def run_trial(tmp_path: Path, trial: Trial) -> Outcome:
    """Create, (maybe) tear, write, kill, check."""
    path = tmp_path / f"seed-{trial.seed}.jsonl"
    Ledger.create(path, copy.deepcopy(LOGIN_DRAFT), fsync=trial.policy).close()  # type: ignore[arg-type]
    if trial.torn_before:
        tear(path, trial.seed)
    try:
        return check_after_crash(path, run_writers(trial, path))
    except Exception as exc:
        raise AssertionError(
            f"crash trial failed: {trial} (rerun: PLANTRAIL_TRIAL_SEED={trial.seed}); "
            f"artefacts in {tmp_path}: {type(exc).__name__}: {exc}"
        ) from exc


def run_trials(tmp_path: Path, base: int, count: int, writers: int) -> collections.Counter[str]:
    """Run a class of trials and total their figures."""
    totals: collections.Counter[str] = collections.Counter()
    for seed in seeds(base, count):
        trial = draw(seed, writers)
        outcome = run_trial(tmp_path, trial)
        totals.update(
            trials=1,
            big=trial.big,
            torn_before=trial.torn_before,
            acked=outcome.acked,
            torn=outcome.torn,
            finished=outcome.finished_repair,
        )
        for leftover in tmp_path.glob(f"seed-{seed}.jsonl*"):
            if leftover.is_dir():
                shutil.rmtree(leftover)  # the snapshot cache beside the log
            else:
                leftover.unlink()
    return totals


def describe(name: str, totals: collections.Counter[str]) -> str:
    """One line of published figures."""
    return (
        f"crash {name}: {totals['trials']} trials ({totals['big']} with 1-8 MiB events, {totals['torn_before']} "
        f"opened on a torn tail), {totals['acked']} acked events, 0 lost, {totals['torn']} torn tails after "
        f"SIGKILL (all repaired, quarantined and recorded), {totals['finished']} interrupted repairs finished"
    )


@pytest.mark.slow
def test_single_writer_killed_at_random_loses_no_acknowledged_event(
    tmp_path: Path, full: bool, figures: Callable[[str], None]
) -> None:
    """A writer SIGKILLed at a random moment loses no acknowledged event, and its torn tail is repaired."""
    totals = run_trials(tmp_path, base=1_000, count=SINGLE_WRITER[full], writers=1)
    figures(describe("single writer", totals))
    assert totals["trials"] == (1 if os.environ.get("PLANTRAIL_TRIAL_SEED") else SINGLE_WRITER[full])


@pytest.mark.slow
def test_three_writers_killed_at_random_lose_no_acknowledged_event(
    tmp_path: Path, full: bool, figures: Callable[[str], None]
) -> None:
    """Three writers sharing a log, SIGKILLed together, lose no acknowledged event and never interleave."""
    totals = run_trials(tmp_path, base=50_000, count=THREE_WRITERS[full], writers=3)
    figures(describe("three writers", totals))
    assert totals["trials"] == (1 if os.environ.get("PLANTRAIL_TRIAL_SEED") else THREE_WRITERS[full])
