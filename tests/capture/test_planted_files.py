"""A project's .plantrail/ is not plantrail's own: what a cloned repository plants there never makes a hook
write outside it, hang, or fail its agent."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
import pytest

from plantrail.ledger.capture import live
from plantrail.ledger.capture.hook import ERRORS_CAP, ERRORS_FILE, claude_hook, gemini_hook, opencode_hook
from plantrail.ledger.stores.jsonl.seal import CacheFolder
from tests.helpers.hook_payloads import post_tool_use

SESSION = "s1"
JOURNAL = f"{SESSION}.claude-code-hooks.jsonl"
#: Seconds a hook call may take before it counts as hung (a normal call takes well under one).
BOUND = 20


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (runs under its .plantrail/), beside a folder standing for everything outside it."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    (tmp_path / "project").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious\n")
    (outside / "folder").mkdir()
    return tmp_path / "project"


def _outside(project: Path) -> Path:
    return project.parent / "outside"


def _snapshot(folder: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry under ``folder``: its kind and its bytes (a link's target, a file's content)."""
    found: dict[str, tuple[str, bytes]] = {}
    for entry in sorted(folder.rglob("*")):
        mode = entry.lstat().st_mode
        if stat.S_ISLNK(mode):
            found[str(entry)] = ("link", os.readlink(entry).encode())
        elif stat.S_ISREG(mode):
            found[str(entry)] = ("file", entry.read_bytes())
        else:
            found[str(entry)] = ("folder" if stat.S_ISDIR(mode) else "other", b"")
    return found


def _todo(project: Path, call: str = "toolu_1") -> dict[str, Any]:
    todos = [{"content": "read the code", "status": "in_progress", "activeForm": "reading"}]
    return post_tool_use(SESSION, project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})


def _bad(project: Path) -> dict[str, Any]:
    """A payload the hook refuses (an event it does not take): it writes an error line."""
    return {"session_id": SESSION, "cwd": str(project), "hook_event_name": "Nope"}


