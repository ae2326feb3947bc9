"""OpenTelemetry self-instrumentation: spans for consume batches, job runs and judge calls.

Off by default: without `settings.otel.endpoint` the tracer is the API's no-op tracer and
nothing leaves the process. With an endpoint, spans go over OTLP/HTTP in batches.
Judge spans carry the GenAI semantic-convention attributes (`gen_ai.system`,
`gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from collector.settings import OtelSettings

TRACER_NAME = "ragpulse"


class Telemetry:
    """Owns the tracer (and its provider when exporting); `shutdown()` flushes spans."""

    def __init__(self, settings: OtelSettings) -> None:
        self._provider: Any = None
        if settings.endpoint is None:
            self.tracer: Tracer = trace.NoOpTracer()
            return
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        endpoint = settings.endpoint.rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"
        provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self._provider = provider
        self.tracer = provider.get_tracer(TRACER_NAME)

    @property
    def enabled(self) -> bool:
        return self._provider is not None

    def shutdown(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()

    @contextmanager
    def consume_batch(self, messages: int) -> Iterator[Span]:
        with _span(
            self.tracer, "ragpulse.consume_batch", {"messaging.batch.message_count": messages}
        ) as span:
            yield span

    @contextmanager
    def job_run(self, job: str) -> Iterator[Span]:
        with _span(self.tracer, f"ragpulse.job {job}", {"ragpulse.job": job}) as span:
            yield span

    @contextmanager
    def judge_call(self, model: str, metric: str, system: str = "litellm") -> Iterator[Span]:
        """A judge request; call `record_usage` on the span when the response arrives."""
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": system,
            "gen_ai.request.model": model,
            "ragpulse.metric": metric,
        }
        with _span(self.tracer, f"chat {model}", attributes) as span:
            yield span


def record_usage(span: Span, input_tokens: int | None, output_tokens: int | None) -> None:
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


@contextmanager
def _span(tracer: Tracer, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
    with tracer.start_as_current_span(name, attributes=attributes, record_exception=True) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
