"""Runs written into a store by the commands that name their run by an option or an environment: import
(whole, --append, --follow), fork, the MCP server and the agent hooks write database runs as they write files
(the same records), and a run id or a ``.jsonl`` name resolves as docs/cli.md says."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli.test_cli_stores import database  # noqa: F401  (the fixture: a fresh database on the test server)
from tests.conftest import SAMPLES, CliResult
from tests.helpers.story import story

psycopg = __import__("psycopg") if os.environ.get("CI") == "true" else pytest.importorskip("psycopg")

TRANSCRIPT = SAMPLES / "claude-session.jsonl"
DRAFT = SAMPLES / "login-fix.draft.json"


def _database_lines(url: str) -> bytes:
    from plantrail.ledger.stores.postgres import read_lines

    return b"".join(read_lines(url))


def _as_file(url: str, folder: Path) -> Path:
    """A database run's lines as a file (for the helpers that read a file)."""
    path = folder / "from-database.jsonl"
    path.write_bytes(_database_lines(url))
    return path


@pytest.fixture(autouse=True)
def _no_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)


# --------------------------------------------------------------------------- import


def test_import_into_a_database_run_writes_the_file_imports_bytes(
    tmp_path: Path,
    database: str,  # noqa: F811
    run_cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """import -o RUN with --store, -o postgresql://…#RUN and -o RUN with PLANTRAIL_STORE each write exactly the
    bytes the import into a file with the same run id writes; the run then verifies from the database."""
    for run in ("by-option", "by-url", "by-env"):
        file = tmp_path / f"{run}.jsonl"
        assert run_cli("import", TRANSCRIPT, "-o", file, "--run", run).code == 0
        if run == "by-option":
            result = run_cli("import", TRANSCRIPT, "-o", run, "--store", database, "--json")
        elif run == "by-url":
            result = run_cli("import", TRANSCRIPT, "-o", f"{database}#{run}", "--json")
        else:
            monkeypatch.setenv("PLANTRAIL_STORE", database)
            result = run_cli("import", TRANSCRIPT, "-o", run, "--json")
            monkeypatch.delenv("PLANTRAIL_STORE")
        assert result.code == 0, result.err
        assert result.json()["run"] == run and result.json()["log"] == f"{database}#{run}"
        assert _database_lines(f"{database}#{run}") == file.read_bytes()
        verified = run_cli("verify", run, "--store", database, "--json")
        assert verified.code == 0, verified.err
        assert verified.json()["head_hash"] == result.json()["head_hash"]


def test_import_into_an_existing_database_run_is_refused_and_force_is_usage(
    tmp_path: Path,
    database: str,  # noqa: F811
    run_cli: Callable[..., CliResult],
) -> None:
    """A second import into the same database run is LOG_EXISTS, --force on a database run is USAGE, and
    --run naming another id than the URL's is USAGE; the run is left byte for byte as it was."""
    assert run_cli("import", TRANSCRIPT, "-o", "once", "--store", database).code == 0
    before = _database_lines(f"{database}#once")
    again = run_cli("import", TRANSCRIPT, "-o", "once", "--store", database)
    assert again.code != 0 and "error[LOG_EXISTS]" in again.err, again.err
    forced = run_cli("import", TRANSCRIPT, "-o", "once", "--store", database, "--force")
    assert forced.code == 2 and "error[USAGE]" in forced.err, forced.err
    other = run_cli("import", TRANSCRIPT, "-o", f"{database}#twice", "--run", "other")
    assert other.code == 2 and "error[USAGE]" in other.err, other.err
    assert _database_lines(f"{database}#once") == before
    assert run_cli("status", "twice", "--store", database).code == 4


def test_import_append_recognises_what_a_database_run_holds(
    tmp_path: Path,
    database: str,  # noqa: F811
    run_cli: Callable[..., CliResult],
) -> None:
    """--append creates a database run as it creates a file (the same story), a second --append adds nothing,
    and --append onto a run a whole import wrote recognises every update by its sources, on both stores."""
    file = tmp_path / "appended.jsonl"
    assert run_cli("import", TRANSCRIPT, "-o", file, "--append", "--run", "appended").code == 0
    created = run_cli("import", TRANSCRIPT, "-o", "appended", "--append", "--store", database, "--json")
    assert created.code == 0, created.err
    assert created.json()["created"] and created.json()["updates_appended"] > 0
    assert story(_as_file(f"{database}#appended", tmp_path)) == story(file)
    again = run_cli("import", TRANSCRIPT, "-o", "appended", "--append", "--store", database, "--json").json()
    assert (again["created"], again["updates_appended"], again["events_written"]) == (False, 0, 0)
    assert again["updates_recorded"] == created.json()["updates_appended"]
    other = run_cli("import", TRANSCRIPT, "-o", "appended", "--append", "--store", database, "--run", "another")
    assert other.code == 2 and "error[USAGE]" in other.err, "the URL names the run: another --run is refused"

    whole_file = tmp_path / "whole.jsonl"
    assert run_cli("import", TRANSCRIPT, "-o", whole_file).code == 0
    assert run_cli("import", TRANSCRIPT, "-o", "whole", "--store", database).code == 0
    on_file = run_cli("import", TRANSCRIPT, "-o", whole_file, "--append", "--json").json()
    on_database = run_cli("import", TRANSCRIPT, "-o", "whole", "--append", "--store", database, "--json").json()
    assert on_file["updates_appended"] == on_database["updates_appended"] == 0
    assert on_file["updates_recorded"] == on_database["updates_recorded"] > 0


def test_import_follow_appends_to_a_database_run(tmp_path: Path, database: str) -> None:  # noqa: F811
    """follow_transcript into a database run appends a growing transcript's new updates, each once."""
    from plantrail.ledger.capture.follow import follow_transcript

    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    growing = tmp_path / "growing.jsonl"
    growing.write_bytes(b"".join(lines[: len(lines) // 2]))
    reports: list[Any] = []
    looks = iter(range(3))

    def stop() -> bool:
        step = next(looks, None)
        if step == 0:
            growing.write_bytes(b"".join(lines))
        return step is None or step == 2

    follow_transcript(growing, f"{database}#followed", run="followed", on_append=reports.append, stop=stop, poll=0)
    assert reports and reports[0].created
    file = tmp_path / "followed.jsonl"
    from plantrail.ledger.capture.append import append_transcript

    append_transcript(TRANSCRIPT, file, run="followed")
    assert story(_as_file(f"{database}#followed", tmp_path)) == story(file)


# --------------------------------------------------------------------------- fork


def test_fork_into_a_database_run_from_a_database_or_a_file_parent(
    tmp_path: Path,
    database: str,  # noqa: F811
    run_cli: Callable[..., CliResult],
) -> None:
    """fork -o NEW with --store writes NEW as a database run (from a database parent and from a file parent),
    it verifies against its parent across stores, and a wrong parent is FORK_MISMATCH."""
    assert run_cli("create", "parent", "--plan", DRAFT, "--store", database).code == 0
    assert run_cli("start", "parent", "reproduce", "--store", database).code == 0
    forked = run_cli("fork", "parent", "--store", database, "--at-seq", "2", "-o", "child", "--json")
    assert forked.code == 0, forked.err
    assert (forked.json()["run"], forked.json()["path"]) == ("child", f"{database}#child")
    checked = run_cli("verify", "child", "--store", database, "--parent", "parent", "--json")
    assert checked.code == 0, checked.err
    assert checked.json()["parent"] == {"run": "parent", "seq": 2}
    assert run_cli("start", "child", "diagnose", "--store", database).code != 0  # the fork's rules hold
    assert run_cli("complete", "child", "reproduce", "-e", "done", "--store", database).code == 0

    file_parent = tmp_path / "file-parent.jsonl"
    assert run_cli("create", file_parent, "--plan", DRAFT).code == 0
    into_database = run_cli("fork", file_parent, "--at-seq", "1", "-o", f"{database}#from-file", "--json")
    assert into_database.code == 0, into_database.err
    assert run_cli("verify", f"{database}#from-file", "--parent", file_parent).code == 0
    mismatch = run_cli("verify", f"{database}#from-file", "--parent", "parent", "--store", database)
    assert mismatch.code == 3 and "error[FORK_MISMATCH]" in mismatch.err, mismatch.err
    exists = run_cli("fork", "parent", "--store", database, "--at-seq", "2", "-o", "child")
    assert "error[LOG_EXISTS]" in exists.err


# --------------------------------------------------------------------------- resolving LOG


def test_a_jsonl_name_with_a_store_folder_is_that_file(
    tmp_path: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --store DIR, LOG ending in .jsonl is the file it names (not DIR/x.jsonl.jsonl); a bare id is
    DIR/<id>.jsonl."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    assert run_cli("create", "here.jsonl", "--plan", DRAFT, "--store", store).code == 0
    assert (tmp_path / "here.jsonl").is_file() and not list(store.iterdir())
    assert run_cli("status", "here.jsonl", "--store", store).code == 0
    assert run_cli("create", "there", "--plan", DRAFT, "--store", store).code == 0
    assert (store / "there.jsonl").is_file()


def test_create_with_a_bare_id_and_no_store_writes_the_runs_folder(
    tmp_path: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """create ID with no store and no file ID writes <runs folder>/ID.jsonl (making the folder), where every
    other command then finds it by the same id; an existing file ID is still the file."""
    monkeypatch.chdir(tmp_path)
    result = run_cli("create", "fresh", "--plan", DRAFT, "--json")
    assert result.code == 0, result.err
    log = tmp_path / ".plantrail" / "runs" / "fresh.jsonl"
    assert log.is_file() and not (tmp_path / "fresh").exists()
    assert run_cli("start", "fresh", "reproduce").code == 0
    assert run_cli("status", "fresh", "--json").json()["run"] == "fresh"
    monkeypatch.setenv("PLANTRAIL_HOME", str(tmp_path / "home"))
    assert run_cli("create", "homed", "--plan", DRAFT).code == 0
    assert (tmp_path / "home" / "runs" / "homed.jsonl").is_file()
    (tmp_path / "taken").write_bytes(b"")
    taken = run_cli("create", "taken", "--plan", DRAFT)
    assert "error[LOG_EXISTS]" in taken.err, taken.err


# --------------------------------------------------------------------------- runs --json


def _replanned(run_cli: Callable[..., CliResult], run: str, *store: str | Path) -> None:
    assert run_cli("create", run, "--plan", DRAFT, *store).code == 0
    v2 = SAMPLES / "login-fix-replans.v2.draft.json"
    for reason in ("new_constraint", "failed_assumption", "new_constraint"):
        replanned = run_cli("replan", run, "--reason", reason, "--why", "w", "--plan", v2, *store)
        assert replanned.code == 0, replanned.err


def test_runs_json_counts_each_rows_replan_reasons(
    tmp_path: Path,
    database: str,  # noqa: F811
    run_cli: Callable[..., CliResult],
) -> None:
    """runs --json gives each row's replan reasons as counts per reason code, the same for a folder (from a
    fresh snapshot and from a fold) and a database; a run never replanned has none."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for store in (folder, database):
        _replanned(run_cli, "busy", "--store", store)
        assert run_cli("create", "calm", "--plan", DRAFT, "--store", store).code == 0
    expected = {"busy": {"failed_assumption": 1, "new_constraint": 2}, "calm": {}}
    on_folder = {r["run"]: r["reasons"] for r in run_cli("runs", folder, "--json").json()}
    on_database = {r["run"]: r["reasons"] for r in run_cli("runs", "--store", database, "--json").json()}
    assert on_folder == on_database == expected
    for cache in folder.glob("*.plantrail-cache"):
        import shutil

        shutil.rmtree(cache)
    assert {r["run"]: r["reasons"] for r in run_cli("runs", folder, "--json").json()} == expected
    limited = run_cli("runs", folder, "--json", "--sort", "replans", "--limit", "1").json()
    assert [(r["run"], r["reasons"]) for r in limited] == [("busy", expected["busy"])]


# --------------------------------------------------------------------------- hooks


def _todo(session: str, project: Path, call: str, *items: tuple[str, str]) -> dict[str, Any]:
    from tests.helpers.hook_payloads import post_tool_use

    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    return post_tool_use(session, project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})


def test_a_hook_with_a_store_writes_the_sessions_run_there(tmp_path: Path, database: str) -> None:  # noqa: F811
    """With PLANTRAIL_STORE a database, claude hooks append the session's run in the database (the story the
    same payloads tell in a file), the journal stays under the project, and SessionStart returns its receipt."""
    from plantrail.ledger.capture.hook import claude_hook

    payloads = [
        _todo("s1", tmp_path / "a", "toolu_1", ("Reproduce the crash", "in_progress"), ("Fix it", "pending")),
        _todo("s1", tmp_path / "a", "toolu_2", ("Reproduce the crash", "completed"), ("Fix it", "in_progress")),
    ]
    env = {"PLANTRAIL_STORE": database}
    for payload in payloads:
        assert claude_hook(orjson.dumps(payload), env=env).errors == ()
        assert claude_hook(orjson.dumps({**payload, "cwd": str(tmp_path / "b")}), env={}).errors == ()
    in_database = _as_file(f"{database}#s1", tmp_path)
    in_file = tmp_path / "b" / ".plantrail" / "runs" / "s1.jsonl"
    assert story(in_database) == story(in_file) and len(story(in_file)) >= 3
    assert not (tmp_path / "a" / ".plantrail" / "runs").exists()
    assert list((tmp_path / "a" / ".plantrail").iterdir())  # the journal stays local
    start = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "resume", "cwd": str(tmp_path / "a")}
    started = claude_hook(orjson.dumps(start), env=env)
    assert started.errors == () and started.receipt is not None and started.receipt["run"] == "s1"


def test_a_hook_whose_store_is_down_writes_an_error_and_exits_0(tmp_path: Path) -> None:
    """`plantrail hook claude --store URL` with no server there exits 0, prints nothing, and leaves one line in
    the local error file."""
    import subprocess
    import sys

    payload = _todo("s2", tmp_path, "toolu_1", ("Reproduce the crash", "in_progress"))
    url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1"
    command = [sys.executable, "-m", "plantrail.cli.main", "hook", "claude", "--store", url]
    done = subprocess.run(command, input=orjson.dumps(payload), capture_output=True, check=False)
    assert (done.returncode, done.stdout) == (0, b"")
    errors = (tmp_path / ".plantrail" / "hook-errors.log").read_text()
    assert "STORE_UNAVAILABLE" in errors and errors.count("\n") == 1


# --------------------------------------------------------------------------- the MCP server


def test_the_mcp_server_keeps_its_runs_in_the_store(tmp_path: Path, database: str) -> None:  # noqa: F811
    """With a store, the MCP tools create, record and read the run in the database (not the runs folder), a
    run id that is no id is still INVALID_ID, and two starts with the same expected seq: exactly one wins."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from plantrail.cli.mcp_server import build_server

    steps = [
        {"id": "a", "title": "Do a", "completion_evidence": "a done"},
        {"id": "b", "title": "Do b", "completion_evidence": "b done"},
    ]
    criteria = [{"id": "c", "description": "it works"}]

    async def main() -> None:
        async with Client(build_server(tmp_path / "runs", database)) as client:
            created = await client.call_tool(
                "plan_set", {"run": "m1", "goal": "g", "steps": steps, "criteria": criteria}
            )
            assert not created.is_error, created.content
            results: list[Any] = []

            async def start(step: str) -> None:
                results.append(await client.call_tool("step_start", {"run": "m1", "step": step, "expected_seq": 1}))

            async with anyio.create_task_group() as group:
                group.start_soon(start, "a")
                group.start_soon(start, "b")
            assert sorted(r.is_error for r in results) == [False, True]
            status = await client.call_tool("plan_status", {"run": "m1"})
            assert not status.is_error
            escape = await client.call_tool("plan_status", {"run": "../outside"})
            assert escape.is_error and "error[INVALID_ID]" in " ".join(p.text for p in escape.content)

    anyio.run(main)
    records = [orjson.loads(line) for line in _database_lines(f"{database}#m1").splitlines()]
    assert [r["type"] for r in records] == ["log.opened", "plan.created", "step.started"]
    assert not (tmp_path / "runs").exists()


def test_mcp_refuses_a_folder_and_a_store_given_together(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """`plantrail mcp --dir DIR --store URL` is USAGE (one place for the runs), before any server starts."""
    given = run_cli("mcp", "--dir", tmp_path, "--store", "postgresql://localhost/plantrail")
    assert given.code == 2 and "error[USAGE]" in given.err, given.err


def test_a_run_id_in_a_store_never_names_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For the MCP server and the hooks a run id is always an id in the store: ``x.jsonl`` is
    ``<store>/x.jsonl.jsonl`` in a folder, never the file ``x.jsonl`` in the working directory, and ``a/b`` is
    INVALID_ID."""
    from plantrail.ledger.stores.targets import run_in_store
    from plantrail.ledger.vocabulary.errors import PlantrailError

    monkeypatch.chdir(tmp_path)
    assert run_in_store(str(tmp_path / "s"), "x.jsonl") == str(tmp_path / "s" / "x.jsonl.jsonl")
    assert run_in_store("postgresql://h/db", "x.jsonl") == "postgresql://h/db#x.jsonl"
    for bad in ("a/b", "../up", ""):
        with pytest.raises(PlantrailError) as caught:
            run_in_store(str(tmp_path / "s"), bad)
        assert caught.value.code == "INVALID_ID"
    with pytest.raises(PlantrailError) as named:
        run_in_store("postgresql://h/db#r", "x")
    assert named.value.code == "USAGE"
