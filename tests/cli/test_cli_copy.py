"""plantrail copy: names its runs as every command does, reports each run, goes on past a damaged one, and
finishes a copy that stopped when run again."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import repair
from tests.conftest import LOGIN_DRAFT, CliResult

Cli = Callable[..., CliResult]


def _run(path: Path, *, started: bool = False) -> Path:
    with Ledger.create(path, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        if started:
            ledger.start("reproduce")
    return path


def test_copy_names_its_runs_as_every_command_does(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a store (PLANTRAIL_STORE or --store) a bare name is a run id in it, for the source and the
    destination alike, and no destination means the store; a name with a separator or .jsonl is a path."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    _run(tmp_path / "rl.jsonl")
    monkeypatch.setenv("PLANTRAIL_STORE", str(store))
    copied = run_cli("copy", "rl.jsonl", "rl")
    assert copied.code == 0, copied.err
    assert (store / "rl.jsonl").read_bytes() == (tmp_path / "rl.jsonl").read_bytes()
    assert not (tmp_path / "rl").exists()
    back = run_cli("copy", "rl", "back.jsonl")
    assert back.code == 0 and (tmp_path / "back.jsonl").read_bytes() == (tmp_path / "rl.jsonl").read_bytes()
    _run(tmp_path / "other.jsonl")
    into = run_cli("copy", "other.jsonl", "--json")
    assert into.code == 0 and into.json()["runs"][0]["destination"] == str(store / "other.jsonl")
    monkeypatch.delenv("PLANTRAIL_STORE")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run_cli("copy", "rl.jsonl", "rl", "--store", elsewhere).code == 0 and (elsewhere / "rl.jsonl").exists()
    nowhere = run_cli("copy", "rl.jsonl")
    assert nowhere.code == 2 and "error[USAGE]" in nowhere.err


def test_a_folder_copy_reports_each_run_goes_on_past_damage_and_finishes_when_run_again(
    tmp_path: Path, run_cli: Cli
) -> None:
    """Each run is reported as it goes: a torn source and a destination that differs fail with their codes
    (the copy exits with the first one's once every run is done), the others are copied; run again after the
    repair, the runs copied before are skipped and the rest copied."""
    runs, out = tmp_path / "runs", tmp_path / "out"
    runs.mkdir()
    out.mkdir()
    names = ["a", "b", "c", "d", "e", "f", "g"]
    for name in names:
        _run(runs / f"{name}.jsonl", started=name == "f")
    with (runs / "c.jsonl").open("ab") as torn:
        torn.write(b'{"v":1,"se')
    _run(out / "f.jsonl")  # run f, with another history than the source's

    first = run_cli("copy", runs, out, "--json")
    assert first.code == 3 and "error[TORN_TAIL]: 2 of 7 runs not copied" in first.err
    statuses = [(r["status"], (r["error"] or {}).get("code")) for r in first.json()["runs"]]
    assert statuses == [
        ("copied", None),
        ("copied", None),
        ("failed", "TORN_TAIL"),
        ("copied", None),
        ("copied", None),
        ("failed", "LOG_EXISTS"),
        ("copied", None),
    ]
    assert not (out / "c.jsonl").exists() and (out / "f.jsonl").read_bytes() != (runs / "f.jsonl").read_bytes()

    repair(runs / "c.jsonl")
    (out / "f.jsonl").unlink()
    again = run_cli("copy", runs, out)
    assert again.code == 0, again.err
    said = [line.split(" ", 1)[0] for line in again.out.splitlines()]
    assert said == ["skipped", "skipped", "copied", "skipped", "skipped", "copied", "skipped"]
    assert all((out / f"{n}.jsonl").read_bytes() == (runs / f"{n}.jsonl").read_bytes() for n in names)
