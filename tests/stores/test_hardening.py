"""Nothing beside a log changes an answer, and crashes or stopped writers cannot make plantrail lie or hang."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Complete, Start, VerifyCriterion
from plantrail.ledger.stores.jsonl import cache, reads, seal
from plantrail.ledger.stores.jsonl.log import LogReader, repair
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.canonical import state_hash
from tests.conftest import CliResult

MakeLedger = Callable[..., Ledger]


def _cache(log: Path) -> Path:
    return Path(str(log) + ".plantrail-cache")


def _closed_run(make_ledger: MakeLedger) -> Path:
    """A small run whose writer has closed (leaving its snapshot), with one keyed start."""
    ledger = make_ledger()
    ledger.start("reproduce", idempotency_key="s1")
    ledger.complete("reproduce", ["401 reproduced"])
    ledger.close()
    return Path(ledger.location)


def _cold_state(log: Path) -> str:
    return state_hash(reads.read_state(str(log), use_cache=False).state)


# --------------------------------------------------------------------------- planted names


def test_a_symlinked_cache_folder_is_never_written_through(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A cache folder that is a symlink (to a folder elsewhere) is ignored: no snapshot lands where it points."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = tmp_path / "run.jsonl"
    _cache(log).symlink_to(elsewhere)
    _closed_run(make_ledger)
    with Ledger.open(log) as ledger:
        ledger.start("diagnose")
    assert list(elsewhere.iterdir()) == []


def test_a_symlink_at_the_snapshot_name_is_neither_followed_nor_overwritten(
    make_ledger: MakeLedger, tmp_path: Path
) -> None:
    """A snapshot name planted as a symlink to another file leaves that file as it was, and is not read."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    log = _closed_run(make_ledger)
    (_cache(log) / "head.snap").unlink()
    (_cache(log) / "head.snap").symlink_to(victim)
    assert reads.read_state(str(log)).snapshot_seq is None
    with Ledger.open(log) as ledger:
        ledger.start("diagnose")
    assert victim.read_bytes() == b"precious"


@pytest.mark.parametrize("planted", ["fifo", "directory", "dev-zero"])
def test_a_planted_fifo_directory_or_endless_file_in_the_cache_is_ignored(
    make_ledger: MakeLedger, tmp_path: Path, planted: str
) -> None:
    """status neither hangs on a FIFO, nor crashes on a directory, nor reads /dev/zero without end (run in a
    process with a 1 GiB address-space limit and a timeout), at any cache file's name."""
    log = _closed_run(make_ledger)
    for name in ("head.snap", "keys.snap", "versions.meta", "versions.idx", "versions.bin"):
        target = _cache(log) / name
        if target.exists():
            target.unlink()
        if planted == "fifo":
            os.mkfifo(target)
        elif planted == "directory":
            target.mkdir()
        else:
            target.symlink_to("/dev/zero")
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from plantrail.cli.main import main\n"
        "sys.exit(main(['status', sys.argv[1], '--json']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(log)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["state_hash"] == _cold_state(log)


def test_a_cache_folder_of_another_user_is_ignored(make_ledger: MakeLedger) -> None:
    """A cache folder owned by someone else is not read (its snapshot is not believed) nor written."""
    if os.geteuid() != 0:
        pytest.skip("changing a folder's owner needs root")
    log = _closed_run(make_ledger)
    os.chown(_cache(log), 54321, 54321)
    assert reads.read_state(str(log)).snapshot_seq is None


