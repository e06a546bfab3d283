"""Text renderings of a :class:`~projections.graph.PlanGraph`: SVG (laid out here), DOT (Graphviz) and Mermaid.

Pure functions, graph in, text out. How each status and edge kind looks is one open table
(:data:`NODE_STYLES`, :data:`EDGE_STYLES`): a status the plan contract adds (``waiting_approval``,
``stale``) or an edge kind (``repair``, drawn dashed) is one more line there, and every renderer, the report's
CSS included, picks it up; a status missing from the table is drawn in :data:`UNKNOWN_STYLE`, never refused.

In the SVG every node is ``<g id="step-ID" class="node …">`` and every edge ``<path id="edge-SOURCE→TARGET"
class="edge …">`` (step ids are ASCII, so the arrow cannot be part of one and no two edges share an id),
each with ``data-step-id`` (an edge's is its target), ``data-status`` (an edge's is its target's) and
``data-version``. Text from the log is escaped for XML and stripped of characters XML cannot hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from html import escape
from typing import Final, NamedTuple

from plantrail.ledger.vocabulary.cut import one_line
from plantrail.projections.graph import GraphEdge, GraphNode, PlanGraph

__all__ = [
    "CRITICAL_COLOUR",
    "EDGE_STYLES",
    "GEOMETRY",
    "NODE_STYLES",
    "UNKNOWN_STYLE",
    "EdgeStyle",
    "Geometry",
    "NodeStyle",
    "edge_id",
    "edge_path",
    "node_badges",
    "node_id",
    "node_style",
    "render_dot",
    "render_mermaid",
    "render_svg",
    "style_css",
]


class NodeStyle(NamedTuple):
    """How a step of one status is drawn: the legend's word, fill, outline and text colour, outline dashes."""

    label: str
    fill: str
    stroke: str
    text: str
    dash: str | None = None


class EdgeStyle(NamedTuple):
    """How an edge of one kind is drawn: the legend's word, colour and dashes (None: solid)."""

    label: str
    stroke: str
    dash: str | None = None


#: Status -> style. Blocked and (once the contract lands) stale must stay distinct from each other.
NODE_STYLES: Final[dict[str, NodeStyle]] = {
    "pending": NodeStyle("pending", "#f4f4f5", "#a1a1aa", "#27272a"),
    "in_progress": NodeStyle("in progress", "#dbeafe", "#2563eb", "#1e3a8a"),
    "completed": NodeStyle("completed", "#dcfce7", "#16a34a", "#14532d"),
    "blocked": NodeStyle("blocked", "#fee2e2", "#dc2626", "#7f1d1d"),
    "stale": NodeStyle("stale", "#fef3c7", "#d97706", "#78350f", "6 3"),
}
#: A status not (yet) in :data:`NODE_STYLES`.
UNKNOWN_STYLE: Final = NodeStyle("other", "#fae8ff", "#a21caf", "#4a044e", "2 2")
#: Edge kind -> style.
EDGE_STYLES: Final[dict[str, EdgeStyle]] = {
    "depends_on": EdgeStyle("depends on", "#71717a"),
    "on_failure": EdgeStyle("repaired by (on failure)", "#7c3aed", "6 4"),
}
CRITICAL_COLOUR: Final = "#ea580c"
_UNKNOWN_EDGE: Final = EdgeStyle("other", "#a21caf", "2 2")


class Geometry(NamedTuple):
    """Sizes in SVG pixels: node box, gaps, margin, and the title's lines: how many, how many characters each."""

    node_w: int = 200
    node_h: int = 68
    col_gap: int = 56
    row_h: int = 84
    margin: int = 16
    title_chars: int = 30
    #: A title wraps over this many lines of ``title_chars`` (the last cut with … only past them).
    title_lines: int = 2
    #: Pixels from one title line to the next.
    line_h: int = 14


GEOMETRY: Final = Geometry()
#: What a picture never carries raw: what XML cannot hold, and what a terminal or a viewer could act on when
#: the text is printed or shown (C1 controls, bidi overrides and isolates, line and paragraph separators).
_XML_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ufffe\uffff\ud800-\udfff]"
)


def node_style(status: str) -> NodeStyle:
    """The style of a status (:data:`UNKNOWN_STYLE` for one the table does not know)."""
    return NODE_STYLES.get(status, UNKNOWN_STYLE)


