"""The hook's own transcript: what an agent's hooks delivered for one session, one JSON object a line.

A hook call sees one payload; the mapping needs the session's plan updates in order. So each payload the hook
takes is written, in the dialect of the agent's own transcript, to ``.plantrail/capture/<session>.<agent>.jsonl``
beside the runs folder, and the run's log is the mapping of that file (``append``), exactly as ``import
--append`` maps the agent's transcript. The journal is input, never a second copy of the log: nothing reads
the run's state from it, and a log can always be rebuilt from it (``plantrail import --append JOURNAL -o
LOG``).

* **One writer at a time.** A hook holds the journal's exclusive lock (``flock`` on ``<journal>.lock``) from
  before it reads the
  journal until the log is appended, so parallel hooks of one session never interleave, in the journal or
  in the log (the log's own lock serialises its writers as always).
* **Re-delivery.** A line names its call (``tool_use_id``); a call the journal holds already is not written
  again (the mapping would recognise it anyway).
* **A torn last line** (a crash mid-write) is not a record to the parser; the next hook appends after it,
  on a line of its own.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import orjson

from plantrail.ledger.stores.locations import child_path

if TYPE_CHECKING:
    from pathlib import Path

    from plantrail.ledger.stores.owned import Folder

__all__ = ["CAPTURE_FOLDER", "Journal", "journal_file", "journal_path"]

CAPTURE_FOLDER = "capture"


def journal_path(plantrail_folder: Path, session: str, agent: str, suffix: str = ".jsonl") -> Path:
    """Where a session's hook journal lives: ``<.plantrail>/capture/<session>.<agent>.jsonl`` (``.json`` for
    a dialect whose transcript is one document)."""
    return plantrail_folder / CAPTURE_FOLDER / f"{session}.{agent}{suffix}"


def journal_file(plantrail_folder: str, session: str, agent: str, suffix: str = ".jsonl") -> str:
    """:func:`journal_path` as a string for a folder :func:`plantrail.ledger.stores.locations.pure_path` gave (a
    hook call's: no :mod:`pathlib`); ``session`` is a checked id."""
    return child_path(plantrail_folder, CAPTURE_FOLDER, f"{session}.{agent}{suffix}")


class Journal:
    """A session's hook journal, opened and locked for one hook call (``path`` as the caller named it).

    Its folder is held open (:class:`plantrail.ledger.stores.owned.Folder`: a project's ``.plantrail/`` is not
    plantrail's own), and the journal, its lock file and a document journal's replacement are reached through
    it: no link is followed, nothing blocks, nothing planted is written through."""

    def __init__(self, path: str | os.PathLike[str], folder: Folder, name: str, fd: int) -> None:
        self.path = path
        self.folder = folder
        self.name = name
        self._fd = fd

    @classmethod
    @contextmanager
    def locked(cls, path: str | os.PathLike[str], folder: Folder | None = None) -> Iterator[Journal]:
        """Open (creating folder and file when missing) and hold the exclusive lock until the block ends (the
        lock is on ``<journal>.lock``, so a document journal can be replaced whole under it). ``folder`` is the
        journal's folder when the caller holds it open (a hook call: reached from the project without
        following a link); else the folder ``path`` names is opened (made when missing)."""
        from plantrail.ledger.stores.owned import Folder

        name = os.path.basename(path)
        held = folder if folder is not None else Folder.open(os.path.dirname(path) or ".", create=True)
        try:
            lock = held.open_file(f"{name}.lock", write=True, create=True, mode=0o644, what="journal lock")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                fd = held.open_file(name, append=True, create=True, mode=0o644, what="journal")
                journal = cls(path, held, name, fd)
                try:
                    yield journal
                finally:
                    os.close(journal._fd)
            finally:
                os.close(lock)  # releases the lock
        finally:
            if folder is None:
                held.close()

    def rewrite(self, blob: bytes) -> None:
        """Put ``blob`` in the journal's place whole (a temporary file, fsynced, renamed over it)."""
        self.folder.replace(self.name, blob, what="journal")
        fd = self.folder.open_file(self.name, append=True, what="journal")
        os.close(self._fd)
        self._fd = fd

    def content(self) -> bytes:
        """The journal's bytes as they are (at most a transcript's cap: INPUT_TOO_LARGE past it)."""
        from plantrail.ledger.stores.owned import read_descriptor
        from plantrail.ledger.vocabulary.limits import TRANSCRIPT

        return read_descriptor(self._fd, TRANSCRIPT.cap(), os.fspath(self.path), "journal")

    def lines(self) -> list[dict[str, object]]:
        """Every whole JSON object line of the journal, in order (a torn or foreign line is passed over)."""
        found: list[dict[str, object]] = []
        for raw in self.content().splitlines():
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                found.append(value)
        return found

    def append(self, records: Sequence[dict[str, object]]) -> None:
        """Append records, one line each, with one write (after a newline if a torn line ends the file)."""
        if not records:
            return
        blob = b"".join(orjson.dumps(record) + b"\n" for record in records)
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            blob = b"\n" + blob
        os.write(self._fd, blob)
        os.fdatasync(self._fd)  # the data and the size that reaches it, as the log's appends (no timestamps)
