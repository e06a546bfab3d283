"""The PostgreSQL store's own behaviour on a real server: copies between stores, the schema, the global
order for followers, and faults (a server that is not there, connections cut mid-run, racing processes)."""

from __future__ import annotations

import copy
import multiprocessing
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.canonical import state_hash
from plantrail.projections.state import fold
from tests.conftest import LOGIN_DRAFT, CliResult, Clock
from tests.helpers.stores import PostgresTarget, postgres_url, unique_run

# The driver comes with the test extra; without it these tests skip, except on CI, where they must run.
psycopg = __import__("psycopg") if os.environ.get("CI") == "true" else pytest.importorskip("psycopg")


@pytest.fixture
def url() -> str:
    """The test server."""
    return postgres_url()


@pytest.fixture
def database(url: str) -> Iterator[str]:
    """A fresh, empty database on the test server (dropped afterwards)."""
    name = unique_run("db").replace("-", "_")
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    parts = url.split("?", 1)
    base = parts[0].rsplit("/", 1)[0] + f"/{name}"
    yield base + (f"?{parts[1]}" if len(parts) > 1 else "")
    from plantrail.ledger.stores import postgres

    postgres._close_pools()
    postgres._schema_checked.clear()
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _recorded(location: str, clock: Clock | None = None) -> Ledger:
    ledger = Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none", clock=clock or Clock(), nonce="cd" * 16)
    ledger.start("reproduce")
    ledger.complete("reproduce", ["the 401 reproduces"], idempotency_key="done-1")
    ledger.close()
    return ledger


def _expect(code: str, action: Any) -> PlantrailError:
    with pytest.raises(PlantrailError) as caught:
        action()
    assert caught.value.code == code, caught.value
    return caught.value


# --------------------------------------------------------------------------- copy


def test_a_run_copied_to_the_database_and_back_is_byte_identical(tmp_path: Path, database: str) -> None:
    """JSONL -> PostgreSQL -> JSONL keeps every byte; both copies verify with the source's head and state hash."""
    from plantrail.ledger.stores.copy import copy_runs

    source = tmp_path / "run.jsonl"
    _recorded(str(source))
    _expect("USAGE", lambda: copy_runs(str(source), f"{database}#another-id"))  # the run id is in every line
    [there] = copy_runs(str(source), f"{database}#run")
    assert there.destination.endswith("#run")
    url = database
    back = tmp_path / "back.jsonl"
    [home] = copy_runs(there.destination, str(back))
    assert back.read_bytes() == source.read_bytes()
    assert PostgresTarget(url).lines(there.destination) == source.read_bytes()
    original = verify_log(source)
    assert (verify_log(back).head_hash, verify_log(back).state_hash) == (original.head_hash, original.state_hash)
    assert home.head == there.head == original.head_hash


def test_copy_skips_a_run_copied_already_and_refuses_one_that_differs(tmp_path: Path, database: str) -> None:
    """A destination run that holds the same records up to the same head is skipped (the copy is resumable); one
    that differs is refused LOG_EXISTS, file or database, and is left as it was."""
    from plantrail.ledger.stores.copy import copy_runs

    source = tmp_path / "run.jsonl"
    _recorded(str(source))
    copy_runs(str(source), database)
    before = PostgresTarget(database).lines(f"{database}#run")
    [again] = copy_runs(str(source), database)
    assert (again.status, again.records) == ("skipped", len(source.read_bytes().splitlines()))
    other_run = tmp_path / "other" / "run.jsonl"
    other_run.parent.mkdir()
    _recorded(str(other_run))
    with Ledger.open(str(other_run), fsync="none") as longer:
        longer.start("diagnose")  # the same run id, another history
    _expect("LOG_EXISTS", lambda: copy_runs(str(other_run), database))
    assert PostgresTarget(database).lines(f"{database}#run") == before
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"not mine")
    _expect("LOG_EXISTS", lambda: copy_runs(str(source), str(other)))
    assert other.read_bytes() == b"not mine"


