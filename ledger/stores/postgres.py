"""The PostgreSQL store: one table of canonical lines that many writers on many machines append to.

A run lives at ``postgresql://user@host/db#RUN_ID`` (the run id in the URL's fragment). Every record keeps
the canonical line bytes and hash chain it would have in a JSONL file, so a run copied between the stores is
byte-identical and verifies with the same head hash.

Schema (version 2, created on first use and by :func:`init_schema`, which upgrades version 1; a newer schema
is refused)::

    plantrail_meta     (key text PRIMARY KEY, value text)          -- schema_version
    plantrail_runs     (run text PRIMARY KEY, created_at timestamptz)
    plantrail_records  (run text, seq bigint, line bytea, h text, key text,
                        tx xid8 DEFAULT pg_current_xact_id(),
                        gpos bigint GENERATED ALWAYS AS IDENTITY,
                        PRIMARY KEY (run, seq))
                       UNIQUE (run, key) WHERE key IS NOT NULL;  INDEX (tx, gpos)
    plantrail_summaries (run text PRIMARY KEY, seq bigint, goal text, outcome text, plan_version integer,
                         last_ts text, orphans integer, reasons text[],   -- v2: what `plantrail runs` lists
                         head text, digest text)   -- added within v2: the head it was computed at, its digest

* **Appends** are optimistic: a session catches up with the run's records after its head, the ledger
  decides, and the commit inserts the staged records in one transaction. The primary key ``(run, seq)``
  serialises writers of one run: a writer that lost the race gets ``WRITE_CONFLICT`` (nothing written) and
  the ledger decides again against the new head, a bounded number of times, or answers
  ``STALE_EXPECTED_SEQ`` when the caller gave an expected seq. Idempotency keys are unique per run, so a
  retry after a dropped connection never duplicates. No advisory locks and no table locks (they are no-ops
  or errors on CockroachDB and YugabyteDB).
* **Reads** check every line exactly as the JSONL reader does (framing, hash, schema, seq and chain).
* **Summaries** (one row per run, for ``plantrail runs``) are a hint: a writer leaves one when its ledger
  closes, with the head (seq and hash) it was computed at and a digest of its values. A summary is believed
  only when its digest matches and its head is the run's last record; any other is recomputed from the run's
  rows (and left again). The two columns were added within schema v2 (``ADD COLUMN IF NOT EXISTS`` when the
  first summary is written, or by :func:`init_schema`): earlier plantrails read and write the table as before,
  and a summary one of them leaves is not believed.
* **Connections** come from one pool per process and database, made on first use: its first connection is
  made before the pool is handed out, so a database that refuses (no such database, connection refused,
  authentication failed) or does not answer is ``STORE_UNAVAILABLE`` with the server's own reason within the
  connect timeout. A pool remembers the pid that made it: a forked child makes its own, and never uses or
  closes its parent's (closing a connection would end the parent's session on the socket they share).
* **The global position** ``(tx, gpos)`` orders records across runs: :func:`follow` reads only rows whose
  transaction is below the snapshot's xmin, ordered by ``(tx, gpos)``, so a row that commits late is never
  skipped. ``NOTIFY plantrail_records`` is only a wake-up; followers poll with a bound as the fallback.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Self

from plantrail._version import __version__
from plantrail.ledger.stores.chain import check_link, encode_pending
from plantrail.ledger.stores.processes import ForkSafeLock
from plantrail.ledger.stores.targets import is_database_url
from plantrail.ledger.stores.values import FsyncPolicy, PendingRecord, Resumed, until_damage
from plantrail.ledger.vocabulary.clock import utc_now
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, log_format
from plantrail.ledger.vocabulary.errors import LogDamaged, PlantrailError, error
from plantrail.ledger.vocabulary.events import LogOpened, Record

if TYPE_CHECKING:
    from collections.abc import Mapping

    from psycopg import Connection
    from psycopg_pool import ConnectionPool

    from plantrail.ledger.stores.payloads import StoredPayload
    from plantrail.ledger.vocabulary.keys import KeyEntry
    from plantrail.projections.model import PlanState
    from plantrail.projections.runs import RunRow

__all__ = [
    "SCHEMA_VERSION",
    "GlobalPosition",
    "Location",
    "PostgresStore",
    "follow",
    "follow_run",
    "init_schema",
    "insert_run",
    "list_runs",
    "parse_location",
    "payload_names",
    "read_checked_lines",
    "read_lines",
    "read_payload",
    "read_range",
    "read_records",
    "read_salted",
    "record_at",
    "run_summaries",
    "store_payload",
    "tail_records",
]

SCHEMA_VERSION: Final = 2
CHANNEL: Final = "plantrail_records"
#: The options plantrail reads from a store URL's query; everything else goes to libpq as it is.
_OWN_OPTIONS: Final = ("pool_size", "prepare_threshold", "notify")
_CONNECT_TIMEOUT_S: Final = 10.0
#: The most records a follower of one run reads per query (a follower far behind catches up in batches).
_FOLLOW_BATCH: Final = 1000

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS plantrail_meta (key text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS plantrail_runs (run text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())",
    """CREATE TABLE IF NOT EXISTS plantrail_records (
        run text NOT NULL,
        seq bigint NOT NULL,
        line bytea NOT NULL,
        h text NOT NULL,
        key text,
        tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
        gpos bigint GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (run, seq))""",
    "CREATE UNIQUE INDEX IF NOT EXISTS plantrail_records_key ON plantrail_records (run, key) WHERE key IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS plantrail_records_global ON plantrail_records (tx, gpos)",
    # v2: one summary row per run for `plantrail runs`, valid while its seq is the run's head seq
    """CREATE TABLE IF NOT EXISTS plantrail_summaries (
        run text PRIMARY KEY,
        seq bigint NOT NULL,
        goal text,
        outcome text,
        plan_version integer NOT NULL,
        last_ts text,
        orphans integer NOT NULL,
        reasons text[] NOT NULL,
        head text,
        digest text)""",
)
#: The head a summary was computed at and the digest of its values (see :func:`_summary_digest`): two columns
#: added to a summaries table made before them, which every plantrail of schema v2 reads and writes as before.
_SUMMARY_HEAD: Final = (
    "ALTER TABLE plantrail_summaries ADD COLUMN IF NOT EXISTS head text",
    "ALTER TABLE plantrail_summaries ADD COLUMN IF NOT EXISTS digest text",
)


# --------------------------------------------------------------------------- where a run lives


class Location(NamedTuple):
    """A database and, optionally, one run in it, parsed from a store URL."""

    conninfo: str  # the URL for libpq: no fragment, none of plantrail's own query options
    run: str | None
    pool_size: int
    prepare_threshold: int | None
    notify: bool
    connect_timeout: float  # seconds to wait for a connection (libpq's connect_timeout, default 10)

    def __str__(self) -> str:
        safe = _without_password(self.conninfo)
        return f"{safe}#{self.run}" if self.run else safe


def parse_location(url: str, *, run: str | None = None) -> Location:
    """Split a store URL into libpq's part, the run id (the fragment, or ``run``) and plantrail's options.

    Options in the query: ``pool_size`` (connections per process, default 4), ``prepare_threshold``
    (``none`` for PgBouncer in transaction mode; default psycopg's 5) and ``notify`` (``off`` to poll only,
    for engines without LISTEN/NOTIFY).
    """
    if not is_database_url(url):
        raise error("USAGE", f"{url!r} is not a postgresql:// URL")
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    own = {k: v for k, v in query if k in _OWN_OPTIONS}
    rest = [(k, v) for k, v in query if k not in _OWN_OPTIONS]
    conninfo = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(rest), fragment=""))
    fragment = urllib.parse.unquote(parts.fragment) or None
    if run is not None and fragment is not None and run != fragment:
        raise error("USAGE", f"the URL names run {fragment!r} and the caller run {run!r}")
    return Location(
        conninfo=conninfo,
        run=run if run is not None else fragment,
        pool_size=_int_option(own, "pool_size", 4, minimum=1),
        prepare_threshold=None
        if own.get("prepare_threshold", "").lower() in ("none", "off")
        else _int_option(own, "prepare_threshold", 5, minimum=0),
        notify=own.get("notify", "on").lower() not in ("off", "0", "false", "no"),
        connect_timeout=float(_int_option(dict(rest), "connect_timeout", int(_CONNECT_TIMEOUT_S), minimum=1)),
    )


def _int_option(options: dict[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 6 or int(raw) < minimum:
        raise error("USAGE", f"store URL option {name}={raw!r} must be a whole number >= {minimum}")
    return int(raw)


def _masked(url: str) -> str:
    """``url`` as given, a password in it (if any) shown as ``***``."""
    parts = urllib.parse.urlsplit(url)
    if not parts.password:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


def _without_password(conninfo: str) -> str:
    parts = urllib.parse.urlsplit(conninfo)
    if parts.password is None:
        return conninfo
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


# --------------------------------------------------------------------------- connections and faults


class _Attempts:
    """How a pool's connection attempts went: the pool itself only logs a failed attempt and tries again, so
    the class of its connections notes each outcome here, for the caller to see the database's own reason."""

    def __init__(self) -> None:
        self.answered = threading.Event()  # set by the first attempt's outcome, whatever it was
        self.failure: BaseException | None = None  # the last attempt's error (None once one succeeded)

    def note(self, failure: BaseException | None) -> None:
        self.failure = failure
        self.answered.set()

    def connection_class(self) -> type[Connection[Any]]:
        """A connection class whose every connect is noted here."""
        from psycopg import Connection

        attempts = self

        class Noted(Connection[Any]):
            @classmethod
            def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
                try:
                    conn = super().connect(conninfo, **kwargs)
                except BaseException as exc:
                    attempts.note(exc)
                    raise
                attempts.note(None)
                return conn

        return Noted


