"""SVG, DOT and Mermaid renderings of the plan graph: structure, stable ids, escaping, and the open style table."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest

from plantrail.ledger.api import Ledger
from plantrail.projections import graph_render
from plantrail.projections.graph import PlanGraph, plan_graph
from plantrail.projections.graph_render import (
    EdgeStyle,
    NodeStyle,
    edge_id,
    render_dot,
    render_mermaid,
    render_svg,
    style_css,
)
from tests.pictures import HOSTILE_TITLE, record_replanned_run

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def drawn(make_ledger: Callable[..., Ledger]) -> PlanGraph:
    """The graph of the replanned diamond run, with a hostile title on step b."""
    return plan_graph(record_replanned_run(make_ledger, title=HOSTILE_TITLE).state)


def test_svg_is_xml_with_one_element_per_node_and_edge(drawn: PlanGraph) -> None:
    """The SVG parses as XML; its nodes and edges are the graph's, each with stable id and data attributes."""
    root = ET.fromstring(render_svg(drawn))
    nodes = root.findall(f".//{SVG}g[@class]")
    nodes = [g for g in nodes if g.get("class", "").split()[0] == "node"]
    edges = root.findall(f".//{SVG}path[@data-kind]")
    assert [g.get("data-step-id") for g in nodes] == [n.id for n in drawn.nodes]
    assert [g.get("id") for g in nodes] == [f"step-{n.id}" for n in drawn.nodes]
    assert [p.get("id") for p in edges] == [edge_id(e) for e in drawn.edges]
    assert all(el.get("data-version") == str(drawn.version) for el in [*nodes, *edges])
    assert [g.get("data-status") for g in nodes] == [n.status for n in drawn.nodes]
    assert len({el.get("id") for el in [*nodes, *edges]}) == len(nodes) + len(edges)


def test_svg_marks_ready_reset_and_critical(drawn: PlanGraph) -> None:
    """Ready, reset-by-lineage and critical steps carry their classes; critical edges theirs."""
    root = ET.fromstring(render_svg(drawn))
    by_id = {g.get("data-step-id"): g for g in root.iter(f"{SVG}g") if g.get("data-step-id")}
    assert "ready" in by_id["a"].get("class", "").split()
    assert "reset" in by_id["b"].get("class", "").split() and by_id["b"].get("data-invalidated-by") == "a"
    assert by_id["c"].get("data-critical") == "false" and by_id["e"].get("data-critical") == "true"
    critical = [p.get("id") for p in root.iter(f"{SVG}path") if "critical" in p.get("class", "").split()]
    assert critical == ["edge-a→b", "edge-b→d", "edge-d→e"]


def test_svg_escapes_hostile_titles_and_keeps_unicode(drawn: PlanGraph) -> None:
    """A title holding markup and a control character comes out as text: no element, no raw ESC."""
    svg = render_svg(drawn)
    root = ET.fromstring(svg)
    assert not any(el.tag in (f"{SVG}script", f"{SVG}svg") for el in root.iter() if el is not root)
    assert "<svg onload" not in svg and "</script>" not in svg and "<!--" not in svg
    assert "\x1b" not in svg and "\\x1b[31m" in svg
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any('"><svg onload=alert(1)>' in t and "naïve 日本語" in t for t in titles)


def _dot_statements(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines()[3:-1]]


def test_dot_holds_every_node_and_edge_with_ids(drawn: PlanGraph) -> None:
    """DOT lists one statement per node and per edge, with the SVG's ids and data attributes."""
    statements = _dot_statements(render_dot(drawn))
    edges = [s for s in statements if " -> " in s]
    nodes = [s for s in statements if " -> " not in s]
    assert len(nodes) == len(drawn.nodes) and len(edges) == len(drawn.edges)
    assert all('"data-version"="' + str(drawn.version) + '"' in s for s in statements)
    assert '"a" -> "b" [id="edge-a→b"' in render_dot(drawn)
    assert render_dot(drawn).startswith('digraph "plan v2" {') and render_dot(drawn).endswith("}\n")


def test_dot_quotes_hostile_titles(drawn: PlanGraph) -> None:
    """Every quote in a title is escaped, so each attribute list stays one quoted string per value."""
    (b_line,) = [s for s in _dot_statements(render_dot(drawn)) if s.startswith('"b" [')]
    assert '\\"><svg onload=alert(1)>' in b_line and "\x1b" not in b_line
    unescaped = re.sub(r"\\.", "", b_line)
    assert unescaped.count('"') % 2 == 0


