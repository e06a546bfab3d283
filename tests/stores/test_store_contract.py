"""One contract, claimed once and held by every store: the JSONL file and PostgreSQL.

Each test runs through the library's front door (``Ledger``) against both stores; a behaviour that holds in
one store and not the other fails here.
"""

from __future__ import annotations

import copy
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Complete, Start
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.canonical import state_hash
from plantrail.projections.state import fold
from tests.conftest import LOGIN_DRAFT, Clock
from tests.helpers.stores import JsonlTarget, PostgresTarget, postgres_url, unique_run

Target = JsonlTarget | PostgresTarget


@pytest.fixture
def ledgers() -> Iterator[list[Ledger]]:
    """Ledgers a test opened, closed at its end."""
    opened: list[Ledger] = []
    yield opened
    for ledger in opened:
        ledger.close()


def _create(target: Target, ledgers: list[Ledger], run: str | None = None, **options: Any) -> tuple[str, Ledger]:
    location = target.location(run or unique_run())
    options.setdefault("fsync", "none")
    ledger = Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), **options)
    ledgers.append(ledger)
    return location, ledger


def _expect(code: str, action: Callable[[], object]) -> PlantrailError:
    with pytest.raises(PlantrailError) as caught:
        action()
    assert caught.value.code == code, caught.value
    return caught.value


def test_a_created_run_reopens_to_the_same_state(target: Target, ledgers: list[Ledger]) -> None:
    """Create, record, close; opening the run again gives the same state, and its records fold to it."""
    location, ledger = _create(target, ledgers)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 401"])
    ledger.close()
    reopened = Ledger.open(location)
    ledgers.append(reopened)
    assert state_hash(reopened.state) == state_hash(ledger.state)
    assert state_hash(fold(target.records(location))) == state_hash(ledger.state)
    assert reopened.state.steps["reproduce"].status == "completed"


def test_create_never_overwrites_a_run(target: Target, ledgers: list[Ledger]) -> None:
    """A second create of the same run is refused LOG_EXISTS and leaves the first untouched."""
    location, _ = _create(target, ledgers)
    before = target.lines(location)
    _expect("LOG_EXISTS", lambda: Ledger.create(location, copy.deepcopy(LOGIN_DRAFT)))
    assert target.lines(location) == before


def test_both_stores_hold_the_same_bytes(tmp_path: Path, ledgers: list[Ledger]) -> None:
    """The same commands with the same clock and nonce give byte-identical records and head hash in both stores."""
    run = unique_run()
    targets = [JsonlTarget(tmp_path), PostgresTarget(postgres_url())]
    seen = []
    for target in targets:
        location, ledger = _create(target, ledgers, run=run, clock=Clock(), nonce="ab" * 16)
        ledger.start("reproduce")
        ledger.complete("reproduce", ["saved the failing output"], idempotency_key="k-1")
        ledger.replan("new_constraint", "the logs say so", plan=copy.deepcopy(LOGIN_DRAFT), causes=[3])
        seen.append((target.lines(location), ledger.state.head))
    assert seen[0] == seen[1]
    assert seen[0][0].count(b"\n") == 5


def test_a_refused_command_leaves_the_store_unchanged(target: Target, ledgers: list[Ledger]) -> None:
    """Refusals (a step not ready, empty evidence, an unknown step) write nothing."""
    location, ledger = _create(target, ledgers)
    before = target.lines(location)
    _expect("STEP_NOT_READY", lambda: ledger.start("diagnose"))
    _expect("STEP_NOT_FOUND", lambda: ledger.start("ghost"))
    ledger.start("reproduce")
    middle = target.lines(location)
    assert middle != before
    _expect("EVIDENCE_REQUIRED", lambda: ledger.complete("reproduce", ["   "]))
    assert target.lines(location) == middle


def test_a_stale_expected_seq_is_refused(target: Target, ledgers: list[Ledger]) -> None:
    """An append that names a seq the run no longer ends at is refused STALE_EXPECTED_SEQ."""
    location, ledger = _create(target, ledgers)
    head = ledger.state.last_seq
    ledger.start("reproduce", expected_seq=head)
    before = target.lines(location)
    _expect("STALE_EXPECTED_SEQ", lambda: ledger.complete("reproduce", ["x"], expected_seq=head))
    assert target.lines(location) == before


def test_a_retried_key_is_written_once(target: Target, ledgers: list[Ledger]) -> None:
    """The same key and content answers the first ack as a duplicate; other content under it is refused."""
    location, ledger = _create(target, ledgers)
    first = ledger.start("reproduce", idempotency_key="start-1")
    before = target.lines(location)
    again = ledger.start("reproduce", idempotency_key="start-1")
    assert (again.seq, again.hash, again.duplicate) == (first.seq, first.hash, True)
    _expect("IDEMPOTENCY_CONFLICT", lambda: ledger.complete("reproduce", ["x"], idempotency_key="start-1"))
    assert target.lines(location) == before


