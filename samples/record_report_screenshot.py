"""Regenerate docs/report.png: the run report of samples/login-fix-replans.jsonl, shot in headless Chromium.

    .venv/bin/python samples/record_report_screenshot.py

Writes the report with `plantrail report`, opens it from file:// in Debian's /usr/bin/chromium through
Playwright (every request beyond the page refused), opens version 2 (the replan that dropped check-config and
has a late result) and writes a full-page screenshot.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "samples" / "login-fix-replans.jsonl"
OUT = ROOT / "docs" / "report.png"
sys.path.insert(0, str(ROOT))  # for bench.chromium, when run as a script


def main() -> int:
    from playwright.sync_api import sync_playwright

    from bench.chromium import ARGS, CHROMIUM

    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "report.html"
        subprocess.run([sys.executable, "-m", "plantrail", "report", str(LOG), "-o", str(page_path)], check=True)
        url = page_path.as_uri()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=list(ARGS))
            page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
            page.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
            page.goto(url)
            page.wait_for_selector("body[data-ready=true]")
            page.click("#mark-v2")
            OUT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(OUT), full_page=True)
            browser.close()
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
