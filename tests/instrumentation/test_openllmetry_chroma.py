"""Traceloop's OpenLLMetry Chroma instrumentor (opentelemetry-instrumentation-chromadb) next to
its LangChain instrumentor, real and unmodified, on a LangChain RAG app over an in-process
Chroma collection (`langchain_chroma.Chroma` on `chromadb.EphemeralClient`, fake embeddings
and chat model).

The retriever's `vector_db_retrieve` span holds the documents' text and metadata but not
their ids; the `chroma.query` span below it has one `db.query.result` event per document
with the id, the text, the metadata (JSON) and the distance. Stored: one context per
document (not one per span), with the id from the event, the url from the metadata and no
score (a distance is none). Ten requests, English and Russian, protobuf and JSON, whole and
split traces.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import chromadb
import pytest
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from opentelemetry.instrumentation.chromadb import ChromaInstrumentor
from opentelemetry.sdk.trace import ReadableSpan

from tests.instrumentation.harness import (
    Capture,
    by_trace,
    collector_messages,
    ingest,
    instrumented,
    stored_traces,
)
from tests.instrumentation.openllmetry_app import (
    KNOWLEDGE,
    QUESTIONS,
    attr_json,
    ms,
    one,
    rag_chain,
    traceloop_langchain,
)


@dataclass(frozen=True)
class Run:
    spans: list[ReadableSpan]
    found: dict[str, list[Document]]
    """question -> the documents the store returns for it."""


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    store = Chroma(
        collection_name="bank-knowledge",
        embedding_function=DeterministicFakeEmbedding(size=32),
        client=client,
    )
    # the index is built before tracing starts: an index-building trace is no request
    store.add_documents(
        [
            Document(id=doc_id, page_content=text, metadata={"url": f"https://kb/{doc_id}"})
            for doc_id, text in KNOWLEDGE
        ]
    )
    chain = rag_chain(store.as_retriever(search_kwargs={"k": 2}))
    capture = Capture()
    chroma = ChromaInstrumentor()  # type: ignore[no-untyped-call]
    with instrumented(chroma, capture), traceloop_langchain(capture):
        for i, question in enumerate(QUESTIONS):
            chain.invoke(question, config={"metadata": {"session_id": f"sess-{i}"}})
    found = {q: store.similarity_search(q, k=2) for q in QUESTIONS}
    yield Run(capture.spans, found)
    client.delete_collection("bank-knowledge")


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
def test_each_document_is_stored_once_with_the_store_s_id(
    run: Run, sqlite_url: str, encoding: str, split: bool
) -> None:
    result = ingest(sqlite_url, collector_messages(run.spans, encoding=encoding, split=split))
    assert result.invalid == 0 and result.lost == 0
    stored = stored_traces(sqlite_url)
    groups = by_trace(run.spans)
    assert len(stored) == len(groups) == len(QUESTIONS)
    for trace_id, spans in groups.items():
        trace = stored[trace_id]
        expected = [
            {"id": d.id, "url": d.metadata["url"], "text": d.page_content}
            for d in run.found[trace.question]
        ]
        assert trace.contexts == expected
        # what the Chroma instrumentor emitted: one result event per stored context
        query = one(spans, lambda s: s.name == "chroma.query")
        events = [dict(e.attributes or {}) for e in query.events if e.name == "db.query.result"]
        assert [(e["db.query.result.id"], e["db.query.result.document"]) for e in events] == [
            (c["id"], c["text"]) for c in trace.contexts or []
        ]
        # and LangChain's retriever span the same documents, without their ids
        retrieve = one(spans, lambda s: s.name.startswith("vector_db_retrieve"))
        emitted = attr_json(retrieve, "traceloop.entity.output")["documents"]
        assert [d["page_content"] for d in emitted] == [c["text"] for c in trace.contexts or []]
        # the query span is inside the retriever's: the retrieval stage counts it once
        assert query.parent is not None and query.parent.span_id == retrieve.context.span_id
        assert trace.latency_stages is not None
        assert trace.latency_stages["retrieval"] == pytest.approx(ms(retrieve))
