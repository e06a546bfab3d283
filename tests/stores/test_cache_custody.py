"""A writer skips re-reading the bytes a snapshot covers only while the log is provably the file it recorded."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl import cache, reads, seal
from plantrail.ledger.vocabulary.errors import LogDamaged
from plantrail.projections.canonical import state_hash

#: Longer than any file-system clock tick (Linux's coarse clock ticks every 1-10 ms).
_TICK = 0.03


def _snap(log: Path) -> Path:
    return Path(str(log) + cache.SUFFIX) / "head.snap"


def _meta(log: Path) -> dict[str, Any]:
    """The sealed snapshot's meta line."""
    key = seal.cache_key(create=False)
    assert key is not None
    payload = seal.unseal(key, "snapshot", _snap(log).read_bytes())
    assert payload is not None
    meta: dict[str, Any] = orjson.loads(payload.split(b"\n", 1)[0])
    return meta


def _reseal_meta(log: Path, meta: dict[str, Any]) -> None:
    """Rewrite the snapshot's meta, sealed with this user's key as plantrail itself would."""
    key = seal.cache_key(create=False)
    assert key is not None
    payload = seal.unseal(key, "snapshot", _snap(log).read_bytes())
    assert payload is not None
    _snap(log).write_bytes(seal.seal(key, "snapshot", orjson.dumps(meta) + b"\n" + payload.split(b"\n", 1)[1]))


def _full_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record every CRC pass that starts at the log's first byte (the re-read of the covered prefix)."""
    calls: list[int] = []
    real = cache.prefix_crc

    def counting(fd: int, end: int, start: int = 0, crc: int = 0) -> int:
        if start == 0:
            calls.append(end)
        return real(fd, end, start, crc)

    monkeypatch.setattr(cache, "prefix_crc", counting)
    return calls


def _settled(make_ledger: Callable[..., Ledger]) -> Path:
    """A log with some history whose snapshot records it, written more than a clock tick after its last change."""
    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", ["login.test.ts fails with 401 " * 60])
    ledger.start("diagnose")  # the record the snapshot ends at comes after the one the tests edit
    ledger.close()
    log = Path(ledger.location)
    time.sleep(_TICK)
    Ledger.open(log, fsync="none").close()  # a full check; its snapshot hands on the custody it established
    return log


def _open_and_append(log: Path) -> None:
    with Ledger.open(log, fsync="none") as ledger:
        ledger.verify_criterion("login-test-passes", passed=False, evidence="still 401")