def test_a_torn_source_copies_nothing(tmp_path: Path, database: str) -> None:
    """A source with a torn tail is refused TORN_TAIL and the database gets no run."""
    from plantrail.ledger.stores.copy import copy_runs
    from plantrail.ledger.stores.postgres import list_runs

    source = tmp_path / "run.jsonl"
    _recorded(str(source))
    with source.open("ab") as f:
        f.write(b'{"v":1,"seq":')
    _expect("TORN_TAIL", lambda: copy_runs(str(source), database))
    assert list_runs(database) == []


def test_a_folder_copies_to_a_database_and_back(tmp_path: Path, database: str) -> None:
    """Every *.jsonl of a folder goes into the database under its run id, and comes back file for file."""
    from plantrail.ledger.stores.copy import copy_runs
    from plantrail.ledger.stores.postgres import list_runs

    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("alpha", "beta", "gamma"):
        _recorded(str(folder / f"{name}.jsonl"))
    assert len(copy_runs(str(folder), database)) == 3
    assert list_runs(database) == ["alpha", "beta", "gamma"]
    out = tmp_path / "out"
    copy_runs(database, str(out))
    for name in ("alpha", "beta", "gamma"):
        assert (out / f"{name}.jsonl").read_bytes() == (folder / f"{name}.jsonl").read_bytes()


def test_the_copy_command_reports_each_run(
    tmp_path: Path, database: str, run_cli: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """`plantrail copy SRC DST --json` lists each run with its records, head and a pasteable anchor."""
    source = tmp_path / "run.jsonl"
    ledger = _recorded(str(source))
    result: CliResult = run_cli("copy", source, database, "--json")
    assert result.code == 0, result.err
    [run] = result.json()["runs"]
    assert (run["records"], run["head"]) == (ledger.state.last_seq + 1, ledger.state.head)
    assert run["anchor"] == f"{ledger.state.last_seq}:{ledger.state.head}"
    again = run_cli("copy", source, database, "--json")
    assert again.code == 0, again.err
    assert [(r["status"], r["head"]) for r in again.json()["runs"]] == [("skipped", ledger.state.head)]


def test_copy_into_the_store_the_environment_names(
    tmp_path: Path, database: str, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PLANTRAIL_STORE naming a database, `copy run.jsonl run` copies into that database's run (no file
    named run is written), and `copy run copy.jsonl` reads it back."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANTRAIL_STORE", database)
    _recorded(str(tmp_path / "run.jsonl"))
    result: CliResult = run_cli("copy", "run.jsonl", "run")
    assert result.code == 0, result.err
    assert not (tmp_path / "run").exists()
    assert PostgresTarget(database).lines(f"{database}#run") == (tmp_path / "run.jsonl").read_bytes()
    assert run_cli("copy", "run", "copy.jsonl").code == 0
    assert (tmp_path / "copy.jsonl").read_bytes() == (tmp_path / "run.jsonl").read_bytes()


# --------------------------------------------------------------------------- schema


def test_store_init_is_idempotent_and_refuses_a_newer_schema(database: str, run_cli: Any) -> None:
    """`store init` twice is fine; a database whose schema is newer than this plantrail is refused."""
    from plantrail.ledger.stores import postgres

    assert run_cli("store", "init", database).code == 0
    result = run_cli("store", "init", database, "--json")
    assert result.code == 0 and result.json()["schema_version"] == postgres.SCHEMA_VERSION
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("UPDATE plantrail_meta SET value = '99' WHERE key = 'schema_version'")
    postgres._schema_checked.clear()
    newer = run_cli("store", "init", database)
    assert newer.code == 4 and "error[STORE_SCHEMA_NEWER]" in newer.err
    _expect("STORE_SCHEMA_NEWER", lambda: Ledger.create(f"{database}#x", copy.deepcopy(LOGIN_DRAFT)))


