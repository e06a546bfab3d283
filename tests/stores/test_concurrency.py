"""Concurrent writers: several processes append to one log at once, some with stale expected seqs.

Exactly the acknowledged events end up in the log, with contiguous seqs, no torn or interleaved line, every
deliberately stale expected seq refused, and a chain (and replay) that verifies. Idempotency keys hold
across processes: one record per key, retries get the original seq, other content is refused.
"""

from __future__ import annotations

import asyncio
import copy
import multiprocessing
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from tests.conftest import LOGIN_DRAFT
from tests.helpers.stores import JsonlTarget, PostgresTarget, postgres_url, unique_run
from tests.stores.concurrency import (
    AppendReport,
    KeyResult,
    append_worker,
    async_keyed_appends,
    keyed_appends,
    keyed_appends_worker,
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


# --------------------------------------------------------------------------- every process model, both stores

#: How writers run: forked after the parent used the store (holding a writer open across the fork), forked
#: children each using the parent's open ledger object itself, forked before the parent used the store, spawned,
#: threads of one process, and asyncio tasks calling the library through ``asyncio.to_thread``.
MODELS = ("fork", "fork-inherited", "fork-fresh", "spawn", "threads", "asyncio")
#: Where they write: one JSONL log, one database run, a database run each.
LAYOUTS = ("jsonl", "postgres-one-run", "postgres-runs")
#: No trial may take longer than this: a hung writer fails the test instead of hanging the suite.
TRIAL_TIMEOUT_S = 120.0


def trial_locations(tmp_path: Path, layout: str, writers: int) -> list[str]:
    """Each writer's run (the same one when they share it), created with the login plan."""
    if layout == "jsonl":
        target: JsonlTarget | PostgresTarget = JsonlTarget(tmp_path)
        names = ["shared"] * writers
    else:
        target = PostgresTarget(postgres_url())
        shared = unique_run("trial")
        names = [shared] * writers if layout == "postgres-one-run" else [unique_run("trial") for _ in range(writers)]
    locations = [target.location(name) for name in names]
    for location in dict.fromkeys(locations):
        Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    return locations


def fresh_pool(location: str) -> str:
    """A database run's URL with a pool size no earlier use of the server asked for: the parent has no pool for it
    when it forks (a file's name is returned as it is)."""
    if "#" not in location:
        return location
    url, run = location.split("#", 1)
    return f"{url}{'&' if '?' in url else '?'}pool_size=3#{run}"


def run_writers(model: str, targets: Sequence[str | Ledger], count: int) -> list[list[tuple[int, str, str]]]:
    """Run one writer per target under ``model``, each appending ``count`` keyed events; return their acks. A
    writer still running after TRIAL_TIMEOUT_S, or one that failed, fails the test."""
    if model == "threads":
        results: dict[int, list[tuple[int, str, str]]] = {}
        threads = [
            threading.Thread(target=lambda w=w, t=t: results.__setitem__(w, keyed_appends(t, w, count)), daemon=True)
            for w, t in enumerate(targets)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TRIAL_TIMEOUT_S)
            assert not thread.is_alive(), "a writer thread hung"
        assert sorted(results) == list(range(len(targets))), "a writer thread failed"
        return [results[w] for w in range(len(targets))]
    if model == "asyncio":
        gathered: list[list[list[tuple[int, str, str]]]] = []

        async def tasks() -> list[list[tuple[int, str, str]]]:
            return list(await asyncio.gather(*(async_keyed_appends(str(t), w, count) for w, t in enumerate(targets))))

        loop = threading.Thread(target=lambda: gathered.append(asyncio.run(tasks())), daemon=True)
        loop.start()
        loop.join(TRIAL_TIMEOUT_S)
        assert not loop.is_alive(), "an asyncio writer hung"
        assert gathered, "an asyncio writer failed"
        return gathered[0]
    context = multiprocessing.get_context("spawn" if model == "spawn" else "fork")
    pipes = [context.Pipe(duplex=False) for _ in targets]
    workers = [
        context.Process(target=keyed_appends_worker, args=(t, w, count, send), daemon=True)
        for w, (t, (_, send)) in enumerate(zip(targets, pipes, strict=True))
    ]
    try:
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + TRIAL_TIMEOUT_S
        reports = []
        for receive, _ in pipes:
            assert receive.poll(max(deadline - time.monotonic(), 0)), "a writer process hung"
            reports.append(receive.recv())
        for worker in workers:
            worker.join(max(deadline - time.monotonic(), 0))
            assert not worker.is_alive(), "a writer process hung"
            assert worker.exitcode == 0
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
    failed = [report for report in reports if isinstance(report, str)]
    assert not failed, failed
    return reports


@pytest.mark.slow
@pytest.mark.parametrize("writers", [2, 4, 8])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("model", MODELS)
def test_writers_lose_nothing_under_every_process_model(
    tmp_path: Path, full: bool, model: str, layout: str, writers: int
) -> None:
    """Writers appending at once under every process model, to one log, one database run or a run each, leave
    exactly their acknowledged events (one record per key, seqs contiguous, the chain verified), none hangs, and
    the parent's own writer, used before and after them, still works."""
    count = 200 if full else 6
    locations = trial_locations(tmp_path, layout, writers)
    held = {location: Ledger.open(location) for location in dict.fromkeys(locations)}
    if model != "fork-fresh":
        for ledger in held.values():
            ledger.start("reproduce")  # the parent uses its writer before the fork and holds it across it
    targets: list[str | Ledger]
    if model == "fork-inherited":
        targets = [held[location] for location in locations]
    elif model == "fork-fresh":
        targets = [fresh_pool(location) for location in locations]
    else:
        targets = list(locations)
    reports = run_writers(model, targets, count)
    for ledger in held.values():  # the parent's writer appends after them (its lock or session is still its own)
        if model == "fork-fresh":
            ledger.start("reproduce")
        else:
            ledger.complete("reproduce", "the parent's writer still appends")
        ledger.close()

    for location in dict.fromkeys(locations):
        records = (JsonlTarget(tmp_path) if layout == "jsonl" else PostgresTarget("")).records(location)
        assert [r.seq for r in records] == list(range(len(records)))
        mine = {ack for w, report in enumerate(reports) if locations[w] == location for ack in report}
        assert len(mine) == locations.count(location) * count
        assert {(r.seq, r.h, r.key) for r in records if r.key is not None and r.key.startswith("w")} == mine
        assert verify_log(location).last_seq == len(records) - 1
