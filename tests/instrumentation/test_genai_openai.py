"""A RAG app instrumented with the OTel GenAI conventions, stored complete.

The app is written as a user of `opentelemetry-util-genai` would write it: the official
`openai` client (talking HTTP to `openai_api`'s local server) instrumented with
`opentelemetry-instrumentation-genai-openai`, the query embedded with the client, the
retrieval recorded with the util's own retrieval invocation (`handler.retrieval()`), the
request wrapped in the util's workflow (or agent) invocation carrying the user's question
and the answer, half the calls through chat completions (a system message) and half
through the Responses API (`instructions`). Its spans, and the log records of the content
events, are encoded as the Collector's Kafka exporter writes them and stored by the real
ingest. Ten requests, Russian and English; the content capture mode is the one knob the
user turns (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.util.genai.environment_variables import (
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT,
)
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import (
    InputMessage,
    OutputMessage,
    RetrievalDocument,
    TextPart,
)

from collector.ingest.pipeline import BatchResult, Ingestor, RawMessage
from collector.settings import load_settings
from collector.store.models import Trace
from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from tests.instrumentation.harness import (
    OTLP_TOPIC,
    Capture,
    by_trace,
    collector_messages,
    instrumented,
    stored_traces,
)
from tests.instrumentation.openai_api import serving

LOGS_TOPIC = "otlp_logs"
SYSTEM = "Отвечай только по контексту. Answer from the context only."
CHAT_MODEL = "gpt-4o-mini"
EMBEDDING_MODEL = "text-embedding-3-small"
RETRIEVAL_S = 0.004
"""The app's vector search time (a sleep inside the retrieval span)."""


@dataclass(frozen=True)
class Request:
    question: str
    answer: str
    docs: tuple[tuple[str, float, str], ...]
    """(id, score, text), in rank order."""


REQUESTS = (
    Request(
        "Какой лимит на снятие наличных по карте в день?",
        "Суточный лимит снятия наличных — 300 000 рублей.",
        (
            ("cards-limits", 0.91, "Суточный лимит снятия наличных составляет 300 000 рублей."),
            ("cards-block", 0.74, "Заблокировать карту можно в приложении."),
        ),
    ),
    Request(
        "How do I reset my online banking password?",
        "Use 'Forgot password' on the login page.",
        (
            ("auth-reset", 0.88, "To reset a password, choose 'Forgot password' on login."),
            ("auth-2fa", 0.52, "Two-factor codes arrive by SMS."),
        ),
    ),
    Request(
        "Сколько стоит обслуживание кредитной карты?",
        "Обслуживание бесплатно при тратах от 10 000 рублей в месяц.",
        (("credit-fees", 0.83, "Обслуживание бесплатно при тратах от 10 000 ₽ в месяц."),),
    ),
    Request(
        "Can I open a savings account for my child?",
        "Yes, a parent can open one with the child's birth certificate.",
        (
            ("savings-kids", 0.79, "Parents open children's savings accounts in a branch."),
            ("savings-rates", 0.61, "Savings accounts earn 4% a year."),
            ("branches", 0.33, "Branches are open 9 to 18."),
        ),
    ),
    Request(
        "Где посмотреть реквизиты счёта?",
        "Реквизиты есть в приложении: Счёт → Реквизиты.",
        (("requisites", 0.95, "Реквизиты счёта: в приложении, раздел Счёт → Реквизиты."),),
    ),
    Request(
        "What is the daily transfer limit to other banks?",
        "Up to 1,000,000 roubles a day.",
        (("transfer-limits", 0.9, "Transfers to other banks: up to 1,000,000 roubles a day."),),
    ),
    Request(
        "Как закрыть вклад досрочно?",
        "Подайте заявление в приложении; проценты пересчитают по ставке до востребования.",
        (
            ("deposit-close", 0.87, "Досрочное закрытие вклада: заявление в приложении."),
            ("deposit-rates", 0.58, "Ставка до востребования — 0,01%."),
        ),
    ),
    Request(
        "Why was my card payment declined abroad?",
        "Foreign payments may be off; enable them in the app's card settings.",
        (("cards-abroad", 0.84, "Enable foreign payments in card settings before travel."),),
    ),
    Request(
        "Можно ли перевыпустить карту с новым дизайном?",
        "Да, перевыпуск с новым дизайном стоит 500 рублей.",
        (("cards-reissue", 0.8, "Перевыпуск карты с новым дизайном — 500 рублей."),),
    ),
    Request(
        "How long does a SWIFT transfer take?",
        "Usually one to three business days.",
        (
            ("swift-timing", 0.86, "SWIFT transfers take 1-3 business days."),
            ("swift-fees", 0.41, "SWIFT transfers cost 0.5% of the amount."),
        ),
    ),
)
WRAPPERS = ("workflow", "workflow", "agent", "workflow", "plain")
"""How request i is wrapped (`WRAPPERS[i % 5]`): the util's workflow or agent invocation,
or a plain span of an app that uses neither."""