# --------------------------------------------------------------------------- the global order


@pytest.mark.parametrize("notify", ["on", "off"])
def test_followers_never_skip_a_row_that_commits_late(database: str, notify: str) -> None:
    """A row whose transaction began first but commits last is read, and in (tx, gpos) order, not skipped,
    whether NOTIFY wakes the follower or it polls (``notify=off``, as on engines without LISTEN/NOTIFY)."""
    from plantrail.ledger.stores.chain import encode_pending
    from plantrail.ledger.stores.postgres import follow
    from plantrail.ledger.stores.protocol import PendingRecord
    from plantrail.ledger.vocabulary.events import RunFinished

    slow, fast = f"{database}#slow", f"{database}#fast"
    for location in (slow, fast):
        Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    with Ledger.open(slow) as ledger:
        state = ledger.state
    line, _ = encode_pending(
        PendingRecord("2026-01-01T00:00:00Z", 1, "runtime", RunFinished(outcome="paused", reason="late")),
        run="slow",
        seq=state.last_seq + 1,
        prev=state.head or "",
    )
    late = psycopg.connect(database)  # a transaction that takes its id first and commits last
    late.execute("SELECT pg_current_xact_id()")
    late.execute(
        "INSERT INTO plantrail_records (run, seq, line, h, key) VALUES (%s, %s, %s, %s, NULL)",
        ("slow", state.last_seq + 1, line[:-1], line[-67:-3].decode()),
    )
    with Ledger.open(fast) as ledger:
        early = ("fast", ledger.finish("paused", "early").seq)
    seen: list[tuple[str, int]] = []
    stop = threading.Event()

    def read() -> None:
        joined = "&" if "?" in database else "?"
        for _, record in follow(f"{database}{joined}notify={notify}", poll_s=0.05, stop=stop.is_set):
            seen.append((record.run, record.seq))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        threading.Event().wait(0.5)
        assert early not in seen  # held back: an older transaction is still open
        late.commit()
        for _ in range(100):
            if early in seen:
                break
            threading.Event().wait(0.05)
    finally:
        stop.set()
        reader.join(timeout=5)
        late.close()
    assert ("slow", state.last_seq + 1) in seen and early in seen
    assert seen.index(("slow", state.last_seq + 1)) < seen.index(early)
    assert len(seen) == len(set(seen)) == 2 * (state.last_seq + 1) + 2


# --------------------------------------------------------------------------- faults


def test_a_server_that_is_not_there_is_store_unavailable(run_cli: Any) -> None:
    """No server at the URL: STORE_UNAVAILABLE (exit 4) from the library and the CLI, no traceback."""
    url = "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1"
    _expect("STORE_UNAVAILABLE", lambda: Ledger.create(f"{url}#r", copy.deepcopy(LOGIN_DRAFT)))
    result = run_cli("store", "init", url)
    assert result.code == 4 and result.err.startswith("error[STORE_UNAVAILABLE]")
    assert "Traceback" not in result.err


@pytest.fixture
def password_role(url: str) -> Iterator[str]:
    """A role whose password the test server checks (a rule for it alone put first in the server's pg_hba.conf,
    taken out again afterwards): the role's name; its password is ``right``."""
    from psycopg import sql

    role = unique_run("pw").replace("-", "_")
    with psycopg.connect(url, autocommit=True) as admin:
        hba = admin.execute("SHOW hba_file").fetchone()[0]
        before = admin.execute("SELECT pg_read_file(%s)", (hba,)).fetchone()[0]
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'right'").format(sql.Identifier(role)))
        rules = [f"{kind} all {role} {where} scram-sha-256" for kind, where in _PASSWORD_RULES]
        _write_server_file(admin, hba, [*rules, *before.splitlines()])
        try:
            admin.execute("SELECT pg_reload_conf()")
            _until_refused(_as_role(url, role, "wrong"))
            yield role
        finally:
            _write_server_file(admin, hba, before.splitlines())
            admin.execute("SELECT pg_reload_conf()")
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


