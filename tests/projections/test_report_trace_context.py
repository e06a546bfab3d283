"""The run report shows the W3C trace context a record's command carried, in real headless Chromium: on its
version, on its attempt's bar and on a late result; a log without any keeps its report data as it was."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.cli.common import run_records
from plantrail.cli.report_page import render_report
from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.events import Trace
from plantrail.projections.report import report_data
from tests.conftest import LOGIN_DRAFT, SAMPLES
from tests.projections.browser import launched, open_report, require_browser

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
CHILD = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
RESULT = "00-4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8-01"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module (skipped, or failed on CI, when it cannot run)."""
    require_browser()
    with launched() as b:
        yield b


def _data(log: Path) -> dict[str, Any]:
    with run_records(str(log)) as (_, records):
        return report_data(records, verify={"ok": True, "code": None, "message": "checked"})


def _clock() -> Callable[[], str]:
    """Timestamps a minute apart, so every attempt's bar is wide."""
    ticks = itertools.count()
    return lambda: f"2026-12-04T10:{next(ticks):02d}:00.000000Z"


def _traced_run(path: Path) -> Path:
    with Ledger.create(
        path, copy.deepcopy(LOGIN_DRAFT), fsync="none", trace=Trace(PARENT, "congo=t61rcWkgMzE"), clock=_clock()
    ) as run:
        run.start("reproduce", trace=CHILD)
        run.complete("reproduce", "1 failed", trace=RESULT)
        run.start("diagnose")
    return path


def test_the_report_shows_a_records_trace_context(browser: Any, tmp_path: Path) -> None:
    """The version a traced plan record adopted says its trace context; an attempt's bar carries its start's and
    result's, and its tooltip says them; an untraced attempt's bar carries none; the page requests nothing."""
    html = tmp_path / "report.html"
    html.write_text(render_report(_data(_traced_run(tmp_path / "run.jsonl"))), encoding="utf-8")
    opened = open_report(browser, html)
    page = opened.page
    try:
        assert page.locator("#version-trace").inner_text() == f"trace {PARENT} (congo=t61rcWkgMzE)"
        bars = page.locator(".lane[data-step-id=reproduce] rect.bar")
        assert bars.count() == 1
        assert (bars.get_attribute("data-trace"), bars.get_attribute("data-result-trace")) == (CHILD, RESULT)
        untraced = page.locator(".lane[data-step-id=diagnose] rect.bar")
        assert untraced.get_attribute("data-trace") is None and untraced.get_attribute("data-result-trace") is None
        bars.dispatch_event("mousemove", {"clientX": 10, "clientY": 10})
        assert f"trace {CHILD}" in page.locator("#tip").inner_text()
        assert f"result's trace {RESULT}" in page.locator("#tip").inner_text()
        assert opened.requests == [] and opened.errors == []
    finally:
        page.close()


def test_a_log_without_trace_contexts_has_the_report_data_it_had() -> None:
    """A log none of whose records carries a trace context gives report data without ``traces`` (nor the
    timeline's ``at``), as before there were any."""
    data = _data(SAMPLES / "login-fix-replans.jsonl")
    assert "traces" not in data and "at" not in data["timeline"]
