"""Repair is audited and narrow: only a torn tail is cut, under the writer lock, into a kept quarantine file,
with a log.repaired record; anything else is refused, and an acknowledged record is never cut silently."""

from __future__ import annotations

import fcntl
import hashlib
import multiprocessing
import os
import signal
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import JsonlStore, LogReader, repair
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import LogRepaired
from tests.conftest import CliResult
from tests.helpers.logs import build_log, lines_of, reseal, write_lines

MakeLedger = Callable[..., Ledger]


@pytest.fixture
def log(make_ledger: MakeLedger, tmp_path: Path) -> Path:
    """A closed log with a header, a plan and five more events."""
    ledger = make_ledger()
    build_log(ledger, 4)
    ledger.close()
    return tmp_path / "run.jsonl"


def last_ack(path: Path) -> tuple[int, str]:
    """The (seq, hash) of the last record, as its writer was acknowledged."""
    with LogReader(path) as reader:
        last = list(reader.records())[-1]
    return last.seq, last.h


def quarantine_files(path: Path) -> list[Path]:
    """The quarantine files beside a log."""
    return sorted(path.parent.glob(path.name + ".quarantine.*"))


def refused(path: Path, code: str, **options: object) -> PlantrailError:
    """Repair ``path`` expecting a refusal with ``code``; check nothing was written or quarantined."""
    before = path.read_bytes()
    with pytest.raises(PlantrailError) as caught:
        repair(path, **options)  # type: ignore[arg-type]
    assert caught.value.code == code
    assert path.read_bytes() == before
    assert quarantine_files(path) == []
    return caught.value


def test_torn_tail_is_quarantined_cut_back_and_recorded(log: Path) -> None:
    """A torn tail moves to a read-only quarantine file, the log is cut back, and log.repaired says so."""
    whole = log.read_bytes()
    torn = b'{"v":1,"seq":7,"ts":"2026-01-01T00:00:00.000099Z","run":"ru'
    log.write_bytes(whole + torn)

    result = repair(log)

    [quarantine] = quarantine_files(log)
    assert quarantine.read_bytes() == torn
    assert stat.S_IMODE(quarantine.stat().st_mode) == 0o444
    assert result.record is not None and isinstance(result.record.data, LogRepaired)
    assert result.record.data == LogRepaired(
        truncated_at=len(whole),
        bytes=len(torn),
        sha256=hashlib.sha256(torn).hexdigest(),
        kind="torn_tail",
        quarantine=quarantine.name,
    )
    assert log.read_bytes().startswith(whole)
    assert verify_log(log).last_seq == result.record.seq == 7


def test_zero_filled_tail_from_power_loss_is_repaired(log: Path) -> None:
    """NUL-filled blocks after the last record (a size extended without its data) are a torn tail."""
    log.write_bytes(log.read_bytes() + b"\0" * 3000 + b"\n" + b"\0" * 1096)
    assert repair(log).record is not None
    assert verify_log(log).torn is None


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda lines: [*lines[:3], b"not a record", *lines[3:]], "CORRUPT_LINE"),
        (lambda lines: [*lines[:-1], lines[-1].replace(b"run 3", b"run 9")], "HASH_MISMATCH"),
        (lambda lines: [*lines[:-1], lines[-1].replace(b"run 3", b"run 9"), b"\0" * 512], "HASH_MISMATCH"),
        (lambda lines: [*lines, b"\0" * 512, lines[-1]], "CORRUPT_LINE"),
        (lambda lines: [*lines, reseal(lines[-1].replace(b"run 3", b"run\x00"))], "CORRUPT_LINE"),
    ],
    ids=["damage-then-record", "bad-hash-last-line", "bad-hash-then-zeros", "zeros-then-record", "nul-in-framed-line"],
)
def test_damage_that_no_crash_explains_is_refused(
    log: Path, damage: Callable[[list[bytes]], list[bytes]], code: str
) -> None:
    """Damage followed by a record, or a well-formed line whose hash fails, is refused as corruption."""
    write_lines(log, damage(lines_of(log)))
    error = refused(log, "NOT_REPAIRABLE")
    assert error.fields["cause"] == code
    assert "line" in error.fields


def test_acknowledged_record_in_a_torn_tail_is_data_loss(log: Path) -> None:
    """A last record that lost its newline is cut by a plain repair, but is DATA_LOSS for its acknowledged writer."""
    acked = last_ack(log)
    log.write_bytes(log.read_bytes()[:-1])

    error = refused(log, "DATA_LOSS", acked=acked)
    assert error.fields["seq"] == acked[0]
    with pytest.raises(PlantrailError, match="acknowledged seq 6") as caught:
        Ledger.open(log, repair=True, acked=acked)
    assert caught.value.code == "DATA_LOSS"
    assert quarantine_files(log) == []
    assert repair(log).record is not None


