"""The ACP recorder: the messages an editor and an agent exchange -> each plan's run, through the one mapping.

    recorder = AcpRecorder(store=None, directory=None)
    recorder.message("editor", b'{"jsonrpc":"2.0","id":1,"method":"session/new",...}')   # never raises

It sees every message the relay passes (``plantrail acp``, :mod:`plantrail.cli.acp`) in the order they were
relayed, and does no I/O of the relay: it only reads the messages. The dialect adapter
(:mod:`plantrail.ledger.importers.acp`) finds the plan updates; each plan (``<sessionId>``, or
``<sessionId>.<planId>`` for a protocol v2 plan) has its own :class:`~plantrail.ledger.importers.mapping.LiveMapping`
and its own run, ``acp-<key>`` (hashed when that is no valid run id), and each update's batch is appended with
:func:`~plantrail.ledger.capture.append.write_batches`, as a hook appends its journal's, keyed by the update's
place in its plan and a digest of its entries: a session loaded again in a later relay, whose agent replays its
updates, is recognised as recorded, and only its new updates are appended.

Where a run lives: in the store ``--store`` names (or ``$PLANTRAIL_STORE``), else in ``--dir``, else in
``.plantrail/runs/`` under the session's working directory (``$PLANTRAIL_HOME/runs`` when set). A Markdown plan
(no items) that comes before its plan's first version is kept in that version's notes; the ledger records no
version without steps, so a later one is written down as an error. Anything that goes wrong is one line in the
hook error file under the session's working directory (:data:`~plantrail.ledger.capture.hook.ERRORS_FILE`),
never an exception: the editor and the agent never see the recorder.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec
import orjson

from plantrail.ledger.importers import acp
from plantrail.ledger.importers.mapping import LiveMapping
from plantrail.ledger.importers.model import ListSnapshot
from plantrail.ledger.stores.locations import child_path, run_file
from plantrail.ledger.vocabulary.clock import utc_now
from plantrail.ledger.vocabulary.cut import one_line
from plantrail.ledger.vocabulary.errors import PlantrailError

from .hook import append_errors, plantrail_folder, plantrail_root

if TYPE_CHECKING:
    pass

__all__ = ["AcpRecorder", "PlanStream"]

NOTE_LIMIT = 2000


class PlanStream(msgspec.Struct):
    """One plan's recording: its run, where its log is, its mapping, and the messages it has seen."""

    key: str
    session: str
    run: str
    log: str
    mapping: LiveMapping
    updates: int = 0
    markdown: bool = False
    """Whether a Markdown plan came before the plan's first version (it is in that version's notes)."""


