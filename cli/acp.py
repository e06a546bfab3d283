"""``plantrail acp -- AGENT [ARGS...]``: relay an ACP agent's JSON-RPC stream and record each session's plan.

The agent runs as a child. What the editor writes on this command's stdin goes to the agent's stdin, and what
the agent writes on its stdout goes to this command's stdout, byte for byte and in order (read and written
as they come, never re-encoded); the agent's stderr is this command's. EOF on either side closes the other
side's pipe; SIGINT, SIGTERM and SIGHUP are passed to the agent; the agent's exit code is the command's
(128 + N when a signal N ended it).

Each complete line (one JSON-RPC message) is also handed, in relay order, to the recorder
(:class:`plantrail.ledger.capture.acp_recorder.AcpRecorder`) on a thread of its own, so a slow or failing
recording never holds the relay up; a message is queued for it before it is passed on, so the recorder sees a
request before the answer to it. ``--save-stream FILE`` writes every message with its direction, one a line,
for ``plantrail import``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from plantrail.cli.common import store_option

if TYPE_CHECKING:
    from plantrail.ledger.capture.acp_recorder import AcpRecorder
    from plantrail.ledger.importers.acp import Sender

__all__ = ["acp_command", "relay"]

_CHUNK = 1 << 16
#: A line longer than this is relayed but not recorded (the recorder never holds more of one message).
_LINE_CAP = 64 << 20
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@click.command(
    "acp",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@store_option
@click.option(
    "--dir",
    "directory",
    metavar="DIR",
    help="Record the runs as DIR/<run>.jsonl (default: .plantrail/runs/ under the session's working directory).",
)
@click.option(
    "--save-stream", "save_stream", metavar="FILE", help="Also write every message, with its direction, to FILE."
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- AGENT [ARGS...]")
def acp_command(command: Sequence[str], store: str | None, directory: str | None, save_stream: str | None) -> int:
    """Run an Agent Client Protocol agent, relay its stream unchanged and record its plans.

    The editor starts `plantrail acp -- AGENT ARGS` instead of the agent. Every message passes through
    unchanged, in both directions; each session's plan (`session/update` plan entries) is recorded as the
    run `acp-<sessionId>`, each protocol v2 plan (`plan_update` with a `planId`) as
    `acp-<sessionId>.<planId>`, through the importers' mapping. A failure to record never breaks the relay:
    it goes to `.plantrail/hook-errors.log` under the session's working directory. With $PLANTRAIL_SIGN_KEY
    (and $PLANTRAIL_SIGN_EVERY) the runs are signed as the recording commands' --sign-key signs them; a bad
    value is refused before the agent starts.

    \b
    Example:
      plantrail acp -- gemini --experimental-acp
      plantrail acp --save-stream session.acp.jsonl -- python my_agent.py
    """
    from plantrail.ledger.capture.acp_recorder import AcpRecorder
    from plantrail.ledger.signing_policy import policy_from_env, signing

    policy = policy_from_env(os.environ)  # a bad key or N is refused before the agent starts
    given = click.get_current_context().get_parameter_source("store") == click.core.ParameterSource.COMMANDLINE
    if directory is not None and store is not None and given:
        raise click.UsageError("--dir and --store name two places for the runs; give one")
    if directory is not None:
        store = None  # --dir overrides PLANTRAIL_STORE
    saved = _open_stream(save_stream) if save_stream is not None else None
    name = os.path.basename(save_stream) if save_stream is not None else "acp"
    recorder = AcpRecorder(store=store, directory=directory, stream_name=name)
    try:
        with signing(policy):
            return relay(list(command), recorder, saved)
    finally:
        if saved is not None:
            os.close(saved)


def _open_stream(path: str) -> int:
    """The saved stream's file, made or emptied (mode 0600), never through a link (NOT_A_FILE)."""
    from plantrail.ledger.stores.owned import Folder

    with Folder.open(os.path.dirname(path) or ".", what="folder of the saved stream") as folder:
        fd = folder.open_file(os.path.basename(path), write=True, create=True, mode=0o600, what="saved stream")
    os.ftruncate(fd, 0)
    return fd