class _Pooled(NamedTuple):
    pid: int  # the process that made the pool: no other process uses or closes it
    pool: ConnectionPool[Any]
    attempts: _Attempts


_pools: dict[tuple[str, int, int | None], _Pooled] = {}
_pools_lock = ForkSafeLock()
_schema_checked: set[str] = set()
#: Seconds beyond the connect timeout to wait for the first attempt to report (libpq's own timeout ends it).
_ANSWER_MARGIN_S: Final = 1.0
#: libpq waits at least this long whatever connect_timeout says.
_LEAST_CONNECT_TIMEOUT_S: Final = 2.0


def _pool(location: Location) -> _Pooled:
    """This process's connection pool for a database (one per conninfo and options), opened on first use.

    A pool made by another process (this one is a forked child of it) is never used or closed here: it is
    abandoned (see :func:`_abandon`) and this process makes its own.
    """
    key = (location.conninfo, location.pool_size, location.prepare_threshold)
    pid = os.getpid()
    with _pools_lock:
        pooled = _pools.get(key)
        if pooled is not None and pooled.pid == pid:
            return pooled
        for other, inherited in list(_pools.items()):
            if inherited.pid != pid:
                del _pools[other]
                _abandon(inherited.pool)
        pooled = _open_pool(location, pid)
        _pools[key] = pooled
    return pooled


