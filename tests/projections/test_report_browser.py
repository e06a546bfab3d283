"""The run report in real headless Chromium: no request, no console error, the plan's graph, versions, filters."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.cli.common import run_records
from plantrail.cli.report_page import render_report
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.reads import read_state, rebuild_version
from plantrail.projections.graph import plan_graph
from plantrail.projections.graph_render import render_svg
from plantrail.projections.report import report_data
from plantrail.projections.timeline import timeline
from tests.conftest import SAMPLES
from tests.logs import read_records
from tests.pictures import HOSTILE_TITLE, record_replanned_run
from tests.projections.browser import Opened, launched, open_report, require_browser

REPLANS = SAMPLES / "login-fix-replans.jsonl"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module (skipped, or failed on CI, when it cannot run)."""
    require_browser()
    with launched() as b:
        yield b


def _write_report(log: Path, out: Path) -> Path:
    with run_records(str(log)) as (_, records):
        data = report_data(records, verify={"ok": True, "code": None, "message": "checked"})
    out.write_text(render_report(data), encoding="utf-8")
    return out


@pytest.fixture
def replans(browser: Any, tmp_path: Path) -> Iterator[Opened]:
    """The replans sample's report, opened."""
    opened = open_report(browser, _write_report(REPLANS, tmp_path / "replans.html"))
    yield opened
    opened.page.close()


def _plan_shape(state: Any) -> tuple[int, int]:
    return len(state.plan.steps), sum(len(set(s.depends_on)) for s in state.plan.steps)


def test_the_report_requests_nothing_and_logs_no_error(replans: Opened, tmp_path: Path) -> None:
    """Loaded from file://, the page makes no request and logs no console error; a screenshot is kept."""
    shot = tmp_path / "report.png"
    replans.page.screenshot(path=str(shot), full_page=True)
    assert replans.requests == [] and replans.errors == [] and replans.dialogs == []
    assert shot.stat().st_size > 10_000


def test_the_active_graph_has_the_plans_nodes_and_edges(replans: Opened) -> None:
    """The graph drawn at load is the active version's: one node per step, one edge per dependency."""
    state = read_state(str(REPLANS)).state
    page = replans.page
    steps, deps = _plan_shape(state)
    assert page.locator("#graph svg").get_attribute("data-version") == str(state.version)
    assert page.locator("#graph g.node").count() == steps
    assert page.locator("#graph path.edge").count() == deps
    ids = page.eval_on_selector_all("#graph g.node", "els => els.map(e => e.dataset.stepId)")
    assert ids == list(state.steps)
    svg = ET.fromstring(render_svg(plan_graph(state)))  # the page draws what `plantrail graph` draws
    python_edges = [[p.get("id"), p.get("d")] for p in svg.iter(f"{SVG}path") if p.get("data-kind")]
    python_nodes = [(g.get("id"), g.get("class")) for g in svg.iter(f"{SVG}g") if g.get("data-step-id")]
    edges = page.eval_on_selector_all("#graph path.edge", "els => els.map(e => [e.id, e.getAttribute('d')])")
    assert edges == python_edges
    assert page.eval_on_selector_all("#graph g.node", "els => els.map(e => [e.id, e.getAttribute('class')])") == [
        list(pair) for pair in python_nodes
    ]
    python_boxes = [(r.get("x"), r.get("y")) for r in svg.iter(f"{SVG}rect")]
    page_boxes = page.eval_on_selector_all(
        "#graph g.node rect", "els => els.map(e => [e.getAttribute('x'), e.getAttribute('y')])"
    )
    assert page_boxes == [list(b) for b in python_boxes]


def test_opening_a_version_shows_its_graph(replans: Opened) -> None:
    """Clicking version 1's mark draws version 1's plan with its statuses, and its why for version 2's mark."""
    page = replans.page
    page.click("#mark-v1")
    state, _, _ = rebuild_version(str(REPLANS), 1)
    steps, deps = _plan_shape(state)
    assert page.locator("#graph svg").get_attribute("data-version") == "1"
    assert page.locator("#graph g.node").count() == steps and page.locator("#graph path.edge").count() == deps
    statuses = page.eval_on_selector_all("#graph g.node", "els => els.map(e => [e.dataset.stepId, e.dataset.status])")
    assert statuses == [[s.id, s.status] for s in state.steps.values_in_order()]
    page.click("#mark-v2")
    assert page.locator("#version-title").inner_text().startswith("v2 · ")
    assert "check-config" in page.locator("#version-panel").inner_text()  # removed in v2, late result for v1


def _visible_lanes(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        ".lane", "els => els.filter(e => e.offsetParent !== null).map(e => e.dataset.stepId)"
    )


def test_filters_hide_what_they_should(replans: Opened) -> None:
    """failed only keeps lanes with a failed or blocked attempt, superseded only those with a superseded attempt or
    a late result, and one step keeps its lane and its late results alone."""
    page = replans.page
    line = timeline(read_records(REPLANS), [o.seq for o in read_state(str(REPLANS)).state.orphans])
    assert _visible_lanes(page) == list(line.lanes)
    page.check("#filter-superseded")
    superseded = {a.step for a in line.attempts if a.outcome == "superseded"} | {m.step for m in line.late}
    assert _visible_lanes(page) == [s for s in line.lanes if s in superseded] != []
    page.uncheck("#filter-superseded")
    page.check("#filter-failed")
    failed = {a.step for a in line.attempts if a.outcome in ("failed", "blocked")}
    assert _visible_lanes(page) == [s for s in line.lanes if s in failed]
    page.uncheck("#filter-failed")
    page.select_option("#filter-step", "check-config")
    assert _visible_lanes(page) == ["check-config"]
    rows = page.eval_on_selector_all("tr.orphan", "els => els.filter(e => e.offsetParent !== null).length")
    assert rows == 1
    page.select_option("#filter-step", "fix")
    assert _visible_lanes(page) == ["fix"]
    assert page.eval_on_selector_all("tr.orphan", "els => els.filter(e => e.offsetParent !== null).length") == 0
    assert page.locator("#graph g.node.dim").count() == page.locator("#graph g.node").count() - 1


def test_hostile_titles_are_text_in_the_browser(
    browser: Any, make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """A title holding ``</script>`` and an ``onload`` attribute shows as text: no dialog, no element, no error."""
    record_replanned_run(make_ledger, title=HOSTILE_TITLE)
    opened = open_report(browser, _write_report(tmp_path / "run.jsonl", tmp_path / "hostile.html"))
    page = opened.page
    page.click("#mark-v1")
    assert opened.dialogs == [] and opened.errors == [] and opened.requests == []
    assert page.locator("[onload]").count() == 0 and page.locator("#app script").count() == 0
    title = page.locator("#step-b title").text_content() or ""
    assert title.startswith('b: </script><!-- "><svg onload=alert(1)>') and "日本語" in title
    page.close()