def _hook(project: Path, payload: dict[str, Any], *options: str) -> subprocess.CompletedProcess[bytes]:
    """``plantrail hook claude`` as Claude Code runs it, in the project; fails the test when it hangs."""
    env = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    command = [sys.executable, "-m", "plantrail", "hook", "claude", *options]
    try:
        return subprocess.run(
            command, input=orjson.dumps(payload), capture_output=True, cwd=project, env=env, timeout=BOUND
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the hook call did not finish within {BOUND} s: it waited on a planted file")


class _Hung(BaseException):
    """Raised by the alarm: a hook call that has not returned (not an Exception, which the hook would swallow)."""


def _within_bound(call: Callable[[], Any]) -> Any:
    def ring(signum: int, frame: FrameType | None) -> None:
        raise _Hung

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(BOUND)
    try:
        return call()
    except _Hung:
        pytest.fail(f"the hook call did not finish within {BOUND} s: it waited on a planted file")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_an_oversized_error_file_a_planted_temporary_link_and_a_capture_file_change_nothing_outside(
    project: Path,
) -> None:
    """An error file over its cap, a link at the old temporary name and a file where the capture folder goes:
    the next ordinary hook call exits 0, writes nothing outside, leaves the link, and its error line (naming
    the capture folder) ends the error file, kept under its cap."""
    folder = project / ".plantrail"
    folder.mkdir()
    (folder / ERRORS_FILE).write_bytes(b"an old error line\n" * (ERRORS_CAP // 18 + 1))
    (folder / "hook-errors.tmp").symlink_to(_outside(project) / "victim.txt")
    (folder / "capture").write_text("a file where a folder goes\n")
    before = _snapshot(_outside(project))

    done = _hook(project, _todo(project))

    assert (done.returncode, done.stdout) == (0, b""), done.stderr
    assert _snapshot(_outside(project)) == before
    assert os.readlink(folder / "hook-errors.tmp") == str(_outside(project) / "victim.txt")
    errors = folder / ERRORS_FILE
    assert not errors.is_symlink() and errors.stat().st_size <= ERRORS_CAP
    last = errors.read_text().splitlines()[-1]
    assert "error[NOT_A_FILE]" in last and "capture" in last


def test_a_planted_error_file_link_is_not_appended_through(project: Path) -> None:
    """A link planted as the error file: a failing hook call exits 0, appends nothing to the link's target,
    leaves the link, and says why in its --json errors."""
    folder = project / ".plantrail"
    folder.mkdir()
    (folder / ERRORS_FILE).symlink_to(_outside(project) / "victim.txt")
    before = _snapshot(_outside(project))

    done = _hook(project, _bad(project), "--json")

    assert done.returncode == 0, done.stderr
    assert _snapshot(_outside(project)) == before
    assert (folder / ERRORS_FILE).is_symlink()
    errors = orjson.loads(done.stdout)["errors"]
    assert errors[0].startswith("error[HOOK_PAYLOAD_INVALID]")
    assert any(line.startswith("error[NOT_A_FILE]") and ERRORS_FILE in line for line in errors[1:])


def test_a_fifo_planted_as_the_error_file_does_not_hang_the_hook(project: Path) -> None:
    """A FIFO as the error file: a failing hook call finishes, exits 0, and says why in its --json errors."""
    folder = project / ".plantrail"
    folder.mkdir()
    os.mkfifo(folder / ERRORS_FILE)

    done = _hook(project, _bad(project), "--json")

    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO((folder / ERRORS_FILE).lstat().st_mode)
    assert any(line.startswith("error[NOT_A_FILE]") for line in orjson.loads(done.stdout)["errors"])


@pytest.mark.parametrize("event", ["Stop", "SubagentStop"])
def test_a_fifo_as_the_transcript_does_not_hang_the_session(project: Path, event: str) -> None:
    """A Stop (or SubagentStop) whose transcript is a FIFO finishes and exits 0, and the session's next hook
    call records its plan update: the transcript is never waited on, least of all under the session's lock."""
    fifo = project / "transcript.jsonl"
    os.mkfifo(fifo)
    stop = {"session_id": SESSION, "transcript_path": str(fifo), "cwd": str(project), "hook_event_name": event}
    if event == "SubagentStop":
        stop |= {"agent_id": "a1", "agent_transcript_path": str(fifo)}

    first = _hook(project, stop)
    second = _hook(project, _todo(project))

    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert b'"type":"step.started"' in (project / ".plantrail" / "runs" / f"{SESSION}.jsonl").read_bytes()
    assert not (project / ".plantrail" / ERRORS_FILE).exists()


#: What a repository can plant, by the path under the project it plants (made with the function given), and
#: whether an ordinary hook call must then refuse (an error line naming it) or may go on around it.
_PLANTS: dict[str, tuple[str, str, bool]] = {
    "the .plantrail folder is a link": (".plantrail", "link-folder", True),
    "the capture folder is a link": (".plantrail/capture", "link-folder", True),
    "the capture folder is a file": (".plantrail/capture", "file", True),
    "the journal is a link": (f".plantrail/capture/{JOURNAL}", "link-file", True),
    "the journal is a FIFO": (f".plantrail/capture/{JOURNAL}", "fifo", True),
    "the journal is a hard link": (f".plantrail/capture/{JOURNAL}", "hard-link", True),
    "the journal's lock is a link": (f".plantrail/capture/{JOURNAL}.lock", "link-file", True),
    "the journal's lock is a FIFO": (f".plantrail/capture/{JOURNAL}.lock", "fifo", True),
    "the state cache is a link": (f".plantrail/capture/{JOURNAL}.plantrail-cache", "link-folder", False),
    "the runs folder is a link": (".plantrail/runs", "link-folder", True),
    "the runs folder is a file": (".plantrail/runs", "file", True),
    "the log is a link": (f".plantrail/runs/{SESSION}.jsonl", "link-file", True),
    "the log is a FIFO": (f".plantrail/runs/{SESSION}.jsonl", "fifo", True),
    "the error file is a link": (f".plantrail/{ERRORS_FILE}", "link-file", False),
    "the error file is a FIFO": (f".plantrail/{ERRORS_FILE}", "fifo", False),
    "the error file is a hard link": (f".plantrail/{ERRORS_FILE}", "hard-link", False),
}


def _plant(project: Path, where: str, kind: str) -> Path:
    path = project / where
    path.parent.mkdir(parents=True, exist_ok=True)
    outside = _outside(project)
    if kind == "link-folder":
        path.symlink_to(outside / "folder", target_is_directory=True)
    elif kind == "link-file":
        path.symlink_to(outside / "victim.txt")
    elif kind == "hard-link":
        os.link(outside / "victim.txt", path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text("planted\n")
    return path


@pytest.fixture
def planted(project: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, Path, bool]]:
    where, kind, refuses = _PLANTS[request.param]
    yield project, _plant(project, where, kind), refuses


@pytest.mark.parametrize("planted", list(_PLANTS), indirect=True)
def test_nothing_planted_in_the_plantrail_folder_is_written_through_or_waited_on(
    planted: tuple[Path, Path, bool],
) -> None:
    """Whatever is planted in .plantrail/ (a link, a FIFO, a hard link, a file where a folder goes), an
    ordinary hook call and a failing one finish, change nothing outside the project, leave the planted entry
    as it is, and report only what was planted (NOT_A_FILE) and the payload's own error."""
    project, path, refuses = planted
    before_outside = _snapshot(_outside(project))
    before_plant = path.lstat()

    ordinary = _within_bound(lambda: claude_hook(orjson.dumps(_todo(project))))
    failing = _within_bound(lambda: claude_hook(orjson.dumps(_bad(project))))

    assert _snapshot(_outside(project)) == before_outside
    after = path.lstat()
    assert (after.st_mode, after.st_ino) == (before_plant.st_mode, before_plant.st_ino)
    codes = {line.split("]")[0] for line in (*ordinary.errors, *failing.errors)}
    assert codes <= {"error[NOT_A_FILE", "error[HOOK_PAYLOAD_INVALID"}, (ordinary.errors, failing.errors)
    assert ("error[NOT_A_FILE" in codes) == (refuses or ERRORS_FILE in path.name)
    assert failing.errors[0].startswith("error[HOOK_PAYLOAD_INVALID]")


class _Planted:
    """Leaves a mark when unpickled: what a planted state would do if it were ever unpickled."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.mark, "code ran"))


def test_a_planted_mapping_state_is_data_never_code(project: Path) -> None:
    """A mapping state sealed under the user's own cache key but holding a pickle (what someone who once read
    the key could plant in any project) runs no code: it does not decode, so the journal is read again and the
    hook records the update as without it."""
    import pickle

    assert claude_hook(orjson.dumps(_todo(project, "toolu_1"))).errors == ()
    cache = project / ".plantrail" / "capture" / f"{JOURNAL}.plantrail-cache"
    mark = _outside(project) / "mark"
    opened = CacheFolder.open(str(cache), create=False)
    assert opened is not None
    with opened as folder:
        assert folder.write("mapping.state", live.KIND, pickle.dumps(_Planted(mark)))

    todos = [{"content": "read the code", "status": "completed", "activeForm": "reading"}]
    update = post_tool_use(SESSION, project, "TodoWrite", "toolu_2", {"todos": todos}, {"newTodos": todos})
    assert claude_hook(orjson.dumps(update)).errors == ()

    assert not mark.exists()
    assert b'"type":"step.completed"' in (project / ".plantrail" / "runs" / f"{SESSION}.jsonl").read_bytes()


def test_a_kept_mapping_state_decodes_to_the_state_kept(project: Path) -> None:
    """The state a hook call keeps decodes, with its types checked, to an equal state; a state of the wrong
    shape decodes to none."""
    assert claude_hook(orjson.dumps(_todo(project))).errors == ()
    journal = project / ".plantrail" / "capture" / JOURNAL
    kept = live.load_state(journal)
    assert kept is not None
    state, _ = kept

    assert live.decode_state(live.encode_state(state)) == state
    assert live.decode_state(orjson.dumps({"file": 5})) is None
    assert live.decode_state(live.encode_state(state)[:-3]) is None


@pytest.mark.parametrize("agent", ["gemini", "opencode"])
def test_a_fifo_beside_a_journal_does_not_hang_the_hook(project: Path, agent: str) -> None:
    """A FIFO planted as the metadata file the importers look for beside a journal (``<journal>.meta.json``):
    the Gemini CLI and OpenCode hooks still finish and record their plan update."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
    name = "gemini_session.jsonl" if agent == "gemini" else "opencode_events.jsonl"
    lines = [line for line in (fixtures / name).read_text().replace("PROJECT", str(project)).splitlines() if line]
    session = "209c0000-gemini-hooks" if agent == "gemini" else "ses_hooks0001"
    adapter = "gemini-cli-hooks" if agent == "gemini" else "opencode-hooks"
    capture = project / ".plantrail" / "capture"
    capture.mkdir(parents=True)
    os.mkfifo(capture / f"{session}.{adapter}.meta.json")
    take = gemini_hook if agent == "gemini" else opencode_hook

    results = [_within_bound(lambda line=line: take(line.encode())) for line in lines]

    assert all(result.errors == () for result in results)
    assert (project / ".plantrail" / "runs" / f"{session}.jsonl").exists()
