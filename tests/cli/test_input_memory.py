"""Every reader of an outside file holds an amount of memory its cap bounds, never one that grows with the
file's lines: measured as the peak resident size (``ru_maxrss``) of a child process reading a generated input,
against the same reader on a tiny input.

Two walks, each checked complete against the code: :data:`CAPPED` has a trial for every cap of
:data:`plantrail.ledger.vocabulary.limits.LIMITS` (a whole input read at once, held within a small multiple of
its size), and :data:`PADDED` a padded transcript for every importer format (``parse.FORMATS``), which is
streamed: its memory must not grow with the file at all. The subagent transcript a SubagentStop hook reads is
streamed too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from plantrail.ledger.importers.parse import FORMATS
from plantrail.ledger.vocabulary.limits import LIMITS
from tests.conftest import LOGIN_DRAFT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
MB = 1 << 20
#: How much more than on a tiny input a streamed reader may hold, whatever the file's size.
STREAMED_SLACK = 8 * MB
#: How many times a whole input's size a reader may hold on top of that (a parsed JSON value is larger than its
#: text: an empty object is a 64-byte dict for its 3 bytes).
WHOLE_FACTOR = 40
#: The size of a streamed input: large enough that holding it, or a small record per line, exceeds the slack.
STREAMED_SIZE = 8 * MB

#: Runs its arguments as a child and reports the child's peak resident size. A process's ``ru_maxrss`` keeps the
#: peak of the memory it had before its ``exec``: a child started straight from the test process would report
#: the test's own peak. This small process's children start from its fresh memory, so theirs is their own.
_PEAK = """
import os, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], check=False)
os.write(2, b"\\nPEAK_KB=%d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_of(command: list[str], *, stdin: bytes = b"", env: dict[str, str] | None = None, cwd: Path) -> int:
    """The peak resident size, in bytes, of ``command`` run as a grandchild (timed out after 5 min)."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, *command],
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=300,
        check=False,
    )
    marks = [line for line in done.stderr.splitlines() if line.startswith(b"PEAK_KB=")]
    assert marks, done.stderr[-2000:]
    return int(marks[-1].removeprefix(b"PEAK_KB=")) * 1024


def peak(args: list[str | Path], *, stdin: bytes = b"", env: dict[str, str] | None = None, cwd: Path) -> int:
    """The peak resident size, in bytes, of ``plantrail ARGS``."""
    return _peak_of([sys.executable, "-m", "plantrail", *map(str, args)], stdin=stdin, env=env, cwd=cwd)


# --------------------------------------------------------------------------- the capped whole inputs


@dataclass(frozen=True)
class Trial:
    """How to read one kind of outside file: ``setup(folder)`` makes what the command needs besides the input,
    ``write(path, size)`` the input itself (about ``size`` bytes, the worst shape for memory), ``args(folder,
    path)`` the command; ``stdin`` when the input goes on standard input."""

    write: Callable[[Path, int], None]
    args: Callable[[Path, Path], list[str | Path]]
    setup: Callable[[Path], None] = lambda folder: None
    stdin: bool = False
    size: int = MB


def _empty_steps(path: Path, size: int) -> None:
    draft = {**LOGIN_DRAFT, "steps": [{}] * (size // 3)}
    path.write_bytes(orjson.dumps(draft))


def _empty_operations(path: Path, size: int) -> None:
    path.write_bytes(orjson.dumps({"base_version": 1, "operations": [{}] * (size // 3)}))


def _many_paths(path: Path, size: int) -> None:
    path.write_bytes(orjson.dumps({"changed_paths": [f"p{n}" for n in range(size // 8)]}))


def _log(folder: Path) -> None:
    from plantrail.ledger.api import Ledger

    with Ledger.create(folder / "run.jsonl", LOGIN_DRAFT, fsync="none") as ledger:
        ledger.start("reproduce")


def _claude_junk(path: Path, size: int) -> None:
    path.write_bytes((FIXTURES / "claude_new_schema.jsonl").read_bytes() + b'{"type":"zz"}\n' * (size // 14))


def _hook_payload(path: Path, size: int) -> None:
    payload = {
        "session_id": "s1",
        "transcript_path": str(path.parent / "t.jsonl"),
        "cwd": str(path.parent),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": {"lines": [0] * (size // 2)},
        "tool_use_id": "t1",
    }
    path.write_bytes(orjson.dumps(payload))


_PAYLOAD = """
import sys
from plantrail.ledger.stores.jsonl.log import JsonlStore
from plantrail.ledger.stores.jsonl.run import FileRun
store = JsonlStore.open(sys.argv[1], fsync="none")
stored = store.store_payload(open(sys.argv[2], "rb").read())
store.close()
with FileRun(sys.argv[1]) as run:
    assert len(run.payload(stored.digest)) > 0
"""


def _many_members(path: Path, size: int) -> None:
    """A zip of many empty members (no manifest): each is a directory entry the reader holds while it checks
    the archive, the worst shape for its memory."""
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for n in range(max(1, size // 110)):
            archive.writestr(f"runs/m{n:07d}", b"")


#: A trial for every cap, by the cap's name (``Limit.what``).
CAPPED: dict[str, Trial] = {
    "draft": Trial(_empty_steps, lambda folder, path: ["check", path]),
    "patch": Trial(
        _empty_operations,
        lambda folder, path: (
            ["replan", folder / "run.jsonl", "--patch", path, "--reason", "new_constraint", "--why", "x"]
        ),
        setup=_log,
    ),
    "report": Trial(
        _many_paths,
        lambda folder, path: ["complete", folder / "run.jsonl", "reproduce", "-e", "x", "--report", path],
        setup=_log,
    ),
    "key file": Trial(
        lambda path, size: path.write_bytes(os.urandom(size)),
        lambda folder, path: ["verify", folder / "run.jsonl", "--key-file", path],
        setup=_log,
        size=60_000,
    ),
    "transcript": Trial(_claude_junk, lambda folder, path: ["import", path, "-o", folder / "out.jsonl"]),
    "hook payload": Trial(_hook_payload, lambda folder, path: ["hook", "claude"], stdin=True),
    "evidence pack": Trial(_many_members, lambda folder, path: ["verify", "--pack", path]),
    "payload": Trial(
        lambda path, size: path.write_bytes(os.urandom(size)),
        lambda folder, path: ["--payload", folder / "run.jsonl", path],
        setup=_log,
        size=8 * MB,
    ),
}


def _measure(trial: Trial, folder: Path, size: int) -> int:
    folder.mkdir()
    trial.setup(folder)
    path = folder / "input"
    trial.write(path, size)
    args = trial.args(folder, path)
    if args[0] == "--payload":  # a payload is read by the library, not by a command
        return _peak_of_script(_PAYLOAD, [str(a) for a in args[1:]], folder)
    stdin = path.read_bytes() if trial.stdin else b""
    return peak(args, stdin=stdin, env={"PLANTRAIL_HOME": str(folder / "home")}, cwd=folder)


def _peak_of_script(script: str, args: list[str], cwd: Path) -> int:
    return _peak_of([sys.executable, "-c", script, *args], cwd=cwd)


def test_every_cap_has_a_trial() -> None:
    """Each cap of LIMITS is measured below (a new cap fails here until it has a trial)."""
    assert set(CAPPED) == {limit.what for limit in LIMITS}


@pytest.mark.parametrize("what", sorted(CAPPED))
def test_a_capped_input_is_read_in_memory_its_size_bounds(tmp_path: Path, what: str) -> None:
    """An input of the worst shape (a million empty items, or one large value) costs at most WHOLE_FACTOR times
    its size more than a tiny one: no reader keeps something per item that outgrows the item."""
    trial = CAPPED[what]
    tiny = _measure(trial, tmp_path / "tiny", 64)
    large = _measure(trial, tmp_path / "large", trial.size)
    assert large - tiny <= WHOLE_FACTOR * trial.size + 16 * MB, (what, tiny // MB, large // MB)


# --------------------------------------------------------------------------- the streamed transcripts


def _lines(fixture: str, junk: bytes) -> Callable[[Path, int], None]:
    def write(path: Path, size: int) -> None:
        path.write_bytes((FIXTURES / fixture).read_bytes() + junk * (size // len(junk)))

    return write


def _messages(fixture: str, key: str | None) -> Callable[[Path, int], None]:
    """The fixture's JSON document with its message array padded with large items no format reads."""

    def write(path: Path, size: int) -> None:
        document = orjson.loads((FIXTURES / fixture).read_bytes())
        padding = [{"zz": "x" * 1000}] * (size // 1010)
        if key is None:
            document = [*document, *padding]
        else:
            document[key] = [*document[key], *padding]
        path.write_bytes(orjson.dumps(document))

    return write


#: A padded transcript for every importer format: the format's fixture and many lines (or items) it skips.
PADDED: dict[str, Callable[[Path, int], None]] = {
    "claude-code": _lines("claude_new_schema.jsonl", b'{"type":"zz"}\n'),
    "codex": _lines("codex_rollout.jsonl", b"\n"),
    "gemini-jsonl": _lines("gemini_session.jsonl", b'{"zz":1}\n'),
    "gemini": _messages("gemini_session.json", "messages"),
    "opencode": _messages("opencode_export.json", "messages"),
    "cline": _messages("cline_history.json", None),
    "gemini-share": _lines("gemini_share.md", b"words of a model, never a plan, " * 3 + b"\n"),
    "opencode-markdown": _lines("opencode_export.md", b"words of an assistant, never a plan, " * 3 + b"\n"),
    "acp": _lines("acp_stream.jsonl", b'{"from":"agent","text":"zz"}\n'),
}


def test_every_format_has_a_padded_transcript() -> None:
    """Each format the importer reads is measured below (a new format fails here until it is)."""
    assert set(PADDED) == set(FORMATS)


@pytest.mark.parametrize("format_name", sorted(PADDED))
def test_a_transcript_is_streamed_whatever_its_size(tmp_path: Path, format_name: str) -> None:
    """Importing a padded transcript of STREAMED_SIZE bytes holds at most STREAMED_SLACK more than importing a
    tiny one: no reader holds the file, its lines or a record per line."""
    sizes = {}
    for name, size in (("tiny", 0), ("large", STREAMED_SIZE)):
        folder = tmp_path / name
        folder.mkdir()
        path = folder / "transcript"
        PADDED[format_name](path, size)
        args: list[str | Path] = ["import", path, "-o", folder / "out.jsonl", "--format", format_name]
        sizes[name] = peak(args, cwd=folder)
    assert sizes["large"] - sizes["tiny"] <= STREAMED_SLACK, (format_name, {k: v // MB for k, v in sizes.items()})


def test_a_subagent_transcript_is_streamed_by_its_hook(tmp_path: Path) -> None:
    """A SubagentStop hook reads the subagent's transcript a line at a time: a STREAMED_SIZE transcript costs at
    most STREAMED_SLACK more than a tiny one."""
    sizes = {}
    for name, size in (("tiny", 0), ("large", STREAMED_SIZE)):
        folder = tmp_path / name
        folder.mkdir()
        transcript = folder / "agent.jsonl"
        _claude_junk(transcript, size)
        payload = {
            "session_id": "s1",
            "transcript_path": str(folder / "lead.jsonl"),
            "cwd": str(folder),
            "hook_event_name": "SubagentStop",
            "agent_id": "a1",
            "agent_transcript_path": str(transcript),
        }
        sizes[name] = peak(["hook", "claude"], stdin=orjson.dumps(payload), cwd=folder)
    assert sizes["large"] - sizes["tiny"] <= STREAMED_SLACK, {k: v // MB for k, v in sizes.items()}