def test_a_retried_key_from_another_writer_is_a_duplicate(target: Target, ledgers: list[Ledger]) -> None:
    """A second writer retrying a key the first wrote gets the first's ack and writes nothing."""
    location, first = _create(target, ledgers)
    second = Ledger.open(location)
    ledgers.append(second)
    ack = first.start("reproduce", idempotency_key="start-1")
    again = second.start("reproduce", idempotency_key="start-1")
    assert (again.seq, again.hash, again.duplicate) == (ack.seq, ack.hash, True)


def test_a_group_commit_is_all_or_nothing(target: Target, ledgers: list[Ledger]) -> None:
    """A batch with one illegal command writes none of it; a legal batch writes all of it in order, between its
    log.batch bounds."""
    location, ledger = _create(target, ledgers)
    before = target.lines(location)
    _expect("STEP_ALREADY_ACTIVE", lambda: ledger.execute_many([Start(step="reproduce"), Start(step="diagnose")]))
    assert target.lines(location) == before
    acks = ledger.execute_many([Start(step="reproduce"), Complete(step="reproduce", evidence=("seen",))])
    assert [a.seq for a in acks] == [3, 4]
    types = [r.type for r in target.records(location)][-4:]
    assert types == ["log.batch", "step.started", "step.completed", "log.batch"]


def test_two_writers_see_each_other(target: Target, ledgers: list[Ledger]) -> None:
    """Two ledgers on one run interleave: each decides against what the other wrote."""
    location, first = _create(target, ledgers)
    second = Ledger.open(location)
    ledgers.append(second)
    first.start("reproduce")
    _expect("INVALID_TRANSITION", lambda: second.start("reproduce"))
    second.complete("reproduce", ["seen by the second writer"])
    assert first.refresh().steps["reproduce"].status == "completed"
    assert state_hash(first.state) == state_hash(second.state) == state_hash(fold(target.records(location)))


