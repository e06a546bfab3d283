"""Which runs of a store changed (:func:`plantrail.ledger.run_changes.run_changes`): a folder's logs that
appear, grow, are repaired or go away, and a database's runs appended to, each reported in a batch of run ids."""

from __future__ import annotations

import copy
import socket
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
    assert folder_entries(str(tmp_path / "notes.txt")) == {}  # a file where the folder was: no runs, no error


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


def _first_batch(changes: Iterator[set[str]]) -> set[str]:
    """The first batch a started ``run_changes`` gives (its stop ends it 10 s after the call at the latest)."""
    return next(changes, set())


def _deadline(seconds: float = 10) -> Callable[[], bool]:
    end = time.monotonic() + seconds
    return lambda: time.monotonic() > end


def test_changes_start_when_run_changes_is_called_not_when_first_read(tmp_path: Path) -> None:
    """A log appended to after the call but before the first batch is asked for is reported: the folder's
    head position is taken by the call."""
    with Ledger.create(tmp_path / "old.jsonl", copy.deepcopy(LOGIN_DRAFT)):
        pass
    changes = run_changes(str(tmp_path), poll=0.1, stop=_deadline())
    with Ledger.open(tmp_path / "old.jsonl") as ledger:
        ledger.start("reproduce")

    assert _first_batch(changes) == {"old"}


def test_one_run_reports_its_own_changes_whatever_its_file_is_named(tmp_path: Path) -> None:
    """Given a run object, only that run's log is watched (here one not named *.jsonl), under its file name;
    another log of the folder growing is no change of it."""
    from plantrail.ledger.stores.opener import as_run

    with Ledger.create(tmp_path / "mine.log", copy.deepcopy(LOGIN_DRAFT)):
        pass
    with Ledger.create(tmp_path / "other.jsonl", copy.deepcopy(LOGIN_DRAFT)):
        pass
    changes = run_changes(as_run(str(tmp_path / "mine.log")), poll=0.1, stop=_deadline())
    with Ledger.open(tmp_path / "other.jsonl") as ledger:
        ledger.start("reproduce")
    with Ledger.open(tmp_path / "mine.log") as ledger:
        ledger.start("reproduce")

    assert _first_batch(changes) == {"mine.log"}


def test_both_stores_give_their_head_position_through_the_store_protocol(tmp_path: Path, database: str) -> None:
    """The folder and the database are Stores with a head position: a folder's logs by size and time, a
    database's place in its commit order (None while it holds no record)."""
    from plantrail.ledger.stores.opener import open_store
    from plantrail.ledger.stores.protocol import Store

    folder, db = open_store(str(tmp_path)), open_store(database)
    assert isinstance(folder, Store) and isinstance(db, Store)
    assert folder.head_position() == {} and db.head_position() is None
    with Ledger.create(tmp_path / "a.jsonl", copy.deepcopy(LOGIN_DRAFT)):
        pass
    with Ledger.create(f"{database}#a", copy.deepcopy(LOGIN_DRAFT)):
        pass
    size = (tmp_path / "a.jsonl").stat()
    assert folder.head_position() == {"a": (size.st_size, size.st_mtime_ns)}
    assert db.head_position() is not None


def test_a_database_run_reports_only_its_own_records(database: str) -> None:
    """Given a database run, records of the database's other runs are no change of it; its own are, from the
    database's head when the call was made."""
    from plantrail.ledger.stores.opener import as_run

    for name in ("mine", "other"):
        with Ledger.create(f"{database}#{name}", copy.deepcopy(LOGIN_DRAFT)):
            pass
    changes = run_changes(as_run(f"{database}#mine"), poll=0.2, stop=_deadline())
    with Ledger.open(f"{database}#other") as ledger:
        ledger.start("reproduce")
    with Ledger.open(f"{database}#mine") as ledger:
        ledger.start("reproduce")

    assert _first_batch(changes) == {"mine"}


def _followers(name: str) -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == name and thread.is_alive())


def _until(condition: Callable[[], bool], seconds: float = 10) -> bool:
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        time.sleep(0.02)
    return condition()


def test_shared_changes_follow_once_for_every_subscriber(tmp_path: Path) -> None:
    """Two subscribers share one follow (one thread) and each gets the batch; after the last leaves the follow
    stops, and a new subscriber starts another that still reports."""
    from plantrail.ledger.run_changes import SharedChanges

    name = f"test-shared-{tmp_path.name}"
    changes = SharedChanges(str(tmp_path), poll=0.1, name=name)
    first: list[set[str]] = []
    second: list[set[str]] = []
    leave_first = changes.subscribe(first.append)  # type: ignore[arg-type]
    leave_second = changes.subscribe(second.append)  # type: ignore[arg-type]
    assert _followers(name) == 1

    (tmp_path / "a.jsonl").write_bytes(b"x")
    assert _until(lambda: set().union(*first) == {"a"} and set().union(*second) == {"a"}), (first, second)

    leave_first()
    assert _followers(name) == 1  # the other subscriber still follows
    leave_second()
    assert _until(lambda: _followers(name) == 0)

    third: list[set[str]] = []
    leave_third = changes.subscribe(third.append)  # type: ignore[arg-type]
    (tmp_path / "b.jsonl").write_bytes(b"y")
    assert _until(lambda: set().union(*third) == {"b"}), third
    assert set().union(*first, *second) == {"a"} and _followers(name) == 1  # those who left get nothing more
    leave_third()
    assert _until(lambda: _followers(name) == 0)


def test_a_failed_shared_follow_hands_its_error_and_the_next_subscriber_starts_again(tmp_path: Path) -> None:
    """A follow that fails (here: a database that cannot be reached) hands its coded error to its subscribers
    and ends; the next subscriber starts a new follow, which fails the same way rather than waiting forever."""
    from plantrail.ledger.run_changes import SharedChanges
    from plantrail.ledger.vocabulary.errors import PlantrailError

    with socket.socket() as held:  # a port nothing listens on
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
    changes = SharedChanges(f"postgresql://127.0.0.1:{port}/nothing", poll=0.1, name=f"test-failed-{tmp_path.name}")
    for _ in range(2):
        handed: list[object] = []
        leave = changes.subscribe(handed.append)
        assert _until(lambda handed=handed: len(handed) == 1)
        assert isinstance(handed[0], PlantrailError) and handed[0].code == "STORE_UNAVAILABLE"
        leave()