def test_mermaid_labels_hold_no_markup(drawn: PlanGraph) -> None:
    """Mermaid labels carry quotes and angle brackets as entity codes; ids are letters, digits and _."""
    text = render_mermaid(drawn)
    assert text.startswith("flowchart LR\n")
    (b_line,) = [line for line in text.splitlines() if line.strip().startswith("s_b[")]
    label = b_line.split('["', 1)[1].rsplit('"]', 1)[0]
    assert '"' not in label and "<svg" not in label and "</script>" not in label
    assert "#34;#62;#60;svg onload=alert(1)#62;" in label and "日本語" in label
    assert len([line for line in text.splitlines() if " --> " in line]) == len(drawn.edges)
    assert "class s_a,s_b,s_d,s_e critical" in text


def test_a_status_added_to_the_table_is_drawn_everywhere(drawn: PlanGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """One line in the table styles a new status (as it does the lineage's ``stale``) in SVG, CSS and Mermaid;
    until then a status the table does not know is drawn in the fallback style, never refused."""
    stale = drawn._replace(nodes=tuple(n._replace(status="parked") if n.id == "e" else n for n in drawn.nodes))
    assert graph_render.UNKNOWN_STYLE.fill in render_svg(stale) and ":::other" in render_mermaid(stale)
    monkeypatch.setitem(graph_render.NODE_STYLES, "parked", NodeStyle("parked", "#fff7ed", "#9a3412", "#431407", "4 2"))
    monkeypatch.setitem(graph_render.EDGE_STYLES, "repair", EdgeStyle("repair", "#9a3412", "5 3"))
    assert 'fill="#fff7ed"' in render_svg(stale) and ":::parked" in render_mermaid(stale)
    assert '.node[data-status="parked"] rect{fill:#fff7ed' in style_css()
    assert '.node[data-status="stale"] rect{fill:#fef3c7' in style_css()
    repaired = stale._replace(edges=(stale.edges[0]._replace(kind="repair"), *stale.edges[1:]))
    assert 'stroke-dasharray="5 3"' in render_svg(repaired) and "-.->" in render_mermaid(repaired)
    assert '.edge[data-kind="repair"]{stroke:#9a3412;stroke-dasharray:5 3}' in style_css()


def test_an_empty_plan_draws_an_empty_svg() -> None:
    """The state of a log with no plan yet draws as an SVG with no node and no edge."""
    from plantrail.projections.state import initial

    root = ET.fromstring(render_svg(plan_graph(initial())))
    assert root.findall(f".//{SVG}rect") == [] and root.findall(f".//{SVG}path[@data-kind]") == []


def test_no_picture_carries_a_raw_control_a_terminal_or_viewer_would_obey(make_ledger: Callable[..., Ledger]) -> None:
    """C1 controls (a CSI as U+009B), bidi overrides and isolates and separators come out escaped in SVG, DOT
    and Mermaid alike, so printing a picture to a terminal or opening it shows the bytes it holds."""
    title = "evil \x9b2J \u202eoverride\u202c \u2066isolate\u2069 \u2028 end"
    graph = plan_graph(record_replanned_run(make_ledger, title=title).state)
    pictures = {"svg": render_svg(graph), "dot": render_dot(graph), "mermaid": render_mermaid(graph)}
    for picture in pictures.values():
        assert not any(c in picture for c in "\x9b\u202e\u202c\u2066\u2069\u2028")
    assert "\\x9b2J" in pictures["svg"] and "\\u202eoverride" in pictures["svg"]
    assert "\\\\x9b2J" in pictures["dot"]  # DOT doubles the backslash of the escape
    assert "#92;x9b2J" in pictures["mermaid"]  # Mermaid writes the backslash as an entity code


def test_a_title_wraps_over_two_lines_before_it_is_cut() -> None:
    """A node's title wraps at spaces over two lines of 30 characters; only what still does not fit is cut with …,
    a word longer than a line is split; the SVG carries one tspan per line."""
    from plantrail.projections.graph_render import wrapped

    assert wrapped("Handle auth-service timeouts in src/auth/client.ts", 30, 2) == [
        "Handle auth-service timeouts",
        "in src/auth/client.ts",
    ]
    assert wrapped("short", 30, 2) == ["short"] and wrapped("", 30, 2) == []
    assert wrapped("x" * 70, 30, 2) == ["x" * 30, "x" * 29 + "…"]
    assert wrapped("one two three four five six seven eight nine ten eleven twelve", 12, 2) == [
        "one two",
        "three four …",
    ]
    assert all(len(line) <= 30 for line in wrapped("a " * 80, 30, 2))
