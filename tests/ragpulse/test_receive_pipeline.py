"""An application without a Collector: the official OTLP/HTTP span exporter sends to
`ragpulse receive`, and the consumer stores the trace from Kafka as it stores the
Collector's."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, text

from collector.settings import load_settings
from ragpulse.receiver import Receiver
from ragpulse.service import Service, prepare_database
from tests.fixtures.broker import KafkaTopics

pytestmark = pytest.mark.timeout(120)

QUESTION = "Как заблокировать карту?"
ANSWER = "Заблокируйте карту в приложении: Карты → Заблокировать."


class _Recording(SpanExporter):
    """The exporter, keeping what each export returned."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.results: list[SpanExportResult] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        self.results.append(result)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


def _app_trace(endpoint: str, compression: Compression) -> str:
    """One RAG request recorded by an app with the SDK and the OTLP/HTTP exporter; its
    trace id (hex). The export must succeed: the receiver answered 200."""
    exporter = _Recording(OTLPSpanExporter(endpoint=endpoint, compression=compression, timeout=20))
    provider = TracerProvider(resource=Resource.create({"service.name": "bank-app"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.app")
    with tracer.start_as_current_span(
        "rag",
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": QUESTION,
            "output.value": ANSWER,
            "session.id": "s-1",
            "ragpulse.tag.tenant": "bank",
        },
    ) as root:
        docs = {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION}
        for i, doc in enumerate(("cards-block", "cards-limits")):
            docs[f"retrieval.documents.{i}.document.id"] = doc
            docs[f"retrieval.documents.{i}.document.content"] = f"текст {doc}"
            docs[f"retrieval.documents.{i}.document.score"] = 0.9 - i / 10
        with tracer.start_as_current_span("retrieve", attributes=docs):
            pass
        with tracer.start_as_current_span(
            "generate",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gigachat-pro",
                "output.value": ANSWER,
            },
        ):
            pass
        trace_id = f"{root.get_span_context().trace_id:032x}"
    provider.shutdown()  # flushes: the export happens here
    assert exporter.results and set(exporter.results) == {SpanExportResult.SUCCESS}
    return trace_id


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_otel_exporter_through_the_receiver_into_the_store(
    sqlite_url: str, kafka_topics: KafkaTopics, compression: Compression
) -> None:
    settings = load_settings(
        database={"url": sqlite_url},
        kafka=kafka_topics.kafka_settings(),
        receiver={"port": 0},
    )
    receiver = Receiver(settings, CollectorRegistry()).start()
    try:
        trace_id = _app_trace(receiver.url + "/v1/traces", compression)
    finally:
        receiver.stop()

    prepare_database(sqlite_url, migrate=True)
    service = Service(settings, registry=CollectorRegistry())
    service.run(idle_timeout_s=1.0)
    assert service.stats.summary()["stored"] == 1
    engine = create_engine(sqlite_url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                text("SELECT trace_id, source, question, answer, contexts, model, tags FROM traces")
            ).one()
    finally:
        engine.dispose()
    assert (row.trace_id, row.source, row.question, row.answer, row.model) == (
        trace_id,
        "otlp",
        QUESTION,
        ANSWER,
        "gigachat-pro",
    )
    contexts = json.loads(row.contexts) if isinstance(row.contexts, str) else row.contexts
    assert [c["id"] for c in contexts] == ["cards-block", "cards-limits"]
    tags = json.loads(row.tags) if isinstance(row.tags, str) else row.tags
    assert tags["tenant"] == "bank" and tags["service"] == "bank-app"
