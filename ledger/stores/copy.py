"""Copy runs between stores byte for byte: a JSONL file and a database run, a runs folder and a database.

What names the source and the destination is read as every command reads a run's name (a path, a
``postgresql://…#RUN`` URL, a run id in the store ``--store`` or ``PLANTRAIL_STORE`` names; see
:mod:`plantrail.ledger.stores.opener`): a folder or a database's URL without a run names every run in it, and
with no destination the runs go into the store. Each run is read back checked (framing, hash, schema, seq,
chain) before anything is written, and the destination holds exactly the source's canonical lines, so it
verifies with the same head hash; a JSONL destination appears atomically (a temporary file, fsynced, linked
into place), a database run in one transaction.

Each run is copied on its own, and said (:class:`CopiedRun`): ``copied``; ``skipped`` when the destination
holds it already, the same records up to the same head hash (so a copy that stopped is run again to finish
it); ``failed`` with the error that refused it: a damaged source (its damage code), a destination that exists
and differs (``LOG_EXISTS``), a store that cannot be reached. A failed run does not stop the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.events import LogOpened, Record

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.run import FileRun, FolderStore
    from plantrail.ledger.stores.postgres_run import DatabaseRun, DatabaseStore
    from plantrail.ledger.stores.protocol import Run

__all__ = ["CopiedRun", "checked_lines", "copy_runs", "not_copied"]

Status = Literal["copied", "skipped", "failed"]


class CopiedRun(NamedTuple):
    """One run of a copy: where from, where to (None when the source could not be read far enough to say), how
    many records and the head hash both end at, and what happened (``problem``: why it failed)."""

    source: str
    destination: str | None
    records: int
    head: str | None
    status: Status = "copied"
    problem: PlantrailError | None = None


def copy_runs(
    source: str,
    destination: str | None = None,
    *,
    store: str | None = None,
    on_run: Callable[[CopiedRun], None] | None = None,
    skip_copied: bool = True,
) -> list[CopiedRun]:
    """Copy every run ``source`` names to ``destination`` (default: ``store``), each told to ``on_run`` as it is
    done; USAGE when the source holds no run or the destination cannot take them. A run that fails does not
    stop the others: once all are done, the first failure is raised (:func:`not_copied`), with every run's
    outcome as the error's ``partial``. ``skip_copied=False`` refuses (LOG_EXISTS) a destination that holds
    the same run already, as every other existing one (a caller that must have written the run itself)."""
    from plantrail.ledger.stores.jsonl.run import FolderStore
    from plantrail.ledger.stores.opener import open_destination, open_source
    from plantrail.ledger.stores.postgres_run import DatabaseStore

    found = open_source(source, store=store)
    many = isinstance(found, FolderStore | DatabaseStore)
    runs: Sequence[Run] = found.runs() if isinstance(found, FolderStore | DatabaseStore) else [found]
    if not runs:
        raise error("USAGE", f"{source} holds no run to copy")
    into = open_destination(destination, store=store, many=many)
    done = []
    for run in runs:
        one = _copy_one(run, into, skip_copied)
        done.append(one)
        if on_run is not None:
            on_run(one)
    not_copied(done)
    return done


def not_copied(copied: list[CopiedRun]) -> None:
    """Raise the first failed run's error, saying how many runs were not copied, with ``copied`` as its
    ``partial`` (nothing when none failed)."""
    failed = [c for c in copied if c.problem is not None]
    if not failed:
        return
    first = failed[0].problem
    assert first is not None
    if len(copied) == 1:
        raise first
    raised = error(
        first.code,
        f"{len(failed)} of {len(copied)} runs not copied; the first, {failed[0].source}: {first.message}",
        advice=first.code,
        **first.fields,
    )
    raised.partial = copied
    raise raised


def _copy_one(run: Run, into: FolderStore | DatabaseStore | FileRun | DatabaseRun, skip_copied: bool) -> CopiedRun:
    """One run copied, skipped or failed (a usage error, which no other run would escape, is raised)."""
    target: Run | None = None
    try:
        records, lines = checked_lines(run)
        header = records[0].data
        assert isinstance(header, LogOpened)
        target = _target(into, header.run)
        copied = CopiedRun(run.location, target.location, len(records), records[-1].h)
        if target.exists() and skip_copied:
            return _already_there(target, copied)
        if target.exists():
            raise error(
                "LOG_EXISTS", f"{target} already exists; plantrail never overwrites a run", path=target.location
            )
        _write(target, records, lines)
        return copied
    except PlantrailError as exc:
        if exc.code == "USAGE":
            raise
        where = None if target is None else target.location
        return CopiedRun(run.location, where, 0, None, "failed", exc)
    finally:
        run.close()


def _target(into: FolderStore | DatabaseStore | FileRun | DatabaseRun, run_id: str) -> Run:
    """Where run ``run_id`` goes: a store's run of that id, or the run named (a database run keeps its id)."""
    from plantrail.ledger.stores.jsonl.run import FolderStore
    from plantrail.ledger.stores.postgres_run import DatabaseStore

    if isinstance(into, FolderStore | DatabaseStore):
        return into.run(run_id)
    target = into
    if target.names_its_id:
        try:
            target.new_run_id(run_id)
        except PlantrailError:
            raise error(
                "USAGE",
                f"a copy keeps its run id {run_id!r} (every line and hash holds it): {target} names another run",
            ) from None
    return target


