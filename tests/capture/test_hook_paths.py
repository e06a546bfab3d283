"""A hook call names its files with strings, without pathlib: the same names, byte for byte, as the ``Path``
arithmetic they replace (the log's, the journal's, the error file's folder, a transcript's agent)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from plantrail.ledger.capture.hook import _folder, plantrail_folder
from plantrail.ledger.capture.journal import journal_file, journal_path
from plantrail.ledger.importers import claude_code
from plantrail.ledger.stores.locations import HOME_ENV, child_path, pure_path, run_file, run_path
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.helpers.hook_payloads import post_tool_use

#: Paths made of the parts that pathlib treats specially: separators, ``.``, ``..``, empty parts.
paths = st.lists(st.sampled_from(["/", "//", ".", "..", "a", "b.c", "subagents", " ", "x/"]), max_size=8).map("".join)
ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,12}", fullmatch=True)
names = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,10}", fullmatch=True).filter(lambda n: n not in (".", ".."))


@given(paths)
def test_pure_path_is_what_a_pure_posix_path_prints(path: str) -> None:
    """pure_path gives ``str(PurePosixPath(path))`` for any path, however it is written."""
    assert pure_path(path) == str(PurePosixPath(path))


@given(paths, st.lists(names, min_size=1, max_size=3))
def test_child_path_is_the_pure_path_join(folder: str, parts: list[str]) -> None:
    """child_path of a pure folder and plain names is pathlib's join."""
    assert child_path(pure_path(folder), *parts) == str(PurePosixPath(folder, *parts))


@given(paths, ids)
def test_run_file_names_the_log_run_path_names(folder: str, run: str) -> None:
    """run_file is ``str(run_path(...))`` for every folder and run id."""
    assert run_file(folder, run) == str(run_path(Path(folder), run))


@pytest.mark.parametrize("run", ["../x", "a/b", "", "x y"])
def test_run_file_refuses_what_run_path_refuses(run: str) -> None:
    """A run id that is no id is refused by both, with the same code."""
    with pytest.raises(PlantrailError) as by_path:
        run_path(Path("runs"), run)
    with pytest.raises(PlantrailError) as by_string:
        run_file("runs", run)
    assert by_string.value.code == by_path.value.code == "INVALID_ID"


@given(st.none() | paths, st.none() | paths, ids, st.sampled_from(["claude-code-hooks", "gemini"]))
def test_the_hook_folder_and_journal_are_the_paths(cwd: str | None, home: str | None, session: str, agent: str) -> None:
    """The hook's .plantrail folder and journal, as strings, are plantrail_folder's and journal_path's."""
    env = {} if home is None else {HOME_ENV: home}
    folder = _folder(cwd, env)
    assert folder == str(plantrail_folder(cwd, env))
    assert journal_file(folder, session, agent) == str(journal_path(plantrail_folder(cwd, env), session, agent))


def _file_agent_by_path(path: Path) -> str:
    """The agent a transcript's file name says, as it was read with pathlib (the reference)."""
    found = re.search(claude_code._SUBAGENT_FILE, path.name)
    if found is None and path.parent.name == "subagents":
        found = re.match(claude_code._SUBAGENT_IN_FOLDER, path.name)
    return claude_code.LEAD if found is None else f"subagent:{found['id']}"


transcripts = st.tuples(paths, st.sampled_from(["", "subagents/", "subagents/./", "x/subagents//"])).map("".join)
files = st.sampled_from(["t.jsonl", "agent-7.jsonl", "s__subagent-ab.jsonl", "agent-.jsonl", "agent-x.y.jsonl"])


@given(transcripts, files)
def test_a_transcripts_agent_is_read_from_its_name_as_with_pathlib(folder: str, name: str) -> None:
    """The reader's file agent is the same for a string as pathlib's parts gave."""
    path = folder + name
    assert claude_code.new_reader(path).file_agent == _file_agent_by_path(Path(path))
    assert claude_code.new_reader(Path(path)).file_agent == _file_agent_by_path(Path(path))


def _update(project: Path, call: str, *items: tuple[str, str]) -> bytes:
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    return orjson.dumps(
        post_tool_use("s1", project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})
    )


def test_no_module_a_hook_call_loads_uses_pathlib(tmp_path: Path) -> None:
    """No module that a hook call (a plan update of a captured session, through the installed form) loads
    holds pathlib or its classes: the call names its files with strings. (The interpreter itself may load
    pathlib, as an editable install's finder does; what matters is that the hook's modules do not need it.)"""
    env = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    first = _update(tmp_path, "toolu_1", ("read the code", "in_progress"), ("write the fix", "pending"))
    hook = [sys.executable, "-m", "plantrail", "hook", "claude"]
    assert subprocess.run(hook, input=first, capture_output=True, cwd=tmp_path, env=env).returncode == 0
    update = _update(tmp_path, "toolu_2", ("read the code", "completed"), ("write the fix", "in_progress"))
    script = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from plantrail.cli.entry import main\n"
        "code = main(['hook', 'claude'])\n"
        "loaded = {name: module for name, module in sys.modules.items() if name not in before and module is not None}\n"
        "import pathlib\n"
        "held = (pathlib, pathlib.Path, pathlib.PurePath, pathlib.PosixPath)\n"
        "users = sorted(name for name, module in loaded.items()"
        " if any(value is kind for value in vars(module).values() for kind in held))\n"
        "print(code, ','.join(users) or 'none')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input=update, capture_output=True, cwd=tmp_path, env=env)

    assert (done.returncode, done.stdout.decode().strip()) == (0, "0 none"), done.stderr
    assert b'"type":"step.completed"' in (tmp_path / ".plantrail" / "runs" / "s1.jsonl").read_bytes()
    assert not (tmp_path / ".plantrail" / "hook-errors.log").exists()
