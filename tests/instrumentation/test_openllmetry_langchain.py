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

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.sdk.trace import ReadableSpan

from tests.instrumentation.harness import (
    Capture,
    by_trace,
    collector_messages,
    emitted_strings,
    ingest,
    stored_traces,
)
from tests.instrumentation.openllmetry_app import (
    KNOWLEDGE,
    MODEL,
    QUESTIONS,
    attr_json,
    ms,
    one,
    rag_chain,
    traceloop_langchain,
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
    with traceloop_langchain(capture):
        for i, question in enumerate(QUESTIONS):
            metadata = {
                "session_id": f"sess-{i // 2}",
                "user_id": f"user-{i % 3}",
                "tenant": "bank",
            }
            answer = rag_chain(retrievers[i % 2]).invoke(question, config={"metadata": metadata})
            requests.append(Request(question, answer, [], metadata))
    # what each retriever returned (deterministic embeddings: the same again, untraced)
    done = []
    for i, r in enumerate(requests):
        docs = retrievers[i % 2].invoke(r.question)
        done.append(Request(r.question, r.answer, docs, r.metadata))
    yield Run(capture.spans, done)


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
        llm = one(spans, lambda s: (s.attributes or {}).get("gen_ai.operation.name") == "chat")
        retrieve = one(spans, lambda s: s.name.startswith("vector_db_retrieve"))
        attrs = llm.attributes or {}
        assert trace.usage == {
            "prompt_tokens": attrs["gen_ai.usage.input_tokens"],
            "completion_tokens": attrs["gen_ai.usage.output_tokens"],
            "total_tokens": attrs["gen_ai.usage.total_tokens"],
        }
        assert trace.latency_stages == pytest.approx(
            {"retrieval": ms(retrieve), "generation": ms(llm)}
        )
        root = one(spans, lambda s: s.parent is None)
        assert trace.latency_ms == pytest.approx(ms(root))
        # nothing left over as invalid; the prompt's system message is kept (genai's reading)
        assert set(trace.meta or {}) <= {"system_instructions"}
        if trace.meta:
            assert trace.meta["system_instructions"].startswith("Answer from this context only")


def test_every_text_the_library_emitted_is_stored(run: Run, db_url: str) -> None:
    ingest(db_url, collector_messages(run.spans, encoding="otlp_json", split=True))
    stored = stored_traces(db_url)
    for trace_id, spans in by_trace(run.spans).items():
        trace = stored[trace_id]
        root = one(spans, lambda s: s.parent is None)
        assert attr_json(root, "traceloop.entity.input")["inputs"] == trace.question
        assert attr_json(root, "traceloop.entity.output")["outputs"] == trace.answer
        llm = one(spans, lambda s: "gen_ai.output.messages" in (s.attributes or {}))
        said = [
            (m["role"], p["content"])
            for name in ("gen_ai.input.messages", "gen_ai.output.messages")
            for m in attr_json(llm, name)
            for p in m["parts"]
        ]
        assert said == [("user", trace.question), ("assistant", trace.answer)]
        retrieve = one(spans, lambda s: s.name.startswith("vector_db_retrieve"))
        emitted = attr_json(retrieve, "traceloop.entity.output")["documents"]
        assert [c["text"] for c in trace.contexts or []] == [d["page_content"] for d in emitted]
        metadata = [{k: v for k, v in c.items() if k != "text"} for c in trace.contexts or []]
        assert metadata == [d["metadata"] for d in emitted]
        # the association properties: session and user, the rest tags
        props = emitted_strings(spans, "traceloop.association.properties.")
        assert {trace.session_id, trace.user_id, "bank"} <= props