def _edge_style(kind: str) -> EdgeStyle:
    return EDGE_STYLES.get(kind, _UNKNOWN_EDGE)


def node_id(step: str) -> str:
    """A node's stable id."""
    return f"step-{step}"


def edge_id(edge: GraphEdge) -> str:
    """An edge's stable id (the arrow is no step id's character, so no two edges share one)."""
    return f"edge-{edge.source}→{edge.target}"


def _clean(text: str) -> str:
    """Text with the characters XML cannot hold, and those a terminal or viewer could act on, shown as escapes."""
    return _XML_UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def _x(text: str) -> str:
    """Escaped for XML text and attribute values."""
    return escape(_clean(text), quote=True)


def wrapped(text: str, width: int, lines: int) -> list[str]:
    """``text`` wrapped at spaces into at most ``lines`` lines of at most ``width`` characters (a longer word is
    split); what does not fit ends the last line with …. The report's script wraps the same way."""
    words = text.split()
    out: list[str] = []
    line = ""
    while words:
        word = words[0]
        joined = f"{line} {word}" if line else word
        if len(joined) <= width:
            line = joined
            words.pop(0)
            continue
        if not line:  # a word longer than a line: split it
            line, words[0] = word[:width], word[width:]
        out.append(line)
        line = ""
        if len(out) == lines:
            break
    if line and len(out) < lines:
        out.append(line)
    if words:  # more than fits: the last line ends with …
        out[-1] = one_line(out[-1] + " " + " ".join(words), width)
    return out


def node_badges(node: GraphNode) -> list[str]:
    """The marks shown under a node's title: attempt, ready, reset by lineage, late results."""
    limit = "" if node.max_attempts is None else f"/{node.max_attempts}"
    badges = [f"attempt {node.attempt}{limit}"] if node.attempt else []
    if node.ready:
        badges.append("ready")
    if node.invalidated_by:
        badges.append(f"↺ {node.invalidated_by}")
    elif node.reset and node.reset != "added":
        badges.append(f"↺ {node.reset.replace('_', ' ')}")
    if node.late:
        badges.append(f"⚑ {node.late} late")
    return badges


def _classes(node: GraphNode) -> str:
    marks = ("ready", node.ready), ("critical", node.critical), ("reset", node.invalidated_by), ("late", node.late)
    return " ".join(["node", *(name for name, on in marks if on)])


def _origin(node: GraphNode, g: Geometry) -> tuple[int, int]:
    return g.margin + node.rank * (g.node_w + g.col_gap), g.margin + node.slot * g.row_h // 2


def edge_path(source: tuple[int, int], target: tuple[int, int], g: Geometry = GEOMETRY) -> str:
    """The SVG path of an edge between two node origins: right side of the source to left side of the target."""
    x1, y1 = source[0] + g.node_w, source[1] + g.node_h // 2
    x2, y2 = target[0], target[1] + g.node_h // 2
    mid = (x1 + x2) // 2
    return f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"


def _svg_node(node: GraphNode, version: int, g: Geometry) -> str:
    x, y = _origin(node, g)
    style = node_style(node.status)
    critical = node.critical
    stroke = CRITICAL_COLOUR if critical else style.stroke
    width = 3 if critical or node.ready else 1.5
    dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
    badges = " · ".join(node_badges(node))
    extra = f' data-invalidated-by="{_x(node.invalidated_by)}"' if node.invalidated_by else ""
    title = "".join(
        f'<tspan x="{x + 8}" dy="{0 if i == 0 else g.line_h}">{_x(line)}</tspan>'
        for i, line in enumerate(wrapped(node.title, g.title_chars, g.title_lines))
    )
    return (
        f'<g id="{_x(node_id(node.id))}" class="{_classes(node)}" data-step-id="{_x(node.id)}" '
        f'data-status="{_x(node.status)}" data-version="{version}" data-ready="{str(node.ready).lower()}" '
        f'data-critical="{str(critical).lower()}" data-attempt="{node.attempt}" data-late="{node.late}"{extra}>'
        f"<title>{_x(node.id)}: {_x(node.title)} ({_x(style.label)})</title>"
        f'<rect x="{x}" y="{y}" width="{g.node_w}" height="{g.node_h}" rx="6" fill="{style.fill}" '
        f'stroke="{stroke}" stroke-width="{width}"{dash}/>'
        f'<text x="{x + 8}" y="{y + 16}" fill="{style.text}" font-weight="bold">{_x(one_line(node.id, g.title_chars))}'
        f"</text>"
        f'<text x="{x + 8}" y="{y + 32}" fill="{style.text}">{title}</text>'
        f'<text x="{x + 8}" y="{y + g.node_h - 7}" fill="{style.text}" font-size="10">{_x(badges)}</text></g>'
    )


