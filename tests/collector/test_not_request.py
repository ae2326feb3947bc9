"""Traces that are no user request (index building, batch embedding, health checks): stored
flagged, never sampled, counted once when settled, and a request again when the rest of its
spans arrive, whatever the order."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from prometheus_client import CollectorRegistry
from sqlalchemy import inspect, select, text

from collector.ingest.decode.otlp_mapping import summarize_span
from collector.ingest.decode.requests import not_request, settled
from collector.ingest.kafka.stats import ConsumerStats
from collector.store.models import SampleRecord
from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from tests.fixtures.db import create_postgres_database, drop_postgres_database
from tests.instrumentation.harness import (
    Capture,
    by_trace,
    collector_messages,
    ingest,
    stored_traces,
)

TEXTS = ["Паспорт выдаётся на 10 лет.", "A passport is valid for ten years."]


def _summary(attrs: dict[str, Any], parent: str = "p") -> dict[str, Any]:
    return summarize_span(attrs, parent=parent, name="s", start_ns=0, end_ns=1, resource={})


@pytest.mark.parametrize(
    ("kinds", "reason"),
    [
        (["CHAIN", "EMBEDDING", "LLM"], None),
        (["CHAIN", "RETRIEVER"], None),
        (["RERANKER"], None),
        (["AGENT", "TOOL"], None),
        (["CHAIN", "EMBEDDING", "EMBEDDING"], "embedding"),
        (["EMBEDDING"], "embedding"),
        (["CHAIN", "CHAIN", "TOOL"], "no_model_call"),
        ([None, None], "unknown_spans"),
    ],
)
def test_a_trace_is_a_request_when_it_asks_a_model_or_retrieves(
    kinds: list[str | None], reason: str | None
) -> None:
    spans = [
        _summary({"openinference.span.kind": k} if k else {"http.route": "/health"}) for k in kinds
    ]
    assert not_request(spans) == reason


def test_the_genai_conventions_tell_requests_apart_too() -> None:
    embeddings = _summary({"gen_ai.operation.name": "embeddings"})
    chat = _summary({"gen_ai.operation.name": "chat"})
    assert not_request([embeddings]) == "embedding"
    assert not_request([embeddings, chat]) is None


def test_a_question_on_a_span_without_a_stage_makes_a_request() -> None:
    # the app's own attributes (no stage kind) saying what the question is
    assert not_request([{"parent": "", "kind": "", "input": "Как продлить паспорт?"}]) is None


def test_a_handler_instrumented_alone_answering_a_question_is_a_request() -> None:
    oi = "openinference.span.kind"
    handler = {oi: "CHAIN", "input.value": "Как продлить паспорт?", "output.value": "Через МФЦ."}
    assert not_request([_summary(handler, parent="")]) is None
    # ... but not below the root, nor without an answer
    assert not_request([_summary(handler)]) == "no_model_call"
    unanswered = {k: v for k, v in handler.items() if k != "output.value"}
    assert not_request([_summary(unanswered, parent="")]) == "no_model_call"
    # LlamaIndex's node parser: call arguments as its input, not a question
    parser = {
        oi: "CHAIN",
        "input.value": json.dumps({"nodes": ["<Document(id_=d0)>"], "show_progress": False}),
        "input.mime_type": "application/json",
        "output.value": json.dumps(["<TextNode(id_=n0)>"]),
        "output.mime_type": "application/json",
    }
    assert not_request([_summary(parser, parent="")]) == "no_model_call"
    assert (
        not_request([_summary(handler | {"input.value": "[черновик] вопрос"}, parent="")]) is None
    )


def test_only_a_trace_with_its_root_is_settled() -> None:
    child = _summary({"openinference.span.kind": "EMBEDDING"})
    root = _summary({"openinference.span.kind": "CHAIN"}, parent="")
    assert settled({"b": child}) is None
    assert settled({"a": root, "b": child}) == "embedding"


def _index_build(capture: Capture) -> list[ReadableSpan]:
    """LlamaIndex's batch embedding of an index's nodes, as its instrumentor records it."""
    tracer = capture.provider.get_tracer("openinference.instrumentation.llama_index")
    with tracer.start_as_current_span(
        "MockEmbedding.get_text_embedding_batch",
        attributes={
            "openinference.span.kind": "EMBEDDING",
            "input.value": json.dumps({"texts": TEXTS}, ensure_ascii=False),
            "input.mime_type": "application/json",
        },
    ):
        for t in TEXTS:
            with tracer.start_as_current_span(
                "MockEmbedding._get_text_embedding",
                attributes={"openinference.span.kind": "EMBEDDING", "input.value": t},
            ):
                pass
    return capture.spans


def _request(capture: Capture) -> list[ReadableSpan]:
    """A RAG request: root CHAIN > [EMBEDDING (the query's), RETRIEVER, LLM], in the order
    they finished."""
    tracer = capture.provider.get_tracer("tests.not_request")
    oi = "openinference.span.kind"
    with tracer.start_as_current_span("query", attributes={oi: "CHAIN", "input.value": "Q?"}) as r:
        with tracer.start_as_current_span("embed", attributes={oi: "EMBEDDING"}):
            pass
        with tracer.start_as_current_span(
            "retrieve",
            attributes={
                oi: "RETRIEVER",
                "retrieval.documents.0.document.id": "d1",
                "retrieval.documents.0.document.content": TEXTS[0],
            },
        ):
            pass
        with tracer.start_as_current_span(
            "llm", attributes={oi: "LLM", "output.value": "Десять лет."}
        ):
            pass
        r.set_attribute("output.value", "Десять лет.")
    return capture.spans


def _samples(url: str) -> list[tuple[str, str]]:
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            rows = session.execute(select(SampleRecord.trace_id, SampleRecord.purpose)).all()
            return sorted((r[0], r[1]) for r in rows)
    finally:
        engine.dispose()


def test_an_index_build_is_stored_flagged_never_sampled_and_counted_once(db_url: str) -> None:
    spans = _index_build(Capture())
    (trace_id,) = by_trace(spans)
    first = ingest(db_url, collector_messages(spans))
    assert first.not_request == {"embedding": 1}
    stored = stored_traces(db_url)[trace_id]
    assert stored.not_request == "embedding"
    assert stored.question == "" and stored.answer is None  # no question stored
    assert stored.spans is not None and len(stored.spans) == 3  # every span kept
    assert _samples(db_url) == []
    replay = ingest(db_url, collector_messages(spans))
    assert replay.not_request == {} and replay.duplicates == 1
    # ground truth arriving later does not make it a benchmark candidate
    feedback = {
        "type": "feedback",
        "trace_id": trace_id,
        "timestamp": datetime(2026, 3, 2, tzinfo=UTC).isoformat(),
        "relevant_ids": ["d1"],
    }
    ingest(db_url, [json.dumps(feedback).encode()], topic="rag.feedback")
    assert _samples(db_url) == []
    registry = CollectorRegistry()
    stats = ConsumerStats(registry)
    stats.record(first)
    stats.record(replay)
    value = registry.get_sample_value("ragpulse_traces_not_request_total", {"reason": "embedding"})
    assert value == 1.0


def _split(spans: Sequence[ReadableSpan]) -> tuple[bytes, bytes]:
    """The query embedding alone, then the rest (the root among it)."""
    embed = [s for s in spans if s.name == "embed"]
    rest = [s for s in spans if s.name != "embed"]
    return collector_messages(embed)[0], collector_messages(rest)[0]


_COLUMNS = ("question", "answer", "contexts", "not_request", "spans", "latency_stages")


@pytest.mark.parametrize("order", ["embedding_first", "embedding_last"])
def test_a_split_request_is_a_request_whatever_the_order(sqlite_url: str, order: str) -> None:
    spans = _request(Capture())
    (trace_id,) = by_trace(spans)
    embedding, rest = _split(spans)
    if order == "embedding_first":
        first = ingest(sqlite_url, [embedding])
        early = stored_traces(sqlite_url)[trace_id]
        # embedding work so far, no root yet: flagged, not sampled, not counted
        assert early.not_request == "embedding" and first.not_request == {}
        assert _samples(sqlite_url) == []
        second = ingest(sqlite_url, [rest])
    else:
        first = ingest(sqlite_url, [rest])
        assert stored_traces(sqlite_url)[trace_id].not_request is None
        second = ingest(sqlite_url, [embedding])
    assert second.not_request == {}
    final = stored_traces(sqlite_url)[trace_id]
    assert final.not_request is None
    assert (final.question, final.answer) == ("Q?", "Десять лет.")
    assert final.contexts == [{"id": "d1", "text": TEXTS[0]}]
    assert ("judge", trace_id) in {(p, t) for t, p in _samples(sqlite_url)}


def test_both_orders_store_the_same_trace(tmp_path: Any) -> None:
    spans = _request(Capture())
    (trace_id,) = by_trace(spans)
    embedding, rest = _split(spans)
    rows = []
    for name, messages in (("a", [embedding, rest]), ("b", [rest, embedding])):
        url = f"sqlite:///{tmp_path / name}.db"
        upgrade(url)
        for message in messages:
            ingest(url, [message])
        row = stored_traces(url)[trace_id]
        rows.append({c: getattr(row, c) for c in _COLUMNS})
    assert rows[0] == rows[1]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_revision_0012_adds_not_request_to_stored_traces(tmp_path: Any, backend: str) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}" if backend == "sqlite" else create_postgres_database()
    try:
        upgrade(url, "0011")
        engine = make_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(
                    text(
                        "INSERT INTO traces (trace_id, timestamp, received_at, updated_at, "
                        "source, question) VALUES ('t1', :ts, :ts, :ts, 'otlp', 'Q?')"
                    ),
                    {"ts": datetime(2026, 3, 2, tzinfo=UTC)},
                )
            upgrade(url)
            columns = {c["name"] for c in inspect(engine).get_columns("traces")}
            assert "not_request" in columns
            with engine.connect() as conn:
                kept = conn.execute(text("SELECT question, not_request FROM traces")).all()
            assert [tuple(r) for r in kept] == [("Q?", None)]  # an existing row is a request
            from alembic import command

            from migrations.runner import alembic_config

            command.downgrade(alembic_config(url), "0011")
            engine.dispose()
            columns = {c["name"] for c in inspect(engine).get_columns("traces")}
            assert "not_request" not in columns
        finally:
            engine.dispose()
    finally:
        if backend == "postgresql":
            drop_postgres_database(url)


def _create_agent(capture: Capture) -> list[ReadableSpan]:
    """OpenLLMetry's span around LangChain's `create_agent`, made by the instrumentor's own
    wrapper (`opentelemetry.instrumentation.langchain.patch.create_agent_wrapper`, which
    `LangchainInstrumentor` puts on `langchain.agents.create_agent` when `langchain` is
    installed; here on a stand-in factory, `langchain` itself not being installed)."""
    from opentelemetry.instrumentation.langchain.patch import create_agent_wrapper
    from wrapt import FunctionWrapper

    def create_agent(model: object, tools: object = None, **_: object) -> object:
        return object()

    tracer = capture.provider.get_tracer("opentelemetry.instrumentation.langchain")
    factory = FunctionWrapper(create_agent, create_agent_wrapper(tracer, "langchain"))
    factory("gpt-4o-mini", system_prompt="Answer from the bank's knowledge base.", name="bank")
    return capture.spans


def _genai_create_agent(capture: Capture) -> list[ReadableSpan]:
    """A GenAI `create_agent` span as the semantic conventions name it (an agent created
    on a remote agent service)."""
    tracer = capture.provider.get_tracer("tests.genai_agents")
    with tracer.start_as_current_span(
        "create_agent bank",
        attributes={
            "gen_ai.operation.name": "create_agent",
            "gen_ai.provider.name": "openai",
            "gen_ai.agent.name": "bank",
            "gen_ai.agent.id": "asst_5j66UpCpwteGg4YSxUnt7lPY",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.system_instructions": "Answer from the bank's knowledge base.",
        },
    ):
        pass
    return capture.spans


@pytest.mark.parametrize("make", [_create_agent, _genai_create_agent])
def test_building_an_agent_is_no_request(db_url: str, make: Any) -> None:
    spans = make(Capture())
    assert len(spans) == 1 and spans[0].name == "create_agent bank"
    assert (spans[0].attributes or {})["gen_ai.operation.name"] == "create_agent"
    (trace_id,) = by_trace(spans)
    done = ingest(db_url, collector_messages(spans))
    assert done.not_request == {"agent_setup": 1}
    stored = stored_traces(db_url)[trace_id]
    assert stored.not_request == "agent_setup" and stored.question == ""
    assert _samples(db_url) == []
    # surely no request: not counted as an OTLP trace lacking its question and answer
    registry = CollectorRegistry()
    ConsumerStats(registry).record(done)
    assert registry.get_sample_value("ragpulse_otlp_traces_total", {"convention": "genai"}) is None
    reason = {"reason": "agent_setup"}
    assert registry.get_sample_value("ragpulse_traces_not_request_total", reason) == 1.0


def test_an_agent_built_inside_a_request_leaves_it_a_request() -> None:
    create = _summary({"gen_ai.operation.name": "create_agent"}, parent="")
    run = _summary({"gen_ai.operation.name": "invoke_agent"})
    assert not_request([create]) == "agent_setup"
    assert not_request([create, run]) is None


def test_inspect_says_an_agent_build_is_no_request() -> None:
    from collector.ingest.otlp_inspect import inspect_messages
    from ragpulse.inspect_render import render_trace

    spans = _create_agent(Capture())
    (trace,) = inspect_messages([("captured", m) for m in collector_messages(spans)]).traces
    assert trace.as_json()["record"]["not_request"] == "agent_setup"
    assert "  not a request: agent_setup (stored without a question" in "\n".join(
        render_trace(trace)
    )
