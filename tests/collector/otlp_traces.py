"""OTLP test messages made by the real OpenTelemetry SDK (no hand-built protobuf).

`rag_spans()` records a RAG request the way an OpenInference-instrumented app does: a
CHAIN root with the question and answer, a RETRIEVER child with ranked documents, and an
LLM child with model, messages and token counts (OpenInference and GenAI attributes).
`proto_message(spans)` / `json_message(spans)` encode any subset as the Collector's Kafka
exporter would (`otlp_proto` / `otlp_json` with hex ids).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict, MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

QUESTION = "Как продлить срок действия загранпаспорта?"
ANSWER = "Подайте заявление через портал госуслуг или в МФЦ."
DOCS = (
    ("doc-1", "Заявление подаётся через портал госуслуг.", 0.92),
    ("doc-2", "Срок рассмотрения — не более 30 дней.", 0.81),
    ("doc-3", "Нужны паспорт, фотография и квитанция.", 0.64),
)


def rag_spans(
    *,
    session_id: str = "session-7",
    user_id: str = "user-3",
    tenant: str = "acme",
    root_attributes: dict[str, Any] | None = None,
    scores: Sequence[float] | None = None,
) -> list[ReadableSpan]:
    """One RAG request: [root CHAIN, RETRIEVER, LLM] spans in the order they finished.

    `root_attributes` are added to (or replace) the root span's; `scores` replace the
    documents' retrieval scores."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.otlp")
    with tracer.start_as_current_span(
        "rag",
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": QUESTION}, ensure_ascii=False),
            "input.mime_type": "application/json",
            "output.value": ANSWER,
            "session.id": session_id,
            "user.id": user_id,
            "ragpulse.tag.tenant": tenant,
            "metadata": json.dumps({"app_version": "2.3.1"}),
        }
        | (root_attributes or {}),
    ):
        docs: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION}
        for i, (doc_id, text, score) in enumerate(DOCS):
            score = scores[i] if scores is not None else score
            docs[f"retrieval.documents.{i}.document.id"] = doc_id
            docs[f"retrieval.documents.{i}.document.content"] = text
            docs[f"retrieval.documents.{i}.document.score"] = score
            docs[f"retrieval.documents.{i}.document.metadata"] = json.dumps(
                {"url": f"https://kb.example.org/{doc_id}"}
            )
        with tracer.start_as_current_span("retrieve", attributes=docs):
            pass
        with tracer.start_as_current_span(
            "generate",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Отвечай по документам.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": QUESTION,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": ANSWER,
                "llm.token_count.prompt": 900,
                "llm.token_count.completion": 120,
                "gen_ai.conversation.id": session_id,
                "gen_ai.usage.input_tokens": 900,
                "gen_ai.usage.output_tokens": 120,
            },
        ):
            pass
    provider.shutdown()
    finished = list(exporter.get_finished_spans())
    root = next(s for s in finished if s.parent is None)
    return [root] + [s for s in finished if s is not root]


def genai_llm_span(session_id: str = "conv-1") -> list[ReadableSpan]:
    """A lone GenAI-convention chat span (no OpenInference attributes)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("tests.genai").start_as_current_span(
        "chat gpt-4o",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.conversation.id": session_id,
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": 50,
            "gen_ai.usage.output_tokens": 7,
        },
    ):
        pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def trace_hex(spans: Sequence[ReadableSpan]) -> str:
    return f"{spans[0].context.trace_id:032x}"


def proto_message(spans: Sequence[ReadableSpan]) -> bytes:
    data: bytes = encode_spans(spans).SerializeToString()
    return data


def protobuf_json_message(spans: Sequence[ReadableSpan]) -> bytes:
    """protobuf's canonical JSON (`MessageToJson`: base64 ids)."""
    text: str = MessageToJson(encode_spans(spans))
    return text.encode("utf-8")


def json_message(spans: Sequence[ReadableSpan]) -> bytes:
    """OTLP/JSON as the Collector writes it: camelCase, hex ids, int64 as strings."""
    obj = MessageToDict(encode_spans(spans))
    for rs in obj.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _b64_to_hex(span[key])
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _b64_to_hex(text: str) -> str:
    return base64.b64decode(text).hex()
