"""Real instrumentation libraries' spans, as the OpenTelemetry Collector's Kafka exporter
writes them, through ragpulse's ingest into a real store.

A test runs a small RAG app over fake models with a real, unmodified instrumentor attached
to `Capture`'s tracer provider, then `collector_messages` encodes the finished spans as
the Collector would (`otlp_proto` or `otlp_json` with hex ids; each OTLP/JSON message is
checked to decode through the direct reader as through `ParseDict`), optionally splitting
each trace over two messages (children first, the root last), and `ingest` stores them with the
real `Ingestor` and returns the stored rows. `emitted_strings` lists every string value the
library put on a span, for checks that nothing the library emitted was left behind.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from collector.ingest.pipeline import BatchResult, Ingestor, RawMessage
from collector.settings import load_settings
from collector.store.models import Trace
from collector.store.session import make_engine, make_session_factory
from tests.collector.otlp_json_reference import check_same
from tests.collector.otlp_traces import json_message, proto_message

OTLP_TOPIC = "otlp_spans"


@dataclass
class Capture:
    """A tracer provider whose finished spans are kept in memory."""

    service: str = "rag-app"
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    provider: TracerProvider = field(init=False)

    def __post_init__(self) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": self.service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> list[ReadableSpan]:
        self.provider.force_flush()
        return list(self.exporter.get_finished_spans())


@contextmanager
def instrumented(instrumentor: Any, capture: Capture, **kwargs: Any) -> Iterator[Capture]:
    """`instrumentor` (an OTel `BaseInstrumentor`) attached to `capture` for the block, and
    detached after it (instrumentors patch libraries globally)."""
    instrumentor.instrument(tracer_provider=capture.provider, **kwargs)
    try:
        yield capture
    finally:
        instrumentor.uninstrument()


def by_trace(spans: Sequence[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    """Spans grouped by trace id (32 hex), each group in finishing order."""
    out: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        out.setdefault(f"{span.context.trace_id:032x}", []).append(span)
    return out


def collector_messages(
    spans: Sequence[ReadableSpan], *, encoding: str = "otlp_proto", split: bool = False
) -> list[bytes]:
    """The spans as the Collector's Kafka exporter writes them: one message for all, or
    with `split` each trace over two messages (its root span in the second)."""
    if not split:
        return [_encode(spans, encoding)]
    first: list[ReadableSpan] = []
    second: list[ReadableSpan] = []
    for group in by_trace(spans).values():
        roots = [s for s in group if s.parent is None]
        children = [s for s in group if s.parent is not None]
        half = len(children) // 2
        first.extend(children[:half])
        second.extend(children[half:] + roots)
    return [_encode(part, encoding) for part in (first, second) if part]


def _encode(spans: Sequence[ReadableSpan], encoding: str) -> bytes:
    if encoding == "otlp_proto":
        return proto_message(spans)
    if encoding != "otlp_json":
        raise ValueError(f"unknown encoding {encoding!r}; known: otlp_proto, otlp_json")
    message = json_message(spans)  # camelCase, int64 as strings, hex ids: as the Collector
    # every real library's message is read by the direct OTLP/JSON reader (no ParseDict
    # fallback) and decodes as it did through ParseDict (issue 28)
    check_same(message, direct_read=True)
    return message


def ingest(url: str, messages: Sequence[bytes], topic: str = OTLP_TOPIC) -> BatchResult:
    """Store the messages with the real ingest pipeline (one batch, committed)."""
    ingestor = Ingestor(load_settings(sampling={"real_users_benchmark": 1.0, "judge": 1.0}))
    raw = [
        RawMessage(topic=topic, partition=0, offset=i, key=None, value=m)
        for i, m in enumerate(messages)
    ]
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            result = ingestor.ingest_batch(session, raw)
            session.commit()
        return result
    finally:
        engine.dispose()


def stored_traces(url: str) -> dict[str, Trace]:
    """Every stored trace by id (detached rows: read their columns freely)."""
    engine = make_engine(url)
    try:
        with make_session_factory(engine)(expire_on_commit=False) as session:
            rows = session.scalars(select(Trace)).all()
            session.expunge_all()
            return {row.trace_id: row for row in rows}
    finally:
        engine.dispose()


def emitted_strings(spans: Sequence[ReadableSpan], *prefixes: str) -> set[str]:
    """Every non-empty string attribute value (and list item) whose key starts with one of
    `prefixes` (all keys when none is given)."""
    out: set[str] = set()
    for span in spans:
        for key, value in (span.attributes or {}).items():
            if prefixes and not key.startswith(prefixes):
                continue
            values = value if isinstance(value, tuple | list) else (value,)
            out.update(v for v in values if isinstance(v, str) and v)
    return out