@dataclass
class Run:
    """One run of the app: what it emitted, and per trace id the request it served."""

    spans: list[ReadableSpan]
    logs: list[ReadableLogRecord]
    requests: dict[str, tuple[int, Request]] = field(default_factory=dict)


@contextmanager
def _capture_mode(mode: str) -> Iterator[None]:
    """The app's content capture setting, for the block (read when handlers are built)."""
    saved = {k: os.environ.get(k) for k in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,)}
    os.environ[OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT] = mode
    os.environ.pop(OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT, None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_app(mode: str) -> Run:
    """The ten requests through the instrumented app, with content capture `mode`."""
    capture = Capture()
    log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    loggers = LoggerProvider(resource=Resource.create({"service.name": capture.service}))
    loggers.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    answers = {r.question: r.answer for r in REQUESTS}
    with (
        _capture_mode(mode),
        serving(answers, delay_s=0.002) as server,
        instrumented(OpenAIInstrumentor(), capture, logger_provider=loggers),
    ):
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        handler = TelemetryHandler(
            tracer_provider=capture.provider,
            logger_provider=loggers,
            instrumentation_scope_name="bank.support",
        )
        tracer = capture.provider.get_tracer("bank.support")
        roots = []
        for i, request in enumerate(REQUESTS):
            wrapper = WRAPPERS[i % len(WRAPPERS)]
            if wrapper == "plain":
                with tracer.start_as_current_span("handle_request") as span:
                    _answer(i, request, client, handler)
                roots.append(span)
                continue
            invocation: Any = (
                handler.workflow("support_rag", conversation_id=f"conv-{i // 2}")
                if wrapper == "workflow"
                else handler.invoke_local_agent(
                    agent_name="support_agent", conversation_id=f"conv-{i // 2}"
                )
            )
            with invocation:
                invocation.input_messages = [
                    InputMessage(role="user", parts=[TextPart(content=request.question)])
                ]
                reply = _answer(i, request, client, handler)
                invocation.output_messages = [
                    OutputMessage(
                        role="assistant", parts=[TextPart(content=reply)], finish_reason="stop"
                    )
                ]
            roots.append(invocation.span)
    loggers.force_flush()
    run = Run(spans=capture.spans, logs=list(log_exporter.get_finished_logs()))
    for i, (root, request) in enumerate(zip(roots, REQUESTS, strict=True)):
        run.requests[f"{root.get_span_context().trace_id:032x}"] = (i, request)
    return run


def _answer(i: int, request: Request, client: OpenAI, handler: TelemetryHandler) -> str:
    """One RAG step: embed the question, retrieve, ask the model (chat or Responses API)."""
    client.embeddings.create(model=EMBEDDING_MODEL, input=request.question)
    with handler.retrieval(data_source_id="bank-kb", provider="chroma") as retrieval:
        time.sleep(RETRIEVAL_S)
        retrieval.query_text = request.question
        retrieval.top_k = 3
        # the util's RetrievalDocument holds id and score; an app that shows the text
        # passes documents as mappings, which the util serializes unchanged
        retrieval.documents = [
            {"id": doc_id, "score": score, "content": text}
            if i % 2
            else RetrievalDocument(doc_id, score)
            for doc_id, score, text in request.docs
        ]
    context = "\n".join(text for _, _, text in request.docs)
    prompt = f"Контекст / Context:\n{context}\n\nВопрос / Question: {request.question}"
    if i % 2:
        chat = client.chat.completions.create(
            model=CHAT_MODEL,
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
        )
        return chat.choices[0].message.content or ""
    response = client.responses.create(model=CHAT_MODEL, instructions=SYSTEM, input=prompt)
    return response.output_text


@pytest.fixture(scope="module")
def _migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "ragpulse.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def new_sqlite(_migrated: Path, tmp_path: Path) -> Callable[[], str]:
    """Fresh migrated SQLite databases (copies of one migrated file: migrating takes a
    second, copying a millisecond)."""
    made = iter(range(1_000))

    def make() -> str:
        path = tmp_path / f"ragpulse-{next(made)}.db"
        shutil.copyfile(_migrated, path)
        return f"sqlite:///{path}"

    return make


@pytest.fixture(scope="module")
def span_and_event() -> Run:
    return run_app("span_and_event")


@pytest.fixture(scope="module")
def event_only() -> Run:
    return run_app("event_only")


@pytest.fixture(scope="module")
def no_content() -> Run:
    return run_app("no_content")


# -- the Collector's encoding of log records and a mixed-topic batch -----------------------


def log_messages(logs: Sequence[ReadableLogRecord], encoding: str = "otlp_proto") -> list[bytes]:
    """The records as the Collector's Kafka exporter writes logs (one message)."""
    request = encode_logs(logs)
    if encoding == "otlp_proto":
        return [request.SerializeToString()]
    obj = MessageToDict(request)
    for rl in obj.get("resourceLogs", []):
        for sl in rl.get("scopeLogs", []):
            for record in sl.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return [json.dumps(obj, ensure_ascii=False).encode("utf-8")]


def ingest(url: str, messages: Sequence[tuple[str, bytes]]) -> BatchResult:
    """Store (topic, value) messages with the real ingest pipeline, as one batch."""
    ingestor = Ingestor(load_settings(sampling={"real_users_benchmark": 1.0, "judge": 1.0}))
    raw = [
        RawMessage(topic=topic, partition=0, offset=i, key=None, value=value)
        for i, (topic, value) in enumerate(messages)
    ]
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            result = ingestor.ingest_batch(session, raw)
            session.commit()
        return result
    finally:
        engine.dispose()


def spans_of(run: Run, encoding: str = "otlp_proto", split: bool = True) -> list[tuple[str, bytes]]:
    return [(OTLP_TOPIC, m) for m in collector_messages(run.spans, encoding=encoding, split=split)]


def logs_of(run: Run, encoding: str = "otlp_proto") -> list[tuple[str, bytes]]:
    return [(LOGS_TOPIC, m) for m in log_messages(run.logs, encoding)]


# -- what the library emitted ------------------------------------------------------------


def part_texts(value: Any) -> list[str]:
    """The text parts of a GenAI messages / system instructions value (JSON or structured)."""
    items = json.loads(value) if isinstance(value, str) else value
    out: list[str] = []
    for item in items:
        parts = item.get("parts") if "parts" in item else [item]
        out.extend(p["content"] for p in parts if p.get("type") == "text" and p.get("content"))
    return out


CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")


def emitted_texts(spans: Sequence[ReadableSpan], logs: Sequence[ReadableLogRecord]) -> set[str]:
    """Every message text, retrieval query and document text the library put on a span or
    a log record."""
    out: set[str] = set()
    for attrs in [s.attributes or {} for s in spans] + [
        r.log_record.attributes or {} for r in logs
    ]:
        for key in CONTENT:
            if key in attrs:
                out.update(part_texts(attrs[key]))
        if "gen_ai.retrieval.query.text" in attrs:
            out.add(str(attrs["gen_ai.retrieval.query.text"]))
        if "gen_ai.retrieval.documents" in attrs:
            docs = json.loads(str(attrs["gen_ai.retrieval.documents"]))
            out.update(d["content"] for d in docs if "content" in d)
    return out


def stored_texts(row: Trace) -> set[str]:
    """Every text a stored trace holds: its fields and its span summaries'."""
    out = {row.question, row.answer or ""}
    out.update(c.get("text", "") for c in row.contexts or [])
    for holder in [row.meta or {}] + [s.get("metadata", {}) for s in (row.spans or {}).values()]:
        out.update(v for v in holder.values() if isinstance(v, str))
    for summary in (row.spans or {}).values():
        out.update(summary[k] for k in ("input", "output") if isinstance(summary.get(k), str))
    return out


def ms(span: ReadableSpan) -> float:
    assert span.start_time is not None and span.end_time is not None
    return (span.end_time - span.start_time) / 1e6


def operation(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == name]


def expected_usage(spans: Sequence[ReadableSpan]) -> dict[str, int]:
    """The token counts the spans report, summed, under the trace contract's names."""

    def total(key: str) -> int:
        return sum(int(str((s.attributes or {}).get(key, 0))) for s in spans)

    prompt, completion = total("gen_ai.usage.input_tokens"), total("gen_ai.usage.output_tokens")
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cache_read_input_tokens": total("gen_ai.usage.cache_read.input_tokens"),
    }


