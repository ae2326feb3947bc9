"""OTLP decode rate against the JSON trace path, in one process (issue 28).

The same RAG requests, made with the OpenTelemetry SDK, as the consumer meets them:

- OTLP: `decode_otlp_message` (parse, span summaries per convention) and the merge into
  records (`merge_span_sets` of the message's fragments per trace, `record_from_spans`),
  protobuf and OTLP/JSON (hex ids), one trace per message and 50 traces per message (an
  SDK's or a Collector's batch);
- JSON: `decode_json_message` + `parse_trace_record` of the equivalent JSON trace (the
  same stored fields: question, answer, the reranked contexts, session, user, model,
  usage, latency and stages, tags), one per message; the ratios are against it. Also
  shown: the ~8 KB JSON trace of the ingest benchmarks (`tests/collector/traces.py`).

A trace is 6 spans: a CHAIN root, an EMBEDDING, a RETRIEVER with 5 documents, a RERANKER
(5 in, 3 out), an LLM condensing the question and the answering LLM with its messages.
Also timed: the receiver's check of a request (`ragpulse receive`: protobuf parsed as
`ExportTraceServiceRequest`, OTLP/JSON's shape and ids; the spans counted, the key taken).
CPU time (the machine is shared), best of 5 passes taken round the cases, with the
consumer's GC settings (start-up heap frozen, young threshold 10,000); rates are per
process, single-threaded, and the ratios (rate / the reference's rate) are what to compare.

    .venv/bin/python -m benchmarks.otlp_decode                 # 2,000 traces
    .venv/bin/python -m benchmarks.otlp_decode --traces 5000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from collector.ingest.decode.otlp import decode_otlp_message  # noqa: E402
from collector.ingest.decode.otlp_mapping import record_from_spans  # noqa: E402
from collector.ingest.decode.trace_json import (  # noqa: E402
    decode_json_message,
    parse_trace_record,
)
from collector.ingest.otlp_http.body import Encoding  # noqa: E402
from collector.ingest.otlp_http.signals import TRACES  # noqa: E402
from collector.ingest.otlp_store import merge_span_sets  # noqa: E402
from collector.store.records import TraceRecord  # noqa: E402
from ragpulse.demo.knowledge import DOCUMENTS, MODELS, QUESTIONS  # noqa: E402
from tests.collector.otlp_traces import json_message, proto_message  # noqa: E402
from tests.collector.traces import trace_bytes  # noqa: E402

BATCH = 50
_MS = 1_000_000
MAX_BYTES = 64 * 1024 * 1024  # the decoders' size limit is not what is measured


def _docs(attrs: dict[str, Any], prefix: str, docs: Sequence[Any], scores: list[float]) -> None:
    for i, (doc, score) in enumerate(zip(docs, scores, strict=True)):
        base = f"{prefix}{i}.document"
        attrs[f"{base}.id"] = doc.id
        attrs[f"{base}.content"] = doc.text
        attrs[f"{base}.score"] = score
        attrs[f"{base}.metadata"] = json.dumps({"url": doc.url})


def record_traces(count: int, seed: int = 28) -> list[list[ReadableSpan]]:
    """`count` RAG requests of the demo's tenants, each a list of its 6 finished spans."""
    rng = random.Random(seed)
    exporter = InMemorySpanExporter()
    providers = {
        tenant: TracerProvider(resource=Resource.create({"service.name": f"{tenant}-app"}))
        for tenant in QUESTIONS
    }
    for provider in providers.values():
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    start = time.time_ns() - count * 3000 * _MS
    for n in range(count):
        tenant = rng.choice(list(QUESTIONS))
        question = rng.choice(QUESTIONS[tenant])
        pool = [d for d in DOCUMENTS if d.tenant == tenant]
        retrieved = rng.sample(pool, min(5, len(pool)))
        scores = sorted((rng.uniform(0.5, 0.95) for _ in retrieved), reverse=True)
        reranked = sorted(retrieved, key=lambda _: rng.random())[:3]
        answer = question.answer if rng.random() < 0.85 else question.wrong_answer
        tracer = providers[tenant].get_tracer("benchmarks.otlp_decode")
        at = start + n * 3000 * _MS
        root = tracer.start_span(
            "rag.answer",
            start_time=at,
            attributes={
                "openinference.span.kind": "CHAIN",
                "input.value": question.text,
                "output.value": answer,
                "session.id": f"{tenant}-s{n // 3:06d}",
                "user.id": f"{tenant}-u{rng.randint(1, 400):04d}",
                "ragpulse.tag.tenant": tenant,
                "metadata": json.dumps({"app_version": "2.3.1", "channel": "web"}),
            },
        )
        context = trace.set_span_in_context(root)
        retrieval: dict[str, Any] = {"openinference.span.kind": "RETRIEVER"}
        retrieval["input.value"] = question.text
        _docs(retrieval, "retrieval.documents.", retrieved, scores)
        rerank: dict[str, Any] = {
            "openinference.span.kind": "RERANKER",
            "reranker.query": question.text,
            "reranker.model_name": "bge-reranker-v2-m3",
            "reranker.top_k": 3,
        }
        _docs(rerank, "reranker.input_documents.", retrieved, scores)
        _docs(rerank, "reranker.output_documents.", reranked, [0.97, 0.88, 0.61])
        prompt = "\n\n".join(d.text for d in reranked)
        children: list[tuple[str, float, dict[str, Any]]] = [
            (
                "condense",
                rng.uniform(150, 400),
                {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "gpt-4o-mini",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": question.text,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": question.text,
                    "llm.token_count.prompt": 60,
                    "llm.token_count.completion": 20,
                },
            ),
            (
                "embed",
                rng.uniform(5, 30),
                {
                    "openinference.span.kind": "EMBEDDING",
                    "embedding.model_name": "text-embedding-3-small",
                    "embedding.embeddings.0.embedding.text": question.text,
                },
            ),
            ("retrieve", rng.uniform(20, 120), retrieval),
            ("rerank", rng.uniform(30, 90), rerank),
            (
                "generate",
                rng.uniform(400, 2000),
                {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": MODELS[tenant],
                    "llm.input_messages.0.message.role": "system",
                    "llm.input_messages.0.message.content": "Answer from these documents:\n"
                    + prompt,
                    "llm.input_messages.1.message.role": "user",
                    "llm.input_messages.1.message.content": question.text,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": answer,
                    "llm.token_count.prompt": 120 + len(prompt) // 4,
                    "llm.token_count.completion": len(answer) // 4 + 10,
                    "output.value": answer,
                },
            ),
        ]
        for name, duration_ms, attributes in children:
            span = tracer.start_span(name, context=context, start_time=at, attributes=attributes)
            at += int(duration_ms * _MS)
            span.end(end_time=at)
        root.end(end_time=at + 5 * _MS)
    for provider in providers.values():
        provider.shutdown()
    by_trace: dict[int, list[ReadableSpan]] = {}
    for finished in exporter.get_finished_spans():
        assert finished.context is not None
        by_trace.setdefault(finished.context.trace_id, []).append(finished)
    return list(by_trace.values())