def _already_there(target: Run, copied: CopiedRun) -> CopiedRun:
    """``copied`` skipped when ``target`` holds the same records up to the same head hash; else LOG_EXISTS."""
    try:
        with target:
            last = None
            for record in target.records():
                last = record
            whole = target.torn is None
    except PlantrailError as exc:
        raise error(
            "LOG_EXISTS",
            f"{target.location} exists and does not read whole ({exc.code}: {exc.message}); it is left as it is",
            path=target.location,
            cause=exc.code,
        ) from None
    if whole and last is not None and (last.seq + 1, last.h) == (copied.records, copied.head):
        return copied._replace(status="skipped")
    held = "nothing whole" if last is None else f"{last.seq + 1} records, head {last.h}"
    raise error(
        "LOG_EXISTS",
        f"{target.location} exists and differs ({held}; the source has {copied.records}, head {copied.head}); "
        "plantrail never overwrites a run",
        path=target.location,
    )


def checked_lines(run: Run, doing: str = "copying") -> tuple[list[Record], list[bytes]]:
    """Every record of a run, checked, with its line exactly as stored (newline included); TORN_TAIL (repair it
    before ``doing``) for a log that ends in a torn tail."""
    from plantrail.ledger.stores.jsonl.run import FileRun

    if not isinstance(run, FileRun):
        from plantrail.ledger.stores.postgres import read_checked_lines

        pairs = list(read_checked_lines(run.location))
        return [record for record, _ in pairs], [line for _, line in pairs]
    reader = run.reader
    records = list(reader.records())
    if reader.torn is not None:
        raise error(
            "TORN_TAIL",
            f"{run.location} ends with a torn tail at line {reader.torn.line}: repair it before {doing}",
            line=reader.torn.line,
            path=run.location,
        )
    blob = os.pread(reader.fd, reader.end, 0)  # exactly the bytes the records were checked from
    lines = blob.splitlines(keepends=True)
    if len(lines) != len(records) or len(blob) != reader.end:
        raise error("IO_ERROR", f"{run.location} changed while {doing} it; try again", path=run.location)
    return records, lines


def _write(target: Run, records: list[Record], lines: list[bytes]) -> None:
    from plantrail.ledger.stores.jsonl.run import FileRun

    if not isinstance(target, FileRun):
        from plantrail.ledger.stores.postgres import insert_run

        insert_run(target.location, [(r.seq, line[:-1], r.h, r.key) for r, line in zip(records, lines, strict=True)])
        return
    from plantrail.ledger.stores.jsonl.log import create_from_lines

    target.prepare()
    create_from_lines(target.location, b"".join(lines))
