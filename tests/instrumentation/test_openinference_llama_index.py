"""A LlamaIndex RAG app instrumented with the real openinference-instrumentation-llama-index:
its requests are stored complete, its index building as no request.

The app builds a `VectorStoreIndex` over a few documents with `MockEmbedding` (the build
makes two traces: the node parser's and the batch embedding's) and answers with a
`MockLLM` that names its model and reports token usage as OpenAI's LLM does, three ways in
turn: a query engine, a context chat engine, and its own OpenInference chain span around a
retriever and `llm.chat` (which LlamaIndex runs through `complete`: two nested LLM spans
reporting the same tokens, counted once).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.llms.types import (
    ChatMessage,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.chat_engine.types import ChatMode
from llama_index.core.embeddings.mock_embed_model import MockEmbedding
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockLLM
from llama_index.core.schema import NodeWithScore
from openinference.instrumentation import (
    OITracer,
    TraceConfig,
    using_metadata,
    using_session,
    using_tags,
    using_user,
)
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from pydantic import Field
from sqlalchemy import select

from collector.store.models import SampleRecord
from collector.store.session import make_engine, make_session_factory
from tests.instrumentation.harness import (
    Capture,
    collector_messages,
    ingest,
    instrumented,
    stored_traces,
)
from tests.instrumentation.oi_checks import AppRun, Asked, check_stored, stored_by_request

MODEL = "mock-gpt-4o"
DOCS = [
    ("ru-1", "Загранпаспорт нового образца действует десять лет.", "https://kb.example.org/ru/1"),
    ("ru-2", "Заявление подают через Госуслуги или в МФЦ.", "https://kb.example.org/ru/2"),
    ("ru-3", "Срок оформления — до одного месяца.", "https://kb.example.org/ru/3"),
    ("en-1", "A biometric passport is valid for ten years.", "https://kb.example.org/en/1"),
    ("en-2", "Apply online or at a service centre.", "https://kb.example.org/en/2"),
    ("en-3", "Processing takes up to one month.", "https://kb.example.org/en/3"),
]
QUESTIONS = [
    ("ru", "Сколько действует загранпаспорт?"),
    ("en", "How long is a passport valid?"),
    ("ru", "Где подать заявление на паспорт?"),
    ("en", "Where do I apply?"),
    ("ru", "Сколько ждать паспорт?"),
    ("en", "How long does processing take?"),
    ("ru", "Нужна ли запись в МФЦ?"),
    ("en", "Can I apply online?"),
    ("ru", "Что такое биометрический паспорт?"),
    ("en", "Is the old passport still valid?"),
]


class ReportingMockLLM(MockLLM):
    """LlamaIndex's MockLLM answering the app's scripted text, with a model name and the
    token usage in `raw` as OpenAI's LLM reports it."""

    answer: str = ""
    calls: list[dict[str, int]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=MODEL, num_output=64)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        usage = {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": len(self.answer) // 4,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self.calls.append(usage)
        return CompletionResponse(text=self.answer, raw={"usage": usage})

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        raise NotImplementedError("the app does not stream")


def _context(node: NodeWithScore) -> dict[str, Any]:
    return {
        "id": node.node_id,
        "url": node.node.metadata["url"],
        "text": node.node.get_content(),
        "score": node.score,
    }


def _run_app() -> AppRun:
    run = AppRun(Capture())
    embed = MockEmbedding(embed_dim=8)
    llm = ReportingMockLLM(max_tokens=None)
    tracer = OITracer(run.capture.provider.get_tracer("rag-app"), TraceConfig())
    with instrumented(LlamaIndexInstrumentor(), run.capture):
        with run.other():
            index = VectorStoreIndex.from_documents(
                [Document(text=t, doc_id=i, metadata={"url": u}) for i, t, u in DOCS],
                embed_model=embed,
            )
        for i, (lang, question) in enumerate(QUESTIONS):
            llm.answer = (
                f"Ответ {i} по документам." if lang == "ru" else f"Answer {i}, per the documents."
            )
            del llm.calls[:]
            asked = Asked(
                question=question,
                answer=llm.answer,
                contexts=[],
                session_id=f"session-{i % 4}",
                user_id=f"user-{i % 5}",
                model=MODEL,
                tags={"prod": "true", lang: "true", "service": "rag-app"},
                metadata={"tenant": "acme" if i % 2 else "globex"},
            )
            with (
                run.request(asked),
                using_session(asked.session_id or ""),
                using_user(asked.user_id or ""),
                using_metadata(asked.metadata),
                using_tags(["prod", lang]),
            ):
                nodes = _ask(i % 3, index, llm, tracer, question)
            asked.contexts = [_context(n) for n in nodes]
            asked.usage = {k: sum(c[k] for c in llm.calls) for k in llm.calls[0]}
    return run


def _ask(
    way: int, index: VectorStoreIndex, llm: ReportingMockLLM, tracer: OITracer, question: str
) -> list[NodeWithScore]:
    """One request, one of three ways; returns the retrieved nodes."""
    if way == 0:
        response = index.as_query_engine(llm=llm, similarity_top_k=2).query(question)
        assert str(response) == llm.answer
        return list(response.source_nodes)
    if way == 1:
        engine = index.as_chat_engine(chat_mode=ChatMode.CONTEXT, llm=llm, similarity_top_k=2)
        chat = engine.chat(question)
        assert chat.response == llm.answer
        return list(chat.source_nodes)
    with tracer.start_as_current_span("rag", openinference_span_kind="chain") as span:
        span.set_input(question)
        nodes = index.as_retriever(similarity_top_k=2).retrieve(question)
        context = "\n\n".join(n.node.get_content() for n in nodes)
        reply = llm.chat(
            [
                ChatMessage(role="system", content=f"Answer from the context.\n{context}"),
                ChatMessage(role="user", content=question),
            ]
        )
        span.set_output(reply.message.content)
        assert reply.message.content == llm.answer
    return list(nodes)


@pytest.fixture(scope="module")
def app() -> Iterator[AppRun]:
    yield _run_app()


def _sampled(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            return set(session.scalars(select(SampleRecord.trace_id)))
    finally:
        engine.dispose()


@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_every_request_is_stored_complete_and_the_index_build_as_no_request(
    sqlite_url: str, app: AppRun, encoding: str, split: bool
) -> None:
    result = ingest(sqlite_url, collector_messages(app.spans, encoding=encoding, split=split))
    assert result.invalid == 0
    stored = stored_traces(sqlite_url)
    for row, asked in stored_by_request(stored, app):
        check_stored(row, asked)
    # building the index: the node parser's trace and the batch embedding's
    built = {f"{s.context.trace_id:032x}" for spans in app.others for s in spans}
    assert len(built) == 2
    assert {stored[t].not_request for t in built} == {"embedding", "no_model_call"}
    assert all(stored[t].question == "" and stored[t].answer is None for t in built)
    assert result.not_request == {"embedding": 1, "no_model_call": 1}
    assert _sampled(sqlite_url) == {a.trace_id for a in app.asked}
    assert len(stored) == len(app.asked) + 2


def test_stored_alike_on_postgresql(postgres_url: str, app: AppRun) -> None:
    result = ingest(postgres_url, collector_messages(app.spans, split=True))
    assert result.not_request == {"embedding": 1, "no_model_call": 1}
    for row, asked in stored_by_request(stored_traces(postgres_url), app):
        check_stored(row, asked)