# -- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "split", "with_logs"),
    [("otlp_proto", True, True), ("otlp_json", True, False), ("otlp_json", False, True)],
)
def test_every_request_is_stored_complete(
    span_and_event: Run, new_sqlite: Callable[[], str], encoding: str, split: bool, with_logs: bool
) -> None:
    """`span_and_event`: the spans alone are complete; the same content arriving again as
    log records (here before the spans) changes nothing and adds no tokens."""
    run, sqlite_url = span_and_event, new_sqlite()
    logs = logs_of(run, encoding) if with_logs else []
    result = ingest(sqlite_url, logs + spans_of(run, encoding, split))
    assert result.invalid == 0 and result.stored == result.consumed
    stored = stored_traces(sqlite_url)
    assert set(stored) == set(run.requests)
    grouped = by_trace(run.spans)
    for trace_id, (i, request) in run.requests.items():
        row, spans = stored[trace_id], grouped[trace_id]
        wrapper = WRAPPERS[i % len(WRAPPERS)]
        assert row.question == request.question
        assert row.answer == request.answer
        contexts = row.contexts or []
        assert [(c["id"], c["score"]) for c in contexts] == [(d, s) for d, s, _ in request.docs]
        texts = [c.get("text") for c in contexts]
        assert texts == ([t for _, _, t in request.docs] if i % 2 else [None] * len(request.docs))
        assert row.session_id == (None if wrapper == "plain" else f"conv-{i // 2}")
        assert row.model == f"{CHAT_MODEL}-2026-01"  # the response model of the last call
        assert row.usage == expected_usage(spans)
        assert row.meta == {"system_instructions": SYSTEM}
        expected_tags = {"service": "rag-app", "data_source": "bank-kb"}
        if wrapper != "plain":
            expected_tags[wrapper] = "support_rag" if wrapper == "workflow" else "support_agent"
        assert row.tags == expected_tags
        # stage latencies are the spans' wall time: retrieval is no generation
        (chat,) = operation(spans, "chat")
        (retrieval,) = operation(spans, "retrieval")
        (embedding,) = operation(spans, "embeddings")
        assert row.latency_stages == {
            "generation": ms(chat),
            "retrieval": ms(retrieval),
            "embedding": ms(embedding),
        }
        assert ms(retrieval) >= RETRIEVAL_S * 1000
        (root,) = [s for s in spans if s.parent is None]
        assert row.latency_ms == ms(root)
        # nothing the library emitted is left behind
        records = [r for r in run.logs if f"{r.log_record.trace_id:032x}" == trace_id]
        emitted = emitted_texts(spans, records if with_logs else [])
        assert request.question in emitted and request.answer in emitted
        assert emitted <= stored_texts(row)


