"""Self-instrumentation: a no-op tracer by default, real OTLP/HTTP export when configured."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector.settings import OtelSettings
from exporters.otel import Telemetry, record_usage


def test_off_by_default_is_a_noop() -> None:
    telemetry = Telemetry(OtelSettings())
    assert not telemetry.enabled
    with telemetry.job_run("ux") as span:
        assert not span.is_recording()
    telemetry.shutdown()


def test_spans_are_exported_over_otlp_http() -> None:
    received: list[ExportTraceServiceRequest] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received.append(request)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        telemetry = Telemetry(OtelSettings(endpoint=f"http://127.0.0.1:{server.server_port}"))
        with telemetry.job_run("ux"), telemetry.judge_call("gpt-4o-mini", "faithfulness") as span:
            record_usage(span, 120, 30)
        with telemetry.consume_batch(5):
            pass
        telemetry.shutdown()
    finally:
        server.shutdown()
    spans = {
        s.name: {a.key: a.value for a in s.attributes}
        for r in received
        for rs in r.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    }
    assert set(spans) == {"ragpulse.job ux", "chat gpt-4o-mini", "ragpulse.consume_batch"}
    judge = spans["chat gpt-4o-mini"]
    assert judge["gen_ai.request.model"].string_value == "gpt-4o-mini"
    assert judge["gen_ai.system"].string_value == "litellm"
    assert judge["gen_ai.usage.input_tokens"].int_value == 120
    assert judge["gen_ai.usage.output_tokens"].int_value == 30