def _open_pool(location: Location, pid: int) -> _Pooled:
    """A new pool with its first connection made; the database's own reason (no such database, connection
    refused, authentication failed, no answer) as STORE_UNAVAILABLE within the connect timeout when it fails."""
    _driver("psycopg")
    psycopg_pool = _driver("psycopg_pool")
    # The pool logs each failed connection attempt; the fault reaches the caller as STORE_UNAVAILABLE, so keep
    # those lines off stderr unless the application configured logging itself.
    logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())
    attempts = _Attempts()
    timeout = location.connect_timeout
    pool = psycopg_pool.ConnectionPool(
        location.conninfo,
        min_size=1,
        max_size=location.pool_size,
        kwargs={
            "autocommit": True,
            "prepare_threshold": location.prepare_threshold,
            "connect_timeout": int(timeout),
        },
        connection_class=attempts.connection_class(),
        timeout=timeout,
        open=False,
        name="plantrail",
    )
    waited = max(timeout, _LEAST_CONNECT_TIMEOUT_S) + _ANSWER_MARGIN_S
    with _faults(location, attempts=attempts):
        pool.open(wait=False)
        try:
            answered = attempts.answered.wait(waited)
            if attempts.failure is not None:
                raise attempts.failure
            if not answered:
                raise error(
                    "STORE_UNAVAILABLE",
                    f"database {location} is unavailable: no answer within {waited:g} s",
                    path=str(location),
                )
            pool.wait(timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                pool.close(timeout=_ANSWER_MARGIN_S)
            raise
    return _Pooled(pid, pool, attempts)


def _abandon(pool: ConnectionPool[Any]) -> None:
    """Leave a pool another process made: never closed (closing a connection sends the server a goodbye on the
    socket the parent shares, which ends the parent's session) and never used. It is marked closed, so its
    finaliser stops no worker thread (the child has none of the parent's threads); psycopg closes no socket of
    a connection collected in a process other than the one that opened it."""
    with contextlib.suppress(Exception):
        pool._closed = True


def _driver(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        raise error(
            "STORE_UNAVAILABLE",
            f"the PostgreSQL store needs {name}: pip install 'plantrail[postgres]'",
            missing=name,
        ) from None


@atexit.register
def _close_pools() -> None:
    """Close this process's pools (at exit); those a parent made are left to the parent."""
    pid = os.getpid()
    with _pools_lock:
        for pooled in _pools.values():
            if pooled.pid != pid:
                _abandon(pooled.pool)
                continue
            with contextlib.suppress(Exception):
                pooled.pool.close(timeout=1.0)
        _pools.clear()


@contextlib.contextmanager
def _faults(location: Location, *, outcome_unknown: bool = False, attempts: _Attempts | None = None) -> Iterator[None]:
    """Map the driver's errors to plantrail's stable codes (the database never leaks a traceback); a pool that
    timed out waiting for a connection says why its last attempt failed (``attempts``)."""
    try:
        yield
    except PlantrailError:
        raise
    except Exception as exc:
        raise _fault(exc, location, outcome_unknown, attempts) from None


def _fault(
    exc: BaseException, location: Location, outcome_unknown: bool, attempts: _Attempts | None = None
) -> PlantrailError:
    psycopg = _driver("psycopg")
    psycopg_pool = _driver("psycopg_pool")
    where = str(location)
    if isinstance(exc, psycopg_pool.PoolTimeout) and attempts is not None and attempts.failure is not None:
        exc = attempts.failure  # the pool waited for a connection it could not make: the database said why
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return error("PERMISSION_DENIED", f"database {where}: {_first_line(exc)}", path=where)
    if isinstance(exc, psycopg.OperationalError | psycopg_pool.PoolTimeout | psycopg.InterfaceError):
        detail = _all_lines(exc)  # a failed connection's reason may be on any line (one per host tried)
        if outcome_unknown:
            return error(
                "STORE_UNAVAILABLE",
                f"database {where}: the connection failed during an append ({detail}); it may or may not have "
                "been written: retry it with the same idempotency key",
                path=where,
                outcome="unknown",
            )
        return error("STORE_UNAVAILABLE", f"database {where} is unavailable: {detail}", path=where)
    return error("IO_ERROR", f"database {where}: {type(exc).__name__}: {_first_line(exc)}", path=where)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _all_lines(exc: BaseException) -> str:
    """The driver's whole message on one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


@contextlib.contextmanager
def _connection(location: Location) -> Iterator[Connection[Any]]:
    """A pooled connection with the schema checked (once per process and database)."""
    pooled = _pool(location)
    with _faults(location, attempts=pooled.attempts), pooled.pool.connection() as conn:
        if location.conninfo not in _schema_checked:
            _ensure_schema(conn, location)
            _schema_checked.add(location.conninfo)
        yield conn


def init_schema(url: str) -> int:
    """Create or upgrade plantrail's tables in the database at ``url`` (idempotent); return the schema version.

    A database whose schema is newer than this plantrail knows is refused (``STORE_SCHEMA_NEWER``).
    """
    location = parse_location(url)
    pooled = _pool(location)
    with _faults(location, attempts=pooled.attempts), pooled.pool.connection() as conn:
        _ensure_schema(conn, location, upgrade=True)
    _schema_checked.add(location.conninfo)
    return SCHEMA_VERSION


def _ensure_schema(conn: Connection[Any], location: Location, *, upgrade: bool = False) -> None:
    """Create the tables, or upgrade an older schema (``upgrade``: also the columns added within v2)."""
    psycopg = _driver("psycopg")
    found = _schema_version(conn)
    if found is not None and found > SCHEMA_VERSION:
        raise error(
            "STORE_SCHEMA_NEWER",
            f"database {location} has plantrail schema v{found}; this plantrail knows v{SCHEMA_VERSION}: upgrade it",
            found=found,
            expected=SCHEMA_VERSION,
        )
    if found == SCHEMA_VERSION and not upgrade:
        return
    for attempt in range(3):  # two processes creating the schema at once: the loser retries and finds it
        try:
            with conn.transaction():
                for statement in (*_SCHEMA, *_SUMMARY_HEAD):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO plantrail_meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (str(SCHEMA_VERSION),),
                )
            return
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable, psycopg.errors.DuplicateObject):
            if attempt == 2:
                raise


def _schema_version(conn: Connection[Any]) -> int | None:
    exists = conn.execute("SELECT to_regclass('plantrail_meta') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute("SELECT value FROM plantrail_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row and str(row[0]).isdigit() else None


# --------------------------------------------------------------------------- the store


class _Head(NamedTuple):
    next_seq: int
    prev: str
    ts: str | None = None  # the last record's time (None until this store has read or written one)


class PostgresStore:
    """One run's log in a PostgreSQL database, opened for appending."""

    def __init__(self, location: Location, header: LogOpened, *, clock: Callable[[], str] = utc_now) -> None:
        assert location.run is not None
        self.location = location
        self._run = location.run
        self._header = header
        self._clock = clock
        self._head = _Head(0, GENESIS_PREV)
        self._thread_lock = ForkSafeLock()  # free in a forked child, whichever thread of the parent held it
        self._faulted = False  # a turn ended in an error: close leaves no summary (the server may be gone)

    # ----------------------------------------------------------- opening

    @classmethod
    def open(cls, url: str, *, run: str | None = None, clock: Callable[[], str] = utc_now) -> PostgresStore:
        """Open run ``run`` (or the URL's fragment) for appending; RUN_NOT_FOUND when the database has none."""
        location = _with_run(parse_location(url, run=run))
        with _connection(location) as conn:
            row = conn.execute(
                "SELECT line FROM plantrail_records WHERE run = %s AND seq = 0", (location.run,)
            ).fetchone()
        if row is None:
            raise error("RUN_NOT_FOUND", f"database {location} holds no run {location.run!r}", run=location.run)
        record = decode(bytes(row[0]), line_no=1)
        if not isinstance(record.data, LogOpened):
            raise error("CORRUPT_LINE", f"run {location.run}: seq 0 is not the log.opened header", line=1)
        return cls(location, record.data, clock=clock)

    @classmethod
    def create(
        cls,
        url: str,
        *,
        run: str | None = None,
        first: Sequence[PendingRecord],
        fsync: FsyncPolicy = "always",
        nonce: str | None = None,
        ts: str | None = None,
        actor: str = "runtime",
        clock: Callable[[], str] = utc_now,
    ) -> tuple[PostgresStore, list[Record]]:
        """Create run ``run`` with its header and ``first`` records in one transaction; LOG_EXISTS if it exists.

        ``fsync`` is recorded in the header as the JSONL store does (a committed transaction is durable).
        """
        import secrets

        psycopg = _driver("psycopg")
        location = _with_run(parse_location(url, run=run))
        assert location.run is not None
        header = LogOpened(
            format=log_format([p.data for p in first]),
            run=location.run,
            nonce=nonce or secrets.token_hex(16),
            fsync=fsync,
            created_by=f"plantrail {__version__}",
        )
        opened = PendingRecord(ts=ts or clock(), plan_version=0, actor=actor, data=header)  # type: ignore[arg-type]
        rows, records = _encode_all([opened, *first], run=location.run, seq=0, prev=GENESIS_PREV)
        with _connection(location) as conn, _faults(location, outcome_unknown=True):
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO plantrail_runs (run) VALUES (%s)", (location.run,))
                    _insert(conn, rows, location.notify)
            except psycopg.errors.UniqueViolation:
                raise error(
                    "LOG_EXISTS", f"run {location.run!r} already exists in {location}; create never overwrites a log"
                ) from None
        store = cls(location, header, clock=clock)
        return store, records

    @property
    def run(self) -> str:
        """The run id."""
        return self._run

    @property
    def target(self) -> str:
        """The run's URL, its password left out."""
        return str(self.location)

    def resume(self) -> Resumed | None:
        """This store keeps no snapshot yet: the ledger folds the run's records."""
        return None

    def checkpoint(self, state: PlanState, keys: Mapping[str, KeyEntry]) -> None:
        """Leave the run's summary for ``plantrail runs`` when it follows from ``state`` and the summary already
        kept (its replan reasons are not in the state); no snapshot is kept. A summary is never required:
        one that is missing or behind the run's head is recomputed from the rows when it is read."""
        head = self._head
        if (
            self._faulted
            or state.last_seq != head.next_seq - 1
            or state.head != head.prev
            or head.ts is None
            or state.run != self._run
        ):
            return
        with contextlib.suppress(PlantrailError), _connection(self.location) as conn, _faults(self.location):
            reasons = _reasons_after(_kept_summary(conn, self._run, state), state)
            if reasons is not None:
                _put_summary(conn, self._run, state, head.ts, reasons)

    def store_payload(self, data: bytes, *, salt: bytes | None = None) -> StoredPayload:
        """Keep ``data`` in the run's payload rows, committed before this returns, for a record appended after it
        to name (see :func:`store_payload`)."""
        return store_payload(self.location, data, salt=salt)

    def session(self) -> _Session:
        """One catch-up, decide and append turn on a pooled connection."""
        return _Session(self)

    def sync(self) -> None:
        """Every committed append is already durable."""

    def close(self) -> None:
        """Release the store (the process's connection pool stays open for other runs)."""


def _with_run(location: Location) -> Location:
    if location.run is None:
        raise error("USAGE", f"name the run: {location}#RUN_ID (or pass run=)")
    from plantrail.ledger.vocabulary.plan import check_id

    check_id(location.run, "run id")
    return location


def _encode_all(
    pending: Sequence[PendingRecord], *, run: str, seq: int, prev: str
) -> tuple[list[tuple[str, int, bytes, str, str | None]], list[Record]]:
    rows: list[tuple[str, int, bytes, str, str | None]] = []
    records: list[Record] = []
    for offset, p in enumerate(pending):
        line, record = encode_pending(p, run=run, seq=seq + offset, prev=prev)
        rows.append((run, record.seq, line[:-1], record.h, record.key))
        records.append(record)
        prev = record.h
    return rows, records


#: One record appended and its wake-up sent in one statement: on a connection in autocommit, one round trip
#: and one transaction (a ``BEGIN``, the insert, the notify and a ``COMMIT`` were four).
_INSERT_ONE_NOTIFY: Final = (
    "WITH added AS (INSERT INTO plantrail_records (run, seq, line, h, key) VALUES (%s, %s, %s, %s, %s) "
    "RETURNING run) SELECT pg_notify(%s, run) FROM added"
)
_INSERT_ONE: Final = "INSERT INTO plantrail_records (run, seq, line, h, key) VALUES (%s, %s, %s, %s, %s)"


def _insert_one(conn: Connection[Any], row: tuple[str, int, bytes, str, str | None], notify: bool) -> None:
    """Insert one record (and notify) as one statement, its own transaction on a connection in autocommit."""
    if notify:
        conn.execute(_INSERT_ONE_NOTIFY, (*row, CHANNEL))
    else:
        conn.execute(_INSERT_ONE, row)


def _insert(conn: Connection[Any], rows: Sequence[tuple[str, int, bytes, str, str | None]], notify: bool) -> None:
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO plantrail_records (run, seq, line, h, key) VALUES (%s, %s, %s, %s, %s)", rows)
        if notify:
            cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, rows[0][0]))


