"""Benchmark sides for ``plantrail runs``: many runs listed, from a folder of JSONL logs and from PostgreSQL.

* A folder: ``count`` logs of the recorded n-event run, each with the fresh snapshot its writer's close leaves
  (copies of one recorded log, each opened and closed once so its own cache is written; untimed).
* A database: ``count`` runs, each the recorded run's records re-chained under its own run id and copied in
  in bulk, then listed once (untimed) so that every run's summary is at its head, as writers leave them.

Both are timed as the whole ``plantrail runs`` process a user runs, and as the first page of ``plantrail serve``
over them: a served process (started once, untimed, left running until the benchmark ends) asked for the list's
page and its first page of rows, as a browser opening it does.
"""

from __future__ import annotations

import atexit
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import msgspec

from bench.harness import Probe, run_process, timed
from bench.sides import _plantrail, make_log
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.chain import encode_pending
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.stores.protocol import PendingRecord
from plantrail.ledger.vocabulary.codec import GENESIS_PREV
from plantrail.ledger.vocabulary.events import LogOpened, Record

__all__ = ["database_listing", "fill_database", "fill_folder", "first_page", "folder_listing"]


def _runs_argv(*args: str) -> list[str]:
    return [*_plantrail(), "runs", *args, "--limit", "20"]


def fill_folder(workdir: Path, count: int, events: int) -> Path:
    """A folder of ``count`` logs of the recorded ``events``-event run, each with its own fresh snapshot."""
    folder = workdir / f"runs-{count}x{events}"
    source = make_log(workdir / f"run-{events}.jsonl", events)
    folder.mkdir(exist_ok=True)
    data = source.read_bytes()
    for i in range(count):
        path = folder / f"run-{i:05d}.jsonl"
        if path.exists():
            continue
        cache = Path(f"{path}.plantrail-cache")
        if cache.exists():
            shutil.rmtree(cache)
        path.write_bytes(data)
        Ledger.open(path, fsync="none").close()  # a writer's close leaves the snapshot
    return folder


def folder_listing(folder: Path) -> Probe:
    """`plantrail runs FOLDER` as a whole process."""
    return timed(run_process(_runs_argv(str(folder))), collect=False)


def _rechained(records: list[Record], run: str) -> Iterator[tuple[str, int, bytes, str, str | None]]:
    prev = GENESIS_PREV
    for record in records:
        data = msgspec.structs.replace(record.data, run=run) if isinstance(record.data, LogOpened) else record.data
        pending = PendingRecord(record.ts, record.plan_version, record.actor, data, record.source, record.key)
        line, stored = encode_pending(pending, run=run, seq=record.seq, prev=prev)
        prev = stored.h
        yield run, stored.seq, line[:-1], stored.h, stored.key


def fill_database(url: str, workdir: Path, count: int, events: int) -> str:
    """A fresh database on the server at ``url`` holding ``count`` runs of the recorded run; its URL."""
    import psycopg

    from plantrail.ledger.runs import list_runs
    from plantrail.ledger.stores.postgres import init_schema

    name = f"bench_runs_{count}_{events}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    parts = url.split("?", 1)
    database = parts[0].rsplit("/", 1)[0] + f"/{name}" + (f"?{parts[1]}" if len(parts) > 1 else "")
    init_schema(database)
    with LogReader(make_log(workdir / f"run-{events}.jsonl", events)) as reader:
        records = list(reader.records())
    with psycopg.connect(database, autocommit=True) as conn, conn.transaction(), conn.cursor() as cur:
        with cur.copy("COPY plantrail_runs (run) FROM STDIN") as copy:
            for i in range(count):
                copy.write_row((f"run-{i:05d}",))
        with cur.copy("COPY plantrail_records (run, seq, line, h, key) FROM STDIN") as copy:
            for i in range(count):
                for row in _rechained(records, f"run-{i:05d}"):
                    copy.write_row(row)
    list_runs(database)  # every summary brought to its run's head, as the runs' writers would have left them
    return database


def database_listing(database: str) -> Probe:
    """`plantrail runs --store URL` as a whole process."""
    return timed(run_process(_runs_argv("--store", database)), collect=False)


_SERVERS: dict[str, str] = {}


def _served(where: str) -> str:
    """`plantrail serve WHERE` started on a free loopback port (once per WHERE, stopped when the benchmark
    exits); its URL once it answers."""
    if where in _SERVERS:
        return _SERVERS[where]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [*_plantrail(), "serve", where, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    atexit.register(server.terminate)
    base = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base, timeout=5) as answer:
                answer.read()
            _SERVERS[where] = base
            return base
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"plantrail serve {where} did not start") from None
            time.sleep(0.1)


def first_page(where: str, *, rows: bool = True) -> Probe:
    """The list's first page from a running `plantrail serve WHERE`: the page, then its first 50 rows (without
    ``rows``, the page alone: the baseline of what the rows cost)."""
    base = _served(where)
    urls = (base, base + "api/runs") if rows else (base,)

    def load() -> None:
        for url in urls:
            with urllib.request.urlopen(url, timeout=60) as answer:
                answer.read()

    return timed(load, collect=False)