def json_trace(record: TraceRecord) -> bytes:
    """The JSON trace holding what the OTLP trace stores."""
    obj: dict[str, Any] = {
        "trace_id": record.trace_id,
        "timestamp": record.timestamp.isoformat(),
        "question": record.question,
        "answer": record.answer,
        "contexts": [c.to_json() for c in record.contexts],
        "session_id": record.session_id,
        "user_id": record.user_id,
        "model": record.model,
        "usage": dict(record.usage or {}),
        "latency_ms": {**(record.latency_stages or {}), "total": record.latency_ms},
        "tags": dict(record.tags or {}),
        "metadata": dict(record.metadata or {}),
    }
    return orjson.dumps(obj)


def otlp_records(message: bytes, encoding: str) -> list[TraceRecord]:
    """What the consumer makes of one OTLP message before storing: its records."""
    merged: dict[str, dict[str, Any]] = {}
    for fragment in decode_otlp_message(message, encoding, MAX_BYTES):
        merged[fragment.trace_id] = merge_span_sets(
            merged.get(fragment.trace_id, {}), fragment.spans
        )
    return [record_from_spans(trace_id, spans) for trace_id, spans in merged.items()]


def json_record(message: bytes) -> TraceRecord:
    return parse_trace_record(decode_json_message(message, MAX_BYTES))