class _Session:
    """One turn (see :class:`plantrail.ledger.stores.protocol.Session`): catch up, stage, commit in one transaction."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self.rewound = False  # a database run is never cut back
        self._rows: list[tuple[str, int, bytes, str, str | None]] = []
        self._last: Record | None = None
        self._conn: Connection[Any] | None = None
        self._context: contextlib.AbstractContextManager[Connection[Any]] | None = None

    def __enter__(self) -> Self:
        self._store._thread_lock.acquire()
        try:
            self._context = _connection(self._store.location)
            self._conn = self._context.__enter__()
        except BaseException:
            self._store._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is not None and not (
                isinstance(exc[1], PlantrailError) and exc[1].exit_code in (1, 2)  # a refusal leaves the server fine
            ):
                self._store._faulted = True
            assert self._context is not None
            self._context.__exit__(*exc)
        finally:
            self._store._thread_lock.release()

    @property
    def head_seq(self) -> int:
        return self._store._head.next_seq - 1

    @property
    def head_hash(self) -> str:
        return self._store._head.prev

    def new_records(self) -> Iterator[Record]:
        store = self._store
        assert self._conn is not None
        head = store._head
        with _faults(store.location):
            for record in _checked(self._conn, store.run, head.next_seq, head.prev):
                store._head = _Head(record.seq + 1, record.h, record.ts)
                yield record

    def record(self, seq: int, hash: str) -> Record | None:
        assert self._conn is not None
        store = self._store
        query = "SELECT line FROM plantrail_records WHERE run = %s AND seq = %s"
        with _faults(store.location):
            row = self._conn.execute(query, (store.run, seq)).fetchone()
        if row is None:
            return None
        try:
            record = decode(bytes(row[0]), seq + 1)
        except LogDamaged:
            return None
        return record if record.seq == seq and record.h == hash else None

    def durable(self, seq: int) -> bool:
        return True  # every committed transaction is durable

    def stage(self, record: PendingRecord) -> Record:
        last = self._last
        head = self._store._head
        seq, prev = (head.next_seq, head.prev) if last is None else (last.seq + 1, last.h)
        line, stored = encode_pending(record, run=self._store.run, seq=seq, prev=prev)
        self._rows.append((self._store.run, seq, line[:-1], stored.h, stored.key))
        self._last = stored
        return stored

    def commit(self) -> bool:
        last, rows = self._last, self._rows
        if last is None:
            return True
        self._rows, self._last = [], None
        store = self._store
        assert self._conn is not None
        psycopg = _driver("psycopg")
        with _faults(store.location, outcome_unknown=True):
            try:
                if len(rows) == 1:  # the common append: one statement, one round trip
                    _insert_one(self._conn, rows[0], store.location.notify)
                else:
                    with self._conn.transaction():
                        _insert(self._conn, rows, store.location.notify)
            except psycopg.errors.UniqueViolation:
                raise error(
                    "WRITE_CONFLICT",
                    f"run {store.run}: another writer appended first at seq {rows[0][1]}; nothing was written",
                    seq=rows[0][1],
                ) from None
        store._head = _Head(last.seq + 1, last.h, last.ts)
        return True


# --------------------------------------------------------------------------- payloads

#: The payload rows: made on the first payload a database keeps, so that a database without payloads keeps the
#: schema version every earlier plantrail reads.
_PAYLOADS: Final = """CREATE TABLE IF NOT EXISTS plantrail_payloads (
        run text NOT NULL,
        digest text NOT NULL,
        salt bytea NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (run, digest))"""
_payloads_made: set[str] = set()


def store_payload(location: Location, data: bytes, *, salt: bytes | None = None) -> StoredPayload:
    """Keep ``data`` for run ``location.run`` (one row keyed by the run and the payload's name, committed before
    this returns) and return its name and size."""
    from plantrail.ledger.stores.payloads import salted

    stored, salt = salted(data, salt)
    psycopg = _driver("psycopg")
    with _connection(location) as conn:
        _require_run(conn, location)
        for attempt in range(3):  # two processes making the table at once: the loser retries and finds it
            try:
                with conn.transaction():
                    if location.conninfo not in _payloads_made:
                        conn.execute(_PAYLOADS)
                    conn.execute(
                        "INSERT INTO plantrail_payloads (run, digest, salt, data) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT (run, digest) DO UPDATE SET salt = EXCLUDED.salt, data = EXCLUDED.data",
                        (location.run, stored.digest, salt, data),
                    )
                break
            except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
                if attempt == 2:
                    raise
        _payloads_made.add(location.conninfo)
    return stored


def read_payload(url: str, digest: str) -> bytes:
    """The bytes of payload ``digest`` of the run ``url`` names, checked against the name (PAYLOAD_MISSING,
    PAYLOAD_ALTERED)."""
    return read_salted(url, digest)[1]


def payload_names(url: str) -> list[str]:
    """The names of the payloads the run ``url`` names keeps, sorted (none before the first payload a database
    keeps makes its table)."""
    location = _with_run(parse_location(url))
    with _connection(location) as conn, _faults(location):
        _require_run(conn, location)
        if location.conninfo not in _payloads_made:
            made = conn.execute("SELECT to_regclass('plantrail_payloads') IS NOT NULL").fetchone()
            if not made or not made[0]:
                return []
        rows = conn.execute(
            "SELECT digest FROM plantrail_payloads WHERE run = %s ORDER BY digest", (location.run,)
        ).fetchall()
    return [row[0] for row in rows]


def read_salted(url: str, digest: str) -> tuple[bytes, bytes]:
    """The salt and the bytes of payload ``digest`` of the run ``url`` names, checked (as :func:`read_payload`)."""
    from plantrail.ledger.stores.payloads import check_digest, check_payload, missing

    check_digest(digest)
    location = _with_run(parse_location(url))
    where = f"database {location}"
    with _connection(location) as conn, _faults(location):
        _require_run(conn, location)
        if location.conninfo not in _payloads_made:
            made = conn.execute("SELECT to_regclass('plantrail_payloads') IS NOT NULL").fetchone()
            if not made or not made[0]:
                raise missing(digest, where)
        row = conn.execute(
            "SELECT salt, data FROM plantrail_payloads WHERE run = %s AND digest = %s", (location.run, digest)
        ).fetchone()
    if row is None:
        raise missing(digest, where)
    salt = bytes(row[0])
    return salt, check_payload(digest, salt, bytes(row[1]), where=where)


# --------------------------------------------------------------------------- reading


def _checked(
    conn: Connection[Any], run: str, next_seq: int, prev: str, last_seq: int | None = None
) -> Iterator[Record]:
    """The run's records from ``next_seq`` on (to ``last_seq``), each decoded and checked to follow the one before."""
    query = "SELECT line FROM plantrail_records WHERE run = %s AND seq >= %s AND seq <= %s ORDER BY seq"
    end = (1 << 63) - 1 if last_seq is None else last_seq
    for (line,) in conn.cursor().stream(query, (run, next_seq, end)):
        record = decode(bytes(line), next_seq + 1)
        if record.seq != next_seq or record.prev != prev or record.run != run or record.type == "log.opened":
            check_link(record, next_seq=next_seq, prev=prev, run=run, line=next_seq + 1)
        next_seq, prev = record.seq + 1, record.h
        yield record