_PASSWORD_RULES = (("local", ""), ("host", "0.0.0.0/0"), ("host", "::/0"))


def _as_role(url: str, role: str, password: str) -> str:
    """``url`` (``postgresql://user[:password]@host/db?…``, the host possibly empty for a socket) as ``role``
    with ``password``."""
    scheme, rest = url.split("://", 1)
    _, at, after = rest.partition("@")
    return f"{scheme}://{role}:{password}@{after if at else rest}"


def _write_server_file(admin: Any, path: str, lines: list[str]) -> None:
    """Write ``lines`` to a file of the server's (as the server's own user), each as it is."""
    from psycopg import sql

    kept = [line for line in lines if line.strip()]  # (CSV would quote an empty line)
    admin.execute(
        sql.SQL("COPY (SELECT unnest({}::text[])) TO {} WITH (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02')").format(
            sql.Literal(kept), sql.Literal(path)
        )
    )


def _until_refused(url: str) -> None:
    """Wait until the server has read its new rules (a reload is asynchronous): a wrong password is refused."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            psycopg.connect(url, connect_timeout=5).close()
        except psycopg.OperationalError:
            return
        time.sleep(0.05)
    pytest.fail("the server did not start checking the password")


def _free_port() -> int:
    """A local TCP port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("cause", ["no such database", "wrong password", "nothing listening"])
def test_a_database_that_cannot_be_reached_says_why_at_once(url: str, cause: str, request: Any) -> None:
    """A connection the server refuses, or that nothing answers, is STORE_UNAVAILABLE with the database's own
    reason, at once rather than after the connect timeout (10 s here)."""
    import time

    if cause == "no such database":
        where, reason = url.replace("/postgres?", "/no_such_db?", 1), 'database "no_such_db" does not exist'
    elif cause == "wrong password":
        role = request.getfixturevalue("password_role")
        where, reason = _as_role(url, role, "wrong"), "password authentication failed"
    else:
        where, reason = f"postgresql://postgres@127.0.0.1:{_free_port()}/postgres", "Connection refused"
    started = time.monotonic()
    failure = _expect("STORE_UNAVAILABLE", lambda: Ledger.open(f"{where}#{unique_run()}"))
    elapsed = time.monotonic() - started
    assert reason in failure.message, failure.message
    assert "wrong" not in failure.message  # the password is never shown
    assert elapsed < 5, f"{elapsed:.1f} s"


def test_a_server_that_never_answers_is_reported_within_the_connect_timeout() -> None:
    """A server that takes the connection and never answers: STORE_UNAVAILABLE saying the connect timed out,
    after about the URL's connect_timeout (not the pool's own wait, which said only that it was incomplete)."""
    import socket
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nothing ever reads or answers
        where = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/postgres?connect_timeout=2"
        started = time.monotonic()
        failure = _expect("STORE_UNAVAILABLE", lambda: Ledger.open(f"{where}#{unique_run()}"))
        elapsed = time.monotonic() - started
    assert "timeout expired" in failure.message.partition(" is unavailable: ")[2], failure.message
    assert 1.5 < elapsed < 5, f"{elapsed:.1f} s"


def _append_and_report(location: str, conn: Any) -> None:
    """In a forked child: open the run, start a step, send the ack back."""
    with Ledger.open(location) as ledger:
        ack = ledger.start("reproduce")
    conn.send((ack.seq, ack.hash))
    conn.close()


