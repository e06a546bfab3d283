"""`python -m bench.report`: the run report of the benchmark's log, its size and its first paint in Chromium.

Records the scenario's run (bench/scenario.py, 10^5 events by default: about 1,400 plan versions), writes its
report as `plantrail report` does, and opens it from file:// in headless Chromium (Debian's /usr/bin/chromium
through Playwright) a few times: first contentful paint and the time until the whole page is drawn, medians.
Targets: the file under 5 MB, first paint under 2 s. Exit 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.chromium import ARGS, CHROMIUM
from bench.scenario import record_run
from plantrail.cli.common import run_records
from plantrail.cli.report_page import render_report
from plantrail.projections.report import report_data

MAX_BYTES = 5_000_000
MAX_FIRST_PAINT_MS = 2000.0


def paint_times(page_path: Path, loads: int) -> tuple[list[float], list[float], int]:
    """First contentful paint and drawn-by times (ms) of ``loads`` fresh loads, and the requests beyond the page."""
    from playwright.sync_api import sync_playwright

    url = page_path.resolve().as_uri()
    paints: list[float] = []
    drawn: list[float] = []
    requests = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=list(ARGS))
        for _ in range(loads):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
            seen: list[str] = []
            page.on("request", lambda r, seen=seen: None if r.url == url else seen.append(r.url))
            page.goto(url)
            page.wait_for_selector("body[data-ready=true]", timeout=120_000)
            fcp = page.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime")
            paints.append(float(fcp))
            drawn.append(float(page.evaluate("performance.now()")))
            requests += len(seen)
            page.close()
        browser.close()
    return paints, drawn, requests


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__)
    parser.add_argument("--events", type=int, default=100_000, help="events in the recorded run")
    parser.add_argument("--loads", type=int, default=3, help="page loads to take the median of")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="plantrail-report-bench-") as tmp:
        log = record_run(Path(tmp) / "run.jsonl", args.events)
        started = time.perf_counter()
        with run_records(str(log)) as (_, records):
            data = report_data(records, verify={"ok": True, "code": None, "message": "not run by the benchmark"})
        page = Path(tmp) / "run.html"
        page.write_text(render_report(data), encoding="utf-8")
        built = time.perf_counter() - started
        size = page.stat().st_size
        paints, drawn, requests = paint_times(page, args.loads)
    fcp, whole = statistics.median(paints), statistics.median(drawn)
    print(f"report of a {data['last_seq']}-event log, {len(data['versions'])} plan versions")
    print("| measure | value | target |\n| --- | --- | --- |")
    print(f"| build (report_data + render_report) | {built:.2f} s | - |")
    print(f"| file size | {size / 1e6:.2f} MB | < {MAX_BYTES / 1e6:.0f} MB |")
    print(f"| first contentful paint (median of {args.loads}) | {fcp:.0f} ms | < {MAX_FIRST_PAINT_MS:.0f} ms |")
    print(f"| whole page drawn (median of {args.loads}) | {whole:.0f} ms | - |")
    print(f"| requests beyond the page | {requests} | 0 |")
    return 0 if size < MAX_BYTES and fcp < MAX_FIRST_PAINT_MS and requests == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