def _svg_edge(edge: GraphEdge, graph_nodes: Mapping[str, GraphNode], version: int, g: Geometry) -> str:
    style = _edge_style(edge.kind)
    stroke = CRITICAL_COLOUR if edge.critical else style.stroke
    dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
    target = graph_nodes[edge.target]
    path = edge_path(_origin(graph_nodes[edge.source], g), _origin(target, g), g)
    critical = " critical" if edge.critical else ""
    return (
        f'<path id="{_x(edge_id(edge))}" class="edge{critical}" data-step-id="{_x(edge.target)}" '
        f'data-status="{_x(target.status)}" data-version="{version}" data-source="{_x(edge.source)}" '
        f'data-target="{_x(edge.target)}" data-kind="{_x(edge.kind)}" d="{path}" fill="none" stroke="{stroke}" '
        f'stroke-width="{3 if edge.critical else 1.5}"{dash} marker-end="url(#arrow)"/>'
    )


def _size(graph: PlanGraph, g: Geometry) -> tuple[int, int]:
    width = 2 * g.margin + max(graph.ranks, 1) * (g.node_w + g.col_gap) - g.col_gap
    height = 2 * g.margin + max(graph.widest - 1, 0) * g.row_h + g.node_h
    return width, height


def render_svg(graph: PlanGraph, geometry: Geometry = GEOMETRY) -> str:
    """A standalone SVG document of the graph, laid out by :mod:`projections.graph`, critical path highlighted."""
    g = geometry
    width, height = _size(graph, g)
    nodes = {n.id: n for n in graph.nodes}
    run = _x(graph.run or "")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plan-graph" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" data-run="{run}" data-version="{graph.version}" '
        f'font-family="system-ui, sans-serif" font-size="12">',
        f"<title>plan v{graph.version} of run {run}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#71717a"/></marker></defs>',
        '<g class="edges">',
        *(_svg_edge(e, nodes, graph.version, g) for e in graph.edges),
        '</g><g class="nodes">',
        *(_svg_node(n, graph.version, g) for n in graph.nodes),
        "</g></svg>",
    ]
    return "\n".join(parts) + "\n"


