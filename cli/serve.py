"""``plantrail serve``: a live, read-only web view of the runs of a runs folder or a database.

A small Starlette application, thin over the library's reads: the list is :func:`plantrail.ledger.runs.list_runs`
(its filters, ``--agent`` and ``--search`` included, a page at a time), a run opens as the report ``plantrail
report`` writes (:func:`plantrail.projections.report.report_data`), and ``/events`` streams server-sent events
fed by :func:`plantrail.ledger.run_changes.run_changes` (LISTEN/NOTIFY on PostgreSQL, a scan of a folder's
entries and sizes), so an open list follows its runs as they are appended to: one follow of the store, shared
by every open stream (:class:`plantrail.ledger.run_changes.SharedChanges`).

Only GET is answered. The server binds to loopback unless given a token file; with a token, every request must
carry it (``Authorization: Bearer``, or ``?token=`` once, which the page keeps as a same-site cookie).
Refusals are JSON with a stable code. The pages load nothing from another origin: their CSS and script are
inline, and their Content-Security-Policy allows nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from html import escape
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

import click

from plantrail.cli.common import STORE_ENV, json_option, mark_printed
from plantrail.ledger.stores.locations import default_run_id
from plantrail.ledger.vocabulary.errors import PlantrailError, error

if TYPE_CHECKING:
    from plantrail.ledger.run_changes import Handed, SharedChanges
    from plantrail.projections.runs import RunRow

__all__ = ["PAGE_SIZE", "build_app", "is_loopback", "read_token", "serve_command"]

#: Rows per page of the list.
PAGE_SIZE: Final = 50
#: The most rows one request may ask for.
MOST_ROWS: Final = 500
_COOKIE: Final = "plantrail_token"
_LIST_CSP: Final = (
    "default-src 'none'; connect-src 'self'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: Seconds between the comments that keep an idle event stream open through proxies.
_KEEPALIVE_S: Final = 15.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) names this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """The name in a Host header, without its port (``[::1]:8765`` -> ``::1``)."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def read_token(path: str) -> str:
    """The token a token file holds (its first line, stripped); TOKEN_FILE_INVALID when it is unreadable, empty
    or shorter than 16 characters."""
    try:
        with open(path, encoding="utf-8") as f:
            token = f.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise error("TOKEN_FILE_INVALID", f"token file {path}: cannot be read ({exc.__class__.__name__})") from None
    if len(token) < 16:
        raise error(
            "TOKEN_FILE_INVALID", f"token file {path}: its first line must hold a token of 16 characters or more"
        )
    return token


# --------------------------------------------------------------------------- what the list's query asks for


def _flag(value: str | None) -> bool:
    if value in (None, "", "0", "false"):
        return False
    if value in ("1", "true", "on"):
        return True
    raise error("USAGE", f"has_orphans {value!r}: give 1 or 0")


def _count(value: str | None, name: str, default: int) -> int:
    if value is None or value == "":
        return default
    if not value.isdigit():
        raise error("USAGE", f"{name} {value!r}: not a whole number")
    return int(value)


def list_options(query: Mapping[str, str]) -> dict[str, Any]:
    """``list_runs``'s options from a request's query (the same names as ``plantrail runs``' options); USAGE for
    a value that is malformed or a name it does not take."""
    known = {
        "outcome",
        "since",
        "until",
        "reason",
        "agent",
        "search",
        "has_orphans",
        "sort",
        "limit",
        "offset",
        "token",
    }
    for name in query:
        if name not in known:
            raise error("USAGE", f"the list takes no {name!r} (it takes {', '.join(sorted(known - {'token'}))})")
    limit = _count(query.get("limit"), "limit", PAGE_SIZE)
    if not 1 <= limit <= MOST_ROWS:
        raise error("USAGE", f"a limit of {limit} rows: it must be from 1 to {MOST_ROWS}")
    return {
        "outcome": query.get("outcome") or None,
        "since": query.get("since") or None,
        "until": query.get("until") or None,
        "reason": query.get("reason") or None,
        "agent": query.get("agent") or None,
        "search": query.get("search") or None,
        "has_orphans": _flag(query.get("has_orphans")),
        "sort": query.get("sort") or "last_activity",
        "limit": limit + 1,  # one more than shown says whether a next page exists
        "offset": _count(query.get("offset"), "offset", 0),
        "details": True,
        "reasons": False,  # the list shows no reasons: a folder's rows need not read them
    }


def _run_id(row: RunRow, database: bool) -> str:
    """The id the store opens a row's run by: a database's run id, a folder's file name without ``.jsonl``."""
    if database:
        return str(row.run)
    return default_run_id(row.location)


