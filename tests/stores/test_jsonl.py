"""The JSONL store: atomic create, catch-up between writers, torn tails, repair, fsync policies."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import JsonlStore, LogReader, repair
from plantrail.ledger.vocabulary.errors import LogDamaged, PlantrailError
from plantrail.projections.state import fold

MakeLedger = Callable[..., Ledger]


def _records(path: Path) -> tuple[list[int], Any]:
    with LogReader(path) as reader:
        seqs = [r.seq for r in reader.records()]
    return seqs, reader.torn


def _recorded(make_ledger: MakeLedger) -> Ledger:
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 401 — ünïcode evidence"])
    return ledger


def test_cutting_the_last_line_at_any_byte_gives_the_earlier_events_or_a_torn_tail(
    make_ledger: MakeLedger, tmp_path: Path
) -> None:
    """Every cut inside the last line reads as the earlier records plus TORN_TAIL, never as garbage."""
    _recorded(make_ledger).close()
    log = tmp_path / "run.jsonl"
    data = log.read_bytes()
    start = data.rindex(b"\n", 0, len(data) - 1) + 1
    for cut in range(start, len(data) + 1):
        log.write_bytes(data[:cut])
        seqs, torn = _records(log)
        if cut == len(data):
            assert (seqs, torn) == ([0, 1, 2, 3], None)
        elif cut == start:
            assert (seqs, torn) == ([0, 1, 2], None)
        else:
            assert seqs == [0, 1, 2]
            assert (torn.offset, torn.length, torn.line) == (start, cut - start, 4)


def test_appends_refuse_a_torn_tail_until_repair_quarantines_it(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A torn tail blocks writers (TORN_TAIL); repair moves the bytes aside, cuts back and records log.repaired."""
    _recorded(make_ledger).close()
    log = tmp_path / "run.jsonl"
    torn = b'{"v":1,"seq":4,"ts":"2026-'
    log.write_bytes(log.read_bytes() + torn)
    with pytest.raises(LogDamaged) as info:
        Ledger.open(log)
    assert info.value.code == "TORN_TAIL"
    size = len(log.read_bytes()) - len(torn)
    result = repair(log)
    assert result.record is not None and result.record.type == "log.repaired"
    quarantined = list(tmp_path.glob("run.jsonl.quarantine.*"))
    assert [q.read_bytes() for q in quarantined] == [torn]
    assert result.record.data.truncated_at == size  # type: ignore[union-attr]
    with Ledger.open(log) as ledger:
        assert ledger.state.steps["reproduce"].status == "completed"
        ledger.start("diagnose")
    assert _records(log) == ([0, 1, 2, 3, 4, 5], None)


