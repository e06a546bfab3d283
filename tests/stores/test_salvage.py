"""Salvage lists every record that still verifies and every damaged byte range, and never writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import repair
from plantrail.ledger.stores.jsonl.salvage import Damage, Segment, salvage
from tests.conftest import CliResult
from tests.helpers.logs import build_log, lines_of, write_lines


@pytest.fixture
def log(make_ledger: Callable[..., Ledger], tmp_path: Path) -> Path:
    """A closed log of ten records (seq 0..9)."""
    ledger = make_ledger()
    build_log(ledger, 7)
    ledger.close()
    return tmp_path / "run.jsonl"


def offsets(lines: list[bytes]) -> list[int]:
    """The byte offset at which each line starts."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    return starts


def test_salvage_of_a_whole_log_is_one_clean_segment(log: Path) -> None:
    """A whole log is one segment from seq 0 with no damage."""
    report = salvage(log)
    assert report.clean
    assert report.segments == (Segment(0, 9, 1, 10, 0, log.stat().st_size, None),)
    assert [r.seq for r in report.records] == list(range(10))


def test_salvage_lists_records_on_both_sides_of_damage_and_writes_nothing(log: Path) -> None:
    """Records after mid-file damage are listed too, the damage has byte offsets, and the file is untouched."""
    lines = lines_of(log)
    damaged = [*lines[:4], b"\x00garbage", b"more garbage", *lines[5:], lines[-1][:50]]
    write_lines(log, damaged)
    log.write_bytes(log.read_bytes()[:-1])
    before = log.read_bytes()
    starts = offsets(damaged)

    report = salvage(log)

    assert log.read_bytes() == before
    assert [r.seq for r in report.records] == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert [(s.first_seq, s.last_seq, s.break_code) for s in report.segments] == [(0, 3, None), (5, 9, "SEQ_GAP")]
    first, torn = report.damaged
    assert first == Damage(starts[4], starts[6], 5, 6, "CORRUPT_LINE", first.message, first.reads_as)
    assert [r.summary for r in first.reads_as] == ["undecodable (8 bytes)", "undecodable (12 bytes)"]
    assert (torn.start, torn.end, torn.code) == (starts[11], len(before), "TORN_TAIL")


def test_salvage_reports_quarantine_and_leftover_temp_files(log: Path) -> None:
    """Quarantine files (and whether the log records them) and leftover temp files are listed."""
    log.write_bytes(log.read_bytes() + b'{"v":1,')
    repair(log)
    stray = log.with_name(log.name + ".quarantine.5.2026-01-01T000000.000001Z")
    stray.write_bytes(b"x")
    temp = log.with_name(log.name + ".tmp.999999999.0a0b0c0d")
    temp.write_bytes(b"")

    report = salvage(log)

    assert [(q.offset, q.recorded) for q in report.quarantine] == [(5, False), (report.records[-1].offset, True)]
    assert report.temp_files == (str(temp),)


def test_salvage_cli_exits_3_with_the_first_damage_and_json_lists_everything(
    log: Path, run_cli: Callable[..., CliResult]
) -> None:
    """`plantrail salvage` prints the inventory, then exits 3 naming the first damaged line."""
    lines = lines_of(log)
    write_lines(log, [*lines[:2], lines[3], *lines[2:]])

    result = run_cli("salvage", log, "--json")

    assert result.code == 3
    assert result.err.startswith("error[SEQ_GAP]") and "line 3" in result.err
    body, _ = json.JSONDecoder().raw_decode(result.out)  # the error object follows, as for verify --json
    assert len(body["records"]) == 11 and body["ok"] is False
    assert run_cli("salvage", Path(str(log) + ".missing")).code == 4


def test_salvage_cli_exits_0_on_a_whole_log(log: Path, run_cli: Callable[..., CliResult]) -> None:
    """A whole log salvages with exit 0."""
    result = run_cli("salvage", log)
    assert result.code == 0 and "10 verifiable record(s)" in result.out