def read_records(url: str, *, run: str | None = None) -> Iterator[Record]:
    """Every record of a run, in order, each checked like a JSONL reader checks a line."""
    location = _with_run(parse_location(url, run=run))
    assert location.run is not None
    with _connection(location) as conn:
        if conn.execute("SELECT 1 FROM plantrail_runs WHERE run = %s", (location.run,)).fetchone() is None:
            raise error("RUN_NOT_FOUND", f"database {location} holds no run {location.run!r}", run=location.run)
        with _faults(location):
            yield from _checked(conn, location.run, 0, GENESIS_PREV)


def read_checked_lines(url: str, *, run: str | None = None) -> Iterator[tuple[Record, bytes]]:
    """Every record of a run with its line exactly as stored (newline added, as in a JSONL file), checked."""
    location = _with_run(parse_location(url, run=run))
    assert location.run is not None
    with _connection(location) as conn, _faults(location):
        if conn.execute("SELECT 1 FROM plantrail_runs WHERE run = %s", (location.run,)).fetchone() is None:
            raise error("RUN_NOT_FOUND", f"database {location} holds no run {location.run!r}", run=location.run)
        next_seq, prev = 0, GENESIS_PREV
        query = "SELECT line FROM plantrail_records WHERE run = %s ORDER BY seq"
        for (raw,) in conn.cursor().stream(query, (location.run,)):
            line = bytes(raw)
            record = decode(line, next_seq + 1)
            check_link(record, next_seq=next_seq, prev=prev, run=location.run, line=next_seq + 1)
            next_seq, prev = record.seq + 1, record.h
            yield record, line + b"\n"


