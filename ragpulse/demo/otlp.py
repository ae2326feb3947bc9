"""OTLP traces as a RAG app instrumented with OpenInference would send them through the
OpenTelemetry Collector's Kafka exporter (encoding `otlp_proto`).

A RAG trace is three spans: a CHAIN root (question in, answer out, session and user), a
RETRIEVER child (ranked documents) and an LLM child (model, token counts, GenAI aliases).
`otlp_trace_messages` splits them over two Kafka messages, children first, as a collector
batching by time would.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from collector.ingest.kafka.producer import OutgoingMessage
from ragpulse.demo.knowledge import Question


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def _attributes(attrs: Mapping[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in attrs.items() if v is not None]


def _nanos(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)


def make_span(
    trace_id: bytes,
    span_id: bytes,
    parent_id: bytes | None,
    name: str,
    start: datetime,
    end: datetime,
    attributes: Mapping[str, Any],
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_id or b"",
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=_nanos(start),
        end_time_unix_nano=_nanos(end),
        attributes=_attributes(attributes),
    )


def export_request(service_name: str, spans: Sequence[Span]) -> bytes:
    """A serialized `ExportTraceServiceRequest` holding `spans` under one resource."""
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=_attributes({"service.name": service_name})),
                scope_spans=[
                    ScopeSpans(
                        scope=InstrumentationScope(name="openinference.instrumentation"),
                        spans=list(spans),
                    )
                ],
            )
        ]
    )
    return bytes(request.SerializeToString())


def rag_spans(
    rng: random.Random,
    *,
    question: str,
    answer: str,
    contexts: Sequence[Mapping[str, Any]],
    model: str,
    session_id: str,
    user_id: str,
    tenant: str,
    at: datetime,
    trace_prefix: bytes = b"",
) -> tuple[bytes, Span, list[Span]]:
    """(trace id, root span, child spans) of one answered question; the trace id starts
    with `trace_prefix` (at most 8 bytes, e.g. a per-run tag) and ends with random bits."""
    random_bytes = 16 - len(trace_prefix[:8])
    trace_id = trace_prefix[:8] + rng.getrandbits(8 * random_bytes).to_bytes(random_bytes, "big")
    root_id, retriever_id, llm_id = (rng.getrandbits(64).to_bytes(8, "big") for _ in range(3))
    retrieval_end = at + timedelta(milliseconds=rng.uniform(20, 150))
    end = retrieval_end + timedelta(milliseconds=rng.uniform(400, 2000))
    prompt_tokens = 120 + sum(len(str(c.get("text", ""))) // 4 for c in contexts)
    completion_tokens = len(answer) // 4 + 10
    root = make_span(
        trace_id,
        root_id,
        None,
        "rag.answer",
        at,
        end,
        {
            "openinference.span.kind": "CHAIN",
            "input.value": question,
            "output.value": answer,
            "session.id": session_id,
            "user.id": user_id,
            "metadata": json.dumps({"tenant": tenant}),
            "tag.tags": json.dumps([tenant]),
            "ragpulse.tag.tenant": tenant,  # ragpulse maps ragpulse.tag.* to trace tags
        },
    )
    documents: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": question}
    for i, ctx in enumerate(contexts):
        prefix = f"retrieval.documents.{i}.document"
        documents[f"{prefix}.id"] = ctx.get("id")
        documents[f"{prefix}.content"] = ctx.get("text")
        documents[f"{prefix}.score"] = ctx.get("score")
        documents[f"{prefix}.metadata"] = json.dumps({"url": ctx.get("url")})
    retriever = make_span(trace_id, retriever_id, root_id, "retrieve", at, retrieval_end, documents)
    llm = make_span(
        trace_id,
        llm_id,
        root_id,
        "generate",
        retrieval_end,
        end,
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": model,
            "gen_ai.request.model": model,
            "llm.token_count.prompt": prompt_tokens,
            "llm.token_count.completion": completion_tokens,
            "llm.token_count.total": prompt_tokens + completion_tokens,
            "gen_ai.usage.input_tokens": prompt_tokens,
            "gen_ai.usage.output_tokens": completion_tokens,
            "gen_ai.conversation.id": session_id,
            "output.value": answer,
        },
    )
    return trace_id, root, [retriever, llm]


def otlp_trace_messages(
    rng: random.Random,
    *,
    tenant: str,
    question: Question,
    contexts: Sequence[Mapping[str, Any]],
    model: str,
    session_id: str,
    at: datetime,
    topic: str,
    trace_prefix: bytes = b"",
) -> list[OutgoingMessage]:
    """One RAG trace as two `otlp_proto` messages: the children, then the root."""
    trace_id, root, children = rag_spans(
        rng,
        question=question.text,
        answer=question.answer,
        contexts=contexts,
        model=model,
        session_id=session_id,
        user_id=f"{tenant}-u{rng.randint(1, 40):03d}",
        tenant=tenant,
        at=at,
        trace_prefix=trace_prefix,
    )
    service = f"{tenant}-rag"
    key = trace_id.hex().encode()
    return [
        OutgoingMessage(export_request(service, children), topic, key),
        OutgoingMessage(export_request(service, [root]), topic, key),
    ]
