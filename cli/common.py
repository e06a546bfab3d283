"""What every command shares: ``--json``, reading files, text inputs and logs, anchors, what can start."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from plantrail.cli.tables import count_line, table, truncate
from plantrail.cli.terminal import NARROWEST, reset_layout, screen, set_layout, verbose

if TYPE_CHECKING:
    from plantrail.ledger.stores.protocol import Run
    from plantrail.ledger.stores.values import TornTail
    from plantrail.ledger.vocabulary.errors import PlantrailError
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.ledger.vocabulary.limits import Limit
    from plantrail.projections.model import PlanState

__all__ = [
    "STORE_ENV",
    "FilePath",
    "anchor",
    "approval_lines",
    "count_line",
    "current_state",
    "current_state_noted",
    "emit",
    "json_option",
    "layout_options",
    "locate_log",
    "log_argument",
    "mark_printed",
    "new_log_argument",
    "printed_output",
    "raise_if_torn",
    "read_draft_file",
    "read_json_file",
    "read_text",
    "readiness_lines",
    "reset_output",
    "run_records",
    "snapshot_note",
    "store_option",
    "table",
    "torn_error",
    "truncate",
    "verbose_option",
    "with_times_note",
]

F = TypeVar("F", bound=Callable[..., Any])


def json_option(func: F) -> F:
    """The shared ``--json`` flag: machine output on stdout (parse it with any JSON parser)."""
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(func)


#: The environment variables a recording command takes its W3C trace context from (the names OpenTelemetry's
#: environment-carrier convention uses).
TRACEPARENT_ENV = "TRACEPARENT"
TRACESTATE_ENV = "TRACESTATE"


def trace_options(func: F) -> F:
    """The shared ``--traceparent`` and ``--tracestate`` options (default ``$TRACEPARENT``, ``$TRACESTATE``): the
    W3C trace context the command is recorded in (:func:`plantrail.ledger.tracing.traced`), checked before
    anything is written (INVALID_TRACE_CONTEXT)."""
    from plantrail.ledger.rules.commands import ENVELOPE

    @functools.wraps(func)
    def traced_call(*args: Any, traceparent: str | None, tracestate: str | None, **kwargs: Any) -> Any:
        from plantrail.ledger.tracing import traced

        with traced(traceparent or None, tracestate or None):
            return func(*args, **kwargs)

    field = ENVELOPE["trace"]
    decorate = click.option(
        "--traceparent",
        envvar=TRACEPARENT_ENV,
        metavar=field.metavar,
        help=f"{field.help} Default: ${TRACEPARENT_ENV}.",
    )
    state = click.option(
        "--tracestate",
        envvar=TRACESTATE_ENV,
        metavar="TRACESTATE",
        help=f"The W3C tracestate that goes with --traceparent. Default: ${TRACESTATE_ENV}.",
    )
    return cast("F", decorate(state(traced_call)))


def signing_options(func: F) -> F:
    """The shared ``--sign-key FILE`` and ``--sign-every N`` options (default ``$PLANTRAIL_SIGN_KEY``,
    ``$PLANTRAIL_SIGN_EVERY``): the ledger the command opens signs checkpoints on that policy
    (:func:`plantrail.ledger.signing.signing`); a bad key or N is refused before anything is written."""
    from plantrail.ledger.rules.commands import SIGNING
    from plantrail.ledger.signing_policy import SIGN_EVERY_ENV, SIGN_KEY_ENV

    @functools.wraps(func)
    def signed_call(*args: Any, sign_key: str | None, sign_every: str | None, **kwargs: Any) -> Any:
        from plantrail.ledger.signing_policy import signing, signing_policy

        with signing(signing_policy(sign_key, sign_every)):
            return func(*args, **kwargs)

    key, every = SIGNING["sign_key"], SIGNING["sign_every"]
    with_key = click.option(
        "--sign-key", envvar=SIGN_KEY_ENV, metavar=key.metavar, help=f"{key.help} Default: ${SIGN_KEY_ENV}."
    )
    with_every = click.option(
        "--sign-every", envvar=SIGN_EVERY_ENV, metavar=every.metavar, help=f"{every.help} Default: ${SIGN_EVERY_ENV}."
    )
    return cast("F", with_key(with_every(signed_call)))


def layout_options(func: F) -> F:
    """The shared ``--width N`` and ``--wrap`` options of a command that prints tables (see
    :func:`plantrail.cli.terminal.columns`); they set the layout, the command never sees them."""

    def width(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
        set_layout(width=value)

    def wrap(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        set_layout(wrap=value)

    func = click.option(
        "--wrap",
        is_flag=True,
        expose_value=False,
        callback=wrap,
        help="Wrap long texts in table cells onto more lines instead of cutting them.",
    )(func)
    return click.option(
        "--width",
        type=click.IntRange(min=NARROWEST),
        metavar="N",
        expose_value=False,
        callback=width,
        help="Lay tables out for N columns (default: $COLUMNS, else the terminal's width, else 80).",
    )(func)


def verbose_option(func: F) -> F:
    """The shared ``--verbose`` flag: also say where an answer came from (the cache's snapshot)."""

    def chosen(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        set_layout(verbose=value)

    return click.option(
        "--verbose",
        "-v",
        is_flag=True,
        expose_value=False,
        callback=chosen,
        help="Also say how the answer was read (up to which seq the cache's snapshot answered).",
    )(func)


class FilePath(click.Path):
    """A path parameter that refuses a NUL byte as a usage error (click's own check would crash on it)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "\0" in value:
            self.fail(f"{value!r} contains a NUL byte", param, ctx)
        return super().convert(value, param, ctx)


STORE_ENV = "PLANTRAIL_STORE"


def store_option(func: F) -> F:
    """The shared ``--store URL`` option (default ``$PLANTRAIL_STORE``), passed to the command as ``store``."""
    return click.option(
        "--store",
        "store",
        metavar="URL",
        envvar=STORE_ENV,
        help=f"Where runs live: a database (postgresql://.../db) or a runs folder; LOG is then a run id "
        f"(default: ${STORE_ENV}).",
    )(func)


def _located_log(dir_okay: bool, new: bool = False) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        import inspect

        wants_store = "store" in inspect.signature(func).parameters

        @functools.wraps(func)
        def located(*args: Any, log: str, store: str | None, **kwargs: Any) -> Any:
            if wants_store:
                kwargs["store"] = store
            return func(*args, log=locate_log(log, store, new=new), **kwargs)

        command = store_option(located)
        return cast("F", click.argument("log", type=FilePath(dir_okay=dir_okay, path_type=str))(command))

    return decorate


def locate_log(name: str, store: str | None, *, new: bool = False) -> str:
    """The run ``name`` names with ``store`` (see :func:`plantrail.ledger.stores.targets.locate`); for a run to be
    created (``new``) in the default runs folder, that folder is made when it is missing."""
    from plantrail.ledger.stores.opener import open_run

    run = open_run(name, store=store, new=new)
    if new and run.location != name and not store:
        run.prepare()
    return run.location


#: The LOG argument every run command takes first, with ``--store``: the command receives ``log`` as the run's
#: target (a JSONL path or ``postgresql://…/db#RUN``, see :func:`plantrail.ledger.stores.locate`). A new command
#: adopts both by taking ``log: str`` and decorating itself with ``@log_argument``; a command that also names
#: another run (``fork -o NEW``, ``verify --parent``) takes ``store: str | None`` too and passes each such name
#: through :func:`locate_log` with it.
log_argument = _located_log(dir_okay=True)
#: :data:`log_argument` for a command that creates the run (LOG may not be a folder; a bare run id with no
#: store and no such file is created in the runs folder).
new_log_argument = _located_log(dir_okay=False, new=True)


_printed: list[bool] = []  # set once a command has printed its result (reset per invocation by cli.main)
_stdin_read_by: list[str] = []  # what read standard input (it can be read once per invocation)


def printed_output() -> bool:
    """True once the running command has printed its result on stdout."""
    return bool(_printed)


def mark_printed() -> None:
    """Note that the running command has started printing its result (a streamed one, say)."""
    _printed.append(True)


def reset_output() -> None:
    """Forget earlier output and reads of standard input (one CLI invocation at a time)."""
    _printed.clear()
    _stdin_read_by.clear()
    reset_layout()


def emit(as_json: bool, data: Any, human: Callable[[], str]) -> None:
    """Print ``data`` as JSON, or the human rendering."""
    _printed.append(True)
    if as_json:
        import orjson

        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=_json_default).decode())
    else:
        click.echo(screen(human()))


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return value._asdict()
    raise TypeError(f"cannot encode {type(value).__name__}")


def read_json_file(path: str, limit: Limit) -> Any:
    """Read a JSON input file (``-`` for stdin) strictly, at most its cap (``limit``); DRAFT_INVALID when it
    is not JSON."""
    import orjson

    from plantrail.ledger.stores.files import read_capped
    from plantrail.ledger.vocabulary.errors import error

    if path == "-":
        _claim_stdin(limit.what)
    raw = read_capped(path, limit)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error("DRAFT_INVALID", f"{limit.what} {path} is not valid JSON: {exc}", path=path) from None


def read_draft_file(path: str, limit: Limit) -> Any:
    """Read a plan draft: TOML when ``path`` ends in ``.toml`` (DRAFT_INVALID with the line when it is not
    TOML), JSON otherwise (``-`` reads JSON from stdin), at most its cap (``limit``)."""
    from plantrail.ledger.stores.files import read_capped
    from plantrail.ledger.vocabulary.draft_toml import is_toml, loads_toml

    if not is_toml(path):
        return read_json_file(path, limit)
    return loads_toml(read_capped(path, limit), path, limit.what)


def _claim_stdin(what: str) -> None:
    """Note that ``what`` is read from standard input; USAGE when an earlier option already read it."""
    from plantrail.ledger.vocabulary.errors import error

    if _stdin_read_by:
        raise error(
            "USAGE", f"standard input can be read once: it already holds the {_stdin_read_by[0]}, not the {what}"
        )
    _stdin_read_by.append(what)


def _read_stdin(what: str, limit: int) -> bytes:
    """Standard input's bytes, at most ``limit``; USAGE when an earlier option already read it."""
    _claim_stdin(what)
    return sys.stdin.buffer.read(limit)


def _read_bytes(path: str, what: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (a FIFO or a device is NOT_A_FILE, never waited on)."""
    from plantrail.ledger.stores.files import open_regular

    with open(open_regular(path, what=what), "rb") as f:
        return f.read(limit)


def read_text(path: str, what: str) -> str:
    """A text input's content from file ``path`` (``-`` for standard input), whole and unchanged.

    Real tool output of any size is welcome up to the most one event can hold; anything larger is refused
    with EVENT_TOO_LARGE, never cut. The bytes must be UTF-8 (INVALID_TEXT otherwise).
    """
    from plantrail.ledger.stores.files import check_path, os_error
    from plantrail.ledger.vocabulary.codec import MAX_LINE_BYTES
    from plantrail.ledger.vocabulary.errors import error

    check_path(path, what)
    shown = "standard input" if path == "-" else path
    try:
        raw = _read_stdin(what, MAX_LINE_BYTES + 1) if path == "-" else _read_bytes(path, what, MAX_LINE_BYTES + 1)
    except OSError as exc:
        raise os_error(exc, path, what) from None
    if len(raw) > MAX_LINE_BYTES:
        raise error(
            "EVENT_TOO_LARGE",
            f"the {what} from {shown} is larger than {MAX_LINE_BYTES} bytes, the most one event can hold; "
            "nothing was recorded (keep the full output in a file and record where it is)",
            path=path,
            limit=MAX_LINE_BYTES,
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            "INVALID_TEXT", f"the {what} from {shown} is not UTF-8 text (byte {exc.start} cannot be decoded)", path=path
        ) from None


def anchor(seq: int, head: str | None) -> str | None:
    """The anchor ``SEQ:HASH`` (see :func:`plantrail.projections.views.anchor`; imported when first used)."""
    from plantrail.projections.views import anchor as view_anchor

    return view_anchor(seq, head)


def readiness_lines(state: PlanState) -> list[str]:
    """What is ready, and what of it can start now (or why not): the lines ``next`` and the acks print."""
    from plantrail.projections.repair_edges import repairs_view
    from plantrail.projections.views import capacity_view, in_doubt, ready_steps, startable_steps, wait_reasons

    ready = ready_steps(state)
    if not ready:
        return []
    lines = [f"ready: {', '.join(ready)}"]
    for row in repairs_view(state):
        if row["waiting"]:
            lines.append(f"awaiting repair: {', '.join(row['waiting'])} (until {row['step']} completes)")
    startable = startable_steps(state)
    capacity = capacity_view(state)
    running = ", ".join(s.id for s in in_doubt(state))
    if not startable and capacity["free"] != 0:  # room, yet nothing can start: the run's authority says why
        waits = wait_reasons(state)
        codes = dict.fromkeys(r["code"] for s in ready for r in waits[s])
        lines.append(f"can start now: none ({', '.join(c.replace('_', ' ') for c in codes)})")
    elif not startable:
        lines.append(f"can start now: none (max_in_progress {capacity['max_in_progress']} reached: {running})")
    elif capacity["free"] is not None and capacity["free"] < len(startable):
        lines.append(
            f"can start now: {', '.join(startable)} (room for {capacity['free']} more: max_in_progress "
            f"{capacity['max_in_progress']}, {capacity['in_progress']} in progress)"
        )
    else:
        lines.append(f"can start now: {', '.join(startable)}")
    return lines


@contextmanager
def run_records(path: str) -> Iterator[tuple[Run, Iterator[Record]]]:
    """The run ``path`` names, opened for reading, and its checked records (afterwards ``run.torn`` says
    whether a torn tail followed them)."""
    from plantrail.ledger.stores.opener import as_run

    with as_run(path) as run:
        yield run, run.records()


def torn_error(path: str, torn: TornTail) -> PlantrailError:
    """The TORN_TAIL error for a log whose valid part ends before ``torn``."""
    from plantrail.ledger.audit import torn_tail_error

    return torn_tail_error(path, torn)


def raise_if_torn(path: str, torn: TornTail | None) -> None:
    """After printing what the valid part says, report a torn tail as TORN_TAIL (exit 3)."""
    if torn is not None:
        raise torn_error(path, torn)


def current_state(path: str) -> tuple[PlanState, TornTail | None]:
    """The run's current state (from its snapshot when one checks out) and its torn tail, if any."""
    state, torn, _ = current_state_noted(path)
    return state, torn


def current_state_noted(path: str) -> tuple[PlanState, TornTail | None, int | None]:
    """Like :func:`current_state`, plus the seq up to which the answer came from a snapshot (None: all re-read)."""
    from plantrail.ledger.stores.opener import as_run

    with as_run(path) as run:
        result = run.current()
    return result.state, result.torn, result.snapshot_seq


def with_times_note(log: str, text: str) -> str:
    """``text`` (a human output whose first line names the run) with, after that line, the note that the log's
    times were not recorded by the transcript's format, when they were not (:mod:`plantrail.ledger.times`)."""
    from plantrail.ledger.times import UNRECORDED, log_times_recorded

    if log_times_recorded(log):
        return text
    first, _, rest = text.partition("\n")
    return f"{first}\n{UNRECORDED}\n{rest}" if rest else f"{first}\n{UNRECORDED}"


def snapshot_note(snapshot_seq: int | None) -> str:
    """The line a human output ends with, with ``--verbose``, when a snapshot answered part of it ("" when every
    record was read, or without ``--verbose``)."""
    if snapshot_seq is None or not verbose():
        return ""
    return (
        f"\n(answered from the cache's snapshot up to seq {snapshot_seq}: those records were not re-read; "
        "`plantrail verify` reads every byte)"
    )


def approval_lines(approvals: dict[str, Any] | None) -> list[str]:
    """What status and next say about approvals: the steps waiting for one, and the pending requests."""
    if not approvals:
        return []
    lines = []
    for w in approvals["waiting_approval"]:
        asked = f"; asked in {', '.join(w['requests'])}" if w["requests"] else "; no request yet"
        lines.append(f"waiting approval: {w['step']} ({w['because'].replace('_', ' ')}{asked})")
    for r in approvals["requests"]:
        if r["status"] == "requested":
            lines.append(f"approval requested: {r['id']} for {', '.join(r['steps'])}: {r['question']}")
    return lines
