"""A log a newer plantrail extended: the reader stops at the first line it cannot read with FORMAT_TOO_NEW
(exit 4), never calling it damage; no write, repair or salvage touches the log; in every store."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail import Ledger, open_run, open_store
from plantrail.ledger.vocabulary.errors import PlantrailError, StorageError
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.helpers.logs import rechain
from tests.helpers.stores import postgres_url, unique_run

#: What a newer plantrail may add, each made from a real line of the log (index: which line to copy).
NEWER: dict[str, Callable[[list[bytes]], bytes]] = {
    "an envelope member": lambda lines: lines[2].replace(
        b'"actor":', b'"links":[{"traceparent":"00-a-b-01"}],"actor":', 1
    ),
    "an event member": lambda lines: lines[2].replace(b'"attempt":1', b'"attempt":1,"started_by":"worker-7"', 1),
    "an event type": lambda lines: lines[2].replace(b'"step.started"', b'"step.snoozed"', 1),
    "a member of a plan's step": lambda lines: lines[1].replace(
        b'"id":"reproduce",', b'"id":"reproduce","owner":"x",', 1
    ),
    "a format version": lambda lines: lines[2].replace(b'{"v":1,', b'{"v":3,', 1),
}


def _newer_log(path: Path, make: Callable[[list[bytes]], bytes]) -> bytes:
    """A log of three records with a fourth a newer plantrail wrote (chained, its hash holding)."""
    with Ledger.create(str(path), copy.deepcopy(LOGIN_DRAFT), fsync="none", cache=False) as ledger:
        ledger.start("reproduce")
    lines = path.read_bytes().splitlines()
    newer = rechain([*lines, make(lines)], len(lines))
    data = b"".join(line + b"\n" for line in newer)
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("what", list(NEWER))
def test_every_read_and_write_says_format_too_new_and_leaves_the_log(
    tmp_path: Path, what: str, run_cli: Callable[..., CliResult]
) -> None:
    """verify, status, log, why, start, repair and salvage each exit 4 with FORMAT_TOO_NEW (not exit 3), and
    the log keeps its bytes."""
    log = tmp_path / "run.jsonl"
    before = _newer_log(log, NEWER[what])
    for argv in (
        ["verify", log],
        ["status", log],
        ["log", log],
        ["why", log],
        ["start", log, "diagnose"],
        ["repair", log],
        ["salvage", log],
    ):
        result = run_cli(*argv)
        assert (result.code, result.err.split(":")[0]) == (4, "error[FORMAT_TOO_NEW]"), (argv, result)
        assert "newer plantrail" in result.err
    assert log.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]


def test_the_library_raises_a_storage_error_that_names_the_line_and_the_name(tmp_path: Path) -> None:
    """The error is a StorageError (not LogDamaged), with the line, the unknown name and this plantrail's
    version in its message and fields."""
    log = tmp_path / "run.jsonl"
    _newer_log(log, NEWER["an event member"])
    with pytest.raises(PlantrailError) as caught:
        Ledger.open(str(log))
    error = caught.value
    assert isinstance(error, StorageError) and error.code == "FORMAT_TOO_NEW" and error.exit_code == 4
    assert error.fields["line"] == 4 and "'data.started_by'" in error.message
    assert error.fields["reader"] in error.message


def test_the_records_before_it_are_read(tmp_path: Path) -> None:
    """A follower or a ranged read gets every record before the newer line, then the error."""
    log = tmp_path / "run.jsonl"
    _newer_log(log, NEWER["an event type"])
    with open_run(log) as run:
        seen = []
        with pytest.raises(PlantrailError) as caught:
            seen.extend(record.seq for record in run.records())
    assert seen == [0, 1, 2] and caught.value.code == "FORMAT_TOO_NEW"


def test_a_wrong_type_beside_an_unknown_member_is_still_damage(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """Only a line whose every miss is an unknown name is a newer writer's: one with a wrong type too is
    CORRUPT_LINE (exit 3)."""
    log = tmp_path / "run.jsonl"
    _newer_log(log, lambda lines: lines[2].replace(b'"attempt":1', b'"attempt":"1","started_by":"w"', 1))
    result = run_cli("verify", log)
    assert result.code == 3 and "CORRUPT_LINE" in result.err


def test_the_runs_folder_lists_such_a_log_as_too_new(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """`plantrail runs` keeps listing the folder, with the log's row saying FORMAT_TOO_NEW."""
    _newer_log(tmp_path / "run.jsonl", NEWER["an event type"])
    result = run_cli("runs", tmp_path, "--json")
    assert result.code == 0, result
    rows = result.json()
    rows = rows["runs"] if isinstance(rows, dict) else rows
    assert [row.get("damage") for row in rows] == ["FORMAT_TOO_NEW"]


def test_a_database_run_a_newer_plantrail_extended_is_too_new(tmp_path: Path) -> None:
    """The same in the database store: opening the run to append, and reading its state, say FORMAT_TOO_NEW;
    the database's list of runs keeps listing, with the run's row saying so."""
    from plantrail.ledger.stores.postgres import insert_run

    run = unique_run("newer")
    log = tmp_path / f"{run}.jsonl"
    _newer_log(log, NEWER["an event member"])
    target = f"{postgres_url()}#{run}"
    insert_run(
        target, [(seq, line, line[-66:-2].decode(), None) for seq, line in enumerate(log.read_bytes().splitlines())]
    )
    for action in (lambda: Ledger.open(target), lambda: open_run(target).current()):
        with pytest.raises(PlantrailError) as caught:
            action()
        assert caught.value.code == "FORMAT_TOO_NEW"
    [row] = [row for row in open_store(postgres_url()).summaries() if row.run == run]
    assert (row.damage, row.plan_version) == ("FORMAT_TOO_NEW", 1)
