"""``plantrail serve``: the live web view of many runs, really served by uvicorn and opened in headless Chromium.

The list follows its runs (a record appended to a run shows in an open page within 2 s, from a folder and from
PostgreSQL), the page asks nothing of another origin and logs no error, a run opens as its report, and the
server only reads, binds to loopback unless given a token, and then refuses requests without it.
"""

from __future__ import annotations

import copy
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.cli.serve import build_app, is_loopback, list_options
from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.helpers.stores import fresh_database, postgres_url
from tests.library.test_runs import DayClock, populate
from tests.projections.browser import launched, require_browser

TOKEN = "0123456789abcdef-serve-token"


@contextmanager
def serving(where: str, *, token: str | None = None) -> Iterator[str]:
    """``build_app(where)`` served by uvicorn on a free loopback port in a thread; its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        build_app(where, token=token, poll=0.1), log_level="warning", lifespan="off", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


def _code(body: bytes) -> str:
    return str(orjson.loads(body)["error"]["code"])


# --------------------------------------------------------------------------- the server's answers


def test_loopback_and_list_options() -> None:
    """Loopback addresses are told apart from the others; the list's query takes the runs filters only."""
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "::", "example.com", ""))
    options = list_options({"agent": "codex", "search": "login", "has_orphans": "1", "offset": "50"})
    assert (options["agent"], options["search"], options["has_orphans"], options["offset"]) == (
        "codex",
        "login",
        True,
        50,
    )
    for query in ({"colour": "red"}, {"limit": "0"}, {"limit": "x"}, {"offset": "-1"}, {"has_orphans": "maybe"}):
        with pytest.raises(PlantrailError) as caught:
            list_options(query)
        assert caught.value.code == "USAGE"


def test_the_list_a_report_and_refusals(tmp_path: Path) -> None:
    """/api/runs lists the folder's runs with the filters; /runs/ID is the run's report; anything but a read is
    READ_ONLY, an unknown run or a bad filter a coded JSON answer."""
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    with serving(str(tmp_path)) as base:
        status, headers, body = fetch(base)
        assert status == 200 and "connect-src 'self'" in headers["content-security-policy"]
        assert b"<script>" in body and b"src=" not in body.split(b"<script>")[0]
        answer = orjson.loads(fetch(base + "api/runs")[2])
        assert [r["id"] for r in answer["runs"]] == ["alpha", "beta", "gamma"] and answer["more"] is False
        assert orjson.loads(fetch(base + "api/runs?limit=1&offset=1")[2])["runs"][0]["id"] == "beta"
        assert orjson.loads(fetch(base + "api/runs?limit=2")[2])["more"] is True
        assert [r["id"] for r in orjson.loads(fetch(base + "api/runs?has_orphans=1")[2])["runs"]] == ["beta"]
        status, _, body = fetch(base + "runs/beta")
        assert status == 200 and b'id="report-data"' in body
        for url, method, expected, code in (
            ("api/runs", "POST", 405, "READ_ONLY"),
            ("runs/beta", "DELETE", 405, "READ_ONLY"),
            ("runs/nothing", "GET", 404, "LOG_NOT_FOUND"),
            ("runs/..%2Fescape", "GET", 404, "INVALID_ID"),
            ("api/runs?reason=because", "GET", 400, "UNKNOWN_REASON_CODE"),
            ("api/runs?colour=red", "GET", 400, "USAGE"),
        ):
            status, _, body = fetch(base + url, method=method)
            assert (status, _code(body)) == (expected, code), url
        port = base.rsplit(":", 1)[1].rstrip("/")
        for host in (f"localhost:{port}", f"[::1]:{port}", "127.0.0.1"):
            assert fetch(base + "api/runs", headers={"Host": host})[0] == 200, host
        for host in (f"evil.example:{port}", "10.0.0.1", f"127.0.0.1.evil.example:{port}"):
            status, _, body = fetch(base + "api/runs", headers={"Host": host})
            assert (status, _code(body)) == (403, "HOST_NOT_ALLOWED"), host


