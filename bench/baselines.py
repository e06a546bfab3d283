"""Baselines measured in the same run as plantrail: the floor each figure is compared against."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson

_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND


def orjson_read(path: Path) -> int:
    """Read path in binary, orjson.loads every line, and return the line count."""
    count = 0
    with open(path, "rb") as f:
        for line in f:
            orjson.loads(line)
            count += 1
    return count


def write_fsync_each(path: Path, lines: Sequence[bytes]) -> None:
    """Append lines with one os.write and one os.fsync per line."""
    fd = os.open(path, _APPEND, 0o644)
    try:
        for line in lines:
            os.write(fd, line)
            os.fsync(fd)
    finally:
        os.close(fd)


def write_fsync_batches(path: Path, lines: Sequence[bytes], batch: int = 100) -> None:
    """Append lines with one os.write per line and one os.fsync per batch of lines."""
    fd = os.open(path, _APPEND, 0o644)
    try:
        for start in range(0, len(lines), batch):
            for line in lines[start : start + batch]:
                os.write(fd, line)
            os.fsync(fd)
    finally:
        os.close(fd)


def orjson_loop_process(path: Path) -> list[str]:
    """Argv of an interpreter that runs :func:`orjson_read` over ``path``: the raw cost of reading the log."""
    code = "import sys, orjson\nwith open(sys.argv[1], 'rb') as f:\n    for line in f:\n        orjson.loads(line)\n"
    return [sys.executable, "-c", code, str(path)]


def python_import_process() -> list[str]:
    """Argv of an interpreter that only imports plantrail's runtime dependencies."""
    return [sys.executable, "-c", "import pydantic, click, orjson"]


def eventsourcing_replay(n_events: int) -> Callable[[], object]:
    """Store one aggregate with n_events events in eventsourcing's POPO store (untimed); return its replay."""
    if n_events < 1:
        raise ValueError("n_events must be >= 1 (the creation event counts)")
    try:
        from eventsourcing.application import Application

        from bench.es_counter import Counter
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "the eventsourcing baseline needs the bench extra: pip install -e '.[bench]' (eventsourcing>=9.2)"
        ) from exc
    env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "IS_SNAPSHOTTING_ENABLED": "n", "AGGREGATE_CACHE_MAXSIZE": ""}
    app: Application[UUID] = Application(env=env)
    counter = Counter()
    for value in range(1, n_events):
        counter.set(value)
        if value % 10_000 == 0:
            app.save(counter)
    app.save(counter)
    aggregate_id = counter.id
    del counter

    def replay() -> object:
        aggregate: Counter = app.repository.get(aggregate_id)
        if aggregate.version != n_events:
            raise RuntimeError(f"replayed {aggregate.version} events, expected {n_events}")
        return aggregate

    return replay


def _full_sync_connections() -> None:
    """Make every SQLite connection eventsourcing opens from now on use ``PRAGMA synchronous=FULL`` (in its WAL
    mode: one fsync of the write-ahead log per committed transaction), whatever the library's default is."""
    from eventsourcing.sqlite import SQLiteConnectionPool

    if getattr(SQLiteConnectionPool, "_bench_full_sync", False):
        return
    create = SQLiteConnectionPool._create_connection

    def full_sync(self: Any) -> Any:
        connection = create(self)
        connection._sqlite_conn.execute("PRAGMA synchronous=FULL")
        return connection

    SQLiteConnectionPool._create_connection = full_sync  # type: ignore[method-assign]
    SQLiteConnectionPool._bench_full_sync = True  # type: ignore[attr-defined]


def eventsourcing_sqlite_batches(folder: Path, lines: Sequence[bytes], batch: int = 100) -> Callable[[], float]:
    """eventsourcing's SQLite recorder appending one aggregate's events, each carrying the data of one of
    ``lines`` (a plantrail event's JSON object), saved in batches of ``batch`` (one transaction each) with
    ``synchronous=FULL``; a fresh database is made untimed before each run. Returns the probe."""
    try:
        from eventsourcing.application import Application

        from bench.es_counter import Recording
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "the eventsourcing baseline needs the bench extra: pip install -e '.[bench]' (eventsourcing>=9.2)"
        ) from exc
    _full_sync_connections()
    payloads = [orjson.loads(line)["data"] for line in lines]
    database = folder / "eventsourcing.sqlite"
    apps: list[Application[UUID]] = []

    def setup() -> None:
        for app in apps:
            app.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(database),
            "IS_SNAPSHOTTING_ENABLED": "n",
        }
        apps[:] = [Application(env=env)]

    def go() -> None:
        app = apps[0]
        recording = Recording()
        for start in range(0, len(payloads), batch):
            for data in payloads[start : start + batch]:
                recording.record(data)
            app.save(recording)
        if recording.count != len(payloads):
            raise RuntimeError(f"recorded {recording.count} events, expected {len(payloads)}")

    def probe() -> float:
        setup()
        begin = time.perf_counter()
        go()
        return time.perf_counter() - begin

    return probe