def _item(row: RunRow, database: bool) -> dict[str, Any]:
    """A row as ``/api/runs`` gives it: the ``runs --json`` row with the run's ``id`` and without ``reasons`` (the
    list does not read them)."""
    item = row.as_dict() | {"id": _run_id(row, database)}
    del item["reasons"]
    return item


def _asset(name: str) -> str:
    return str(resources.files("plantrail.cli").joinpath(name).read_text(encoding="utf-8"))


def list_page(where: str) -> str:
    """The list's page: inline CSS and script; the rows come from ``/api/runs``."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>plantrail · {escape(where)}</title><style>{_asset('serve_page.css')}</style></head>"
        f'<body><div id="app" data-store="{escape(where)}"></div>'
        f"<script>{_asset('serve_page.js')}</script></body></html>\n"
    )


# --------------------------------------------------------------------------- the application


def build_app(where: str, *, token: str | None = None, poll: float = 0.25) -> Any:
    """The ASGI application over the runs folder or database ``where``; ``token``, when given, is required of
    every request."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from plantrail.ledger.run_changes import SharedChanges
    from plantrail.ledger.stores.jsonl.run import FolderStore
    from plantrail.ledger.stores.opener import open_store

    opened = open_store(where)
    database = not isinstance(opened, FolderStore)
    # a folder's rows are kept between requests, each read again only when its log changes
    store = opened if database else FolderStore(opened.location, remember=True)
    location = str(store.location)

    listing = threading.Lock()
    # one follow of the store, shared by every open event stream (started by the first, stopped after the last)
    changes = SharedChanges(store, poll=poll, name="plantrail-serve-follow")

    def refused(status: int, exc: PlantrailError) -> JSONResponse:
        body = {"ok": False, "error": {"code": exc.code, "message": exc.message}}
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})

    def allowed(request: Request) -> bool:
        if token is None:
            return True
        given = request.headers.get("authorization", "")
        candidates = [
            given[len("Bearer ") :] if given.startswith("Bearer ") else "",
            request.cookies.get(_COOKIE, ""),
            request.query_params.get("token", ""),
        ]
        return any(hmac.compare_digest(c.encode(), token.encode()) for c in candidates if c)

    async def index(request: Request) -> Response:
        return HTMLResponse(list_page(location), headers={"Content-Security-Policy": _LIST_CSP})

    def rows(query: Mapping[str, str]) -> dict[str, Any]:
        from plantrail.ledger.runs import list_runs

        options = list_options(query)
        shown = options["limit"] - 1
        with listing:  # one listing at a time: a folder's kept rows are not shared between threads
            found = list_runs(store, **options)
        items = [_item(row, database) for row in found[:shown]]
        return {"ok": True, "store": location, "offset": options["offset"], "more": len(found) > shown, "runs": items}

    async def api_runs(request: Request) -> Response:
        try:
            answer = await asyncio.to_thread(rows, dict(request.query_params))
        except PlantrailError as exc:
            return refused(400 if exc.exit_code in (1, 2) else 500, exc)
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    def report(run_id: str) -> str:
        from plantrail.cli.pictures import verified_report
        from plantrail.cli.report_page import render_report

        run = store.run(run_id)
        if not run.exists():
            if database:
                raise error("RUN_NOT_FOUND", f"database {location} holds no run {run_id!r}", run=run_id)
            raise error("LOG_NOT_FOUND", f"runs folder {location} holds no run {run_id!r}", path=run.location)
        return render_report(verified_report(run))

    async def run_page(request: Request) -> Response:
        try:
            page = await asyncio.to_thread(report, request.path_params["run"])
        except PlantrailError as exc:
            status = 404 if exc.code in ("RUN_NOT_FOUND", "LOG_NOT_FOUND", "INVALID_ID", "NOT_A_FILE") else 500
            return refused(400 if exc.exit_code in (1, 2) and status == 500 else status, exc)
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def events(request: Request) -> Response:
        return StreamingResponse(
            _event_stream(request.is_disconnected, changes),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    app = Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/api/runs", api_runs, methods=["GET"]),
            Route("/runs/{run:path}", run_page, methods=["GET"]),
            Route("/events", events, methods=["GET"]),
        ]
    )

    async def guard(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        request = Request(scope)
        if request.method not in ("GET", "HEAD"):
            answer = refused(405, error("READ_ONLY", f"{request.method}: plantrail serve only reads (GET)"))
            answer.headers["Allow"] = "GET, HEAD"
            await answer(scope, receive, send)
            return
        if token is None and not is_loopback(_host_name(request.headers.get("host", ""))):
            # without a token only this machine's names are answered: a page elsewhere cannot rebind a name to
            # the loopback address and read the runs through the browser
            refusal = error("HOST_NOT_ALLOWED", "without a token this server answers requests to a loopback name only")
            await refused(403, refusal)(scope, receive, send)
            return
        if not allowed(request):
            await refused(401, error("TOKEN_REQUIRED", "this server requires its token"))(scope, receive, send)
            return
        keep = token is not None and request.query_params.get("token") and request.cookies.get(_COOKIE) != token

        async def sending(message: Mapping[str, Any]) -> None:
            if keep and message["type"] == "http.response.start":
                cookie = f"{_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict".encode()
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await app(scope, receive, sending)

    return guard


def _leave_once_subscribed(subscribing: asyncio.Future[Callable[[], None]]) -> None:
    """Leave the shared follow a stream subscribed to after it was gone (its subscription ended in a thread)."""
    if not subscribing.cancelled() and subscribing.exception() is None:
        subscribing.result()()


async def _event_stream(disconnected: Callable[[], Awaitable[bool]], changes: SharedChanges) -> AsyncIterator[str]:
    """``event: runs`` with the ids of the runs that changed, as the store's shared follow reports them (this
    stream leaves it when the client goes), and a comment now and then to keep the stream open."""
    import orjson

    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Handed] = asyncio.Queue()

    def hand(item: Handed) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the server is stopping
            loop.call_soon_threadsafe(queue.put_nowait, item)

    # a database's head is a query: taken off the loop; a client gone meanwhile still leaves once subscribed
    subscribing = asyncio.ensure_future(asyncio.to_thread(changes.subscribe, hand))
    try:
        leave = await asyncio.shield(subscribing)
    except asyncio.CancelledError:
        subscribing.add_done_callback(_leave_once_subscribed)
        raise
    try:
        yield "retry: 1000\n: following\n\n"
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), timeout=_KEEPALIVE_S)
            except TimeoutError:
                if await disconnected():
                    return
                yield ": still here\n\n"
                continue
            if isinstance(item, PlantrailError):
                body = {"code": item.code, "message": item.message}
                yield f"event: failed\ndata: {orjson.dumps(body).decode()}\n\n"
                return
            yield f"event: runs\ndata: {orjson.dumps(sorted(item)).decode()}\n\n"
    finally:
        leave()


