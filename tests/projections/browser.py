"""Headless Chromium for the report tests: Debian's ``/usr/bin/chromium`` driven by Playwright's Python package.

Downloading a browser is impossible here, so Playwright is pointed at the system Chromium. On CI
(``CI=true``) a missing browser fails the tests; elsewhere they skip with the reason.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from bench.chromium import ARGS, CHROMIUM


def missing_reason() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright's Python package is not installed (pip install -e '.[test]')"
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def require_browser() -> None:
    """Skip (or, on CI, fail) when the browser tests cannot run."""
    reason = missing_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the browser tests must run on CI: {reason}")
    pytest.skip(reason)


class Opened(NamedTuple):
    """A report opened in the browser: the page, the requests it made beyond itself, its console errors."""

    page: Any
    requests: list[str]
    errors: list[str]
    dialogs: list[str]


@contextmanager
def launched() -> Iterator[Any]:
    """A headless Chromium, closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=list(ARGS), headless=True)
        try:
            yield browser
        finally:
            browser.close()


def open_report(browser: Any, path: Path, *, width: int = 1400, height: int = 1000) -> Opened:
    """Load ``path`` from ``file://`` with every request routed and counted (the page's own load aside) and
    console errors, page errors and dialogs recorded; wait until the page says it is drawn."""
    page = browser.new_page(viewport={"width": width, "height": height})
    url = path.resolve().as_uri()
    requests: list[str] = []
    errors: list[str] = []
    dialogs: list[str] = []

    def route(r: Any) -> None:  # the page's own load goes through; anything else is refused (and counted below)
        if r.request.url == url:
            r.continue_()
        else:
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: None if r.url == url else requests.append(r.url))
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    return Opened(page, requests, errors, dialogs)