def test_open_can_repair_a_torn_tail_when_asked(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """Ledger.open(repair=True) repairs under the writer lock and goes on."""
    _recorded(make_ledger).close()
    log = tmp_path / "run.jsonl"
    log.write_bytes(log.read_bytes() + b'{"v":1,"se')
    with Ledger.open(log, repair=True) as ledger:
        assert ledger.state.last_seq == 4
        assert ledger.start("diagnose").seq == 5


def test_a_zero_filled_tail_is_a_torn_tail(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """NUL bytes after the last record (power loss extended the file, not its data) read as a torn tail."""
    _recorded(make_ledger).close()
    log = tmp_path / "run.jsonl"
    log.write_bytes(log.read_bytes() + b"\0" * 300 + b"\n" + b"\0" * 100)
    seqs, torn = _records(log)
    assert seqs == [0, 1, 2, 3] and torn is not None and torn.zero_fill
    assert repair(log).record is not None


def test_damage_followed_by_a_valid_record_is_corruption_not_a_torn_tail(
    make_ledger: MakeLedger, tmp_path: Path
) -> None:
    """A damaged middle line is refused with its line number; repair refuses to cut history."""
    _recorded(make_ledger).close()
    log = tmp_path / "run.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"attempt":1', b'"attempt":7')
    log.write_bytes(b"\n".join(lines))
    before = log.read_bytes()
    for action, code in (
        (lambda: _records(log), "HASH_MISMATCH"),
        (lambda: repair(log), "NOT_REPAIRABLE"),
        (lambda: Ledger.open(log), "HASH_MISMATCH"),
    ):
        with pytest.raises(LogDamaged) as info:
            action()
        assert (info.value.code, info.value.fields["line"]) == (code, 3)
    assert log.read_bytes() == before


def test_writers_never_extend_a_log_damaged_under_its_snapshot(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A snapshot records the CRC of the bytes it covers: damage there sends a writer back to a full read, which
    refuses it with its line number; readers trust the snapshot's key (seq and hash); verify reads every line."""
    from plantrail.ledger.stores.jsonl.reads import read_state
    from plantrail.ledger.verify import verify_log

    _recorded(make_ledger).close()
    log = tmp_path / "run.jsonl"
    assert (tmp_path / "run.jsonl.plantrail-cache" / "head.snap").exists()
    lines = log.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"attempt":1', b'"attempt":7')
    log.write_bytes(b"\n".join(lines))
    for action in (lambda: Ledger.open(log), lambda: verify_log(log), lambda: read_state(str(log), use_cache=False)):
        with pytest.raises(LogDamaged) as info:
            action()
        assert (info.value.code, info.value.fields["line"]) == ("HASH_MISMATCH", 3)
    assert read_state(str(log)).state.steps["reproduce"].status == "completed"


def test_repair_refuses_to_cut_an_acknowledged_record(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """With the caller's last acknowledged (seq, hash), a missing acknowledged record is DATA_LOSS."""
    ledger = _recorded(make_ledger)
    acked = (ledger.state.last_seq, ledger.state.head or "")
    ledger.close()
    log = tmp_path / "run.jsonl"
    data = log.read_bytes()
    log.write_bytes(data[:-1])  # the acknowledged last record lost its newline: it now looks torn
    with pytest.raises(LogDamaged) as info:
        repair(log, acked=acked)
    assert info.value.code == "DATA_LOSS"
    assert log.read_bytes() == data[:-1]
    assert not list(tmp_path.glob("*.quarantine.*"))


def test_a_second_writer_sees_the_first_writers_events(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """Two ledgers on one file: each catches up under the lock before it decides."""
    first = make_ledger()
    second = Ledger.open(tmp_path / "run.jsonl", fsync="none")
    first.start("reproduce")
    with pytest.raises(PlantrailError) as info:
        second.start("reproduce")
    assert info.value.code == "INVALID_TRANSITION"
    second.complete("reproduce", ["seen through catch-up"])
    first.start("diagnose")
    assert fold(_read(tmp_path / "run.jsonl")).steps["diagnose"].status == "in_progress"
    second.close()


def test_a_turn_reads_the_log_only_when_it_grew(
    make_ledger: MakeLedger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn skips the catch-up read when the log still ends at our head, and reads what another writer
    appended otherwise: either way the ledger ends where a full read of the log ends."""
    log = tmp_path / "run.jsonl"
    first = make_ledger()
    second = Ledger.open(log, fsync="none")
    reads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        reads.append(offset)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", counting_pread)
    first.start("reproduce")
    first.complete("reproduce", ["nobody else wrote in between"])
    assert reads == []  # both turns found the log where the first writer's last turn left it
    second.refresh()
    assert reads  # the second writer read what the first appended
    reads.clear()
    second.start("diagnose")
    assert reads == []
    first.block("diagnose", "waiting for the second writer's step")
    assert reads  # the first writer caught up with the second's event before deciding
    assert first.state == second.refresh() == fold(_read(log))
    second.close()


def test_a_log_replaced_by_an_identical_copy_is_noticed(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """The identity check does not rely on the size: a same-sized copy renamed over the log is refused too."""
    log = tmp_path / "run.jsonl"
    ledger = make_ledger()
    ledger.start("reproduce")
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(log.read_bytes())
    os.replace(copy, log)
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as info:
        ledger.complete("reproduce", ["written into the replaced file?"])
    assert info.value.code == "IO_ERROR"
    assert log.read_bytes() == before


def test_a_log_renamed_away_is_not_written(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A writer whose log was renamed away refuses (LOG_NOT_FOUND) rather than append to the old name's file."""
    ledger = make_ledger()
    ledger.start("reproduce")
    moved = tmp_path / "moved.jsonl"
    (tmp_path / "run.jsonl").rename(moved)
    before = moved.read_bytes()
    with pytest.raises(PlantrailError) as info:
        ledger.complete("reproduce", ["written into the moved file?"])
    assert info.value.code == "LOG_NOT_FOUND"
    assert moved.read_bytes() == before


def test_a_log_cut_back_under_the_writer_is_read_again(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """When the log is shorter than our head (another process cut it back), the next turn starts over
    from the first line and decides against what the log now holds."""
    log = tmp_path / "run.jsonl"
    ledger = _recorded(make_ledger)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-1]))  # drop the completion: the step is in progress again
    ledger.complete("reproduce", ["completed again after the cut"])
    assert ledger.state == fold(_read(log))
    assert [r.seq for r in _read(log)] == [0, 1, 2, 3]


def test_bytes_appended_outside_the_lock_before_the_write_are_refused(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """Bytes that appear after the catch-up (a writer ignoring the lock) stop the write: nothing is added."""
    log = tmp_path / "run.jsonl"
    ledger = make_ledger()

    def intruding_clock() -> str:  # the ledger reads the clock after its catch-up, before it writes
        with open(log, "ab") as f:
            f.write(b"{}\n")
        return "2026-01-01T00:00:00.000000Z"

    ledger._clock = intruding_clock  # type: ignore[method-assign]
    before = log.read_bytes()
    with pytest.raises(PlantrailError) as info:
        ledger.start("reproduce")
    assert info.value.code == "IO_ERROR"
    assert log.read_bytes() == before + b"{}\n"


def _read(path: Path) -> list[Any]:
    with LogReader(path) as reader:
        return list(reader.records())


def test_create_is_atomic_and_never_overwrites(make_ledger: MakeLedger, tmp_path: Path, draft: dict[str, Any]) -> None:
    """create leaves no temporary file and refuses an existing path (LOG_EXISTS), even an empty one."""
    make_ledger()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(PlantrailError) as info:
        Ledger.create(tmp_path / "empty.jsonl", draft)
    assert info.value.code == "LOG_EXISTS"


def test_an_empty_file_is_not_a_log(tmp_path: Path) -> None:
    """A log always starts with its header: an empty file is EMPTY_LOG, for readers and writers."""
    (tmp_path / "empty.jsonl").write_bytes(b"")
    for action in (lambda: LogReader(tmp_path / "empty.jsonl"), lambda: JsonlStore.open(tmp_path / "empty.jsonl")):
        with pytest.raises(LogDamaged) as info:
            action()
        assert info.value.code == "EMPTY_LOG"


def test_missing_logs_and_directories_are_storage_errors(tmp_path: Path) -> None:
    """A missing path is LOG_NOT_FOUND and a directory is NOT_A_FILE (exit 4)."""
    for path, code in ((tmp_path / "nope.jsonl", "LOG_NOT_FOUND"), (tmp_path, "NOT_A_FILE")):
        with pytest.raises(PlantrailError) as info:
            Ledger.open(path)
        assert (info.value.code, info.value.exit_code) == (code, 4)


@pytest.mark.parametrize("policy", ["always", "batch", "none"])
def test_the_fsync_policy_is_recorded_in_the_header(tmp_path: Path, draft: dict[str, Any], policy: str) -> None:
    """The header says what an acknowledgement meant; reopening uses the recorded policy."""
    Ledger.create(tmp_path / "run.jsonl", draft, fsync=policy).close()  # type: ignore[arg-type]
    header = _read(tmp_path / "run.jsonl")[0]
    assert header.data.fsync == policy
    store = JsonlStore.open(tmp_path / "run.jsonl")
    assert store.fsync == policy
    store.close()


def test_batch_policy_acknowledges_before_sync_and_reports_durability(tmp_path: Path, draft: dict[str, Any]) -> None:
    """Under fsync=batch an append is acknowledged as not yet durable until a group commit covers it."""
    with Ledger.create(tmp_path / "run.jsonl", draft, fsync="batch") as ledger:
        ledger._store._batch_size = 2  # type: ignore[attr-defined]
        assert ledger.start("reproduce").durable is False
        assert ledger.complete("reproduce", ["ok"]).durable is True


def test_a_replaced_file_is_noticed(make_ledger: MakeLedger, tmp_path: Path, draft: dict[str, Any]) -> None:
    """If the log is swapped for another file while open, the writer refuses instead of writing into it."""
    ledger = make_ledger()
    (tmp_path / "run.jsonl").rename(tmp_path / "old.jsonl")
    Ledger.create(tmp_path / "run.jsonl", draft).close()
    with pytest.raises(PlantrailError) as info:
        ledger.start("reproduce")
    assert info.value.code == "IO_ERROR"


def _append_and_close(ledger: Ledger, conn: Any) -> None:
    """In a forked child: append through the parent's ledger, close it, and send back what each did."""
    outcomes = []
    for action in (lambda: ledger.start("reproduce"), ledger.close):
        try:
            action()
            outcomes.append("ok")
        except PlantrailError as exc:
            outcomes.append(exc.code)
    conn.send(outcomes)
    conn.close()


def test_a_forked_writer_whose_log_was_replaced_is_refused_and_closes_quietly(
    make_ledger: MakeLedger, tmp_path: Path
) -> None:
    """A child using its parent's writer after the log's path came to name another file is refused IO_ERROR,
    writes nothing to either file, and closes without an error (it leaves no snapshot)."""
    import multiprocessing
    import shutil

    ledger = make_ledger()
    log = tmp_path / "run.jsonl"
    os.rename(log, tmp_path / "moved.jsonl")
    shutil.copyfile(tmp_path / "moved.jsonl", log)
    before = log.read_bytes()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_append_and_close, args=(ledger, send), daemon=True)
    child.start()
    assert receive.poll(60), "the child hung"
    assert receive.recv() == ["IO_ERROR", "ok"]
    child.join(10)
    assert child.exitcode == 0
    assert log.read_bytes() == before == (tmp_path / "moved.jsonl").read_bytes()
    ledger.close()
