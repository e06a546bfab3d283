"""A run id names only a regular file in its runs folder, and no run's log is taken for a name plantrail keeps
beside another log.

Two walks. :data:`ENTRIES` x :data:`RESOLVERS`: every kind of folder entry that is not a regular file, through
every way a run id reaches its log (the locations, the folder store, the store targets, the MCP tools, a
hook); and :func:`side_names`: every name plantrail keeps beside a log, read from a folder where a run made
each of them, each turned into another run's id, which must leave the first run untouched. A new kind of name
beside a log appears in the folder, so it is walked without a new test.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import JsonlStore, repair
from plantrail.ledger.stores.jsonl.run import FolderStore
from plantrail.ledger.stores.jsonl.salvage import salvage
from plantrail.ledger.stores.locations import HOME_ENV, run_file, run_path
from plantrail.ledger.stores.opener import open_run
from plantrail.ledger.stores.targets import locate
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT
from tests.project.import_graph import ROOT, packages


def _log(path: Path, run: str | None = None) -> Path:
    """A fresh log at ``path`` (its run id ``run``)."""
    Ledger.create(path, LOGIN_DRAFT, run=run, fsync="none").close()
    return path


# --------------------------------------------------------------------------- entries that are no regular file


def _link_outside(folder: Path) -> Path:
    return _log(folder.parent / "outside.jsonl")


def _link_to_another_run(folder: Path) -> Path:
    return _log(folder / "other.jsonl", "other")


def _dangling(folder: Path) -> Path:
    return folder.parent / "nothing-here.jsonl"


def _link_to_a_folder(folder: Path) -> Path:
    target = folder.parent / "somewhere"
    target.mkdir()
    return target


#: Every kind of entry a runs folder may hold at a run's name that is not a regular file: ``make(folder,
#: entry)`` puts it at ``entry``, returning the file a link points to (None: no link).
ENTRIES: dict[str, Callable[[Path, Path], Path | None]] = {
    "link-outside": lambda folder, entry: (t := _link_outside(folder), entry.symlink_to(t))[0],
    "link-to-another-run": lambda folder, entry: (t := _link_to_another_run(folder), entry.symlink_to(t))[0],
    "dangling-link": lambda folder, entry: (t := _dangling(folder), entry.symlink_to(t))[0],
    "link-to-a-folder": lambda folder, entry: (t := _link_to_a_folder(folder), entry.symlink_to(t))[0],
    "folder": lambda folder, entry: entry.mkdir(),
    "fifo": lambda folder, entry: os.mkfifo(entry),
}


def _status_over_mcp(folder: Path, run: str) -> None:
    """The MCP server's read tool for ``run``, and its writing tool: each must be refused."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from plantrail.cli.mcp_server import build_server
    from tests.helpers.mcp_calls import call, refused

    async def main() -> None:
        async with Client(build_server(folder)) as client:
            for tool, arguments in (("plan_status", {}), ("step_start", {"step": "reproduce"})):
                outcome = await call(client, tool, run=run, **arguments)
                assert refused(outcome, "NOT_A_FILE"), (tool, outcome.content)

    anyio.run(main)
    raise PlantrailError("NOT_A_FILE", "refused over MCP")  # the walk's common check: a refusal with the code


def _hook(folder: Path, run: str) -> None:
    """A Claude Code hook of session ``run`` whose project holds ``folder`` as ``.plantrail/runs``: it records
    nothing through the entry (its error goes to the hook's error file, exit 0)."""
    from tests.helpers.hook_payloads import post_tool_use

    todos = {"todos": [{"content": "Reproduce the failure", "status": "pending", "activeForm": "Reproducing"}]}
    payload = post_tool_use(run, folder.parent.parent, "TodoWrite", "t1", todos, {"oldTodos": [], "newTodos": []})
    import orjson

    env = {k: v for k, v in os.environ.items() if k != HOME_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "hook", "claude"],
        input=orjson.dumps(payload),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = folder.parent / "hook-errors.log"
    assert "NOT_A_FILE" in said.read_text(), said.read_text()
    said.unlink()  # the hook's own account of the refusal: one of the two files it may write
    ignore = folder.parent / ".gitignore"  # the other: the project's plantrail folder kept out of git
    assert ignore.read_text().splitlines()[-1] == "*"
    ignore.unlink()
    raise PlantrailError("NOT_A_FILE", "a hook records nothing through it")


