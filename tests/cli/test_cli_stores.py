"""Every command on a run named by its id in a store (``--store URL`` or ``PLANTRAIL_STORE``): the same
command sequence against a runs folder and a PostgreSQL database prints the same ``--json`` documents, except
what only one store has (timestamps, hashes, the JSONL snapshot); file-only commands refuse a database run."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.helpers.stores import fresh_database, postgres_url, unique_run

psycopg = __import__("psycopg") if os.environ.get("CI") == "true" else pytest.importorskip("psycopg")

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
_HASH = re.compile(r"\b[0-9a-f]{64}\b")
_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
#: What only one store has: JSONL's snapshot and the bytes and times of records written at different moments.
_STORE_SPECIFIC = frozenset({"snapshot_seq", "state_hash", "duration_s", "elapsed_s"})


def _same(value: Any) -> Any:
    """``value`` with what differs between two runs of one command sequence (hashes, times) made equal."""
    if isinstance(value, dict):
        return {k: "<store>" if k in _STORE_SPECIFIC else _same(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_same(v) for v in value]
    if isinstance(value, str):
        return _TS.sub("<ts>", _HASH.sub("<hash>", value))
    return value


#: The command sequence, read and write commands interleaved; {plan} etc. name sample files.
SEQUENCE: tuple[tuple[str, ...], ...] = (
    ("create", "{run}", "--plan", "{plan}"),
    ("extend", "{run}", "{extra}"),
    ("versions", "{run}"),
    ("start", "{run}", "reproduce"),
    ("complete", "{run}", "reproduce", "--evidence", "the 401 reproduces", "--idempotency-key", "r-1"),
    ("complete", "{run}", "reproduce", "--evidence", "the 401 reproduces", "--idempotency-key", "r-1"),
    ("start", "{run}", "diagnose"),
    ("fail", "{run}", "diagnose", "--error", "the trace was cut off"),
    ("replan", "{run}", "--reason", "new_constraint", "--why", "the session store moved", "--plan", "{v2}"),
    ("status", "{run}"),
    ("status", "{run}", "--attempts"),
    ("next", "{run}"),
    ("log", "{run}"),
    ("log", "{run}", "--tail", "3"),
    ("log", "{run}", "--from-seq", "2", "--type", "step.started"),
    ("show", "{run}", "3"),
    ("verify", "{run}"),
    ("versions", "{run}"),
    ("replay", "{run}", "--version", "1"),
    ("replay", "{run}", "--at-seq", "3"),
    ("diff", "{run}", "1", "2"),
    ("why", "{run}"),
    ("orphans", "{run}"),
    ("resume", "{run}"),
    ("graph", "{run}"),
    ("criterion", "{run}", "login-test-passes", "--failed", "--evidence", "still 401"),
    ("finish", "{run}", "--outcome", "paused", "--reason", "waiting for the session store"),
    ("status", "{run}"),
)


#: A step added in place to the untouched first version (``plantrail extend``).
EXTRA = {"steps": [{"id": "write-notes", "title": "Write the notes", "completion_evidence": "notes saved"}]}


def _arguments(step: tuple[str, ...], run: str, extra: Path) -> list[str]:
    files = {
        "run": run,
        "extra": str(extra),
        "plan": str(SAMPLES / "login-fix.draft.json"),
        "v2": str(SAMPLES / "login-fix-replans.v2.draft.json"),
    }
    return [part.format(**files) for part in step]


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh database on the test server (dropped afterwards)."""
    yield from fresh_database(postgres_url())


def _documents(run_cli: Callable[..., CliResult], store: str, run: str, extra: Path) -> list[tuple[int, Any]]:
    found = []
    for step in SEQUENCE:
        result = run_cli(*_arguments(step, run, extra), "--store", store, "--json")
        assert result.code in (0, 12), (step, result.err)
        found.append((result.code, _same(result.json())))
    return found


