"""OTLP messages carrying `gen_ai.evaluation.result`, made by the real OpenTelemetry SDK.

`evaluated_spans()`: a RAG request whose root span has a `gen_ai.evaluation.result` event
(`helpfulness`) and whose evaluator child span states one in its attributes (`toxicity`).
`evaluation_logs()`: log records as an application's evaluator emits them, encoded as the
Collector's Kafka exporter writes logs (`ExportLogsServiceRequest`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

EVENT = "gen_ai.evaluation.result"


def evaluated_spans(tenant: str = "acme") -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.evaluations")
    with tracer.start_as_current_span(
        "rag",
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": "How do I renew my passport?",
            "output.value": "Apply on the portal.",
            "ragpulse.tag.tenant": tenant,
        },
    ) as root:
        root.add_event(
            EVENT,
            {
                "gen_ai.evaluation.name": "helpfulness",
                "gen_ai.evaluation.score.value": 0.9,
                "gen_ai.evaluation.score.label": "helpful",
                "gen_ai.evaluation.explanation": "answers the question",
            },
        )
        root.add_event("exception", {"exception.type": "ValueError"})  # not an evaluation
        with tracer.start_as_current_span(
            "evaluate toxicity",
            attributes={
                "gen_ai.evaluation.name": "toxicity",
                "gen_ai.evaluation.score.value": 0.02,
                "gen_ai.evaluation.score.label": "clean",
            },
        ):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def trace_hex(spans: Sequence[ReadableSpan]) -> str:
    return f"{spans[0].context.trace_id:032x}"


def evaluation_logs(
    results: Sequence[tuple[str | int, dict[str, Any]]], *, at_ns: int = 1_764_000_000_000_000_000
) -> bytes:
    """One `ExportLogsServiceRequest`: per (trace, attributes) a `gen_ai.evaluation.result`
    record; an int trace is a W3C trace id (trace context), a str goes as
    `ragpulse.trace_id`. Plus an ordinary log line that is no evaluation."""
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider(resource=Resource.create({"service.name": "rag-evaluator"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("tests.evaluator")
    for i, (trace, attributes) in enumerate(results):
        context = None
        attrs = dict(attributes)
        if isinstance(trace, int):
            span = SpanContext(trace, 0x1234, is_remote=True, trace_flags=TraceFlags(1))
            context = set_span_in_context(NonRecordingSpan(span))
        else:
            attrs["ragpulse.trace_id"] = trace
        logger.emit(
            timestamp=at_ns + i,
            context=context,
            severity_number=SeverityNumber.INFO,
            attributes=attrs,
            event_name=EVENT,
        )
    logger.emit(timestamp=at_ns, body="an ordinary log line", severity_number=SeverityNumber.INFO)
    provider.shutdown()
    data: bytes = encode_logs(exporter.get_finished_logs()).SerializeToString()
    return data
