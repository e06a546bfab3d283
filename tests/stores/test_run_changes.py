"""Which runs of a store changed (:func:`plantrail.ledger.run_changes.run_changes`): a folder's logs that
appear, grow, are repaired or go away, and a database's runs appended to, each reported in a batch of run ids."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.run_changes import _inotify, changed_entries, folder_entries, run_changes
from tests.conftest import LOGIN_DRAFT
from tests.helpers.stores import fresh_database, postgres_url


def test_changed_entries_compares_two_scans(tmp_path: Path) -> None:
    assert changed_entries({"a": (1, 1), "b": (2, 2)}, {"a": (1, 1), "b": (3, 2), "c": (1, 1)}) == {"b", "c"}
    assert changed_entries({"a": (1, 1)}, {}) == {"a"}
    (tmp_path / "x.jsonl").write_bytes(b"12")
    (tmp_path / "notes.txt").write_bytes(b"")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "x.jsonl")
    assert list(folder_entries(str(tmp_path))) == ["x"]
    assert folder_entries(str(tmp_path / "gone")) == {}


def _collect(where: str, act: Callable[[], None], wanted: set[str], **options: float) -> set[str]:
    """The run ids ``run_changes`` reports while ``act`` runs, until ``wanted`` are all seen (or 10 s pass)."""
    seen: set[str] = set()
    done = threading.Event()
    started = threading.Event()

    def stop() -> bool:
        started.set()
        return done.is_set()

    def follow() -> None:
        for batch in run_changes(where, stop=stop, **options):
            seen.update(batch)
            if wanted <= seen:
                done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    started.wait(10)
    act()
    deadline = time.monotonic() + 10
    while not done.is_set() and time.monotonic() < deadline:
        time.sleep(0.02)
    done.set()
    thread.join(15)
    return seen


def test_a_folder_reports_new_grown_and_removed_logs(tmp_path: Path) -> None:
    with Ledger.create(tmp_path / "old.jsonl", copy.deepcopy(LOGIN_DRAFT)):
        pass
    (tmp_path / "gone.jsonl").write_bytes(b"")

    def act() -> None:
        with Ledger.open(tmp_path / "old.jsonl") as ledger:
            ledger.start("reproduce")
        with Ledger.create(tmp_path / "new.jsonl", copy.deepcopy(LOGIN_DRAFT)):
            pass
        (tmp_path / "gone.jsonl").unlink()

    assert _collect(str(tmp_path), act, {"old", "new", "gone"}, poll=0.1) == {"old", "new", "gone"}


def test_inotify_wakes_the_scan_before_its_poll(tmp_path: Path) -> None:
    """With inotify (Linux), a change is seen long before a 30 s poll would have looked again."""
    with _inotify(str(tmp_path)) as fd:
        if fd is None:
            pytest.skip("no inotify here")
    start = time.monotonic()
    seen = _collect(str(tmp_path), lambda: (tmp_path / "a.jsonl").write_bytes(b"x"), {"a"}, poll=30)
    assert seen == {"a"} and time.monotonic() - start < 5


@pytest.fixture
def database() -> Iterator[str]:
    yield from fresh_database(postgres_url())


def test_a_database_reports_the_runs_appended_to(database: str) -> None:
    with Ledger.create(f"{database}#quiet", copy.deepcopy(LOGIN_DRAFT)):
        pass
    with Ledger.create(f"{database}#busy", copy.deepcopy(LOGIN_DRAFT)):
        pass

    def act() -> None:
        with Ledger.open(f"{database}#busy") as ledger:
            ledger.start("reproduce")

    start = time.monotonic()
    assert _collect(database, act, {"busy"}, poll=30) == {"busy"}
    assert time.monotonic() - start < 10  # NOTIFY woke it: a 30 s poll had not looked again