def test_a_token_is_required_of_every_request(tmp_path: Path) -> None:
    """With a token, a request without it is TOKEN_REQUIRED (401); a Bearer header or ?token= (then kept as a
    same-site cookie) is let through."""
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    with serving(str(tmp_path), token=TOKEN) as base:
        for url in ("", "api/runs", "runs/alpha", "events"):
            status, _, body = fetch(base + url)
            assert (status, _code(body)) == (401, "TOKEN_REQUIRED"), url
        assert fetch(base + "api/runs", headers={"Authorization": "Bearer wrong-token-of-length"})[0] == 401
        assert fetch(base + "api/runs", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
        status, headers, _ = fetch(base + f"?token={TOKEN}")
        assert status == 200 and "HttpOnly; SameSite=Strict" in headers["set-cookie"]
        assert fetch(base + "api/runs", headers={"Cookie": f"plantrail_token={TOKEN}"})[0] == 200


def test_serve_refuses_a_non_loopback_bind_without_a_token(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """Listening beyond loopback needs --token-file (NON_LOOPBACK_BIND); a token file too short or missing is
    TOKEN_FILE_INVALID; both before anything listens."""
    result = run_cli("serve", tmp_path, "--host", "0.0.0.0")
    assert result.code == 2 and "NON_LOOPBACK_BIND" in result.err
    short = tmp_path / "token"
    short.write_text("short\n")
    for given in (short, tmp_path / "absent"):
        result = run_cli("serve", tmp_path, "--host", "0.0.0.0", "--token-file", given)
        assert result.code == 2 and "TOKEN_FILE_INVALID" in result.err


# --------------------------------------------------------------------------- a live page in Chromium


def _open_list(browser: Any, base: str) -> tuple[Any, list[str], list[str]]:
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base)
    page.wait_for_selector("#status.live", timeout=10_000)
    page.wait_for_selector("tr[data-run]", timeout=10_000)
    return page, requests, errors


def _live_list(where: str, location: Callable[[str], str], row_id: Callable[[str], str]) -> None:
    """Open the list, append a record to a run, and see its row change within 2 s; every request stays on the
    server's origin and the console stays clean; the run opens as its report."""
    require_browser()
    with serving(where) as base, launched() as browser:
        page, requests, errors = _open_list(browser, base)
        beta = page.locator(f'tr[data-run="{row_id("beta")}"]')
        assert beta.get_attribute("data-seq") == "4"
        with Ledger.open(location("beta")) as ledger:
            ledger.start("reproduce")
            written = time.monotonic()
        page.wait_for_selector(f'tr[data-run="{row_id("beta")}"][data-seq="5"]', timeout=2_000)
        assert time.monotonic() - written < 2
        page.fill('input[name="search"]', "nothing matches this")
        page.wait_for_selector("td.empty", timeout=5_000)
        page.fill('input[name="search"]', "")
        page.wait_for_selector(f'tr[data-run="{row_id("alpha")}"]', timeout=5_000)
        page.click(f'tr[data-run="{row_id("beta")}"] a')
        page.wait_for_selector("body[data-ready=true]", timeout=30_000)
        assert page.locator("#axis").count() == 1
        page.close()
    origin = base.rstrip("/")
    assert requests and all(url.startswith(origin + "/") for url in requests), requests
    assert errors == []


def test_a_folder_list_follows_its_runs_in_the_browser(tmp_path: Path) -> None:
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    _live_list(str(tmp_path), lambda run: str(tmp_path / f"{run}.jsonl"), lambda run: run)


def test_a_database_list_follows_its_runs_in_the_browser(tmp_path: Path) -> None:
    for url in fresh_database(postgres_url()):
        populate(lambda run, url=url: f"{url}#{run}")
        _live_list(url, lambda run, url=url: f"{url}#{run}", lambda run: run)


def _follows() -> int:
    """The threads following a served store's changes in this process (the test's server runs in it)."""
    return sum(1 for thread in threading.enumerate() if thread.name == "plantrail-serve-follow" and thread.is_alive())


def test_open_tabs_share_one_follow_of_the_store(tmp_path: Path) -> None:
    """Two tabs of the list keep two event streams open on one follow of the store (one thread), both redraw
    the row of a run appended to, and the follow stops once both are closed."""
    require_browser()
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    with serving(str(tmp_path)) as base, launched() as browser:
        before = _follows()
        first, _, first_errors = _open_list(browser, base)
        second, _, second_errors = _open_list(browser, base)
        assert _follows() == before + 1
        with Ledger.open(tmp_path / "beta.jsonl") as ledger:
            ledger.start("reproduce")
        for page in (first, second):
            page.wait_for_selector('tr[data-run="beta"][data-seq="5"]', timeout=5_000)
        assert _follows() == before + 1
        first.close()
        second.close()
        deadline = time.monotonic() + 10
        while _follows() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _follows() == before
    assert first_errors == [] and second_errors == []


def _named(name: str) -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == name and thread.is_alive())


