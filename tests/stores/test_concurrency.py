"""Concurrent writers: several processes append to one log at once, some with stale expected seqs.

Exactly the acknowledged events end up in the log, with contiguous seqs, no torn or interleaved line, every
deliberately stale expected seq refused, and a chain (and replay) that verifies. Idempotency keys hold
across processes: one record per key, retries get the original seq, other content is refused.
"""

from __future__ import annotations

import copy
import multiprocessing
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from tests.conftest import LOGIN_DRAFT
from tests.stores.concurrency import (
    AppendReport,
    KeyResult,
    append_worker,
    keyed_worker,
    reader_worker,
)

SHAPES = {False: ((4, 100), (8, 40)), True: ((4, 5_000), (8, 2_000))}  # (processes, appends each)


def run_workers(target: Callable[..., None], args: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Fork one worker per argument tuple (each gets a pipe as its last argument) and return their reports."""
    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe(duplex=False) for _ in args]
    workers = [
        context.Process(target=target, args=(*a, send), daemon=True) for a, (_, send) in zip(args, pipes, strict=True)
    ]
    for worker in workers:
        worker.start()
    reports = [receive.recv() for receive, _ in pipes]
    for worker in workers:
        worker.join()
    assert [w.exitcode for w in workers] == [0] * len(workers)
    return reports


def new_log(tmp_path: Path, name: str) -> Path:
    """A fresh log with the login plan (fsync always: the default a real writer gets)."""
    path = tmp_path / name
    Ledger.create(path, copy.deepcopy(LOGIN_DRAFT)).close()
    return path


@pytest.mark.slow
@pytest.mark.parametrize("shape", [0, 1], ids=["4-writers", "8-writers"])
def test_concurrent_appends_keep_exactly_the_accepted_events(
    tmp_path: Path, full: bool, shape: int, figures: Callable[[str], None]
) -> None:
    """Processes appending at once leave exactly their accepted events, contiguous, unbroken and verified,
    while a reader alongside never sees a torn tail or a record that is not in the final log."""
    processes, each = SHAPES[full][shape]
    path = new_log(tmp_path, "shared.jsonl")
    context = multiprocessing.get_context("fork")
    stop, (receive, send) = context.Event(), context.Pipe(duplex=False)
    follower = context.Process(target=reader_worker, args=(str(path), stop, send), daemon=True)
    follower.start()
    started = time.perf_counter()
    reports: list[AppendReport] = run_workers(
        append_worker, [(str(path), w, each, 7_000 + w) for w in range(processes)]
    )
    elapsed = time.perf_counter() - started
    stop.set()
    heads: list[tuple[int, str]] = receive.recv()
    follower.join()
    assert follower.exitcode == 0

    accepted = {entry for report in reports for entry in report.accepted}
    with LogReader(path) as reader:
        records = list(reader.records())
        assert reader.torn is None
    assert len(accepted) == processes * each
    assert {(r.seq, r.h, r.key) for r in records if r.key is not None} == accepted
    events = [r for r in records if not r.type.startswith("log.")]
    assert len(events) == 1 + processes * each  # the plan and every accepted append (log.batch bounds aside)
    assert sum(r.stale_accepted for r in reports) == 0
    assert verify_log(path).last_seq == len(records) - 1
    assert all(records[seq].h == h for seq, h in heads), "a reader saw a record that is not in the final log"
    stale = sum(r.stale_refused for r in reports)
    races = sum(r.races_lost for r in reports)
    batches = sum(r.batches for r in reports)
    assert stale > 0
    figures(
        f"concurrency {processes} processes x {each} appends: {processes * each} events in {batches} batches "
        f"of 1-8, all present once, seq contiguous, 0 torn or interleaved lines, chain verified; {stale} "
        f"deliberately stale expected seqs all refused; {races} optimistic appends overtaken and retried; "
        f"{len(heads)} whole-log reads alongside, none torn, each a prefix of the final log; "
        f"{elapsed:.1f} s (fsync always)"
    )


def test_idempotency_keys_hold_across_processes(tmp_path: Path) -> None:
    """Two processes writing the same keys leave one record per key; a retry gets the original; other content
    is refused."""
    keys = 200
    path = new_log(tmp_path, "keys.jsonl")
    same, other = run_workers(keyed_worker, [(str(path), keys, 0), (str(path), keys, 1)])

    with LogReader(path) as reader:
        stored = {r.key: r for r in reader.records() if r.key is not None}
    assert len(stored) == keys
    for a, b in zip(same, other, strict=True):
        record = stored[a.key]
        conflicting = int(a.key[1:]) % 10 == 0
        assert_key_outcome(record.seq, record.h, a, b, conflicting)


def assert_key_outcome(seq: int, h: str, a: KeyResult, b: KeyResult, conflicting: bool) -> None:
    """Both processes point at the one stored record: either both acked it, or the loser got a conflict."""
    assert a.seq == b.seq == seq
    if not conflicting:
        assert not a.conflict and not b.conflict
        assert a.hash == b.hash == h
        assert a.duplicate != b.duplicate
        return
    assert a.conflict != b.conflict
    winner = b if a.conflict else a
    assert winner.hash == h and not winner.duplicate