def test_content_emitted_as_events_only_reaches_the_trace(event_only: Run, db_url: str) -> None:
    """`event_only`: the spans hold no content, the log records hold the model calls'
    messages; here they arrive before the spans, then everything is replayed. (The util
    emits events only for model calls: the workflow's question and the retrieved documents
    are not captured in this mode, so the question is the model's prompt.)"""
    run = event_only
    assert not emitted_texts(run.spans, [])  # nothing on the spans
    logs, spans = logs_of(run), spans_of(run, split=True)
    first = ingest(db_url, logs)
    assert first.stored == first.consumed == 1
    assert set(stored_traces(db_url)) == set(run.requests)
    ingest(db_url, spans)
    complete = _snapshot(stored_traces(db_url))
    replay = ingest(db_url, logs + spans)
    assert replay.stored == 0 and replay.duplicates == replay.consumed
    assert _snapshot(stored_traces(db_url)) == complete
    grouped = by_trace(run.spans)
    for trace_id, (_, request) in run.requests.items():
        row, spans_of_trace = complete[trace_id], grouped[trace_id]
        assert request.question in row["question"] and row["question"].startswith("Контекст")
        assert row["answer"] == request.answer
        assert row["meta"] == {"system_instructions": SYSTEM}
        assert row["model"] == f"{CHAT_MODEL}-2026-01"
        assert row["usage"] == expected_usage(spans_of_trace)
        (chat,) = operation(spans_of_trace, "chat")
        assert row["latency_stages"]["generation"] == ms(chat)
        logs_of_trace = [r for r in run.logs if f"{r.log_record.trace_id:032x}" == trace_id]
        assert emitted_texts([], logs_of_trace) <= stored_texts(stored_traces(db_url)[trace_id])


