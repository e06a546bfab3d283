"""The stores every contract test runs against: the JSONL file and a real PostgreSQL server.

The PostgreSQL server is the one named by ``PLANTRAIL_TEST_POSTGRES`` or, when none is named, one the suite
starts itself from the ``pgserver`` wheel (PostgreSQL 16 in a temporary folder, stopped at exit). Without
either, PostgreSQL tests skip with the reason, except on CI (``CI=true``), where they fail: there they
must run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.events import Record

_server: Any = None
_server_error: str | None = None


def postgres_url() -> str:
    """The test server's URL (started on first use); skips, or fails on CI, when there is none."""
    global _server, _server_error
    named = os.environ.get("PLANTRAIL_TEST_POSTGRES")
    if named:
        return named
    if _server is None and _server_error is None:
        try:
            with warnings.catch_warnings():  # pgserver's platformdirs warns when XDG_RUNTIME_DIR is unset
                warnings.simplefilter("ignore")
                import pgserver  # type: ignore[import-untyped]

                folder = tempfile.mkdtemp(prefix="plantrail-pg-")
                _server = pgserver.get_server(folder, cleanup_mode="stop")
            atexit.register(shutil.rmtree, folder, True)
        except Exception as exc:  # no wheel, or the server did not start
            _server_error = f"{type(exc).__name__}: {exc}"
    if _server is None:
        reason = f"no PostgreSQL for the tests: set PLANTRAIL_TEST_POSTGRES or install pgserver ({_server_error})"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return str(_server.get_uri())


class JsonlTarget:
    """Runs as files in a temporary folder."""

    name = "jsonl"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def location(self, run: str) -> str:
        return str(self.folder / f"{run}.jsonl")

    def lines(self, location: str) -> bytes:
        return Path(location).read_bytes()

    def records(self, location: str) -> list[Record]:
        with LogReader(location) as reader:
            return list(reader.records())


class PostgresTarget:
    """Runs in the test server's database, each under a fresh run id."""

    name = "postgres"

    def __init__(self, url: str) -> None:
        self.url = url

    def location(self, run: str) -> str:
        return f"{self.url}#{run}"

    def lines(self, location: str) -> bytes:
        from plantrail.ledger.stores.postgres import read_lines

        return b"".join(read_lines(location))

    def records(self, location: str) -> list[Record]:
        from plantrail.ledger.stores.postgres import read_records

        return list(read_records(location))


def unique_run(prefix: str = "run") -> str:
    """A run id no other test uses (the test database is shared by the whole session)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def fresh_database(url: str) -> Iterator[str]:
    """A database of its own on the test server at ``url`` (for tests that list every run of a database), dropped
    afterwards; use it as a generator fixture body (``yield from fresh_database(postgres_url())``)."""
    psycopg = pytest.importorskip("psycopg")
    name = unique_run("runs").replace("-", "_")
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    parts = url.split("?", 1)
    yield parts[0].rsplit("/", 1)[0] + f"/{name}" + (f"?{parts[1]}" if len(parts) > 1 else "")
    from plantrail.ledger.stores import postgres

    postgres._close_pools()
    postgres._schema_checked.clear()
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