def test_a_writer_trusts_a_settled_snapshot_without_reading_what_it_covers(
    make_ledger: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unchanged log whose snapshot is not racy is resumed without re-reading its covered bytes, and the
    append gives the state a full fold gives."""
    log = _settled(make_ledger)
    assert "file" in _meta(log)
    calls = _full_reads(monkeypatch)
    resumed = []
    real = cache.load_snapshot
    monkeypatch.setattr(
        "plantrail.ledger.stores.jsonl.log.load_snapshot", lambda *a, **k: resumed.append(real(*a, **k)) or resumed[-1]
    )
    _open_and_append(log)
    assert calls == []
    assert resumed and resumed[0] is not None and resumed[0].identity is not None  # resumed from the snapshot
    assert state_hash(reads.read_state(str(log)).state) == state_hash(reads.read_state(str(log), use_cache=False).state)


def test_an_in_place_edit_that_keeps_the_size_and_the_mtime_is_still_refused(
    make_ledger: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Editing a covered record in place, same size, with its mtime restored by utime, moves the change time:
    the next writer reads every byte again and refuses the damaged log, which it leaves as it found it."""
    log = _settled(make_ledger)
    before = os.stat(log)
    data = bytearray(log.read_bytes())
    at = data.index(b"fails with 401")
    data[at : at + 5] = b"works"
    with open(log, "r+b") as f:
        f.write(data)
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(log)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    calls = _full_reads(monkeypatch)
    with pytest.raises(LogDamaged) as caught:
        _open_and_append(log)
    assert caught.value.code == "HASH_MISMATCH"
    assert calls == [_meta(log)["position"][0]]  # the change time gave it away, not the record it ends at
    assert log.read_bytes() == bytes(data)


def test_a_racy_snapshot_is_not_trusted(make_ledger: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot whose timestamp is not past the log's last change (the racy-git rule) sends the writer back to
    reading every byte it covers."""
    log = _settled(make_ledger)
    meta = _meta(log)
    meta["file"][-1] = os.stat(log).st_ctime_ns  # stamped in the same tick as the log's last change
    _reseal_meta(log, meta)
    calls = _full_reads(monkeypatch)
    _open_and_append(log)
    assert calls == [meta["position"][0]]


@pytest.mark.parametrize("field", range(5))
def test_a_snapshot_of_another_file_or_extent_is_not_trusted(
    make_ledger: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch, field: int
) -> None:
    """A recorded device, inode, size, write time or change time that is not the log's now means a full check."""
    log = _settled(make_ledger)
    meta = _meta(log)
    meta["file"][field] += 1
    _reseal_meta(log, meta)
    calls = _full_reads(monkeypatch)
    _open_and_append(log)
    assert calls == [meta["position"][0]]


def test_a_copy_of_the_log_and_its_cache_is_checked_in_full(
    make_ledger: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A copied log is another file (another inode): its first writer reads every byte the snapshot covers."""
    import shutil

    log = _settled(make_ledger)
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(log, copy)
    shutil.copytree(str(log) + cache.SUFFIX, str(copy) + cache.SUFFIX)
    calls = _full_reads(monkeypatch)
    _open_and_append(copy)
    assert len(calls) == 1


def test_a_change_by_someone_else_while_a_writer_holds_the_log_is_not_handed_on(
    make_ledger: Callable[..., Ledger],
) -> None:
    """An in-place edit made while a writer has the log open ends that writer's custody: its snapshot records
    no identity, so the next writer reads every byte and refuses the damage."""
    log = _settled(make_ledger)
    ledger = Ledger.open(log, fsync="none")
    data = bytearray(log.read_bytes())
    at = data.index(b"fails with 401")
    data[at : at + 5] = b"works"
    with open(log, "r+b") as f:
        f.write(data)
    ledger.complete("diagnose", ["the token check"])
    ledger.close()
    assert "file" not in _meta(log)
    with pytest.raises(LogDamaged):
        _open_and_append(log)


def test_another_writers_append_ends_the_custody(make_ledger: Callable[..., Ledger]) -> None:
    """When another writer appended while one held the log, the one that closes last hands on no identity."""
    log = _settled(make_ledger)
    first = Ledger.open(log, fsync="none")
    with Ledger.open(log, fsync="none") as second:
        second.complete("diagnose", ["the token check"])
    time.sleep(_TICK)
    first.verify_criterion("login-test-passes", passed=True, evidence="green")
    first.close()
    assert "file" not in _meta(log)
    assert state_hash(reads.read_state(str(log)).state) == state_hash(reads.read_state(str(log), use_cache=False).state)


def test_a_writer_of_a_large_log_leaves_a_snapshot_its_next_writer_trusts(
    make_ledger: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the size where a re-read costs more than a clock tick, a writer's checkpoint waits for the tick, so
    the snapshot after its own append is not racy and the next writer, right after, does not re-read."""
    monkeypatch.setattr(cache, "SETTLE_FROM_BYTES", 0)
    log = _settled(make_ledger)
    _open_and_append(log)
    file = _meta(log)["file"]
    assert file[4] < file[5]  # its change time is before the timestamp
    calls = _full_reads(monkeypatch)
    with Ledger.open(log, fsync="none") as ledger:
        ledger.verify_criterion("login-test-passes", passed=True, evidence="green")
    assert calls == []


def _multigrain(folder: Path) -> bool:
    """Whether the file system gives a file whose change time was just looked at a fine-grained one at its next
    change (Linux 6.13 and later on ext4, XFS, Btrfs, tmpfs): twenty such changes in a row, well within one
    tick of the coarse clock, each get a change time of their own."""
    probe = folder / "probe"
    probe.write_bytes(b"")
    times = []
    for _ in range(20):
        times.append(os.stat(probe).st_ctime_ns)
        os.chmod(probe, 0o600)
    probe.unlink()
    return len(set(times[1:])) == len(times) - 1


def test_every_change_after_a_stamp_gets_a_change_time_at_or_past_it(tmp_path: Path) -> None:
    """The racy-git rule's premise, for the stamps a writer takes: whatever a stamp is made of (a fine-grained
    change time where the file system has them), a write to the log after it, at once or a little later, gets a
    change time at or past the stamp."""
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")
    folder = seal.CacheFolder.open(str(log) + cache.SUFFIX, create=True)
    assert folder is not None
    with folder, open(log, "ab") as out:
        for round_ in range(300):
            os.fstat(out.fileno())  # a writer looks at the log before its append, as JsonlStore._write does
            stamp = folder.stamp()
            assert stamp is not None
            if round_ % 3 == 1:
                time.sleep(0.0005)
            out.write(b"x\n")
            out.flush()
            assert os.fstat(out.fileno()).st_ctime_ns >= stamp[0]


def test_a_large_logs_writer_hands_on_its_custody_without_waiting_for_the_clock(
    make_ledger: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With multigrain timestamps a writer's stamp is past its own append at once: with no wait allowed at all,
    every snapshot it leaves after an append is not racy, and the next writer does not re-read. Without them
    the stamp reads the coarse clock as before (the wait is then what settles it: the test above)."""
    monkeypatch.setattr(cache, "SETTLE_FROM_BYTES", 0)
    monkeypatch.setattr(cache, "_SETTLE_WAIT", 0.0)
    log = _settled(make_ledger)
    fine = _multigrain(tmp_path)
    calls = _full_reads(monkeypatch)
    for _ in range(5):
        _open_and_append(log)
        file = _meta(log)["file"]
        if fine:
            assert file[4] < file[5]  # its change time is before the timestamp taken right after it
    if fine:
        assert calls == []
    else:
        assert file[4] <= file[5]
    assert state_hash(reads.read_state(str(log)).state) == state_hash(reads.read_state(str(log), use_cache=False).state)