def test_the_arrival_order_of_spans_and_content_events_does_not_matter(
    event_only: Run, new_sqlite: Callable[[], str]
) -> None:
    run = event_only
    logs, spans = logs_of(run, "otlp_json"), spans_of(run, "otlp_json", split=True)
    orders = {
        "logs, then spans": [logs, spans],
        "spans, then logs": [spans, logs],
        "one batch, spans first": [spans + logs],
        "one batch, logs first": [logs + spans],
    }
    results = {}
    for name, batches in orders.items():
        url = new_sqlite()
        for batch in batches:
            ingest(url, batch)
        results[name] = _snapshot(stored_traces(url))
    first = results.pop("logs, then spans")
    assert all(r == first for r in results.values())
    assert all(row["answer"] for row in first.values())


def test_content_capture_off_still_stores_and_counts_every_trace(
    no_content: Run, new_sqlite: Callable[[], str]
) -> None:
    run, sqlite_url = no_content, new_sqlite()
    assert not emitted_texts(run.spans, run.logs) and not run.logs
    result = ingest(sqlite_url, spans_of(run, "otlp_json", split=True))
    assert result.invalid == 0 and result.stored == result.consumed
    stored = stored_traces(sqlite_url)
    assert set(stored) == set(run.requests)
    for trace_id in run.requests:
        row = stored[trace_id]
        assert row.question == "" and row.answer is None and not row.contexts
        assert row.model == f"{CHAT_MODEL}-2026-01" and row.usage
        assert set(row.latency_stages or {}) == {"generation", "retrieval", "embedding"}


def _snapshot(rows: dict[str, Trace]) -> dict[str, dict[str, Any]]:
    """The span-derived columns of stored traces (what the arrival order must not change)."""
    columns = ("question", "answer", "contexts", "session_id", "model", "usage")
    more = ("latency_ms", "latency_stages", "tags", "meta", "spans")
    return {t: {c: getattr(r, c) for c in columns + more} for t, r in rows.items()}