def test_a_fork_while_a_thread_opens_a_pool_leaves_the_child_free(url: str) -> None:
    """A child forked while another thread of the parent waits on a server that does not answer (holding the
    lock over the process's pools) opens its own pool and appends; the waiting thread gets STORE_UNAVAILABLE."""
    import select
    import socket

    location = f"{url}#{unique_run()}"
    Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    failures: list[PlantrailError] = []
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        where = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/postgres?connect_timeout=3"

        def wait_on_silence() -> None:
            try:
                Ledger.open(f"{where}#{unique_run()}")
            except PlantrailError as exc:
                failures.append(exc)

        waiting = threading.Thread(target=wait_on_silence, daemon=True)
        waiting.start()
        assert select.select([silent], [], [], 10)[0], "the thread never connected"  # it is opening its pool now
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_append_and_report, args=(location, send), daemon=True)
        child.start()
        try:
            assert receive.poll(60), "the child hung"
            seq, h = receive.recv()
            child.join(10)
            assert not child.is_alive() and child.exitcode == 0
        finally:
            if child.is_alive():
                child.kill()
        waiting.join(30)
        assert not waiting.is_alive()
    assert [f.code for f in failures] == ["STORE_UNAVAILABLE"]
    assert (seq, h) in {(r.seq, r.h) for r in PostgresTarget(url).records(location)}


def _close_pools_and_exit(conn: Any) -> None:
    """In a forked child: close the process's pools, as the interpreter's exit does."""
    from plantrail.ledger.stores import postgres

    postgres._close_pools()
    conn.send("closed")
    conn.close()


def test_a_child_closing_its_pools_leaves_the_parents_sessions(url: str) -> None:
    """A forked child's exit closes only the pools it made: the parent's connections (and their server sessions)
    are untouched, and the parent appends on through them."""
    location = f"{url}#{unique_run()}"
    with Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        ledger.start("reproduce")
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_close_pools_and_exit, args=(send,), daemon=True)
        child.start()
        assert receive.poll(60) and receive.recv() == "closed"
        child.join(10)
        assert child.exitcode == 0
        ack = ledger.complete("reproduce", ["the parent's session survived its child's exit"])
    assert PostgresTarget(url).records(location)[-1].h == ack.hash


def test_an_unknown_run_and_bad_urls_have_codes(url: str) -> None:
    """A missing run is RUN_NOT_FOUND; a URL without a run or with a bad option is USAGE."""
    _expect("RUN_NOT_FOUND", lambda: Ledger.open(f"{url}#{unique_run('none')}"))
    _expect("USAGE", lambda: Ledger.open(url))
    _expect("USAGE", lambda: Ledger.open(f"{url}&pool_size=zero#r" if "?" in url else f"{url}?pool_size=zero#r"))
    _expect("INVALID_ID", lambda: Ledger.open(f"{url}#../escape"))


def test_connections_cut_mid_run_lose_and_duplicate_nothing(url: str) -> None:
    """pg_terminate_backend on every plantrail connection: the next call reports or succeeds; a retry with
    its key writes the event exactly once."""
    location = f"{url}#{unique_run()}"
    ledger = Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none")
    ledger.start("reproduce", idempotency_key="start")
    with psycopg.connect(url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()"
        ).fetchall()
    assert any(row[0] for row in killed)
    outcomes = []
    for _ in range(3):
        try:
            ledger.complete("reproduce", ["survived a cut connection"], idempotency_key="done")
            outcomes.append("ok")
            break
        except PlantrailError as exc:
            assert exc.code == "STORE_UNAVAILABLE", exc
            outcomes.append(exc.code)
    assert outcomes[-1] == "ok"
    records = PostgresTarget(url).records(location)
    assert [r.key for r in records].count("done") == 1
    assert state_hash(fold(records)) == state_hash(ledger.refresh())
    ledger.close()


def _append_many(location: str, count: int, queue: Any) -> None:
    """In a child process: pause the run ``count`` times (no expected seq), reporting each ack. Under heavy
    contention the ledger's bounded re-decides can run out (WRITE_CONFLICT, nothing written): the child then
    retries with the same idempotency key, as a runtime would, which can never write the event twice."""
    with Ledger.open(location, fsync="none") as ledger:
        for i in range(count):
            while True:
                try:
                    ack = ledger.finish("paused", f"pause {os.getpid()} {i}", idempotency_key=f"{os.getpid()}-{i}")
                    break
                except PlantrailError as exc:
                    if exc.code != "WRITE_CONFLICT":
                        raise
            queue.put((ack.seq, ack.hash))


