"""The run report's page: one self-contained HTML file that draws :func:`~plantrail.projections.report.report_data`
in the browser from compact JSON embedded in it, with the page's CSS and its small script (``report_page.css``
and ``report_page.js`` beside this module, shipped as package data). The page loads nothing: no network
request of any kind.

The JSON is embedded gzip-compressed in base64 (base64 cannot hold the ``</script>`` or ``<!--`` that text from
the log could); each version's graph is drawn only when it is opened.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping
from html import escape
from importlib import resources
from typing import Any, Final

import orjson

from plantrail.projections.graph_render import style_css

__all__ = ["embed_data", "read_embedded", "render_report"]

_DATA_OPEN: Final = '<script type="application/octet-stream" id="report-data" data-encoding="gzip+base64">'


def embed_data(data: Any) -> str:
    """``data`` as the page embeds it: compact JSON, gzip-compressed (with no timestamp, so the same data
    gives the same bytes), in base64; the page's script inflates it with the browser's own
    ``DecompressionStream``. Base64 has no ``<``, so nothing in the data can close the script or open a comment."""
    return base64.b64encode(gzip.compress(orjson.dumps(data), compresslevel=6, mtime=0)).decode("ascii")


def read_embedded(page: str) -> Any:
    """The data a report page embeds (the inverse of :func:`embed_data` on a page of :func:`render_report`)."""
    start = page.index(_DATA_OPEN) + len(_DATA_OPEN)
    return orjson.loads(gzip.decompress(base64.b64decode(page[start : page.index("</script>", start)])))


def _asset(name: str) -> str:
    """A file shipped beside this module (the page's CSS and script)."""
    return resources.files("plantrail.cli").joinpath(name).read_text(encoding="utf-8")


def render_report(data: Mapping[str, Any]) -> str:
    """The HTML page of :func:`report_data`'s ``data``: one file, inline CSS, inline script, no request."""
    title = f"plantrail report · {data.get('run') or 'run'}"
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{escape(title)}</title>'
        f"<style>{_asset('report_page.css')}\n{style_css('#graph ')}</style></head>"
        "<body><noscript>This report draws itself with a small inline script; enable JavaScript.</noscript>"
        '<div id="app"></div>'
        f"{_DATA_OPEN}{embed_data(data)}</script>"
        f"<script>{_asset('report_page.js')}</script></body></html>\n"
    )