def test_racing_writers_lose_nothing_and_duplicate_nothing(target: Target, ledgers: list[Ledger]) -> None:
    """Threads appending to one run at once: every acknowledged event is there once, seqs contiguous."""
    location, _ = _create(target, ledgers)
    writers = [Ledger.open(location, fsync="none") for _ in range(4)]
    ledgers.extend(writers)
    acked: list[int] = []
    lock = threading.Lock()

    def pause_and_resume(writer: Ledger, n: int) -> None:
        for i in range(n):
            ack = writer.finish("paused", f"pause {i}")
            with lock:
                acked.append(ack.seq)

    threads = [threading.Thread(target=pause_and_resume, args=(w, 15)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records = target.records(location)
    assert sorted(acked) == [r.seq for r in records if r.type == "run.finished"]
    assert [r.seq for r in records] == list(range(len(records)))
    assert len(acked) == 60


def test_racing_expected_seqs_let_exactly_one_win(target: Target, ledgers: list[Ledger]) -> None:
    """Writers that all expect the same head: one append lands, every other is STALE_EXPECTED_SEQ."""
    location, ledger = _create(target, ledgers)
    writers = [Ledger.open(location, fsync="none") for _ in range(4)]
    ledgers.extend(writers)
    head = ledger.state.last_seq
    outcomes: list[str] = []
    barrier = threading.Barrier(len(writers))

    def race(writer: Ledger) -> None:
        barrier.wait()
        try:
            writer.finish("paused", "mine", expected_seq=head)
            outcomes.append("won")
        except PlantrailError as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=race, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["STALE_EXPECTED_SEQ"] * 3 + ["won"]
    assert len(target.records(location)) == head + 2


def test_opening_a_run_that_does_not_exist_is_an_error(target: Target) -> None:
    """Opening a missing run raises its store's code: LOG_NOT_FOUND for a file, RUN_NOT_FOUND for a database."""
    expected = "LOG_NOT_FOUND" if target.name == "jsonl" else "RUN_NOT_FOUND"
    _expect(expected, lambda: Ledger.open(target.location(unique_run("missing"))))


def _start_in_child(ledger: Ledger, conn: Connection) -> None:
    """In a forked child: start a step through the ledger the parent opened, close it, send the ack back."""
    ack = ledger.start("reproduce")
    ledger.close()
    conn.send((ack.seq, ack.hash))
    conn.close()


def test_a_writer_open_across_a_fork_serves_the_child_and_stays_the_parents(
    target: Target, ledgers: list[Ledger]
) -> None:
    """A forked child appends through a ledger its parent opened, while another thread of the parent is inside a
    turn on it: the child waits on no lock that thread held (none is ever released in the child), takes no file
    lock the parent holds (it waits for the parent's turn to end), uses no connection of the parent's; the
    parent appends on afterwards and the run verifies."""
    location, _ = _create(target, ledgers)
    writer = as_run(location).open_writer()
    ledger = Ledger(writer)
    ledger.refresh()
    ledgers.append(ledger)
    entered, leave = threading.Event(), threading.Event()

    def hold_a_turn() -> None:
        with writer.session():
            entered.set()
            leave.wait(60)

    holder = threading.Thread(target=hold_a_turn, daemon=True)
    holder.start()
    assert entered.wait(10)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_start_in_child, args=(ledger, send), daemon=True)
    child.start()
    try:
        if target.name == "jsonl":  # a file's writers exclude each other: the child waits for the parent's turn
            assert not receive.poll(0.5), "the child appended while the parent held the writer lock"
        leave.set()
        holder.join(10)
        assert not holder.is_alive()
        assert receive.poll(60), "the child hung"
        seq, h = receive.recv()
        child.join(10)
        assert not child.is_alive() and child.exitcode == 0
    finally:
        leave.set()
        if child.is_alive():
            child.kill()
    ack = ledger.complete("reproduce", ["the parent appends after its child"])
    ledger.close()
    records = target.records(location)
    assert (records[seq].h, records[seq].type, ack.seq) == (h, "step.started", seq + 1)
    assert verify_log(location).last_seq == ack.seq == len(records) - 1


# --------------------------------------------------------------------------- the store-neutral reader


def test_the_reader_answers_alike_in_every_store(target: Target, ledgers: list[Ledger]) -> None:
    """plantrail.ledger.reading gives the state, a record by seq, a filtered tail and the records after a seq
    the same way for a file and a database run; a seq past the end is UNKNOWN_SEQ."""
    from plantrail.ledger import reading

    location, ledger = _create(target, ledgers)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 401"])
    ledger.start("diagnose")
    ledger.close()
    result = reading.read_state(location, use_cache=False)
    assert (state_hash(result.state), result.torn, result.damage) == (state_hash(ledger.state), None, None)
    assert reading.record_at(location, 3).type == "step.completed"
    _expect("UNKNOWN_SEQ", lambda: reading.record_at(location, 9))
    tail, torn = reading.tail_records(location, 2, lambda r: r.type == "step.started")
    assert ([r.seq for r in tail], torn) == ([2, 4], None)
    with reading.open_records(location) as (reader, records):
        assert [r.seq for r in records] == [0, 1, 2, 3, 4]
    assert reader.torn is None
    versions = reading.read_versions(location)
    assert (versions.total, versions.run) == (1, ledger.state.run)
    _expect("UNKNOWN_SEQ", lambda: reading.follow(location, after=7))


def test_a_follower_gets_each_append_once_in_every_store(target: Target, ledgers: list[Ledger]) -> None:
    """reading.follow yields the records appended after a seq, in order and once each, and ends when told."""
    from plantrail.ledger import reading

    location, _ = _create(target, ledgers)
    seen: list[int] = []
    done = threading.Event()

    def append() -> None:
        with Ledger.open(location) as writer:
            writer.start("reproduce")
            writer.complete("reproduce", ["it fails"])
        done.set()

    thread = threading.Thread(target=append)
    thread.start()
    for batch in reading.follow(location, after=1, poll=0.05, stop=lambda: done.is_set() and len(seen) >= 2):
        seen.extend(r.seq for r in batch)
    thread.join()
    assert seen == [2, 3]


def test_a_runs_payloads_are_listed_and_packed_alike_in_every_store(
    target: Target, ledgers: list[Ledger], tmp_path: Path
) -> None:
    """payload_names and salted_payload answer the same way for a file and a database run, and an evidence pack
    of the run holds each payload (its salt, then its bytes) under its name and verifies."""
    import zipfile

    from plantrail.ledger.pack import make_pack, verify_pack

    location, ledger = _create(target, ledgers)
    ledger.start("reproduce")
    ledger.close()
    with as_run(location) as run:
        assert run.payload_names() == []
        writer = run.open_writer()
    try:
        stored = sorted([writer.store_payload(b"first"), writer.store_payload(b"second")])
    finally:
        writer.close()
    with as_run(location) as run:
        assert run.payload_names() == [s.digest for s in stored]
        salted = {name: run.salted_payload(name) for name in run.payload_names()}
    assert sorted(data for _, data in salted.values()) == [b"first", b"second"]
    pack = tmp_path / "pack.zip"
    made = make_pack([location], str(pack))
    run_id = made.manifest["runs"][0]["run"]
    with zipfile.ZipFile(pack) as archive:
        for name, (salt, data) in salted.items():
            assert archive.read(f"runs/{run_id}/payloads/{name.removeprefix('sha256:')}") == salt + data
    assert verify_pack(str(pack)).runs[0].report["payloads_checked"] == 2