def _dot(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, every kind of line break as ``\\n``."""
    body = "\\n".join(_clean(text).replace("\\", "\\\\").replace('"', '\\"').splitlines())
    return f'"{body}"'


def _dot_attrs(attrs: Mapping[str, str]) -> str:
    return ", ".join(f"{_dot(k) if '-' in k else k}={_dot(v)}" for k, v in attrs.items())


def render_dot(graph: PlanGraph) -> str:
    """The graph as Graphviz DOT (left to right), with the same ids, classes and data attributes as the SVG."""
    lines = [
        f"digraph {_dot(f'plan v{graph.version}')} {{",
        f"  graph [{_dot_attrs({'rankdir': 'LR', 'id': f'plan-v{graph.version}', 'label': graph.run or ''})}];",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
    ]
    for node in graph.nodes:
        style = node_style(node.status)
        label = "\n".join([node.id, node.title, *([" · ".join(node_badges(node))] if node_badges(node) else [])])
        attrs = {
            "id": node_id(node.id),
            "class": _classes(node),
            "label": label,
            "tooltip": f"{node.id}: {node.title} ({style.label})",
            "fillcolor": style.fill,
            "color": CRITICAL_COLOUR if node.critical else style.stroke,
            "fontcolor": style.text,
            "penwidth": "3" if node.critical or node.ready else "1",
            "data-step-id": node.id,
            "data-status": node.status,
            "data-version": str(graph.version),
        }
        if style.dash:
            attrs["style"] = "rounded,filled,dashed"
        lines.append(f"  {_dot(node.id)} [{_dot_attrs(attrs)}];")
    statuses = {n.id: n.status for n in graph.nodes}
    for edge in graph.edges:
        estyle = _edge_style(edge.kind)
        attrs = {
            "id": edge_id(edge),
            "class": "edge critical" if edge.critical else "edge",
            "color": CRITICAL_COLOUR if edge.critical else estyle.stroke,
            "penwidth": "3" if edge.critical else "1",
            "data-step-id": edge.target,
            "data-status": statuses[edge.target],
            "data-version": str(graph.version),
            "data-kind": edge.kind,
        }
        if estyle.dash:
            attrs["style"] = "dashed"
        lines.append(f"  {_dot(edge.source)} -> {_dot(edge.target)} [{_dot_attrs(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


_MERMAID_SAFE: Final = re.compile(r"[A-Za-z0-9]")


def _mermaid_id(step: str) -> str:
    """A Mermaid node id for a step: letters and digits kept, every other character as _xx (its hex code)."""
    return "s_" + "".join(c if _MERMAID_SAFE.fullmatch(c) else f"_{ord(c):02x}" for c in step)


def _mermaid_text(text: str) -> str:
    """Text for a quoted Mermaid label: what Mermaid or Markdown would read as markup becomes an entity code."""
    flat = " ".join(_clean(text).split())
    return "".join(f"#{ord(c)};" if c in '"#&<>`\\' else c for c in flat)


def _mermaid_classes() -> Iterator[str]:
    for status, style in NODE_STYLES.items():
        dash = f",stroke-dasharray:{style.dash}" if style.dash else ""
        yield f"  classDef {status} fill:{style.fill},stroke:{style.stroke},color:{style.text}{dash}"
    unknown = UNKNOWN_STYLE
    yield f"  classDef other fill:{unknown.fill},stroke:{unknown.stroke},color:{unknown.text}"
    yield f"  classDef critical stroke:{CRITICAL_COLOUR},stroke-width:3px"


def render_mermaid(graph: PlanGraph) -> str:
    """The graph as a Mermaid flowchart (for Markdown on GitHub): status classes, marks in labels, critical path."""
    lines = ["flowchart LR", *_mermaid_classes()]
    for node in graph.nodes:
        label = "<br/>".join(
            _mermaid_text(part) for part in (node.id, node.title, " · ".join(node_badges(node))) if part
        )
        status = node.status if node.status in NODE_STYLES else "other"
        lines.append(f'  {_mermaid_id(node.id)}["{label}"]:::{status}')
    for edge in graph.edges:
        arrow = "-.->" if _edge_style(edge.kind).dash else "-->"
        lines.append(f"  {_mermaid_id(edge.source)} {arrow} {_mermaid_id(edge.target)}")
    critical_nodes = [_mermaid_id(n.id) for n in graph.nodes if n.critical]
    if critical_nodes:
        lines.append(f"  class {','.join(critical_nodes)} critical")
    critical_links = [str(i) for i, e in enumerate(graph.edges) if e.critical]
    if critical_links:
        lines.append(f"  linkStyle {','.join(critical_links)} stroke:{CRITICAL_COLOUR},stroke-width:3px")
    return "\n".join(lines) + "\n"


def style_css(scope: str = "") -> str:
    """CSS rules that draw a node by its ``data-status`` and an edge by its ``data-kind`` from the tables
    (the report's script sets only the data attributes)."""
    rules = []
    for status, style in NODE_STYLES.items():
        dash = f";stroke-dasharray:{style.dash or 'none'}"
        rules.append(
            f'{scope}.node[data-status="{status}"] rect{{fill:{style.fill};stroke:{style.stroke}{dash}}}'
            f'{scope}.node[data-status="{status}"] text{{fill:{style.text}}}'
        )
    rules.append(
        f"{scope}.node rect{{fill:{UNKNOWN_STYLE.fill};stroke:{UNKNOWN_STYLE.stroke};stroke-dasharray:2 2}}"
        f"{scope}.node text{{fill:{UNKNOWN_STYLE.text}}}"
    )
    for kind, edge in EDGE_STYLES.items():
        dash = f";stroke-dasharray:{edge.dash or 'none'}"
        rules.append(f'{scope}.edge[data-kind="{kind}"]{{stroke:{edge.stroke}{dash}}}')
    rules.append(f"{scope}.edge.critical{{stroke:{CRITICAL_COLOUR};stroke-width:3}}")
    rules.append(f"{scope}.node.critical rect{{stroke:{CRITICAL_COLOUR};stroke-width:3}}")
    rules.append(f"{scope}.node.ready rect{{stroke-width:3}}")
    return "\n".join(rules)