def list_runs(url: str) -> list[str]:
    """The ids of every run in the database, in order."""
    location = parse_location(url)
    with _connection(location) as conn, _faults(location):
        return [row[0] for row in conn.execute("SELECT run FROM plantrail_runs ORDER BY run").fetchall()]


def insert_run(url: str, rows: Sequence[tuple[int, bytes, str, str | None]]) -> None:
    """Insert a whole run's checked lines (seq, line without newline, hash, key) in one transaction;
    LOG_EXISTS when the database has the run already."""
    psycopg = _driver("psycopg")
    location = _with_run(parse_location(url))
    assert location.run is not None
    run = location.run
    with _connection(location) as conn, _faults(location, outcome_unknown=True):
        try:
            with conn.transaction():
                conn.execute("INSERT INTO plantrail_runs (run) VALUES (%s)", (run,))
                _insert(conn, [(run, seq, line, h, key) for seq, line, h, key in rows], location.notify)
        except psycopg.errors.UniqueViolation:
            raise error(
                "LOG_EXISTS", f"run {run!r} already exists in {location}; copy never overwrites a log"
            ) from None


def read_lines(url: str, *, run: str | None = None) -> Iterator[bytes]:
    """A run's canonical lines exactly as stored (each with its newline, as in a JSONL file), unchecked."""
    location = _with_run(parse_location(url, run=run))
    with _connection(location) as conn, _faults(location):
        query = "SELECT line FROM plantrail_records WHERE run = %s ORDER BY seq"
        for (line,) in conn.cursor().stream(query, (location.run,)):
            yield bytes(line) + b"\n"


class GlobalPosition(NamedTuple):
    """Where a follower stands across all runs: the committing transaction's id and the row's identity."""

    tx: int
    gpos: int


def follow(
    url: str,
    *,
    after: GlobalPosition | None = None,
    poll_s: float = 1.0,
    batch: int = 1000,
    stop: Callable[[], bool] | None = None,
) -> Iterator[tuple[GlobalPosition, Record]]:
    """Records of every run in the database in global order, after ``after``, waiting for new ones.

    Only rows whose transaction is older than every transaction still running are read, ordered by
    ``(tx, gpos)``, so a row that commits late is never skipped. A NOTIFY wakes the follower early; without
    one (or with ``notify=off`` in the URL) it polls every ``poll_s`` seconds. ``stop`` ends the wait.
    The records are decoded and checked line by line (their chain is checked by :func:`read_records`).
    """
    location = parse_location(url)
    position = after or GlobalPosition(0, 0)
    query = (
        "SELECT tx::text::bigint, gpos, seq, line FROM plantrail_records "
        "WHERE (tx, gpos) > (%s::text::xid8, %s) AND tx < pg_snapshot_xmin(pg_current_snapshot()) "
        "ORDER BY tx, gpos LIMIT %s"
    )
    with _listening(location) as listener:
        while True:
            with _connection(location) as conn, _faults(location):
                rows = conn.execute(query, (str(position.tx), position.gpos, batch)).fetchall()
            for tx, gpos, seq, line in rows:
                position = GlobalPosition(int(tx), int(gpos))
                yield position, decode(bytes(line), int(seq) + 1)
            if len(rows) == batch:
                continue
            if stop is not None and stop():
                return
            _wait(listener, poll_s, location)


def global_head(url: str) -> GlobalPosition | None:
    """Where a follower across runs stands once it has read every row committed now (None: no row yet): the
    highest ``(tx, gpos)`` below the snapshot's xmin, so :func:`follow` after it reads only what commits later."""
    location = parse_location(url)
    query = (
        "SELECT tx::text::bigint, gpos FROM plantrail_records WHERE tx < pg_snapshot_xmin(pg_current_snapshot()) "
        "ORDER BY tx DESC, gpos DESC LIMIT 1"
    )
    with _connection(location) as conn, _faults(location):
        row = conn.execute(query).fetchone()
    return None if row is None else GlobalPosition(int(row[0]), int(row[1]))


@contextlib.contextmanager
def _listening(location: Location) -> Iterator[Connection[Any] | None]:
    """A connection that LISTENs on the records' channel (None with ``notify=off``: the caller polls), closed
    when the follower ends."""
    listener = None
    pid = os.getpid()
    if location.notify:
        psycopg = _driver("psycopg")
        with _faults(location):
            listener = psycopg.Connection.connect(
                location.conninfo, autocommit=True, connect_timeout=int(location.connect_timeout)
            )
            listener.execute(f"LISTEN {CHANNEL}")
    try:
        yield listener
    finally:
        if listener is not None and os.getpid() == pid:  # a forked child leaves its parent's connection alone
            with contextlib.suppress(Exception):
                listener.close()


def _wait(listener: Connection[Any] | None, poll_s: float, location: Location) -> None:
    if listener is None:
        time.sleep(poll_s)
        return
    with _faults(location):
        for _ in listener.notifies(timeout=poll_s, stop_after=1):
            pass


# --------------------------------------------------------------------------- one run's reads for the commands


def _require_run(conn: Connection[Any], location: Location) -> None:
    if conn.execute("SELECT 1 FROM plantrail_runs WHERE run = %s", (location.run,)).fetchone() is None:
        raise error("RUN_NOT_FOUND", f"database {location} holds no run {location.run!r}", run=location.run)


