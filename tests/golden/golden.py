"""What the golden pins share: the files in expected/, a stopped clock and a fixed nonce, and the CLI in process.

A pin compares its output with its file in ``expected/`` exactly, and fails with a unified diff; with
``PLANTRAIL_UPDATE_GOLDEN=1`` in the environment it rewrites the file instead (and passes).

Two values in a log are not chosen by the commands a test gives: the wall clock (every record's ``ts``, and the
"now" that leases, deadlines and resume are judged at) and the header's random nonce. Both feed every hash and
anchor, so the pins fix both, inside the test process only (the CLI runs in process, through its entry point
under click's CliRunner): the one function plantrail reads the clock through (``utc_now``) is made to read a
stopped clock, which a test sets before each command, and the 16-byte nonce a new log draws from
``secrets.token_hex`` is a fixed one. The terminal is 120 columns wide for every command and no ``PLANTRAIL_*``
variable is set. Nothing else is patched, and nothing in an output is rewritten unless a pin says so where it
does.

An invocation is kept as a transcript, readable in a diff: the command line, the exit code, then stdout and
stderr each with its line count, verbatim (so two different outputs never read the same).
"""

from __future__ import annotations

import difflib
import inspect
import os
import secrets
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO, NamedTuple

import orjson
import pytest
from click.testing import CliRunner

__all__ = [
    "EXPECTED",
    "FIXED_NONCE",
    "SAMPLES",
    "UPDATE_ENV",
    "UPDATING",
    "Cli",
    "Invocation",
    "StoppedClock",
    "assert_golden",
    "block",
    "canonical_json",
    "fix_entropy",
    "render",
    "section",
    "unified_diff",
]

#: Set to 1 to rewrite the golden files from the current outputs instead of comparing with them.
UPDATE_ENV = "PLANTRAIL_UPDATE_GOLDEN"
UPDATING = os.environ.get(UPDATE_ENV) == "1"
EXPECTED = Path(__file__).resolve().parent / "expected"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"

#: The nonce every log created under the pins carries in its header (``secrets.token_hex(16)`` otherwise).
FIXED_NONCE = "6f6c64656e2d6e6f6e63652d30303031"
_NONCE_BYTES = 16
#: The most diff lines a failure prints (the rest are counted).
_DIFF_MOST = 400


# --- comparing with the golden files ---------------------------------------------------------------------------


def assert_golden(name: str, actual: str) -> None:
    """``actual`` must equal ``expected/NAME`` byte for byte (rewritten instead when updating)."""
    path = EXPECTED / name
    if UPDATING:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != actual.encode("utf-8"):
            path.write_bytes(actual.encode("utf-8"))
        return
    if not path.exists():
        pytest.fail(f"no golden file expected/{name}: run with {UPDATE_ENV}=1 to write it", pytrace=False)
    expected = path.read_bytes().decode("utf-8")
    if expected != actual:
        hint = f"(if the change is meant, {UPDATE_ENV}=1 rewrites the file)"
        pytest.fail(f"expected/{name} differs {hint}:\n{unified_diff(expected, actual, name)}", pytrace=False)


def unified_diff(expected: str, actual: str, name: str) -> str:
    """The unified diff from ``expected`` to ``actual`` (at most :data:`_DIFF_MOST` lines of it)."""
    lines = list(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"expected/{name}",
            tofile="actual",
        )
    )
    shown = "".join(line if line.endswith("\n") else f"{line}\n" for line in lines[:_DIFF_MOST])
    more = len(lines) - _DIFF_MOST
    return shown + (f"... and {more} more diff lines\n" if more > 0 else "")


def canonical_json(value: Any) -> str:
    """``value`` as the golden files keep a document the test builds itself: indented, keys sorted, one newline."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode("utf-8") + "\n"


# --- the stopped clock and the fixed nonce ---------------------------------------------------------------------


class StoppedClock:
    """The wall clock as plantrail reads it, stopped: every reading gives :attr:`instant` until a test moves it."""

    def __init__(self, instant: datetime) -> None:
        self.instant = instant

    def set(self, instant: datetime) -> None:
        """Stop the clock at ``instant``."""
        self.instant = instant


#: The user's key the pins use (32 bytes, as plantrail makes one).
FIXED_KEY = bytes(range(32))


def _clock_module() -> ModuleType:
    """The module of the one function plantrail reads the wall clock through: the default ``clock`` of the
    front door's ``Ledger.open``, found from there so that the pins follow that function wherever it lives."""
    from plantrail import Ledger

    reader = inspect.signature(Ledger.open).parameters["clock"].default
    return sys.modules[reader.__module__]


