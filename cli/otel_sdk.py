"""Spans described by :mod:`plantrail.projections.otel_spans` sent as OTLP over HTTP/protobuf, through the
OpenTelemetry SDK and its exporter (``pip install 'plantrail[otel]'``).

Only ``plantrail export otel`` imports this module: no command that records imports the SDK. Each span is
built as the SDK's ``ReadableSpan`` with the ids the projection derived (never ids the SDK draws), so the
exporter sends exactly those spans.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from plantrail.ledger.vocabulary.errors import error

if TYPE_CHECKING:
    from plantrail.projections.otel_spans import Span

__all__ = ["Sender"]

try:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
except ImportError:  # pragma: no cover - the extra is part of the test install
    raise error(
        "USAGE", "plantrail export otel needs the OpenTelemetry SDK and its exporter: pip install 'plantrail[otel]'"
    ) from None

_STATUS = {"unset": StatusCode.UNSET, "ok": StatusCode.OK, "error": StatusCode.ERROR}


def _context(trace_id: bytes, span_id: bytes, *, remote: bool = False) -> SpanContext:
    return SpanContext(
        int.from_bytes(trace_id, "big"),
        int.from_bytes(span_id, "big"),
        is_remote=remote,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


#: The relation of a link to a span another process made: the caller's span a command's trace context named
#: (every other link is to a span this export sends, of this run or another).
_REMOTE = "caller"


class Sender:
    """An OTLP/HTTP exporter for a run's spans: ``endpoint`` is the traces URL (None: the SDK's default, from
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``, else localhost:4318)."""

    def __init__(self, endpoint: str | None, *, timeout: float = 10.0) -> None:
        from plantrail._version import __version__

        self.endpoint = endpoint
        # The exporter logs its own failure too; EXPORT_FAILED says it once, in plantrail's words.
        logging.getLogger("opentelemetry.exporter.otlp.proto.http").setLevel(logging.CRITICAL)
        self._exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
        self._resource = Resource.create({"service.name": "plantrail", "service.version": __version__})
        self._scope = InstrumentationScope("plantrail", __version__)

    def readable(self, span: Span) -> ReadableSpan:
        """One described span as the SDK's finished span, with its derived ids."""
        links = [
            Link(_context(link.trace_id, link.span_id, remote=link.relation == _REMOTE), dict(link.attributes))
            for link in span.links
        ]
        events = [Event(event.name, dict(event.attributes), event.time_ns) for event in span.events]
        parent = _context(span.trace_id, span.parent_id) if span.parent_id else None
        attributes: dict[str, Any] = dict(span.attributes)
        return ReadableSpan(
            name=span.name,
            context=_context(span.trace_id, span.span_id),
            parent=parent,
            resource=self._resource,
            attributes=attributes,
            events=events,
            links=links,
            kind=SpanKind.INTERNAL,
            status=Status(_STATUS[span.status], span.status_message),
            start_time=span.start_ns,
            end_time=span.end_ns,
            instrumentation_scope=self._scope,
        )

    def send(self, spans: Sequence[Span]) -> None:
        """Send ``spans`` in one export; EXPORT_FAILED when the receiver refused them or could not be reached."""
        if not spans:
            return
        result = self._exporter.export([self.readable(span) for span in spans])
        if result is not SpanExportResult.SUCCESS:
            where = self.endpoint or "the default OTLP endpoint"
            raise error("EXPORT_FAILED", f"{where} did not take the {len(spans)} spans", endpoint=where)

    def close(self) -> None:
        """Shut the exporter down."""
        self._exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