@pytest.mark.slow
@pytest.mark.parametrize("runs", [1, 8])
def test_processes_appending_at_once_lose_nothing(url: str, full: bool, runs: int, figures: Any) -> None:
    """8 processes x N appends (500 with --full) to one run and to 8 runs: exact counts, no duplicates,
    contiguous seqs, every ack in the table."""
    count = 500 if full else 40
    locations = [f"{url}#{unique_run('race')}" for _ in range(runs)]
    for location in locations:
        Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_append_many, args=(locations[i % runs], count, queue)) for i in range(8)]
    for worker in workers:
        worker.start()
    acks = [queue.get(timeout=120) for _ in range(8 * count)]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    stored = {}
    for location in locations:
        records = PostgresTarget(url).records(location)
        assert [r.seq for r in records] == list(range(len(records)))
        stored.update({(r.seq, r.h): r for r in records if r.type == "run.finished"})
    assert len(stored) == 8 * count and set(acks) <= set(stored)
    figures(f"postgres race: 8 processes x {count} appends into {runs} run(s): {len(acks)} acked, all stored once")


@pytest.mark.slow
def test_writers_killed_mid_transaction_lose_no_acknowledged_event(url: str, full: bool, figures: Any) -> None:
    """kill -9 of writers at random moments (inside transactions too): every event they were acknowledged is
    stored, the run's chain is intact, and the survivors' appends go on."""
    import random
    import signal
    import time

    trials = 20 if full else 4
    location = f"{url}#{unique_run('kill')}"
    Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    context = multiprocessing.get_context("spawn")
    acked: list[tuple[int, str]] = []
    for _ in range(trials):
        queue = context.Queue()
        workers = [context.Process(target=_append_many, args=(location, 10_000, queue)) for _ in range(3)]
        for worker in workers:
            worker.start()
        acked.extend(queue.get(timeout=120) for _ in range(3))  # all three are appending by now, or close
        time.sleep(random.uniform(0.05, 0.5))
        for worker in workers:
            os.kill(worker.pid or 0, signal.SIGKILL)
        for worker in workers:
            worker.join(timeout=30)
        while True:
            try:
                acked.append(queue.get(timeout=0.5))
            except Exception:
                break
    records = PostgresTarget(url).records(location)  # read back checked: seq, hash and chain
    stored = {(r.seq, r.h) for r in records}
    assert acked and set(acked) <= stored
    figures(f"postgres kill -9: {trials} trials x 3 writers, {len(acked)} acked events, 0 lost")


def test_a_database_store_follows_every_run_in_commit_order(database: str) -> None:
    """A database is a store that follows all its runs (FollowsAll): the records of two runs come in the order
    they were committed, and a follower resumes after the position it was given; a runs folder offers no such
    order."""
    from plantrail.ledger.stores.opener import open_store
    from plantrail.ledger.stores.protocol import FollowsAll

    store = open_store(database)
    assert isinstance(store, FollowsAll) and not isinstance(open_store("."), FollowsAll)
    first, second = store.run("first").location, store.run("second").location
    Ledger.create(first, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    Ledger.create(second, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    with Ledger.open(first) as ledger:
        ledger.start("reproduce")
    seen = list(store.follow(poll=0.05, stop=lambda: True))
    assert [(r.run, r.seq) for _, r in seen] == [("first", 0), ("first", 1), ("second", 0), ("second", 1), ("first", 2)]
    after = [(r.run, r.seq) for _, r in store.follow(after=seen[2][0], poll=0.05, stop=lambda: True)]
    assert after == [("second", 1), ("first", 2)]