def _hash_at(conn: Connection[Any], run: str, seq: int) -> str | None:
    """The stored hash of record ``seq`` (GENESIS_PREV before the first); None when the run has no such record."""
    if seq < 0:
        return GENESIS_PREV
    row = conn.execute("SELECT h FROM plantrail_records WHERE run = %s AND seq = %s", (run, seq)).fetchone()
    return None if row is None else str(row[0])


def read_range(url: str, *, from_seq: int = 0, to_seq: int | None = None, run: str | None = None) -> Iterator[Record]:
    """A run's records from ``from_seq`` to ``to_seq`` (both included), in order, each checked to follow the
    one before it (the first against the stored hash of the record before it): the database's counterpart of
    a JSONL reader that starts at a seq."""
    location = _with_run(parse_location(url, run=run))
    assert location.run is not None
    with _connection(location) as conn, _faults(location):
        _require_run(conn, location)
        prev = _hash_at(conn, location.run, from_seq - 1)
        if prev is None:
            return
        yield from _checked(conn, location.run, from_seq, prev, to_seq)


def record_at(url: str, seq: int, *, run: str | None = None) -> Record:
    """Record ``seq`` of a run, its own hash checked; UNKNOWN_SEQ when the run does not reach it."""
    location = _with_run(parse_location(url, run=run))
    with _connection(location) as conn, _faults(location):
        _require_run(conn, location)
        row = conn.execute(
            "SELECT line FROM plantrail_records WHERE run = %s AND seq = %s", (location.run, seq)
        ).fetchone()
    if row is None:
        raise error("UNKNOWN_SEQ", f"seq {seq} is not in the log", seq=seq)
    record = decode(bytes(row[0]), seq + 1)
    if record.seq != seq or record.run != location.run:
        check_link(record, next_seq=seq, prev=record.prev, run=location.run, line=seq + 1)
    return record


def tail_records(
    url: str, count: int, keep: Callable[[Record], bool], *, stop_below: int = 0, run: str | None = None
) -> list[Record]:
    """The last ``count`` records that ``keep`` accepts (in log order), read backwards from the run's head,
    never below seq ``stop_below``; each record read is checked against the one after it."""
    location = _with_run(parse_location(url, run=run))
    assert location.run is not None
    kept: list[Record] = []
    later: Record | None = None
    query = "SELECT line FROM plantrail_records WHERE run = %s AND seq >= %s ORDER BY seq DESC"
    with _connection(location) as conn, _faults(location):
        _require_run(conn, location)
        for (line,) in conn.cursor().stream(query, (location.run, stop_below)):
            record = decode(bytes(line), 0)
            if later is not None and (later.seq != record.seq + 1 or later.prev != record.h):
                check_link(later, next_seq=record.seq + 1, prev=record.h, run=location.run, line=later.seq + 1)
            later = record
            if keep(record):
                kept.append(record)
                if len(kept) == count:
                    break
    kept.reverse()
    return kept


def follow_run(
    url: str,
    *,
    after: int = -1,
    poll_s: float = 1.0,
    stop: Callable[[], bool] | None = None,
    run: str | None = None,
) -> Iterator[list[Record]]:
    """A run's records after seq ``after`` as they are appended, a batch per wake-up, forever (or until
    ``stop()``, asked after each wait). A ``NOTIFY`` wakes the follower at once; without one (or with
    ``notify=off``) it looks again every ``poll_s`` seconds. Each record is checked to follow the one before
    it; UNKNOWN_SEQ when the run does not reach ``after``."""
    location = _with_run(parse_location(url, run=run))
    assert location.run is not None
    with _connection(location) as conn, _faults(location):
        _require_run(conn, location)
        prev = _hash_at(conn, location.run, after)
    if prev is None:
        raise error("UNKNOWN_SEQ", f"seq {after} is not in the log", seq=after)
    return _following(location, after + 1, prev, poll_s, stop)


def _following(
    location: Location, next_seq: int, prev: str, poll_s: float, stop: Callable[[], bool] | None
) -> Iterator[list[Record]]:
    assert location.run is not None
    with _listening(location) as listener:
        while True:
            with _connection(location) as conn, _faults(location):
                fresh = list(_checked(conn, location.run, next_seq, prev, next_seq + _FOLLOW_BATCH - 1))
            if fresh:
                next_seq, prev = fresh[-1].seq + 1, fresh[-1].h
                yield fresh
                continue
            if stop is not None and stop():
                return
            _wait(listener, poll_s, location)


# --------------------------------------------------------------------------- many runs: the summaries


class _Summary(NamedTuple):
    """A run's summary row as stored: what ``plantrail runs`` lists, the head (seq and hash) it was computed at,
    and the digest of those values."""

    seq: int
    head: str
    goal: str | None
    outcome: str | None
    plan_version: int
    last_ts: str | None
    orphans: int
    reasons: tuple[str, ...]
    digest: str

    @classmethod
    def read(cls, run: str, row: Sequence[Any]) -> _Summary | None:
        """The row's ``_SUMMARY_COLUMNS`` when the row is whole and its digest is the digest of its values, else
        None: no row, a row an earlier plantrail left without a head, or one edited since it was written."""
        seq, head, goal, outcome, version, last_ts, orphans, reasons, digest = row
        if seq is None or head is None or digest is None:
            return None
        summary = cls(seq, head, goal, outcome, version, last_ts, orphans, tuple(reasons), digest)
        return summary if digest == _summary_digest(run, *summary[:-1]) else None


#: A summary's columns as :meth:`_Summary.read` takes them (``s.``: the summaries table in a query).
_SUMMARY_COLUMNS: Final = "s.seq, s.head, s.goal, s.outcome, s.plan_version, s.last_ts, s.orphans, s.reasons, s.digest"
#: The same from a summaries table made before the head and digest columns (none of its rows is believed).
_SUMMARY_COLUMNS_BEFORE_HEAD: Final = (
    "s.seq, NULL, s.goal, s.outcome, s.plan_version, s.last_ts, s.orphans, s.reasons, NULL"
)


def _summary_digest(
    run: str,
    seq: int,
    head: str,
    goal: str | None,
    outcome: str | None,
    plan_version: int,
    last_ts: str | None,
    orphans: int,
    reasons: Sequence[str],
) -> str:
    """SHA-256 of a summary's values with the run and the head they were computed at: a row whose values were
    edited afterwards no longer matches it (one who rewrites the row and its digest together is caught only by
    folding the records: ``verify``)."""
    values = [run, seq, head, goal, outcome, plan_version, last_ts, orphans, list(reasons)]
    return hashlib.sha256(json.dumps(values, separators=(",", ":")).encode("ascii")).hexdigest()


