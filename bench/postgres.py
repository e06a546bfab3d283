"""Benchmark sides for the PostgreSQL store, each against a baseline on the same server in the same run.

* Appends: plantrail appending a recorded run's commands one per transaction (catch up, decide, insert,
  commit), with 1, 8 and 32 writers (each on its own run), against a raw psycopg loop inserting the same
  rows with the same transaction pattern (a read of the run after its head, then the insert and the
  wake-up NOTIFY, committed together).
* Appends to one run: 1, 8 and 32 writers appending criterion verdicts (legal in any order) to the same run,
  each racing the others for the next seq, against the raw loop doing the same (a lost race, a unique
  violation on the seq, is caught up and tried again).
* Replay: a full checked fold of a run read from PostgreSQL against the same run read from its JSONL file.

The server is the one ``PLANTRAIL_BENCH_POSTGRES`` names, or one started from the ``pgserver`` wheel in the
benchmark's folder.
"""

from __future__ import annotations

import copy
import os
import threading
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import Probe, timed
from bench.scenario import Clock
from bench.sides import Script
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.copy import copy_runs
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.stores.postgres import init_schema, read_records
from plantrail.projections.state import fold

__all__ = [
    "append_baseline",
    "append_ledger",
    "replay_jsonl",
    "replay_postgres",
    "server_url",
    "shared_baseline",
    "shared_ledger",
]

_server: Any = None


def server_url(folder: Path) -> str:
    """The benchmark's PostgreSQL (started once per process when none is named)."""
    global _server
    named = os.environ.get("PLANTRAIL_BENCH_POSTGRES")
    if named:
        return named
    if _server is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver  # type: ignore[import-untyped]

            _server = pgserver.get_server(str(folder / "postgres"), cleanup_mode="stop")
    url = str(_server.get_uri())
    init_schema(url)
    return url


def _parallel(writers: int, work: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def append_ledger(url: str, run: Script, writers: int) -> Probe:
    """plantrail: each writer creates a fresh run (untimed) and executes the script one command per append."""
    ledgers: list[Ledger] = []

    def setup() -> None:
        for ledger in ledgers:
            ledger.close()
        ledgers[:] = [
            Ledger.create(f"{url}#bench-{uuid.uuid4().hex[:12]}", copy.deepcopy(run.draft), clock=Clock())
            for _ in range(writers)
        ]

    def go() -> None:
        def write(i: int) -> None:
            for command in run.commands:
                ledgers[i].execute(command)

        _parallel(writers, write)

    return timed(go, setup)


def append_baseline(url: str, run: Script, writers: int) -> Probe:
    """A raw psycopg loop: per append, read the run after its head, insert the row, notify, commit."""
    import psycopg

    rows = [_row(line) for line in run.lines]
    runs: list[str] = []

    def setup() -> None:
        runs[:] = [f"raw-{uuid.uuid4().hex[:12]}" for _ in range(writers)]

    def go() -> None:
        def write(i: int) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                for seq, line, h in rows:
                    with conn.transaction():
                        conn.execute(
                            "SELECT line FROM plantrail_records WHERE run = %s AND seq >= %s ORDER BY seq",
                            (runs[i], seq),
                        ).fetchall()
                        conn.execute(
                            "INSERT INTO plantrail_records (run, seq, line, h, key) VALUES (%s, %s, %s, %s, NULL)",
                            (runs[i], seq, line, h),
                        )
                        conn.execute("SELECT pg_notify('plantrail_records', %s)", (runs[i],))

        _parallel(writers, write)

    return timed(go, setup)


def _verdict(ledger: Ledger, i: int) -> None:
    ledger.verify_criterion("c0", passed=i % 2 == 0, evidence=f"checked by writer turn {i}")


def shared_ledger(url: str, run: Script, writers: int, events: int) -> Probe:
    """plantrail: ``writers`` ledgers on one fresh run (made untimed), each appending ``events`` criterion
    verdicts one per append; a writer that lost the race for the next seq decides again (the ledger's own
    retries)."""
    ledgers: list[Ledger] = []

    def setup() -> None:
        for ledger in ledgers:
            ledger.close()
        target = f"{url}#shared-{uuid.uuid4().hex[:12]}"
        Ledger.create(target, copy.deepcopy(run.draft), clock=Clock()).close()
        ledgers[:] = [Ledger.open(target) for _ in range(writers)]

    def go() -> None:
        def write(i: int) -> None:
            for turn in range(events):
                _verdict(ledgers[i], turn)

        _parallel(writers, write)

    return timed(go, setup)


def verdict_lines(folder: Path, run: Script, events: int) -> list[bytes]:
    """The lines ``events`` criterion verdicts append to the run (recorded once in a file, untimed)."""
    path = folder / f"verdicts-{events}.jsonl"
    for leftover in (path, Path(f"{path}.cache")):
        if leftover.exists() and leftover.is_file():
            leftover.unlink()
    with Ledger.create(path, copy.deepcopy(run.draft), fsync="none", clock=Clock(), cache=False) as ledger:
        for turn in range(events):
            _verdict(ledger, turn)
    return path.read_bytes().splitlines(keepends=True)[2:]


def shared_baseline(url: str, lines: list[bytes], writers: int) -> Probe:
    """The raw loop on one run: per append, read the run after the head this writer knows, insert the row at
    the next seq, notify, commit; a unique violation (another writer took that seq) is rolled back, and the
    writer reads on and tries again."""
    import psycopg

    rows = [_row(line) for line in lines]
    runs: list[str] = []

    def setup() -> None:
        runs[:] = [f"raw-shared-{uuid.uuid4().hex[:12]}"]

    def go() -> None:
        def write(i: int) -> None:
            head = 0
            with psycopg.connect(url, autocommit=True) as conn:
                for _, line, h in rows:
                    while True:
                        try:
                            with conn.transaction():
                                for seq, _ in conn.execute(
                                    "SELECT seq, line FROM plantrail_records WHERE run = %s AND seq > %s ORDER BY seq",
                                    (runs[0], head),
                                ).fetchall():
                                    head = seq
                                conn.execute(
                                    "INSERT INTO plantrail_records (run, seq, line, h, key) "
                                    "VALUES (%s, %s, %s, %s, NULL)",
                                    (runs[0], head + 1, line, h),
                                )
                                conn.execute("SELECT pg_notify('plantrail_records', %s)", (runs[0],))
                            head += 1
                            break
                        except psycopg.errors.UniqueViolation:
                            continue

        _parallel(writers, write)

    return timed(go, setup)


def _row(line: bytes) -> tuple[int, bytes, str]:
    body = line.rstrip(b"\n")
    seq = int(body[body.index(b'"seq":') + 6 : body.index(b',"ts"')])
    return seq, body, body[-66:-2].decode()


def replay_postgres(url: str, path: Path) -> Probe:
    """A checked full fold of the run read back from PostgreSQL (the run is copied in once, untimed)."""
    with LogReader(path) as reader:
        run = next(iter(reader.records())).run
    target = f"{url}#{run}"
    _drop_run(url, run)  # the logs of every size share a run id: the table holds the one being measured
    copy_runs(str(path), target)
    return timed(lambda: fold(read_records(target)))


def replay_jsonl(path: Path) -> Probe:
    """The same fold of the same run read from its JSONL file."""

    def go() -> None:
        with LogReader(path) as reader:
            fold(reader.records())

    return timed(go)


def _drop_run(url: str, run: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("DELETE FROM plantrail_records WHERE run = %s", (run,))
        conn.execute("DELETE FROM plantrail_runs WHERE run = %s", (run,))