def fix_entropy(monkeypatch: pytest.MonkeyPatch, clock: StoppedClock, state: Path | None = None) -> None:
    """Make plantrail read ``clock`` as the wall clock, draw :data:`FIXED_NONCE` as a new log's nonce, and (with
    ``state``, a folder) use :data:`FIXED_KEY` as this user's key (it tags a quarantine file's name).

    The clock function formats ``datetime.now(UTC)``; its module's ``datetime`` is replaced by one whose
    ``now`` is the stopped clock. ``secrets.token_hex`` keeps drawing at random for every other size
    (temporary file names), so only the header's nonce is fixed."""
    if state is not None:
        from plantrail.ledger.stores.jsonl.seal import KEY_FILE, STATE_ENV

        folder = state / "plantrail"
        folder.mkdir(parents=True, mode=0o700)
        key = folder / KEY_FILE
        key.write_bytes(FIXED_KEY)
        key.chmod(0o600)
        monkeypatch.setenv(STATE_ENV, str(state))

    class StoppedDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return clock.instant if tz is None else clock.instant.astimezone(tz)

    monkeypatch.setattr(_clock_module(), "datetime", StoppedDatetime)
    drawn = secrets.token_hex

    def token_hex(nbytes: int | None = None) -> str:
        return FIXED_NONCE if nbytes == _NONCE_BYTES else drawn(nbytes)

    monkeypatch.setattr(secrets, "token_hex", token_hex)


# --- the CLI in process ----------------------------------------------------------------------------------------


class Invocation(NamedTuple):
    """One ``plantrail`` command line and what it did."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str
    stdin: str | None = None


#: The environment every pinned command sees: a fixed terminal width (tables and cut cells follow it).
_ENVIRONMENT = {"COLUMNS": "120", "LINES": "24"}


class Cli:
    """``plantrail ARGS`` through its real entry point (``plantrail.cli.entry.main``), in process, with click's
    CliRunner isolating stdin, stdout and stderr. Before each command the stopped clock is set to ``start``
    plus ``step`` times the number of commands run before it: the clock stands still during one command and
    moves between commands by a fixed amount, whatever the code reads it for."""

    def __init__(self, clock: StoppedClock, start: datetime, step: timedelta = timedelta(0)) -> None:
        self.clock, self.start, self.step = clock, start, step
        self.ran: list[Invocation] = []
        self._offset = timedelta(0)

    def __call__(self, *args: str | os.PathLike[str], stdin: str | None = None) -> Invocation:
        from plantrail.cli.entry import main

        words = tuple(os.fspath(a) for a in args)
        self.clock.set(self.start + self.step * len(self.ran) + self._offset)
        with _stdin_file(stdin) as given, CliRunner().isolation(input=given, env=_ENVIRONMENT) as (out, err, _):
            code = main(list(words))
            sys.stdout.flush()
            sys.stderr.flush()
            done = Invocation(words, code, _text(out.getvalue()), _text(err.getvalue()), stdin)
        self.ran.append(done)
        return done

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` pass on the stopped clock before the next command (a lease running out, say)."""
        self._offset += timedelta(seconds=seconds)


@contextmanager
def _stdin_file(text: str | None) -> Iterator[BinaryIO]:
    """Standard input as an unnamed temporary file: a real file descriptor, as a shell's redirect gives (the
    JSON inputs read ``-`` through it), outside every folder a pin looks at."""
    with tempfile.TemporaryFile() as file:
        file.write((text or "").encode("utf-8"))
        file.seek(0)
        yield file


def _text(raw: bytes) -> str:
    """What a command printed, as text (a byte that is not UTF-8 stays visible as an escape)."""
    return raw.decode("utf-8", errors="backslashreplace")


# --- transcripts -----------------------------------------------------------------------------------------------


def render(invocations: Iterable[Invocation], shown: Callable[[str], str] = lambda word: word) -> str:
    """The transcript of ``invocations``; ``shown`` may rewrite a word of a command line for the reader (the
    outputs are never rewritten here)."""
    return "\n".join(_render_one(i, shown) for i in invocations)


def _render_one(invocation: Invocation, shown: Callable[[str], str]) -> str:
    line = "$ plantrail " + shlex.join(shown(word) for word in invocation.args)
    parts = [line]
    if invocation.stdin is not None:
        parts.append(block("stdin", invocation.stdin))
    parts += [f"exit {invocation.code}", block("stdout", invocation.out), block("stderr", invocation.err)]
    return "".join(part if part.endswith("\n") else f"{part}\n" for part in parts)


def block(name: str, text: str) -> str:
    """``text`` under a header that counts its lines and says when the last one has no newline."""
    if not text:
        return f"--- {name}: empty\n"
    lines = text.split("\n")
    whole = lines[-1] == ""
    if whole:
        lines.pop()
    note = "" if whole else ", no newline at end"
    return f"--- {name}: {len(lines)} line(s){note}\n" + "\n".join(lines) + "\n"


def section(title: str, text: str) -> str:
    """A part of a golden file that is no command's transcript (a file a command wrote, say): its title, then
    its text as :func:`block` shows it."""
    return f"=== {title}\n{block('text', text)}"
