"""What every command shares: ``--json``, reading files and logs, rendering tables."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from plantrail.ledger.errors import PlantrailError
    from plantrail.ledger.events import Record
    from plantrail.ledger.store import TornTail
    from plantrail.ledger.stores.jsonl import LogReader
    from plantrail.projections.model import PlanState

__all__ = [
    "FilePath",
    "emit",
    "json_option",
    "log_argument",
    "mark_printed",
    "open_records",
    "printed_output",
    "raise_if_torn",
    "read_json_file",
    "read_state",
    "reset_output",
    "table",
    "torn_error",
    "truncate",
]

F = TypeVar("F", bound=Callable[..., Any])


def json_option(func: F) -> F:
    """The shared ``--json`` flag: machine output on stdout (parse it with any JSON parser)."""
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(func)


class FilePath(click.Path):
    """A path parameter that refuses a NUL byte as a usage error (click's own check would crash on it)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "\0" in value:
            self.fail(f"{value!r} contains a NUL byte", param, ctx)
        return super().convert(value, param, ctx)


def log_argument(func: F) -> F:
    """The LOG argument every log command takes first."""
    return click.argument("log", type=FilePath(dir_okay=True, path_type=str))(func)


_printed: list[bool] = []  # set once a command has printed its result (reset per invocation by cli.main)


def printed_output() -> bool:
    """True once the running command has printed its result on stdout."""
    return bool(_printed)


def mark_printed() -> None:
    """Note that the running command has started printing its result (a streamed one, say)."""
    _printed.append(True)


def reset_output() -> None:
    """Forget earlier output (one CLI invocation at a time)."""
    _printed.clear()


def emit(as_json: bool, data: Any, human: Callable[[], str]) -> None:
    """Print ``data`` as JSON, or the human rendering."""
    _printed.append(True)
    if as_json:
        import orjson

        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=_json_default).decode())
    else:
        click.echo(human())


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return value._asdict()
    raise TypeError(f"cannot encode {type(value).__name__}")


def read_json_file(path: str, what: str) -> Any:
    """Read a JSON input file (``-`` for stdin) strictly; DRAFT_INVALID when it is not JSON."""
    import orjson

    from plantrail.ledger.errors import error
    from plantrail.ledger.files import check_path, os_error

    check_path(path, what)
    try:
        raw = _read_stdin() if path == "-" else _read_bytes(path)
    except OSError as exc:
        raise os_error(exc, path, what) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error("DRAFT_INVALID", f"{what} {path} is not valid JSON: {exc}", path=path) from None


def _read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@contextmanager
def open_records(path: str) -> Iterator[tuple[LogReader, Iterator[Record]]]:
    """Open a log read-only and stream its checked records."""
    from plantrail.ledger.stores.jsonl import LogReader

    with LogReader(path) as reader:
        yield reader, reader.records()


def torn_error(path: str, torn: TornTail) -> PlantrailError:
    """The TORN_TAIL error for a log whose valid part ends before ``torn``."""
    from plantrail.ledger.errors import error

    return error(
        "TORN_TAIL",
        f"{path} ends with {torn.length} bytes of an incomplete record after line {torn.line - 1}; "
        f"the output above covers the valid part; run `plantrail repair {path}`",
        line=torn.line,
        offset=torn.offset,
    )


def raise_if_torn(path: str, torn: TornTail | None) -> None:
    """After printing what the valid part says, report a torn tail as TORN_TAIL (exit 3)."""
    if torn is not None:
        raise torn_error(path, torn)


def read_state(path: str) -> tuple[PlanState, TornTail | None]:
    """The log's current state (from its snapshot when one checks out) and its torn tail, if any."""
    from plantrail.ledger.stores.reads import read_state as read

    result = read(path)
    return result.state, result.torn


def truncate(text: str | None, width: int) -> str:
    """One line of at most ``width`` characters."""
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 1)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, last_flexible: bool = True) -> str:
    """A plain aligned table; the last column is cut to fit the terminal."""
    if not rows:
        return "  (none)"
    cells = [list(headers), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if last_flexible:
        room = shutil.get_terminal_size((120, 24)).columns - sum(w + 2 for w in widths[:-1]) - 2
        widths[-1] = max(min(widths[-1], room), 12)
        cells = [[*r[:-1], truncate(r[-1], widths[-1])] for r in cells]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)