# --------------------------------------------------------------------------- the command


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host`` and ``port`` (0: a free one), for uvicorn to serve on; USAGE when it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise error("USAGE", f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    return sock


@click.command("serve")
@click.argument("where", metavar="[DIR]", required=False)
@click.option(
    "--store",
    metavar="URL",
    envvar=STORE_ENV,
    help=f"A database (or runs folder) instead of DIR (default: ${STORE_ENV}).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port (0: any free).")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=str),
    metavar="FILE",
    help="A file whose first line is the token every request must carry (required to listen beyond loopback).",
)
@json_option
def serve_command(
    where: str | None, store: str | None, host: str, port: int, token_file: str | None, as_json: bool
) -> None:
    """Serve a live, read-only web view of many runs: the list with the filters of `plantrail runs` (outcome,
    reason, agent, search, late results), each run's report, and the list kept up to date as runs are appended
    to (server-sent events: LISTEN/NOTIFY on a database, a scan of a folder's logs). DIR is a runs folder
    (default: $PLANTRAIL_HOME/runs, else .plantrail/runs); --store a database.

    It listens on loopback unless given --token-file; then every request must carry the token (an
    "Authorization: Bearer TOKEN" header, or ?token=TOKEN once in the browser, kept as a cookie). The pages
    load nothing from another origin. It prints where it listens, then serves until stopped (Ctrl-C).

    \b
    JSON: {"ok", "url", "store", "token"} (one line once it listens; "token" whether requests need one)

    \b
    Example:
      plantrail serve .plantrail/runs
      plantrail serve --store postgresql://localhost/plantrail --port 8080
      plantrail serve --host 0.0.0.0 --token-file ~/.plantrail-token
    """
    if where is not None and store is not None and store != where and os.environ.get(STORE_ENV) != store:
        raise error("USAGE", "give a runs folder or --store, not both")
    token = None if token_file is None else read_token(token_file)
    if token is None and not is_loopback(host):
        raise error(
            "NON_LOOPBACK_BIND",
            f"--host {host}: listening beyond this machine needs --token-file (every request must then carry it)",
        )
    try:
        import uvicorn
    except ImportError:  # pragma: no cover - the serve extra is missing
        raise error("USAGE", "plantrail serve needs its extra: pip install 'plantrail[serve]'") from None
    from plantrail.ledger.stores.opener import open_store

    location = str(open_store(where if where is not None else store).location)
    app = build_app(location, token=token)
    sock = _listening_socket(host, port)
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/"
    started = {"ok": True, "url": url, "store": location, "token": token is not None}
    if as_json:
        import orjson

        click.echo(orjson.dumps(started).decode())
    else:
        click.echo(f"plantrail serve: {location} on {url} (read-only; Ctrl-C stops)")
    sys.stdout.flush()
    mark_printed()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
