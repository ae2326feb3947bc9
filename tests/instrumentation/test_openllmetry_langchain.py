"""Traceloop's OpenLLMetry LangChain instrumentor (opentelemetry-instrumentation-langchain),
real and unmodified, on a small LangChain RAG app over fake models: every trace stored
complete.

The app: an `InMemoryVectorStore` over `DeterministicFakeEmbedding`, a retriever (LangChain's
`VectorStoreRetriever`, or one that writes each document's relevance score into its
metadata, as an app does to keep scores, which `VectorStoreRetriever` drops), a chat prompt
and a chat model that answers from its context and reports its model name and token usage
as `ChatOpenAI` does. Session, user and tenant go in the run's `metadata`, which the
instrumentor copies into `traceloop.association.properties.*` (no Traceloop SDK). Ten
requests, English and Russian; the spans are encoded as the Collector's Kafka exporter
writes them (protobuf and JSON, each trace whole or split over two messages) and stored by
the real ingest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackManager, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.sdk.trace import ReadableSpan

from tests.instrumentation.harness import (
    Capture,
    by_trace,
    collector_messages,
    emitted_strings,
    ingest,
    instrumented,
    stored_traces,
)

MODEL = "gpt-4o-mini-2024-07-18"
KNOWLEDGE = [
    ("kb-limits", "The daily cash withdrawal limit is 300,000 roubles."),
    ("kb-block", "You can block a card in the mobile app under Cards, then Block."),
    ("kb-fees", "Transfers between your own accounts carry no fee."),
    ("kb-limit-ru", "Суточный лимит снятия наличных составляет 300 000 рублей."),
    ("kb-block-ru", "Заблокировать карту можно в приложении: Карты, затем Заблокировать."),
    ("kb-abroad-ru", "За границей карта работает в сетях Visa и Mastercard партнёров банка."),
]
QUESTIONS = [
    "What is the daily cash withdrawal limit?",
    "Какой суточный лимит снятия наличных?",
    "How do I block my card?",
    "Как заблокировать карту?",
    "Do transfers between my own accounts cost anything?",
    "Работает ли карта за границей?",
    "Can I raise my withdrawal limit?",
    "Сколько стоит перевод между своими счетами?",
    "Where do I find the block button?",
    "Можно ли снять наличные без карты?",
]


class ChatModel(BaseChatModel):
    """A fake chat model: answers with its context's first line, and reports its model
    name and token usage where `ChatOpenAI` does (`llm_output`, `response_metadata`,
    `usage_metadata`)."""

    model_name: str = MODEL

    @property
    def _llm_type(self) -> str:
        return "fake-openai-chat"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any
    ) -> ChatResult:
        context, question = messages[0].text, messages[-1].text
        first = context.splitlines()[1]
        russian = any("а" <= ch <= "я" for ch in question.lower())
        answer = f"{'Согласно базе знаний' if russian else 'According to the bank'}: {first}"
        prompt_tokens = sum(len(m.text.split()) for m in messages)
        completion_tokens = len(answer.split())
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        message = AIMessage(
            content=answer,
            response_metadata={"model_name": self.model_name, "finish_reason": "stop"},
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        )
        return ChatResult(
            generations=[
                ChatGeneration(message=message, generation_info={"finish_reason": "stop"})
            ],
            llm_output={"token_usage": usage, "model_name": self.model_name},
        )


class ScoredRetriever(BaseRetriever):
    """A vector-store retriever that keeps each document's similarity in its metadata."""

    store: InMemoryVectorStore
    k: int = 2

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        found = self.store.similarity_search_with_score(query, k=self.k)
        return [
            Document(id=d.id, page_content=d.page_content, metadata={**d.metadata, "score": s})
            for d, s in found
        ]


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(
        [
            Document(
                id=doc_id, page_content=text, metadata={"id": doc_id, "url": f"https://kb/{doc_id}"}
            )
            for doc_id, text in KNOWLEDGE
        ]
    )
    return store


def _chain(retriever: BaseRetriever) -> Runnable[str, str]:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context only:\n{context}"), ("human", "{question}")]
    )
    join = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    return (
        {"context": retriever | join, "question": RunnablePassthrough()}
        | prompt
        | ChatModel()
        | StrOutputParser()
    )


@contextmanager
def _instrumented(capture: Capture) -> Iterator[None]:
    """The instrumentor on `capture` for the block. Its `uninstrument()` (0.62.4) unwraps
    `BaseCallbackManager.__init__` by a dotted path `unwrap` cannot resolve, leaving its
    callback handler in every later LangChain run of the process; undo the wrap here so
    that other tests run LangChain uninstrumented."""
    try:
        with instrumented(LangchainInstrumentor(), capture):
            yield
    finally:
        unwrap(BaseCallbackManager, "__init__")


@dataclass(frozen=True)
class Request:
    question: str
    answer: str
    docs: list[Document]
    metadata: dict[str, str]