class AcpRecorder:
    """Records every plan of an ACP stream as it is relayed (see the module)."""

    def __init__(
        self,
        *,
        store: str | None = None,
        directory: str | None = None,
        stream_name: str = "acp",
        env: Mapping[str, str] | None = None,
    ) -> None:
        from plantrail.ledger.stores.targets import STORE_ENV

        self.env = env if env is not None else os.environ
        self.store = None if directory is not None else (store or self.env.get(STORE_ENV) or None)
        """The store the runs go to: ``store``, else ``$PLANTRAIL_STORE``; none when ``directory`` is given."""
        self.directory = directory
        self.stream_name = stream_name
        self.reader = acp.Reader()
        self.plans: dict[str, PlanStream] = {}
        self.line = 0
        self.errors: list[str] = []
        """Every error line written down so far (what the error file got)."""

    def message(self, sender: acp.Sender, raw: bytes, ts: str | None = None) -> None:
        """Record what one message (``raw``, without its newline) relayed at ``ts`` (default: now) says; never
        raises."""
        self.line += 1
        ts = ts or utc_now()
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return  # not JSON-RPC: relayed, nothing to record
        session = None
        try:
            for found in acp.read_message(self.reader, self.line, sender, message, ts):
                session = found.session
                self._record(found)
        except PlantrailError as exc:
            self._write_down(session, f"error[{exc.code}]: message {self.line}: {exc.message}")
        except Exception as exc:  # the relay must never break; the error is written down
            self._write_down(session, f"error[INTERNAL]: message {self.line}: {type(exc).__name__}: {exc}")

    def note(self, line: str) -> None:
        """Write down an error of the relay itself (one line in the hook error file; never raises)."""
        self._write_down(None, line)

    def finish(self) -> None:
        """At the end of the stream: write down each Markdown plan that never became a version (never raises)."""
        for plan in self.plans.values():
            if plan.markdown and plan.mapping.mapper.plan is None:
                self._write_down(
                    plan.session,
                    f"error[EMPTY_PLAN]: plan {plan.key}: its Markdown plan was not recorded (a plan version needs "
                    "at least one step, and the plan never listed one)",
                )

    def _record(self, found: acp.Found) -> None:
        from plantrail.ledger.capture.append import write_batches
        from plantrail.ledger.stores.opener import as_run

        plan = self.plans.get(found.key) or self._start(found)
        update = found.update
        if isinstance(update, acp.Markdown):
            self._markdown(found, plan, update)
            return
        plan.updates += 1
        batches = plan.mapping.apply(self.stream_name, update)
        if not batches:
            return
        identity = _identity(plan.updates, update)
        if self.store is None:
            self._check_log(found.session, plan.log)
        as_run(plan.log).prepare()
        report = write_batches(
            plan.log,
            [(identity, batch) for batch in batches],
            session=found.key,
            run=plan.run,
            plan_updates=plan.updates,
            own_journal=True,
        )
        for refused in report.refused:
            self._write_down(found.session, f"error[{refused.code}]: plan {found.key}: {refused.message}")

    def _start(self, found: acp.Found) -> PlanStream:
        run = acp.run_id(found.key)
        agent = f"; agent {self.reader.agent}" if self.reader.agent else ""
        note = f"captured live by plantrail's acp recorder v{acp.ADAPTER_VERSION} (plan {found.key}{agent})"
        mapping = LiveMapping.start(format=acp.FORMAT, session=found.key, notes=(note,))
        plan = PlanStream(found.key, found.session, run, self._log(found.session, run), mapping)
        self.plans[found.key] = plan
        return plan

    def _markdown(self, found: acp.Found, plan: PlanStream, update: acp.Markdown) -> None:
        text = one_line(update.content, NOTE_LIMIT)
        mapper = plan.mapping.mapper
        if mapper.plan is None:  # version 1's notes, made from these when the plan's first list comes
            mapper.file_notes = (*mapper.file_notes, f"message {update.line}: the agent's plan as Markdown: {text}")
            plan.markdown = True
            return
        self._write_down(
            found.session,
            f"error[EMPTY_PLAN]: plan {found.key}: the Markdown plan at message {update.line} was not recorded "
            "(a plan version needs at least one step)",
        )

    def _log(self, session: str, run: str) -> str:
        from plantrail.ledger.stores.opener import open_store

        if self.store is not None:
            return str(open_store(self.store).run(run).location)
        if self.directory is not None:
            return os.fspath(run_file(self.directory, run))
        folder = os.fspath(plantrail_folder(self.reader.cwd.get(session), self.env))
        return os.fspath(run_file(child_path(folder, "runs"), run))

    def _check_log(self, session: str, log: str) -> None:
        """A log file is absent or a regular file of its own (NOT_A_FILE otherwise: never appended through a
        link); the runs folder under ``.plantrail`` is made without following a link."""
        from plantrail.ledger.stores.owned import Folder
        from plantrail.ledger.vocabulary.errors import error

        if self.directory is not None:
            runs = Folder.open(self.directory, create=True, what="runs folder")
        else:
            with plantrail_root(self.reader.cwd.get(session), self.env) as root:
                runs = root.folder("runs", create=True, what="runs folder")
        with runs:
            found = runs.lstat(os.path.basename(log))
        if found is not None and (not stat.S_ISREG(found.st_mode) or found.st_nlink > 1):
            raise error("NOT_A_FILE", f"the log {log} is not a regular file of its own; it was left as it is", path=log)

    def _write_down(self, session: str | None, line: str) -> None:
        """One error line in the hook error file under the session's working directory (never raises)."""
        self.errors.append(line)
        cwd = self.reader.cwd.get(session) if session is not None else None
        text = f"{utc_now()} acp session {session or '-'}: {' '.join(line.split())}\n".encode()
        try:
            with plantrail_root(cwd, self.env) as root:
                append_errors(root, text)
        except (PlantrailError, OSError) as exc:
            self.errors.append(f"error: the hook error file was not written: {exc}")


def _identity(place: int, update: ListSnapshot) -> str:
    """The identity of a plan's ``place``-th update (from 1): its place and a digest of its entries, never its
    place in one relay's stream, so that a session loaded again (``session/load``, whose agent replays the
    session's updates) is recognised as recorded and only what is new is appended."""
    entries = orjson.dumps([(item.text, item.status, item.priority) for item in update.items])
    return f"update-{place}-{hashlib.sha256(entries).hexdigest()[:16]}"