def test_a_quarantine_name_planted_on_a_healthy_log_records_no_repair(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A symlink or a directory at the name an interrupted repair would leave makes repair append nothing."""
    log = _closed_run(make_ledger)
    other = tmp_path / "other.txt"
    other.write_bytes(b"x" * 100)
    size = log.stat().st_size
    Path(f"{log}.quarantine.{size}.2026-01-01T000000Z").symlink_to(other)
    Path(f"{log}.quarantine.{size}.2026-01-02T000000Z").mkdir()
    before = log.read_bytes()
    assert repair(log).record is None
    assert log.read_bytes() == before


def test_a_directory_at_a_stale_create_temp_name_is_left_alone(draft: dict[str, Any], tmp_path: Path) -> None:
    """A directory planted at a crashed create's temp name neither crashes the create nor is removed."""
    log = tmp_path / "run.jsonl"
    planted = Path(f"{log}.tmp.999999999.deadbeef")
    planted.mkdir()
    Ledger.create(log, draft, fsync="none").close()
    assert planted.is_dir()


# --------------------------------------------------------------------------- what the cache may claim


def test_a_read_only_status_writes_no_snapshot(make_ledger: MakeLedger, run_cli: Callable[..., CliResult]) -> None:
    """status on a long log without a snapshot leaves no cache behind (only writers write snapshots)."""
    ledger = make_ledger(cache=False)
    ledger.execute_many([VerifyCriterion(criterion="login-test-passes", passed=True, evidence="seen")] * 1200)
    ledger.close()
    log = Path(ledger.location)
    assert run_cli("status", log).code == 0
    assert not _cache(log).exists()


def test_a_forged_unsealed_snapshot_is_not_believed(make_ledger: MakeLedger) -> None:
    """A snapshot rewritten with a valid digest but not sealed with this user's key shows nothing it claims."""
    log = _closed_run(make_ledger)
    snap = _cache(log) / "head.snap"
    key = seal.cache_key(create=False)
    assert key is not None
    payload = seal.unseal(key, "snapshot", snap.read_bytes())
    assert payload is not None
    meta, state = payload.split(b"\n", 1)
    forged_state = state.replace(b'"completed"', b'"blocked"')
    digest = __import__("hashlib").sha256(forged_state).hexdigest()
    forged_meta = orjson.dumps(orjson.loads(meta) | {"digest": digest})
    snap.write_bytes(forged_meta + b"\n" + forged_state)  # unsealed
    assert reads.read_state(str(log)).snapshot_seq is None
    assert state_hash(reads.read_state(str(log)).state) == _cold_state(log)


def test_a_claimed_duplicate_the_log_does_not_hold_is_decided_and_written(make_ledger: MakeLedger) -> None:
    """An idempotency index entry (even one sealed with the key) naming a record that is not that key's is
    not believed: the command is decided and its event written, as without the cache."""
    log = _closed_run(make_ledger)
    snap = _cache(log) / "head.snap"
    key = seal.cache_key(create=False)
    assert key is not None
    payload = seal.unseal(key, "snapshot", snap.read_bytes())
    assert payload is not None
    meta, state = payload.split(b"\n", 1)
    keys_file = _cache(log) / "keys.snap"
    keys = seal.unseal(key, "keys", keys_file.read_bytes())
    assert keys is not None
    index = orjson.loads(keys)
    index["forged"] = [*index["s1"][:1], "0" * 64, *index["s1"][2:]]
    index["borrowed"] = index["s1"]  # a real record, but another key's
    forged_keys = orjson.dumps(index)
    digest = __import__("hashlib").sha256(forged_keys).hexdigest()
    forged_meta = orjson.dumps(orjson.loads(meta) | {"keys": digest})
    keys_file.write_bytes(seal.seal(key, "keys", forged_keys))
    snap.write_bytes(seal.seal(key, "snapshot", forged_meta + b"\n" + state))
    with Ledger.open(log) as ledger:
        first = ledger.start("diagnose", idempotency_key="forged")
        ledger.fail("diagnose", "flaky")
        second = ledger.start("diagnose", idempotency_key="borrowed")
    assert not first.duplicate and not second.duplicate
    with LogReader(log) as reader:
        assert [r.key for r in reader.records()][-3:] == ["forged", None, "borrowed"]


def test_a_stale_version_meta_beside_a_newer_index_is_not_used(
    make_ledger: MakeLedger, draft: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The three version-index files must come from one build: an older versions.meta (each file sealed) with
    a newer idx and bin makes the index unusable, and the answer is the log's."""
    monkeypatch.setattr(reads, "INDEX_FROM_BYTES", 0)
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.replan("failed_assumption", "first", plan=draft)
    log = Path(ledger.location)
    reads.build_version_index(str(log))
    old_meta = (_cache(log) / "versions.meta").read_bytes()
    ledger.complete("reproduce", ["late"], plan_version=1, attempt=1)
    ledger.replan("new_constraint", "second", plan=draft)
    reads.build_version_index(str(log))
    (_cache(log) / "versions.meta").write_bytes(old_meta)
    with open(log, "rb") as f:
        assert cache.version_start(str(log), f.fileno(), 2) is None
    plain = reads.rebuild_version(str(log), 2, use_cache=False)
    assert state_hash(reads.rebuild_version(str(log), 2)[0]) == state_hash(plain[0])


def test_a_read_from_a_snapshot_says_so_and_resume_verify_reads_every_byte(
    make_ledger: MakeLedger, run_cli: Callable[..., CliResult]
) -> None:
    """With one byte flipped before the snapshot's end, status answers from the snapshot and says up to which
    seq when asked (--verbose; the note is noise otherwise); resume --verify reads every byte and reports the
    damage (exit 3)."""
    log = _closed_run(make_ledger)
    data = bytearray(log.read_bytes())
    at = data.index(b'"reproduce"', data.index(b'"step.started"'))
    data[at + 1] ^= 0x20
    log.write_bytes(bytes(data))
    status = run_cli("status", log, "--json")
    assert status.code == 0 and status.json()["snapshot_seq"] == 3
    assert "answered from the cache's snapshot up to seq 3" in run_cli("status", log, "--verbose").out
    for command in ("status", "next", "resume"):
        assert "snapshot" not in run_cli(command, log).out
    assert "answered from the cache's snapshot up to seq 3" in run_cli("resume", log, "-v").out
    assert run_cli("resume", log, "--verify").code == 3
    assert run_cli("verify", log).code == 3


def test_deleting_the_cache_changes_no_answer_of_next(
    make_ledger: MakeLedger, run_cli: Callable[..., CliResult]
) -> None:
    """next answers the same with and without the cache, apart from the note of where the snapshot answered."""
    log = _closed_run(make_ledger)
    warm = run_cli("next", log, "--json").json()
    __import__("shutil").rmtree(_cache(log))
    cold = run_cli("next", log, "--json").json()
    assert warm.pop("snapshot_seq") == 3 and cold.pop("snapshot_seq") is None
    assert warm == cold


# --------------------------------------------------------------------------- concurrency and crashes


def test_verify_of_a_log_being_appended_to_verifies_the_prefix_it_read(make_ledger: MakeLedger) -> None:
    """While another writer appends, verify never reports NONDETERMINISTIC_FOLD: it checks what it read."""
    ledger = make_ledger()
    log = Path(ledger.location)
    verdict = VerifyCriterion(criterion="login-test-passes", passed=True, evidence="e" * 200)
    ledger.execute_many([verdict] * 1500)
    stop = threading.Event()

    def append() -> None:
        with Ledger.open(log, fsync="none", cache=False) as writer:
            while not stop.is_set():
                writer.execute(verdict)

    thread = threading.Thread(target=append)
    thread.start()
    try:
        reports = [verify_log(log) for _ in range(5)]
    finally:
        stop.set()
        thread.join()
    assert all(r.last_seq >= 1500 for r in reports)


def test_a_group_commit_cut_short_by_a_crash_counts_for_nothing(make_ledger: MakeLedger) -> None:
    """Records of a batch whose end never reached the file are not read as history: readers stop before the
    batch (a torn tail), verify accepts only the part before it, and repair quarantines the whole batch."""
    ledger = make_ledger()
    log = Path(ledger.location)
    ledger.start("reproduce")
    before = log.stat().st_size
    ledger.execute_many([Complete(step="reproduce", evidence=["x" * 100]), Start(step="diagnose")])
    whole = log.read_bytes()
    cut = whole.rindex(b"\n", 0, len(whole) - 1) + 1  # every record of the batch but its end
    log.write_bytes(whole[:cut])
    ledger.close()
    result = reads.read_state(str(log), use_cache=False)
    assert result.torn is not None and result.torn.offset == before
    assert result.state.steps["reproduce"].status == "in_progress"
    assert verify_log(log).torn is not None
    repaired = repair(log).record
    assert repaired is not None and repaired.data.truncated_at == before  # type: ignore[union-attr]
    assert verify_log(log).last_seq == repaired.seq


def test_a_group_commit_cut_short_by_power_loss_is_a_torn_tail_from_its_begin(make_ledger: MakeLedger) -> None:
    """Power loss mid-batch can leave the batch's first records whole and a zeroed block after them (a block
    whose zeros may hold a newline): a torn tail from the batch's begin, which repair quarantines, not
    corruption; and a block of zeros with no newline is a zero-filled torn tail too."""
    ledger = make_ledger()
    log = Path(ledger.location)
    ledger.start("reproduce")
    before = log.stat().st_size
    ledger.execute_many([Complete(step="reproduce", evidence=["x" * 100]), Start(step="diagnose")])
    whole = log.read_bytes()
    kept = whole.index(b"\n", whole.index(b"\n", before) + 1) + 1  # the batch's begin and its first event
    log.write_bytes(whole[:kept] + b"\0" * 4000 + b"\n" + b"\0" * 95)  # a zeroed block holding a newline
    ledger.close()
    result = reads.read_state(str(log), use_cache=False)
    assert result.torn is not None and (result.torn.offset, result.torn.zero_fill) == (before, True)
    assert result.state.steps["reproduce"].status == "in_progress"
    repaired = repair(log).record
    assert repaired is not None and repaired.data.truncated_at == before  # type: ignore[union-attr]
    assert verify_log(log).last_seq == repaired.seq
    ledger = Ledger.open(log, fsync="none")
    ledger.execute_many([Complete(step="reproduce", evidence=["y"]), Start(step="diagnose")])
    ledger.close()
    again = log.read_bytes()
    start = again.rindex(b"log.batch", 0, again.rindex(b"log.batch"))  # the begin of the last batch
    begin = again.rindex(b"\n", 0, start) + 1
    log.write_bytes(again[: again.index(b"\n", begin) + 1] + b"\0" * 512)
    torn = reads.read_state(str(log), use_cache=False).torn
    assert torn is not None and (torn.offset, torn.zero_fill) == (begin, True)


def test_readers_wait_a_bounded_time_for_a_stopped_writer_on_a_torn_tail(
    make_ledger: MakeLedger, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """status, verify and resume give LOCK_TIMEOUT (exit 4) instead of hanging while a writer holds the lock on
    a torn tail, and salvage does the same even on a healthy log."""
    log = _closed_run(make_ledger)
    monkeypatch.setenv("PLANTRAIL_LOCK_TIMEOUT", "0.2")
    holder = os.open(log, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert run_cli("salvage", log).code == 4
        with open(log, "ab") as f:
            f.write(b'{"v":1,"seq":')
        for command in ("status", "verify", "resume"):
            result = run_cli(command, log)
            assert (result.code, result.err.startswith("error[LOCK_TIMEOUT]")) == (4, True), command
    finally:
        os.close(holder)


def test_a_checkpoint_after_the_log_was_emptied_under_the_ledger_writes_nothing(make_ledger: MakeLedger) -> None:
    """A log truncated to nothing under an open Ledger gets no headless checkpoint: the write is refused."""
    ledger = make_ledger()
    log = Path(ledger.location)
    os.truncate(log, 0)
    with pytest.raises(PlantrailError) as info:
        ledger.checkpoint(b"k" * 32)
    assert info.value.code == "IO_ERROR"
    assert log.read_bytes() == b""


def test_a_retried_replan_with_another_policy_is_a_conflict(make_ledger: MakeLedger, draft: dict[str, Any]) -> None:
    """The policy is part of a replan's content: the same key with another policy is IDEMPOTENCY_CONFLICT."""
    ledger = make_ledger(draft)
    ledger.replan("agent_revision", "parallel", plan=draft | {"policy": {"maxInProgress": 2}}, idempotency_key="r")
    assert ledger.replan(
        "agent_revision", "parallel", plan=draft | {"policy": {"maxInProgress": 2}}, idempotency_key="r"
    ).duplicate
    with pytest.raises(PlantrailError) as info:
        ledger.replan("agent_revision", "parallel", plan=draft | {"policy": {"maxInProgress": 3}}, idempotency_key="r")
    assert info.value.code == "IDEMPOTENCY_CONFLICT"


def test_a_duplicates_ack_is_durable_only_once_an_fsync_covers_it(make_ledger: MakeLedger) -> None:
    """Under fsync batch, a retried key's ack says durable: false until the group commit's fsync has run."""
    log = Path(make_ledger(fsync="batch").location)
    ledger = Ledger.open(log, batch_size=1000)
    first = ledger.start("reproduce", idempotency_key="s")
    assert not first.durable
    assert not ledger.start("reproduce", idempotency_key="s").durable
    ledger.sync()
    assert ledger.start("reproduce", idempotency_key="s").durable
    ledger.close()


def test_verify_decodes_every_line_once(make_ledger: MakeLedger, monkeypatch: pytest.MonkeyPatch) -> None:
    """verify reads and decodes each line of the log exactly once (its determinism check needs no second read)."""
    from plantrail.ledger.stores.jsonl import log as jsonl

    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.complete("reproduce", ["401 reproduced"])
    log = Path(ledger.location)
    calls: list[int] = []
    real = jsonl.decode

    def counted(line: bytes, line_no: int) -> Any:
        calls.append(line_no)
        return real(line, line_no)

    monkeypatch.setattr(jsonl, "decode", counted)
    report = verify_log(log)
    assert calls == list(range(1, report.last_seq + 2))
