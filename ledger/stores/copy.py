"""Copy runs between stores byte for byte: a JSONL file (its path) and a database run (``postgresql://…#RUN``).

Every record is read back checked (framing, hash, schema, seq, chain) before anything is written, and the
destination holds exactly the source's canonical lines, so it verifies with the same head hash. A
destination run that exists is refused (``LOG_EXISTS``); a JSONL destination appears atomically (a temporary
file, fsynced, linked into place). A folder copies each ``*.jsonl`` in it; a database URL without a run
copies every run in the database.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from plantrail.ledger.stores.targets import is_database_url
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import LogOpened, Record

__all__ = ["CopiedRun", "copy_runs", "runs_at"]


class CopiedRun(NamedTuple):
    """One run copied: where from, where to, how many records, and the head hash both now end at."""

    source: str
    destination: str
    records: int
    head: str


def runs_at(source: str) -> list[str]:
    """The runs a copy source names: one file or database run, every ``*.jsonl`` of a folder, every run of a
    database."""
    if is_database_url(source):
        from plantrail.ledger.stores.postgres import list_runs, parse_location

        location = parse_location(source)
        if location.run is not None:
            return [source]
        base = source.split("#", 1)[0]
        return [f"{base}#{run}" for run in list_runs(base)]
    if os.path.isdir(source):
        return sorted(str(p) for p in Path(source).glob("*.jsonl") if p.is_file() and not p.is_symlink())
    return [source]


def copy_runs(source: str, destination: str) -> list[CopiedRun]:
    """Copy every run ``source`` names to ``destination`` (a file, a folder, a database run or a database)."""
    runs = runs_at(source)
    if not runs:
        raise error("USAGE", f"{source} holds no run to copy")
    many = len(runs) > 1 or _is_collection(source)
    copied = []
    for run in runs:
        records, lines = _checked_run(run)
        header = records[0].data
        assert isinstance(header, LogOpened)
        target = _target(destination, header.run, many)
        _write(target, records, lines)
        copied.append(CopiedRun(run, target, len(records), records[-1].h))
    return copied


def _is_collection(source: str) -> bool:
    if is_database_url(source):
        from plantrail.ledger.stores.postgres import parse_location

        return parse_location(source).run is None
    return os.path.isdir(source)


def _target(destination: str, run: str, many: bool) -> str:
    """Where one run goes: into a database as itself, into a folder as ``<run>.jsonl``, or to the path given."""
    if is_database_url(destination):
        from plantrail.ledger.stores.postgres import parse_location

        location = parse_location(destination)
        if location.run is not None and many:
            raise error("USAGE", f"{destination} names one run; copy several runs into a database, not a run")
        if location.run is not None and location.run != run:
            raise error(
                "USAGE",
                f"a copy keeps its run id {run!r} (every line and hash holds it): copy to {location.conninfo}#{run}",
            )
        return f"{destination.split('#', 1)[0]}#{run}"
    if many or os.path.isdir(destination):
        from plantrail.ledger.stores.locations import run_file

        os.makedirs(destination, exist_ok=True)
        return run_file(destination, run)
    return destination


def _checked_run(source: str) -> tuple[list[Record], list[bytes]]:
    """Every record of a run, checked, with its line exactly as stored (newline included)."""
    if is_database_url(source):
        from plantrail.ledger.stores.postgres import read_checked_lines

        pairs = list(read_checked_lines(source))
        return [record for record, _ in pairs], [line for _, line in pairs]
    from plantrail.ledger.stores.jsonl.log import LogReader

    with LogReader(source) as reader:
        records = list(reader.records())
        if reader.torn is not None:
            raise error(
                "TORN_TAIL",
                f"{source} ends with a torn tail at line {reader.torn.line}: repair it before copying",
                line=reader.torn.line,
                path=source,
            )
        blob = os.pread(reader.fd, reader.end, 0)  # exactly the bytes the records were checked from
    lines = blob.splitlines(keepends=True)
    if len(lines) != len(records) or len(blob) != reader.end:
        raise error("IO_ERROR", f"{source} changed while it was copied; copy it again", path=source)
    return records, lines


def _write(target: str, records: list[Record], lines: list[bytes]) -> None:
    if is_database_url(target):
        from plantrail.ledger.stores.postgres import insert_run

        insert_run(target, [(r.seq, line[:-1], r.h, r.key) for r, line in zip(records, lines, strict=True)])
        return
    from plantrail.ledger.stores.jsonl.log import create_from_lines

    create_from_lines(target, b"".join(lines))