def relay(command: list[str], recorder: AcpRecorder, saved: int | None = None) -> int:
    """Run ``command`` and relay between this process's stdin/stdout and its pipes (see the module)."""
    editor_in, editor_out = sys.stdin.fileno(), os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing else may write into the editor's stream
    try:
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, process_group=0
        )  # its own process group: a terminal's Ctrl-C reaches it once, through the relay
    except OSError as exc:
        os.close(editor_out)
        from plantrail.ledger.vocabulary.errors import error

        named = {FileNotFoundError: "FILE_NOT_FOUND", PermissionError: "PERMISSION_DENIED"}.get(type(exc), "IO_ERROR")
        raise error(named, f"cannot start the agent {command[0]!r}: {exc.strerror or exc}") from exc
    assert child.stdin is not None and child.stdout is not None
    previous = {sig: signal.signal(sig, lambda sig, _frame: _pass_on(child, sig)) for sig in _FORWARDED}
    messages: queue.Queue[tuple[Sender, bytes] | None] = queue.Queue()
    # The recorder's thread runs in this context: the signing policy (ledger.signing_policy) reaches its ledgers.
    recording = threading.Thread(
        target=contextvars.copy_context().run, args=(_record, messages, recorder, saved), daemon=True
    )
    recording.start()
    to_agent = threading.Thread(
        target=_pump, args=(editor_in, child.stdin.fileno(), "editor", messages, child.stdin.close), daemon=True
    )
    to_editor = threading.Thread(
        target=_pump,
        args=(child.stdout.fileno(), editor_out, "agent", messages, lambda: os.close(editor_out)),
        daemon=True,
    )
    to_agent.start()
    to_editor.start()
    try:
        code = child.wait()
        to_editor.join()  # the agent's last words reach the editor before the command ends
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    messages.put(None)
    recording.join()
    return code if code >= 0 else 128 - code


def _pass_on(child: subprocess.Popen[bytes], sig: int) -> None:
    if child.poll() is None:
        child.send_signal(sig)


def _pump(
    source: int,
    target: int,
    sender: Sender,
    messages: queue.Queue[tuple[Sender, bytes] | None],
    close: Callable[[], None],
) -> None:
    """Copy ``source`` to ``target`` as bytes come, queueing each whole line for the recorder before passing it
    on; at EOF call ``close``. When ``target`` goes away, ``close`` is called and ``source`` is still read to its
    end (and recorded), so the writer at the other end is never left blocked on a full pipe."""
    pending = bytearray()
    oversized = False
    target_open = True
    while chunk := _read(source):
        end = chunk.rfind(b"\n") + 1
        if end:
            lines = (bytes(pending) + chunk[:end]).split(b"\n")[:-1]
            if oversized:
                lines, oversized = lines[1:], False  # the rest of a line too long to record
            for line in lines:
                messages.put((sender, line))
            pending = bytearray(chunk[end:])
        elif not oversized:
            pending += chunk
        if len(pending) > _LINE_CAP:
            pending, oversized = bytearray(), True
            messages.put((sender, b""))  # a line too long to record: counted, never parsed
        if target_open:
            target_open = _write_all(target, chunk)
            if not target_open:
                _close(close)
    if pending and not oversized:
        messages.put((sender, bytes(pending)))
    if target_open:
        _close(close)


def _read(source: int) -> bytes:
    """The next bytes of ``source``; none at its end (or when it cannot be read)."""
    try:
        return os.read(source, _CHUNK)
    except OSError:
        return b""


def _write_all(target: int, chunk: bytes) -> bool:
    """Write all of ``chunk``; False when ``target`` has gone away."""
    view = memoryview(chunk)
    try:
        while view:
            view = view[os.write(target, view) :]
    except OSError:
        return False
    return True


def _close(close: Callable[[], None]) -> None:
    with contextlib.suppress(OSError):
        close()


def _record(messages: queue.Queue[tuple[Sender, bytes] | None], recorder: AcpRecorder, saved: int | None) -> None:
    """Hand each relayed message to the recorder (and the saved stream), in relay order, until None."""
    from plantrail.ledger.importers.acp import stream_line
    from plantrail.ledger.vocabulary.clock import utc_now

    while (item := messages.get()) is not None:
        sender, line = item
        ts = utc_now()
        if saved is not None:
            try:
                os.write(saved, stream_line(sender, line, ts))
            except OSError as exc:
                recorder.note(f"error[IO_ERROR]: the saved stream was not written: {exc.strerror or exc}")
                saved = None
        recorder.message(sender, line, ts)
    recorder.finish()
