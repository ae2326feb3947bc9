"""The demo's applications without a Collector: RAG requests recorded with the OpenTelemetry
SDK and exported over OTLP/HTTP to `ragpulse receive`, as such an app would.

Each tenant is one app: a `TracerProvider` (resource `service.name` = `<tenant>-app`) with
the OTLP/HTTP span exporter (gzip) behind a batch processor. A request is a CHAIN root
(question in, answer out, session, user, tenant), an EMBEDDING span, a RETRIEVER with the
ranked documents and an LLM span with its messages and token counts, in OpenInference
attributes, so the consumer maps them as it maps any OpenInference trace. Trace ids begin
with the demo's run tag, like the other traces of a run.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator

from collector.ingest.kafka.producer import RateLimiter
from ragpulse.demo.knowledge import MODELS, QUESTIONS
from ragpulse.demo.traffic import answer_for, canary_version, ranked_contexts

logger = logging.getLogger(__name__)

_MS = 1_000_000


class RunTagIds(IdGenerator):
    """Trace ids that begin with the run tag's bytes (at most 8), the rest random."""

    def __init__(self, prefix: bytes, rng: random.Random) -> None:
        self._prefix = prefix[:8]
        self._rng = rng

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        size = 16 - len(self._prefix)
        tail = (self._rng.getrandbits(8 * size) or 1).to_bytes(size, "big")
        return int.from_bytes(self._prefix + tail, "big")


class OtelRagApps:
    """The three tenants' apps, answering sample questions at `rate` requests per second
    on a thread (a service component: `start()`, `stop()` flushes every exporter)."""

    def __init__(
        self,
        endpoint: str,
        *,
        rate: float,
        run_tag: str = "",
        headers: Mapping[str, str] | None = None,
        certificate_file: str | None = None,
        seed: int = 11,
    ) -> None:
        self.rate = rate
        self._rng = random.Random(f"{seed}:{run_tag}")
        self._session_prefix = f"{run_tag}-" if run_tag else ""
        ids = RunTagIds(bytes.fromhex(run_tag[:16]) if run_tag else b"", self._rng)
        self._providers: dict[str, TracerProvider] = {}
        for tenant in QUESTIONS:
            provider = TracerProvider(
                resource=Resource.create({"service.name": f"{tenant}-app"}), id_generator=ids
            )
            exporter = OTLPSpanExporter(
                endpoint=endpoint,
                headers=dict(headers or {}),
                certificate_file=certificate_file,
                compression=Compression.Gzip,
                timeout=20,
            )
            provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=1000))
            self._providers[tenant] = provider
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sent = 0

    def start(self) -> OtelRagApps:
        self._thread = threading.Thread(target=self._run, name="ragpulse-demo-otel", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        limiter = RateLimiter(self.rate)
        try:
            while not self._stop.is_set():
                limiter.wait()
                self.answer(self._rng.choice(list(QUESTIONS)))
        except Exception:
            logger.exception("the demo's OTLP apps stopped")

    def answer(self, tenant: str) -> None:
        """Record one RAG request of `tenant`'s app that ended just now."""
        rng = self._rng
        question = rng.choice(QUESTIONS[tenant])
        contexts = ranked_contexts(rng, tenant, question)
        answer, _correct = answer_for(rng, question, contexts)
        session = f"{self._session_prefix}{tenant}-app-{self.sent // 3:05d}"
        embed_ms, retrieve_ms, generate_ms = (
            rng.uniform(5, 30),
            rng.uniform(20, 120),
            rng.uniform(400, 2000),
        )
        end = time.time_ns()
        start = end - int((embed_ms + retrieve_ms + generate_ms) * _MS)
        tracer = self._providers[tenant].get_tracer("ragpulse.demo.app")
        root = tracer.start_span(
            "rag.answer",
            start_time=start,
            attributes={
                "openinference.span.kind": "CHAIN",
                "input.value": question.text,
                "output.value": answer,
                "session.id": session,
                "user.id": f"{tenant}-u{rng.randint(1, 40):03d}",
                "ragpulse.tag.tenant": tenant,
                "ragpulse.tag.channel": "otlp-app",
                "ragpulse.tag.version": canary_version(session),
            },
        )
        parent = trace.set_span_in_context(root)
        at = start
        for name, duration_ms, attributes in (
            ("embed", embed_ms, _embedding(question.text)),
            ("retrieve", retrieve_ms, _retrieval(question.text, contexts)),
            ("generate", generate_ms, _llm(MODELS[tenant], question.text, contexts, answer)),
        ):
            span = tracer.start_span(name, context=parent, start_time=at, attributes=attributes)
            at += int(duration_ms * _MS)
            span.end(end_time=at)
        root.end(end_time=end)
        self.sent += 1

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        for provider in self._providers.values():
            provider.shutdown()  # exports what is batched, while the receiver still listens


def _embedding(text: str) -> dict[str, Any]:
    return {
        "openinference.span.kind": "EMBEDDING",
        "embedding.model_name": "text-embedding-3-small",
        "embedding.embeddings.0.embedding.text": text,
    }


def _retrieval(question: str, contexts: list[dict[str, Any]]) -> dict[str, Any]:
    attributes: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": question}
    for i, ctx in enumerate(contexts):
        prefix = f"retrieval.documents.{i}.document"
        attributes[f"{prefix}.id"] = ctx["id"]
        attributes[f"{prefix}.content"] = ctx["text"]
        attributes[f"{prefix}.score"] = ctx["score"]
        attributes[f"{prefix}.metadata"] = json.dumps({"url": ctx["url"]})
    return attributes


def _llm(model: str, question: str, contexts: list[dict[str, Any]], answer: str) -> dict[str, Any]:
    prompt = 120 + sum(len(c["text"]) // 4 for c in contexts)
    completion = len(answer) // 4 + 10
    return {
        "openinference.span.kind": "LLM",
        "llm.model_name": model,
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Answer from the documents only.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": question,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": answer,
        "llm.token_count.prompt": prompt,
        "llm.token_count.completion": completion,
        "llm.token_count.total": prompt + completion,
        "output.value": answer,
    }