#: Every way a run id reaches its log: each is called with the runs folder and the run id, and must refuse.
RESOLVERS: dict[str, Callable[[Path, str], Any]] = {
    "run_path": lambda folder, run: run_path(folder, run),
    "run_file": lambda folder, run: run_file(str(folder), run),
    "folder-store-read": lambda folder, run: FolderStore(folder).run(run).current(),
    "open-run-with-store": lambda folder, run: open_run(run, store=str(folder)).current(),
    "ledger-open-by-store": lambda folder, run: Ledger.open(open_run(run, store=str(folder))),
    "default-runs-folder": lambda folder, run: locate(run),
    "mcp-tools": _status_over_mcp,
    "hook": _hook,
}


def _snapshot(folder: Path) -> dict[str, bytes]:
    """The bytes of every regular file under the test's folder's parent (what a refusal must leave as it was)."""
    return {str(p): p.read_bytes() for p in sorted(folder.parent.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("resolver", sorted(RESOLVERS))
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_run_id_names_only_a_regular_file_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, resolver: str
) -> None:
    """A link (to a log outside, to another run's log, to nothing, to a folder), a folder or a FIFO at a run's
    name is refused with NOT_A_FILE by every way a run id reaches its log; nothing is read through it or
    written anywhere."""
    project = tmp_path / "project"
    folder = project / ".plantrail" / "runs"
    folder.mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.delenv(HOME_ENV, raising=False)
    ENTRIES[entry](folder, folder / "main.jsonl")
    before = _snapshot(folder)
    with pytest.raises(PlantrailError) as caught:
        RESOLVERS[resolver](folder, "main")
    assert caught.value.code == "NOT_A_FILE", caught.value
    assert _snapshot(folder) == before


def test_every_run_id_reaches_its_log_through_the_locations() -> None:
    """No module but the locations makes a log's name from a run id (``f"{run}.jsonl"``, ``run + ".jsonl"``): each
    way in :data:`RESOLVERS` goes through run_path or run_file, and so would a new one."""
    made: list[str] = []
    for name in packages():
        base = ROOT / name.removeprefix("plantrail.").replace(".", "/")
        if name == "plantrail":
            base = ROOT / "src" / "plantrail"
        for path in sorted(base.glob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                ends = None
                if isinstance(node, ast.JoinedStr) and node.values:
                    last = node.values[-1]
                    ends = last.value if isinstance(last, ast.Constant) else None
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                    ends = node.right.value if isinstance(node.right, ast.Constant) else None
                if isinstance(ends, str) and ends.endswith(".jsonl") and len(ends) <= len(".jsonl") + 1:
                    made.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert made, "the walk found not even the locations: it is broken"
    assert all(m.startswith("ledger/stores/locations.py:") for m in made), made


# --------------------------------------------------------------------------- names kept beside a log


def _every_side_name(folder: Path) -> tuple[Path, list[str]]:
    """Run ``main`` in ``folder`` with every name plantrail keeps beside a log: its cache folder, its payload
    folder, a quarantine file (a repaired torn tail) and a crashed create's temporary file."""
    main = _log(folder / "main.jsonl", "main")
    with Ledger.open(main, fsync="none") as ledger:
        ledger.start("reproduce")  # closing leaves the cache
    store = JsonlStore.open(main, fsync="none")
    try:
        store.store_payload(b"evidence kept beside the log")
    finally:
        store.close()
    main.write_bytes(main.read_bytes() + b'{"v":1,"se')  # a torn tail, which repair quarantines
    assert repair(main).record is not None
    (folder / f"main.jsonl.tmp.{os.getpid()}.0badc0de").write_bytes(b"a create in progress")
    names = sorted(p.name for p in folder.iterdir() if p.name != "main.jsonl")
    return main, names


def side_names(folder: Path) -> Iterator[str]:
    """Every name the walk found beside ``main.jsonl``."""
    yield from _every_side_name(folder)[1]


def test_no_name_kept_beside_a_log_looks_like_a_log(tmp_path: Path) -> None:
    """Every name plantrail keeps beside a log (cache, payloads, quarantine, temporary) is none a run's log can
    have: no such name ends with ``.jsonl``, and each kind is there."""
    names = list(side_names(tmp_path))
    kinds = {re.sub(r"^main(\.jsonl)?\.([a-z-]+).*", r"\2", n) for n in names}
    assert kinds >= {"plantrail-cache", "blobs", "quarantine", "tmp"}, names
    assert [n for n in names if n.endswith(".jsonl")] == []


def _collide(name: str, end: int) -> str:
    """The run id whose log looks like ``name`` beside a log ending at ``end`` (an offset in it becomes ``end``)."""
    return re.sub(r"\.(\d+)\.", f".{end}.", name, count=1)


def test_a_run_named_like_a_name_beside_another_log_leaves_that_log_alone(tmp_path: Path) -> None:
    """For every name kept beside run main's log, a run whose id makes its log look like it (a regular file of
    this user, a valid log) is never taken for it: repair of main records nothing, main's salvage lists no such
    file, a create beside it removes nothing, and both logs verify."""
    main, names = _every_side_name(tmp_path)
    others = []
    for name in names:
        run = _collide(name, main.stat().st_size)
        try:
            others.append(_log(run_path(tmp_path, run), run))
        except PlantrailError as exc:  # a name no run id can have, or a name already taken: nothing to collide
            assert exc.code in ("INVALID_ID", "LOG_EXISTS", "NOT_A_FILE"), exc
    assert others, "no colliding run could be made: the walk is broken"
    before = main.read_bytes()
    assert repair(main).record is None
    assert main.read_bytes() == before
    report = salvage(main)
    assert [q.name for q in report.quarantine if q.name.endswith(".jsonl")] == []
    assert [t for t in report.temp_files if t.endswith(".jsonl")] == []
    _log(tmp_path / "later.jsonl", "later")
    for log in (main, *others):
        assert log.exists() and verify_log(log).torn is None


@pytest.mark.parametrize("tag", ["", ".0123456789abcdef0123456789abcdef"])
def test_a_regular_file_planted_at_a_quarantine_name_records_no_repair(tmp_path: Path, tag: str) -> None:
    """A regular file of this user at the name an interrupted repair would leave (with or without a tag) is not
    a quarantine file of ours: a repairing open of the healthy log appends nothing."""
    main = _log(tmp_path / "main.jsonl", "main")
    end = main.stat().st_size
    planted = tmp_path / f"main.jsonl.quarantine.{end}.2026-01-01T000000.000000Z{tag}"
    planted.write_bytes(b'{"v":1,"seq":9,"planted":true')
    before = main.read_bytes()
    assert repair(main).record is None
    with Ledger.open(main, repair=True, fsync="none") as ledger:
        assert ledger.state.last_seq == 1
    assert main.read_bytes() == before


def test_a_quarantine_file_names_its_bytes_by_a_tag_under_this_users_key(tmp_path: Path) -> None:
    """A repair's quarantine file ends with a tag of the run, the offset and the bytes' digest under this user's
    key, and holds exactly the torn bytes."""
    from plantrail.ledger.stores.jsonl.log import quarantine_tag
    from plantrail.ledger.stores.jsonl.seal import cache_key

    main = _log(tmp_path / "main.jsonl", "main")
    end = main.stat().st_size
    torn = b'{"v":1,"seq":2,"ts":"2026'
    main.write_bytes(main.read_bytes() + torn)
    record = repair(main).record
    assert record is not None
    key = cache_key()
    assert key is not None
    (quarantine,) = tmp_path.glob("main.jsonl.quarantine.*")
    assert quarantine.read_bytes() == torn
    assert quarantine.name.endswith("." + quarantine_tag(key, "main", end, hashlib.sha256(torn).hexdigest()))
    assert record.data.quarantine == quarantine.name  # type: ignore[union-attr]
