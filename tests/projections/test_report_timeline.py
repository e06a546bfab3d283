"""The report's timeline reads like a timeline: a time axis, a duration on each attempt, and marks for a crash's
repair (``log.repaired``), abandons, lease expiries and approvals; every replan reason has its own colour, each
readable on the page's white (WCAG contrast) and far from every other (CIELAB distance)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from plantrail.cli.report_page import render_report
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.run import FileRun
from plantrail.ledger.vocabulary.events import REASON_CODES
from plantrail.projections.report import MARK_COLOURS, REASON_COLOURS, report_data
from plantrail.projections.timeline import MARK_KINDS, timeline
from tests.logs import read_records
from tests.projections.browser import launched, open_report, require_browser
from tests.rules.test_leases import leased_draft


def _clock(*seconds: float) -> Iterator[str]:
    for s in seconds:
        yield f"2026-01-01T00:{int(s) // 60:02d}:{s % 60:06.3f}Z"


def marked_run(path: Path) -> None:
    """A leased step whose lease runs out (started at 1 s, renewed at 30 s for 60 s: out at 90 s), abandoned at
    200 s, started again and completed; an approval asked and granted; then a crash's torn tail repaired."""
    times = _clock(0, 1, 30, 200, 210, 215, 220, 230, 240)
    with Ledger.create(path, leased_draft(60), clock=lambda: next(times)) as ledger:
        ledger.start("implement")
        ledger.heartbeat("implement")
        ledger.abandon("implement", "worker w1 was killed")
        ledger.start("implement")
        ledger.complete("implement", "the new test passes")
    with Ledger.open(path, clock=lambda: next(times)) as ledger:
        ledger.request_approval("ship", "May we run the suite on staging?", ["verify"])
        ledger.approve("ship", by="ana", why="staging is free")
    with path.open("ab") as f:
        f.write(b'{"v":2,"seq":99,"torn')
    with Ledger.open(path, repair=True, clock=lambda: "2026-01-01T00:05:00.000Z"):
        pass


def test_the_timeline_marks_repairs_abandons_lease_expiries_and_approvals(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    marked_run(path)
    line = timeline(read_records(path), ())
    got = [(m.kind, m.ts[14:23], m.step) for m in line.marks]
    assert got == [
        ("lease_expired", "01:30.000", "implement"),
        ("abandon", "03:20.000", "implement"),
        ("approval_requested", "03:40.000", "verify"),
        ("approval_granted", "03:50.000", "verify"),
        ("repair", "05:00.000", None),
    ]
    assert {m.kind for m in line.marks} <= set(MARK_KINDS) == set(MARK_COLOURS)
    assert "21 bytes" in line.marks[-1].text and "worker w1 was killed" in line.marks[1].text
    assert line.last_ts == "2026-01-01T00:05:00.000Z"  # the repair extends the axis


def test_a_lease_renewed_in_time_is_no_expiry(tmp_path: Path) -> None:
    times = _clock(0, 1, 50, 100, 140)
    with Ledger.create(tmp_path / "run.jsonl", leased_draft(60), clock=lambda: next(times)) as ledger:
        ledger.start("implement")
        ledger.heartbeat("implement")
        ledger.heartbeat("implement")
        ledger.complete("implement", "done")
    assert timeline(read_records(tmp_path / "run.jsonl"), ()).marks == ()


def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _rgb(colour: str) -> tuple[float, float, float]:
    r, g, b = (_linear(int(colour[i : i + 2], 16)) for i in (1, 3, 5))
    return r, g, b


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two sRGB colours."""

    def luminance(colour: str) -> float:
        r, g, b = _rgb(colour)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def distance(a: str, b: str) -> float:
    """CIE76 colour difference (Euclidean distance in CIELAB, D65)."""

    def lab(colour: str) -> tuple[float, float, float]:
        r, g, b = _rgb(colour)
        x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
        y = 0.2126 * r + 0.7152 * g + 0.0722 * b
        z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

        def f(t: float) -> float:
            return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

        return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))

    return sum((p - q) ** 2 for p, q in zip(lab(a), lab(b), strict=True)) ** 0.5


def test_contrast_and_distance_are_measured_right() -> None:
    """The measures themselves, on known pairs: black on white 21:1, a colour with itself 1:1 and no distance."""
    assert round(contrast("#000000", "#ffffff"), 2) == 21.0
    assert contrast("#777777", "#777777") == 1.0 and distance("#1d4ed8", "#1d4ed8") == 0.0
    assert round(contrast("#767676", "#ffffff"), 2) == 4.54  # the grey WCAG's examples put just over 4.5:1
    assert round(distance("#000000", "#ffffff")) == 100


def test_every_replan_reason_has_a_distinct_readable_colour() -> None:
    """Each reason code (and ``created``) has a colour of at least 3:1 on white, every two at least 25 apart."""
    assert set(REASON_COLOURS) == {"created", *REASON_CODES}
    for colours in (REASON_COLOURS, MARK_COLOURS):
        for name, colour in colours.items():
            assert contrast(colour, "#ffffff") >= 3, name
    for (a, ca), (b, cb) in itertools.combinations(REASON_COLOURS.items(), 2):
        assert distance(ca, cb) >= 25, (a, b)
    assert len(set(MARK_COLOURS.values())) == len(MARK_COLOURS)


def test_the_report_draws_the_axis_durations_and_the_repair(tmp_path: Path) -> None:
    """In Chromium: the time axis with its labels, each attempt's duration, the repair across every lane and the
    other marks on their step's lane; lane labels are the steps' titles, wrapped, not cut."""
    require_browser()
    path = tmp_path / "run.jsonl"
    marked_run(path)
    with FileRun(path) as run:
        data = report_data(run.records(), verify={"ok": True, "code": None, "message": ""})
    page_path = tmp_path / "report.html"
    page_path.write_text(render_report(data))
    with launched() as browser:
        opened = open_report(browser, page_path)
        page: Any = opened.page
        labels = page.eval_on_selector_all("#axis .tick-label", "els => els.map(e => e.textContent)")
        assert labels[0] == "0" and labels[-1].startswith("+") and len(labels) >= 3
        durations = page.eval_on_selector_all(".bar", "els => els.map(e => e.dataset.duration)")
        assert durations == ["3 min 19 s", "5.0 s"]
        kinds = page.eval_on_selector_all(".tmark, .mark-line", "els => els.map(e => e.dataset.kind).sort()")
        assert kinds == sorted(["lease_expired", "abandon", "approval_requested", "approval_granted", "repair"])
        repair = page.locator('#replans .mark-line[data-kind="repair"]')
        assert repair.count() == 1 and "torn tail" in (repair.get_attribute("data-text") or "")
        label = page.locator('.lane[data-step-id="implement"] .label')
        assert label.inner_text() == "Check expiry"
        assert opened.requests == [] and opened.errors == []
