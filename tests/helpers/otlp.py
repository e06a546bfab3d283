"""An OTLP/HTTP trace receiver in the test process: it takes ``POST /v1/traces`` (protobuf) as a collector does,
answers with the protocol's response, and keeps every span it was sent, as the protobuf messages."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["Collector"]


class Collector:
    """A running receiver: ``endpoint`` is its traces URL; ``spans()`` what it received, in order."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with collector._lock:
                    collector.requests.append(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def spans(self) -> list[Any]:
        """Every span received, across requests, in the order they came."""
        with self._lock:
            return [
                span
                for request in self.requests
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]

    def close(self) -> None:
        """Stop the receiver."""
        self._server.shutdown()
        self._server.server_close()