async def _until_async(condition: Callable[[], bool], seconds: float = 10) -> bool:
    import asyncio

    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        await asyncio.sleep(0.01)
    return condition()


def test_a_stream_gone_while_it_subscribes_still_leaves_the_shared_follow(tmp_path: Path) -> None:
    """An event stream cancelled while its subscription is being made in a thread (the client went at once)
    leaves the store's follow once the subscription is done, so the follow stops rather than running on for
    nobody."""
    import asyncio

    from plantrail.cli.serve import _event_stream
    from plantrail.ledger.run_changes import Handed, SharedChanges

    name = f"test-serve-gone-{tmp_path.name}"
    entered, release = threading.Event(), threading.Event()

    left = threading.Event()

    class Held(SharedChanges):
        def subscribe(self, hand: Callable[[Handed], None]) -> Callable[[], None]:
            entered.set()
            release.wait(10)  # the subscription is under way until the stream is gone
            leave = super().subscribe(hand)

            def leaving() -> None:
                leave()
                left.set()

            return leaving

    async def gone() -> bool:
        return True

    async def open_and_go() -> None:
        first = asyncio.ensure_future(_event_stream(gone, Held(str(tmp_path), poll=0.1, name=name)).__anext__())
        assert await _until_async(entered.is_set)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        release.set()  # the server's loop runs on: the subscription ends (the follow starts), then is left
        assert await _until_async(left.is_set)
        assert await _until_async(lambda: _named(name) == 0)

    asyncio.run(open_and_go())


def test_the_agent_filter_in_the_page(tmp_path: Path) -> None:
    """The page's agent field filters the list through the server (the rows of the agent given)."""
    from plantrail.ledger.vocabulary.events import Source

    require_browser()
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    source = Source("rollout.jsonl", tool="update_plan")
    with Ledger.create(tmp_path / "delta.jsonl", copy.deepcopy(LOGIN_DRAFT), source=source, clock=DayClock(4)):
        pass
    with serving(str(tmp_path)) as base, launched() as browser:
        page, _, errors = _open_list(browser, base)
        page.fill('input[name="agent"]', "codex")
        page.wait_for_selector('tr[data-run="alpha"]', state="detached", timeout=5_000)
        assert page.locator("tr[data-run]").count() == 1
        assert page.locator("tr[data-run] td:nth-child(3)").inner_text() == "codex"
        assert "agent=codex" in page.url
        page.fill('input[name="agent"]', "")
        page.fill('input[name="since"]', "2026-01-03")
        page.wait_for_selector('tr[data-run="alpha"]', timeout=5_000)
        assert page.locator("tr[data-run]").all_inner_texts()[0].startswith("delta")
        assert page.locator("tr[data-run]").count() == 2  # alpha (Jan 3) and delta (Jan 4)
        assert errors == []
        page.fill('input[name="since"]', "next tuesday")  # the server's refusal is shown with its code
        page.wait_for_selector("span.error", timeout=5_000)
        assert "USAGE" in page.locator("span.error").inner_text()
        page.close()
    assert all("status of 400" in e for e in errors)  # the browser's own note of the 400, nothing else


def test_the_serve_command_listens_and_says_where(tmp_path: Path) -> None:
    """`plantrail serve DIR --port 0 --json` prints one line naming the URL it listens on (a free port), serves the
    list there, and stops on SIGINT; a port already taken is USAGE before anything is served."""
    import os
    import signal
    import subprocess
    import sys

    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    env = {k: v for k, v in os.environ.items() if k != "PLANTRAIL_STORE"}
    argv = [sys.executable, "-m", "plantrail", "serve", str(tmp_path), "--port", "0", "--json"]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert server.stdout is not None
        started = orjson.loads(server.stdout.readline())
        assert started["ok"] is True and started["token"] is False and started["store"] == str(tmp_path)
        url = started["url"]
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = orjson.loads(fetch(url + "api/runs")[2])
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert [r["id"] for r in answer["runs"]] == ["alpha", "beta", "gamma"]
        port = url.rsplit(":", 1)[1].rstrip("/")
        taken = subprocess.run([*argv[:-3], "--port", port], capture_output=True, text=True, env=env, timeout=60)
        assert taken.returncode == 2 and "USAGE" in taken.stderr
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(20)