def test_acknowledged_record_cut_off_is_data_loss_on_open(log: Path) -> None:
    """A log that no longer reaches the caller's acknowledged seq refuses to open for that caller."""
    acked = last_ack(log)
    write_lines(log, lines_of(log)[:-1])
    with pytest.raises(PlantrailError) as caught:
        Ledger.open(log, acked=acked)
    assert caught.value.code == "DATA_LOSS"


def test_acknowledged_seq_with_another_hash_is_data_loss(log: Path) -> None:
    """An acknowledged seq that holds a different record (a rewritten log) is DATA_LOSS, middle or end."""
    for seq in (3, 6):
        with pytest.raises(PlantrailError) as caught:
            Ledger.open(log, acked=(seq, "0" * 64))
        assert caught.value.code == "DATA_LOSS"
    Ledger.open(log, acked=last_ack(log)).close()


def test_repair_cli_refuses_to_cut_an_acknowledged_record(log: Path, run_cli: Callable[..., CliResult]) -> None:
    """`plantrail repair --acked SEQ:HASH` exits 3 with DATA_LOSS instead of quarantining that record."""
    seq, h = last_ack(log)
    log.write_bytes(log.read_bytes()[:-1])
    result = run_cli("repair", log, "--acked", f"{seq}:{h}")
    assert (result.code, result.err.split("]")[0]) == (3, "error[DATA_LOSS")
    assert quarantine_files(log) == []


def test_repair_cli_reports_the_repair_as_json(log: Path, run_cli: Callable[..., CliResult]) -> None:
    """`plantrail repair --json` prints the log.repaired record's data (it used to crash after repairing: the
    record's data was no JSON value), and a second run says there is nothing to repair."""
    import orjson

    whole = log.read_bytes()
    torn = b'{"v":1,"seq":7,"ts":"2026-01-01T00:00:00.000099Z","run":"ru'
    log.write_bytes(whole + torn)
    result = run_cli("repair", log, "--json")
    assert result.code == 0, result.err
    [quarantine] = quarantine_files(log)
    printed = orjson.loads(result.out)
    [reads_as] = printed.pop("reads_as")
    assert printed == {
        "ok": True,
        "repaired": True,
        "last_seq": 7,
        "repair": {
            "truncated_at": len(whole),
            "bytes": len(torn),
            "sha256": hashlib.sha256(torn).hexdigest(),
            "kind": "torn_tail",
            "quarantine": quarantine.name,
        },
        "removed_temp_files": [],
    }
    assert (reads_as["seq"], reads_as["ts"], reads_as["whole"], reads_as["summary"]) == (
        7,
        "2026-01-01T00:00:00.000099Z",
        False,
        f"seq 7, cut short after {len(torn)} bytes",
    )
    again = run_cli("repair", log, "--json")
    assert (again.code, orjson.loads(again.out)["repaired"]) == (0, False)


def test_repair_waits_for_the_writer_lock(log: Path) -> None:
    """Repair never runs while another writer holds the lock: it waits for it."""
    log.write_bytes(log.read_bytes() + b'{"v":1,"se')
    fd = os.open(log, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    done = threading.Thread(target=repair, args=(log,))
    done.start()
    done.join(timeout=0.3)
    assert done.is_alive()
    assert quarantine_files(log) == []
    os.close(fd)
    done.join()
    assert len(quarantine_files(log)) == 1


def test_readers_never_repair(log: Path) -> None:
    """A reader reports a torn tail after the valid records and leaves the file alone."""
    log.write_bytes(log.read_bytes() + b'{"v":1,"se')
    before = log.read_bytes()
    with LogReader(log) as reader:
        assert len(list(reader.records())) == 7
        assert reader.torn is not None and reader.torn.offset == len(before) - 10
    assert log.read_bytes() == before


def _killed_before_recording(path: Path) -> None:
    """Repair, but die (SIGKILL) after the cut and before the log.repaired record is written."""
    JsonlStore._record_repair = lambda *args: os.kill(os.getpid(), signal.SIGKILL)  # type: ignore[assignment,method-assign]
    repair(path)


def test_repair_killed_after_the_cut_is_finished_on_reopen(log: Path) -> None:
    """A repair killed between its cut and its record is recorded by the next repairing open."""
    whole = log.read_bytes()
    log.write_bytes(whole + b'{"v":1,"se')
    child = multiprocessing.get_context("fork").Process(target=_killed_before_recording, args=(log,))
    child.start()
    child.join()
    assert child.exitcode == -signal.SIGKILL
    assert log.read_bytes() == whole
    [quarantine] = quarantine_files(log)

    Ledger.open(log).close()
    assert log.read_bytes() == whole
    with Ledger.open(log, repair=True) as ledger:
        assert ledger.state.last_seq == 7
    last = lines_of(log)[-1]
    assert b'"type":"log.repaired"' in last and quarantine.name.encode() in last
    assert verify_log(log).torn is None