def test_the_same_commands_print_the_same_documents_in_a_folder_and_a_database(
    tmp_path: Path, database: str, run_cli: Callable[..., CliResult]
) -> None:
    """Every read and write command, run by id with --store on a runs folder and on a database, gives equal
    --json documents apart from hashes, times and the JSONL snapshot."""
    run = "login-fix"
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(EXTRA))
    in_folder = _documents(run_cli, str(tmp_path), run, extra)
    in_database = _documents(run_cli, database, run, extra)
    assert in_folder[2][1]["versions"][0]["extended"], "the extension is part of version 1"
    for step, (file_side, database_side) in zip(SEQUENCE, zip(in_folder, in_database, strict=True), strict=True):
        assert file_side == database_side, step
    from plantrail.ledger.stores.postgres import read_records

    folder_status = run_cli("status", run, "--store", tmp_path, "--json").json()
    database_status = run_cli("status", run, "--store", database, "--json").json()
    assert folder_status["snapshot_seq"] is not None and database_status["snapshot_seq"] is None
    assert len(list(read_records(f"{database}#{run}"))) == database_status["last_seq"] + 1 == 10
    assert (tmp_path / f"{run}.jsonl").stat().st_size > 0


def test_the_store_comes_from_the_environment_and_a_url_names_its_run(
    database: str, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PLANTRAIL_STORE chooses the store when --store is not given, and postgresql://…/db#RUN as LOG works
    without either."""
    monkeypatch.setenv("PLANTRAIL_STORE", database)
    assert run_cli("create", "env-run", "--plan", SAMPLES / "login-fix.draft.json").code == 0
    assert run_cli("start", "env-run", "reproduce").code == 0
    monkeypatch.delenv("PLANTRAIL_STORE")
    status = run_cli("status", f"{database}#env-run", "--json")
    assert status.code == 0, status.err
    doc = status.json()
    assert (doc["run"], doc["last_seq"], doc["snapshot_seq"], doc["torn_tail"]) == ("env-run", 2, None, False)
    assert [s["status"] for s in doc["steps"]][:1] == ["in_progress"]


def test_a_database_run_refuses_what_only_a_file_means(database: str, run_cli: Callable[..., CliResult]) -> None:
    """repair and salvage on a database run are FILE_STORE_ONLY (a usage error), and nothing is written."""
    assert run_cli("create", "r", "--plan", SAMPLES / "login-fix.draft.json", "--store", database).code == 0
    for command in ("repair", "salvage"):
        result = run_cli(command, "r", "--store", database, "--json")
        assert result.code == 2 and "error[FILE_STORE_ONLY]" in result.err, result.err
        assert result.json()["error"]["code"] == "FILE_STORE_ONLY"
    assert run_cli("log", "r", "--store", database, "--json").json()[-1]["seq"] == 1


def test_unknown_runs_bad_ids_and_a_missing_server_have_codes(database: str, run_cli: Callable[..., CliResult]) -> None:
    """An unknown run id is RUN_NOT_FOUND (exit 4), a run id that is no id INVALID_ID, a store URL naming a
    run USAGE, and a server that is not there STORE_UNAVAILABLE (exit 4), for reads and writes alike."""
    for command in (("status", "nope"), ("start", "nope", "reproduce"), ("log", "nope"), ("verify", "nope")):
        result = run_cli(*command, "--store", database)
        assert result.code == 4 and "error[RUN_NOT_FOUND]" in result.err, (command, result.err)
    bad = run_cli("status", "a:b/../c", "--store", database)
    assert bad.code == 1 or bad.code == 4, bad.err  # a path separator: read as the path it is
    invalid = run_cli("status", "bad id", "--store", database)
    assert invalid.code == 1 and "error[INVALID_ID]" in invalid.err
    named = run_cli("status", "r", "--store", f"{database}#r")
    assert named.code == 2 and "error[USAGE]" in named.err
    gone = run_cli("status", "r", "--store", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")
    assert gone.code == 4 and gone.err.startswith("error[STORE_UNAVAILABLE]") and gone.err.count("\n") == 1


def test_a_run_id_without_a_store_is_found_in_the_runs_folder(
    tmp_path: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no store, a bare run id that names no file resolves to $PLANTRAIL_HOME/runs/<id>.jsonl."""
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    monkeypatch.setenv("PLANTRAIL_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "runs").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "home" / "runs" / "kept.jsonl"
    assert run_cli("create", log, "--plan", SAMPLES / "login-fix.draft.json").code == 0
    result = run_cli("status", "kept", "--json")
    assert result.code == 0, result.err
    assert result.json()["run"] == "kept"
    missing = run_cli("status", "absent")
    assert missing.code == 4 and "error[LOG_NOT_FOUND]" in missing.err


@pytest.mark.parametrize("notify", ["on", "off"])
def test_log_follow_on_a_database_run_prints_appends_as_they_commit(
    database: str, notify: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """log --follow --jsonl on a database run prints the records appended after it started, filtered by
    --type, whether NOTIFY wakes it or polling finds them."""
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.timeline import Filter, following

    url = f"{database}{'&' if '?' in database else '?'}notify={notify}"
    with Ledger.create(f"{url}#f", _draft()) as ledger:
        ledger.start("reproduce")
    seen: list[int] = []

    def append() -> None:
        time.sleep(0.3)
        with Ledger.open(f"{url}#f") as writer:
            writer.complete("reproduce", "the 401 reproduces")
            writer.start("diagnose")

    writer = threading.Thread(target=append)
    writer.start()
    started = time.monotonic()
    for record, _ in following(f"{url}#f", 2, Filter(types=frozenset({"step.started"}))):
        seen.append(record.seq)
        break
    writer.join()
    assert seen == [4]
    assert time.monotonic() - started < 10


def test_watch_on_a_database_run_prints_each_new_event(database: str) -> None:
    """watch on a database run prints the first frame, then a line per event another writer appends."""
    import io

    from plantrail.cli.watching import follow
    from plantrail.ledger.api import Ledger

    with Ledger.create(f"{database}#w", _draft()):
        pass
    out = io.StringIO()
    deadline = time.monotonic() + 10

    def append() -> None:
        time.sleep(0.3)
        with Ledger.open(f"{database}#w") as writer:
            writer.start("reproduce")

    writer = threading.Thread(target=append)
    writer.start()
    follow(
        f"{database}#w",
        out,
        interval=0.05,
        until=lambda: "step.started reproduce" in out.getvalue() or time.monotonic() > deadline,
    )
    writer.join()
    assert "recent events" in out.getvalue()
    assert "seq 2" in out.getvalue() and "step.started reproduce" in out.getvalue()


def _draft() -> dict[str, Any]:
    import orjson

    loaded: dict[str, Any] = orjson.loads((SAMPLES / "login-fix.draft.json").read_bytes())
    return loaded


def test_log_follow_on_a_database_run_ends_cleanly_on_ctrl_c(database: str) -> None:
    """`plantrail log RUN --store URL --follow --jsonl --type step.started` prints the kept records already
    there and those another writer appends, and exits 0 on SIGINT with no traceback."""
    import signal
    import subprocess
    import sys

    import orjson

    from plantrail.ledger.api import Ledger

    with Ledger.create(f"{database}#c", _draft()) as ledger:
        ledger.start("reproduce")
    argv = [sys.executable, "-m", "plantrail.cli.main", "log", "c", "--store", database, "--follow", "--jsonl"]
    follower = subprocess.Popen(
        [*argv, "--type", "step.started"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert follower.stdout is not None
        first = orjson.loads(follower.stdout.readline())
        with Ledger.open(f"{database}#c") as writer:
            writer.complete("reproduce", "the 401 reproduces")
            writer.start("diagnose")
        second = orjson.loads(follower.stdout.readline())
    finally:
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=30)
    assert (first["seq"], first["data"]["step"]) == (2, "reproduce")
    assert (second["seq"], second["data"]["step"]) == (4, "diagnose")
    assert follower.returncode == 0, err
    assert "Traceback" not in err and out == ""


def test_a_role_without_privileges_is_permission_denied(database: str, run_cli: Callable[..., CliResult]) -> None:
    """A database role that may not read plantrail's tables gets PERMISSION_DENIED (exit 4), not a traceback."""
    import urllib.parse

    assert run_cli("create", "p", "--plan", SAMPLES / "login-fix.draft.json", "--store", database).code == 0
    role = unique_run("ro").replace("-", "_")
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    try:
        parts = urllib.parse.urlsplit(database)
        host = parts.netloc.rsplit("@", 1)[-1]
        as_role = urllib.parse.urlunsplit(parts._replace(netloc=f"{role}@{host}"))
        from plantrail.ledger.stores import postgres

        postgres._schema_checked.clear()
        result = run_cli("status", "p", "--store", as_role)
        assert result.code == 4 and "error[PERMISSION_DENIED]" in result.err, result.err
    finally:
        from plantrail.ledger.stores import postgres

        postgres._close_pools()
        with psycopg.connect(database, autocommit=True) as admin:
            admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_report_and_checkpoint_on_a_database_run(
    tmp_path: Path, database: str, run_cli: Callable[..., CliResult]
) -> None:
    """report writes its page from a database run (verify passing in its header), and checkpoint appends a
    keyed checkpoint that verify --key-file then checks."""
    assert run_cli("create", "rep", "--plan", SAMPLES / "login-fix.draft.json", "--store", database).code == 0
    page = tmp_path / "rep.html"
    report = run_cli("report", "rep", "--store", database, "-o", page, "--json")
    assert report.code == 0, report.err
    summary = report.json()
    assert (summary["run"], summary["versions"], summary["last_seq"], summary["verify"]["ok"]) == ("rep", 1, 1, True)
    assert page.stat().st_size == summary["bytes"]
    key = tmp_path / "key"
    key.write_bytes(b"a checkpoint key of 32 bytes....")
    checkpoint = run_cli("checkpoint", "rep", "--store", database, "--key-file", key, "--json")
    assert checkpoint.code == 0, checkpoint.err
    verified = run_cli("verify", "rep", "--store", database, "--key-file", key, "--json")
    assert verified.code == 0, verified.err
    assert verified.json()["checkpoints"] == 1


def test_connection_options_come_from_the_store_urls_query() -> None:
    """pool_size, prepare_threshold and notify are plantrail's and are taken out of the URL; TLS and every other
    libpq option (sslmode, sslrootcert, connect_timeout) go to libpq unchanged; a malformed option is USAGE."""
    from plantrail.ledger.stores.postgres import parse_location
    from plantrail.ledger.vocabulary.errors import PlantrailError

    url = (
        "postgresql://u:secret@db.example:6432/plantrail?sslmode=verify-full&sslrootcert=/etc/ca.pem"
        "&pool_size=12&prepare_threshold=none&notify=off&connect_timeout=3#run-1"
    )
    where = parse_location(url)
    assert (where.run, where.pool_size, where.prepare_threshold, where.notify, where.connect_timeout) == (
        "run-1",
        12,
        None,
        False,
        3.0,
    )
    assert "sslmode=verify-full" in where.conninfo and "sslrootcert=%2Fetc%2Fca.pem" in where.conninfo
    assert "pool_size" not in where.conninfo and "notify" not in where.conninfo and "#" not in where.conninfo
    assert "secret" not in str(where)
    defaults = parse_location("postgresql://localhost/plantrail")
    assert (defaults.pool_size, defaults.prepare_threshold, defaults.notify) == (4, 5, True)
    for bad in ("pool_size=0", "pool_size=x", "prepare_threshold=-1"):
        with pytest.raises(PlantrailError) as caught:
            parse_location(f"postgresql://localhost/plantrail?{bad}")
        assert caught.value.code == "USAGE"


def test_a_database_run_forks_to_a_file_that_verifies_against_it(
    tmp_path: Path, database: str, run_cli: Callable[..., CliResult]
) -> None:
    """fork reads its parent from a database run (named by id with --store), and verify --parent checks the
    fork against that database run; brief answers from the database run too."""
    assert run_cli("create", "parent", "--plan", SAMPLES / "login-fix.draft.json", "--store", database).code == 0
    assert run_cli("start", "parent", "reproduce", "--store", database).code == 0
    child = tmp_path / "child.jsonl"
    forked = run_cli("fork", "parent", "--store", database, "--at-seq", "2", "-o", child, "--json")
    assert forked.code == 0, forked.err
    verified = run_cli("verify", child, "--parent", f"{database}#parent", "--json")
    assert verified.code == 0, verified.err
    brief = run_cli("brief", "parent", "--store", database, "--json")
    assert brief.code == 0, brief.err
    assert brief.json()["run"] == "parent"
