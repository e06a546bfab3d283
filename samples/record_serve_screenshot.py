"""Regenerate docs/serve.png and docs/report-timeline.png: `plantrail serve` over a copy of the samples' runs,
shot in headless Chromium.

    .venv/bin/python samples/record_serve_screenshot.py

Copies the samples' logs into a temporary runs folder, tears the tail of login-fix-replans (a crash mid-write)
and repairs it, serves the folder with the `plantrail serve` application on a free loopback port, and shoots the
list of runs and the report of the repaired run (its timeline: the time axis, durations, the replans in their
reason's colour and the repair). Every request the pages make must stay on the server's origin.
"""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST_OUT = ROOT / "docs" / "serve.png"
REPORT_OUT = ROOT / "docs" / "report-timeline.png"
sys.path.insert(0, str(ROOT))  # for bench.chromium, when run as a script


def _runs_folder(folder: Path) -> None:
    from plantrail.ledger.api import Ledger

    for log in sorted((ROOT / "samples").glob("*.jsonl")):
        if log.stem == "claude-session" or log.name.endswith(".v1.plantrail.jsonl"):
            continue  # a transcript, and the older format's copy of the run imported from it
        shutil.copyfile(log, folder / log.name)
    repaired = folder / "login-fix-replans.jsonl"
    with repaired.open("ab") as f:
        f.write(b'{"v":1,"seq":99,"ts":"2026-11-29T22:05')  # a crash mid-write
    with Ledger.open(repaired, repair=True, clock=lambda: "2026-11-29T22:06:10.000000Z"):
        pass


def main() -> int:
    import uvicorn
    from playwright.sync_api import sync_playwright

    from bench.chromium import ARGS, CHROMIUM
    from plantrail.cli.serve import build_app

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "runs"
        folder.mkdir()
        _runs_folder(folder)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        server = uvicorn.Server(
            uvicorn.Config(build_app(str(folder)), log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        outside: list[str] = []
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=list(ARGS))
                page = browser.new_page(viewport={"width": 1280, "height": 620}, device_scale_factor=1)
                page.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
                page.goto(base)
                page.wait_for_selector("#status.live")
                page.wait_for_selector("tr[data-run]")
                page.screenshot(path=str(LIST_OUT), full_page=True)
                page.set_viewport_size({"width": 1280, "height": 900})
                page.goto(base + "runs/login-fix-replans")
                page.wait_for_selector("body[data-ready=true]")
                top, bottom = page.evaluate(
                    "() => [document.querySelector('#timeline').previousElementSibling,"
                    " document.querySelector('#lanes')]"
                    ".map((e, i) => (i ? e.getBoundingClientRect().bottom : e.getBoundingClientRect().top) + scrollY)"
                )
                clip = {"x": 0, "y": top - 8, "width": 1280, "height": bottom - top + 24}
                page.screenshot(path=str(REPORT_OUT), full_page=True, clip=clip)
                browser.close()
        finally:
            server.should_exit = True
            thread.join(10)
    if outside:
        print(f"the pages asked for another origin: {outside}", file=sys.stderr)
        return 1
    print(f"wrote {LIST_OUT.relative_to(ROOT)} and {REPORT_OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