Case = tuple[str, Callable[[bytes], object], Sequence[bytes], bool]
"""(name, what is timed on each message, the messages, whether spans/s applies)."""


def best_cpu_s(cases: Sequence[Case], passes: int = 5) -> list[float]:
    """Per case, the best of `passes` CPU seconds (process time) over its messages; the
    passes go round the cases, so a load spike on the shared machine hits them alike."""
    best = [float("inf")] * len(cases)
    for _ in range(passes):
        for i, (_name, fn, messages, _spans) in enumerate(cases):
            started = time.process_time()
            for message in messages:
                fn(message)
            best[i] = min(best[i], time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=2000, help="traces (default: 2000)")
    args = parser.parse_args()
    count = args.traces - args.traces % BATCH or BATCH

    traces = record_traces(count)
    spans = sum(map(len, traces))
    single = {"protobuf": [proto_message(t) for t in traces]}
    single["json"] = [json_message(t) for t in traces]
    batches = [list(chain.from_iterable(traces[i : i + BATCH])) for i in range(0, count, BATCH)]
    batched = {"protobuf": [proto_message(b) for b in batches]}
    batched["json"] = [json_message(b) for b in batches]
    records = [r for m in single["protobuf"] for r in otlp_records(m, "otlp_proto")]
    plain = [json_trace(r) for r in records]
    # the equivalence the ratios rest on: the JSON trace stores what the OTLP trace does
    assert [json_record(m).contexts for m in plain] == [r.contexts for r in records]
    assert len(records) == count and all(len(r.contexts) == 3 for r in records)

    gc.freeze()
    gc.set_threshold(10_000)
    print(
        f"{count} traces, {spans / count:.1f} spans each; load average "
        f"{os.getloadavg()[0]:.2f}; CPU time per trace, best of 5, one process",
        flush=True,
    )
    eight_kb = [trace_bytes(i, size_bytes=8192) for i in range(count)]
    cases: list[Case] = [
        ("JSON trace, the same fields (reference)", json_record, plain, True),
        ("JSON trace, 8 KB (ingest benchmarks)", json_record, eight_kb, False),
    ]
    for shape, messages in (("1 trace/message", single), (f"{BATCH} traces/message", batched)):
        for encoding, name in (("protobuf", "otlp_proto"), ("json", "otlp_json")):
            cases.append(
                (
                    f"OTLP {encoding}, {shape}: decode + records",
                    partial(otlp_records, encoding=name),
                    messages[encoding],
                    True,
                )
            )
    checked: tuple[Encoding, ...] = ("protobuf", "json")
    for encoding in checked:
        cases.append(
            (
                f"receiver check, {encoding}, {BATCH} traces/request",
                partial(TRACES.check, encoding=encoding),
                batched[encoding],
                True,
            )
        )
    best = best_cpu_s(cases)
    json_s = best[0]
    print("| path | KB/trace | µs/trace | traces/s | spans/s | rate x reference |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for (name, _fn, body, has_spans), elapsed in zip(cases, best, strict=True):
        size = f"{len(b''.join(body)) / count / 1024:.1f}"
        print(
            f"| {name} | {size} | {elapsed / count * 1e6:.1f} | {count / elapsed:,.0f} | "
            f"{f'{spans / elapsed:,.0f}' if has_spans else '—'} | {json_s / elapsed:.3f} |"
        )
    print("(spans/s of a JSON trace: the spans of the OTLP trace it is equivalent to)")


if __name__ == "__main__":
    main()