@dataclass(frozen=True)
class Run:
    spans: list[ReadableSpan]
    requests: list[Request]


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    store = _store()
    retrievers: list[BaseRetriever] = [
        store.as_retriever(search_kwargs={"k": 2}),
        ScoredRetriever(store=store),
    ]
    capture = Capture()
    requests = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACELOOP_TRACE_CONTENT", "true")  # the default, stated
        with _instrumented(capture):
            for i, question in enumerate(QUESTIONS):
                retriever = retrievers[i % 2]
                metadata = {
                    "session_id": f"sess-{i // 2}",
                    "user_id": f"user-{i % 3}",
                    "tenant": "bank",
                }
                answer = _chain(retriever).invoke(question, config={"metadata": metadata})
                requests.append(Request(question, answer, [], metadata))
    # what each retriever returned (deterministic embeddings: the same again, untraced)
    done = []
    for i, r in enumerate(requests):
        docs = retrievers[i % 2].invoke(r.question)
        done.append(Request(r.question, r.answer, docs, r.metadata))
    yield Run(capture.spans, done)


def _attr_json(span: ReadableSpan, name: str) -> Any:
    return json.loads(str((span.attributes or {})[name]))


def _one(spans: list[ReadableSpan], test: Any) -> ReadableSpan:
    found = [s for s in spans if test(s)]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def _ms(span: ReadableSpan) -> float:
    assert span.start_time is not None and span.end_time is not None
    return (span.end_time - span.start_time) / 1e6


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
def test_every_trace_is_stored_complete(
    run: Run, sqlite_url: str, encoding: str, split: bool
) -> None:
    result = ingest(sqlite_url, collector_messages(run.spans, encoding=encoding, split=split))
    assert result.invalid == 0 and result.lost == 0
    stored = stored_traces(sqlite_url)
    groups = by_trace(run.spans)
    assert len(stored) == len(groups) == len(QUESTIONS)
    asked = {r.question: r for r in run.requests}
    for trace_id, spans in groups.items():
        trace = stored[trace_id]
        request = asked[trace.question]  # the question, as the app was asked it
        assert trace.answer == request.answer
        assert trace.session_id == request.metadata["session_id"]
        assert trace.user_id == request.metadata["user_id"]
        assert trace.model == MODEL
        assert trace.tags is not None and trace.tags["tenant"] == "bank"
        assert not any(k.startswith(("ls_", "lc_")) for k in trace.tags)
        # the documents the retriever returned, in its order, with the ids, urls and the
        # scores (where the app's retriever kept them) of their metadata
        expected = []
        for d in request.docs:
            doc: dict[str, Any] = {
                "id": d.metadata["id"],
                "url": d.metadata["url"],
                "text": d.page_content,
            }
            if "score" in d.metadata:
                doc["score"] = d.metadata["score"]
            expected.append(doc)
        assert trace.contexts == expected
        # what the library emitted: the LLM span's usage, the stages' spans
        llm = _one(spans, lambda s: (s.attributes or {}).get("gen_ai.operation.name") == "chat")
        retrieve = _one(spans, lambda s: s.name.startswith("vector_db_retrieve"))
        attrs = llm.attributes or {}
        assert trace.usage == {
            "prompt_tokens": attrs["gen_ai.usage.input_tokens"],
            "completion_tokens": attrs["gen_ai.usage.output_tokens"],
            "total_tokens": attrs["gen_ai.usage.total_tokens"],
        }
        assert trace.latency_stages == pytest.approx(
            {"retrieval": _ms(retrieve), "generation": _ms(llm)}
        )
        root = _one(spans, lambda s: s.parent is None)
        assert trace.latency_ms == pytest.approx(_ms(root))
        assert trace.meta is None  # nothing left over as invalid


def test_every_text_the_library_emitted_is_stored(run: Run, sqlite_url: str) -> None:
    ingest(sqlite_url, collector_messages(run.spans, encoding="otlp_json", split=True))
    stored = stored_traces(sqlite_url)
    for trace_id, spans in by_trace(run.spans).items():
        trace = stored[trace_id]
        root = _one(spans, lambda s: s.parent is None)
        assert _attr_json(root, "traceloop.entity.input")["inputs"] == trace.question
        assert _attr_json(root, "traceloop.entity.output")["outputs"] == trace.answer
        llm = _one(spans, lambda s: "gen_ai.output.messages" in (s.attributes or {}))
        said = [
            (m["role"], p["content"])
            for name in ("gen_ai.input.messages", "gen_ai.output.messages")
            for m in _attr_json(llm, name)
            for p in m["parts"]
        ]
        assert said == [("user", trace.question), ("assistant", trace.answer)]
        retrieve = _one(spans, lambda s: s.name.startswith("vector_db_retrieve"))
        emitted = _attr_json(retrieve, "traceloop.entity.output")["documents"]
        assert [c["text"] for c in trace.contexts or []] == [d["page_content"] for d in emitted]
        metadata = [{k: v for k, v in c.items() if k != "text"} for c in trace.contexts or []]
        assert metadata == [d["metadata"] for d in emitted]
        # the association properties: session and user, the rest tags
        props = emitted_strings(spans, "traceloop.association.properties.")
        assert {trace.session_id, trace.user_id, "bank"} <= props