def _reasons_after(summary: _Summary | None, state: PlanState) -> list[str] | None:
    """The replan reasons up to ``state``, from the checked ``summary`` kept before it (None when they do not
    follow: more than one version was adopted since, or the summary is from a later point)."""
    if summary is None:
        return [] if state.version <= 1 else None
    if summary.seq > state.last_seq:
        return None
    if summary.plan_version == state.version:
        return list(summary.reasons)
    adopted = state.adopted
    if summary.plan_version == state.version - 1 and adopted is not None and adopted.reason is not None:
        return [*summary.reasons, adopted.reason]
    return None


def _kept_summary(conn: Connection[Any], run: str, state: PlanState) -> _Summary | None:
    """The run's summary when it checks out (its digest) and was computed at a record of the run as it is (its
    head is the stored hash at its seq, at or before ``state``); else None."""
    psycopg = _driver("psycopg")
    try:
        row = conn.execute(f"SELECT {_SUMMARY_COLUMNS} FROM plantrail_summaries s WHERE s.run = %s", (run,)).fetchone()
    except psycopg.errors.UndefinedColumn:  # a table made before the head columns: nothing there is believed
        return None
    summary = _Summary.read(run, row) if row is not None else None
    if summary is None or summary.seq > state.last_seq:
        return None
    head = state.head if summary.seq == state.last_seq else _hash_at(conn, run, summary.seq)
    return summary if head == summary.head else None


def _put_summary(
    conn: Connection[Any],
    run: str,
    state: PlanState,
    last_ts: str,
    reasons: Sequence[str],
    *,
    replace: bool = False,
) -> None:
    """Upsert a run's summary with its head and digest (one transaction), never over one of a later seq (writers
    race to leave theirs) unless ``replace`` (the reader found the row there untrustworthy). A summaries table
    made before the head and digest columns gets them first."""
    psycopg = _driver("psycopg")
    head = state.head or GENESIS_PREV
    values = (run, state.last_seq, head, state.goal, state.outcome, state.version, last_ts, len(state.orphans))
    digest = _summary_digest(*values, reasons)
    upsert = (
        "INSERT INTO plantrail_summaries "
        "(run, seq, head, goal, outcome, plan_version, last_ts, orphans, reasons, digest) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run) DO UPDATE SET seq = EXCLUDED.seq, "
        "head = EXCLUDED.head, goal = EXCLUDED.goal, outcome = EXCLUDED.outcome, "
        "plan_version = EXCLUDED.plan_version, last_ts = EXCLUDED.last_ts, orphans = EXCLUDED.orphans, "
        "reasons = EXCLUDED.reasons, digest = EXCLUDED.digest "
        "WHERE plantrail_summaries.seq < EXCLUDED.seq OR %s"
    )
    parameters = (*values, list(reasons), digest, replace)
    try:
        with conn.transaction():
            conn.execute(upsert, parameters)
    except psycopg.errors.UndefinedColumn:
        with conn.transaction():
            for statement in _SUMMARY_HEAD:
                conn.execute(statement)
            conn.execute(upsert, parameters)


def _recomputed(conn: Connection[Any], where: str, run: str) -> RunRow:
    """A run's summary folded from its rows (each checked), and left for the next reader when it is whole (over
    the row there, which did not check out)."""
    from plantrail.projections.runs import summarise
    from plantrail.projections.state import fold

    reasons: list[str] = []
    last: list[Record] = []

    def noted(records: Iterator[Record]) -> Iterator[Record]:
        for record in records:
            last[:] = [record]
            yield record

    def adopted(state: PlanState) -> None:
        if state.version > 1 and state.adopted is not None and state.adopted.reason is not None:
            reasons.append(state.adopted.reason)

    found: list[LogDamaged] = []
    newer: list[PlantrailError] = []

    def readable(records: Iterator[Record]) -> Iterator[Record]:  # a run a newer plantrail extended is listed too
        try:
            yield from records
        except PlantrailError as exc:
            if exc.code != "FORMAT_TOO_NEW":
                raise
            newer.append(exc)

    state = fold(until_damage(readable(noted(_checked(conn, run, 0, GENESIS_PREV))), found), on_adopt=adopted)
    damage = found[0].code if found else newer[0].code if newer else None
    last_ts = last[0].ts if last else None
    if damage is None and last_ts is not None:
        with contextlib.suppress(Exception):  # a role that may only read still gets its answer
            _put_summary(conn, run, state, last_ts, reasons, replace=True)
    return summarise(state, last_ts, reasons, f"{where}#{run}", damage)


def run_summaries(url: str) -> list[RunRow]:
    """One row per run in the database, from its summary when the summary checks out and was computed at the
    run's last record (its seq and hash; an index lookup per run), else folded from the run's rows (and the
    summary left for next time)."""
    from plantrail.projections.runs import kept_row

    location = parse_location(url)
    if location.run is not None:
        raise error("USAGE", f"runs lists a database's runs: give {location.conninfo} without #{location.run}")
    psycopg = _driver("psycopg")
    query = (
        "SELECT last.seq, last.h, r.run, {} FROM plantrail_runs r "
        "LEFT JOIN plantrail_summaries s ON s.run = r.run "
        "LEFT JOIN LATERAL (SELECT x.seq, x.h FROM plantrail_records x WHERE x.run = r.run "
        "ORDER BY x.seq DESC LIMIT 1) last ON true"
    )
    rows: list[RunRow] = []
    where = _masked(url)  # each row's location names its run as the caller named the database
    with _connection(location) as conn, _faults(location):
        try:
            found = conn.execute(query.format(_SUMMARY_COLUMNS)).fetchall()
        except psycopg.errors.UndefinedColumn:  # a table made before the head columns (added by the next summary)
            found = conn.execute(query.format(_SUMMARY_COLUMNS_BEFORE_HEAD)).fetchall()
        for seq, h, run, *kept in found:
            summary = _Summary.read(run, kept)
            if summary is None or seq is None or summary.seq != seq or summary.head != h:
                rows.append(_recomputed(conn, where, run))
                continue
            rows.append(
                kept_row(
                    run,
                    summary.goal,
                    summary.outcome,
                    summary.plan_version,
                    summary.last_ts,
                    summary.orphans,
                    summary.seq,
                    f"{where}#{run}",
                    summary.reasons,
                )
            )
    return rows
