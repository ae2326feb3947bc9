"""A LangChain RAG app instrumented with the real openinference-instrumentation-langchain:
its traces, encoded as the Collector writes them, are stored complete.

The app: an `InMemoryVectorStore` over `DeterministicFakeEmbedding` behind a retriever that
puts each hit's id and score in the document's metadata (the instrumentor emits a LangChain
document's content and metadata only), a chat prompt, and a fake chat model that names its
model as ChatOpenAI does and reports token usage. Half the requests end in a
`StrOutputParser` (the root answers text), half in the model (the root answers a serialized
`AIMessage`, whose text must be stored). Session, user, metadata and tags come from
OpenInference's context managers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation import (
    TraceConfig,
    using_metadata,
    using_session,
    using_tags,
    using_user,
)
from openinference.instrumentation.langchain import LangChainInstrumentor
from pydantic import Field

from collector.store.models import Trace
from tests.instrumentation.harness import (
    Capture,
    collector_messages,
    ingest,
    instrumented,
    stored_traces,
)
from tests.instrumentation.oi_checks import AppRun, Asked, check_stored, stored_by_request

MODEL = "gpt-4o-mini"
CORPUS = {
    "kb-1": ("Загранпаспорт нового образца действует десять лет.", "https://kb.example.org/1"),
    "kb-2": ("Заявление подают через Госуслуги или в МФЦ.", "https://kb.example.org/2"),
    "kb-3": ("Срок оформления — до одного месяца.", "https://kb.example.org/3"),
    "kb-4": ("A biometric passport is valid for ten years.", "https://kb.example.org/4"),
    "kb-5": ("Apply online or at a service centre.", "https://kb.example.org/5"),
    "kb-6": ("Processing takes up to one month.", "https://kb.example.org/6"),
}
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


class ScoredRetriever(BaseRetriever):
    """The store's top hits, each with its id and similarity score in the metadata."""

    store: InMemoryVectorStore
    k: int = 2
    found: list[list[tuple[Document, float]]] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.store.similarity_search_with_score(query, k=self.k)
        self.found.append(hits)
        return [
            Document(
                id=doc.id,
                page_content=doc.page_content,
                metadata=doc.metadata | {"id": doc.id, "score": score},
            )
            for doc, score in hits
        ]


class FakeChatOpenAI(GenericFakeChatModel):
    """LangChain's fake chat model, naming its model as ChatOpenAI does."""

    model_name: str = MODEL


def _usage(i: int) -> dict[str, int]:
    return {"input_tokens": 40 + i, "output_tokens": 7 + i, "total_tokens": 47 + 2 * i}


def _run_app(config: TraceConfig | None = None) -> AppRun:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [Document(page_content=text, metadata={"url": url}) for text, url in CORPUS.values()],
        ids=list(CORPUS),
    )
    retriever = ScoredRetriever(store=store)
    answers = [
        f"Ответ {i}: см. документы." if lang == "ru" else f"Answer {i}: see the documents."
        for i, (lang, _) in enumerate(QUESTIONS)
    ]
    llm = FakeChatOpenAI(
        messages=iter(AIMessage(content=a, usage_metadata=_usage(i)) for i, a in enumerate(answers))
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context only.\n{context}"), ("human", "{question}")]
    )

    def join(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    text_chain = (
        {"context": retriever | join, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )
    message_chain = (
        {"context": itemgetter("question") | retriever | join, "question": itemgetter("question")}
        | prompt
        | llm
    )
    run = AppRun(Capture())
    with instrumented(LangChainInstrumentor(), run.capture, config=config or TraceConfig()):
        for i, (lang, question) in enumerate(QUESTIONS):
            asked = Asked(
                question=question,
                answer=answers[i],
                contexts=[],
                session_id=f"session-{i % 3}",
                user_id=f"user-{i}",
                model=MODEL,
                usage={
                    "prompt_tokens": 40 + i,
                    "completion_tokens": 7 + i,
                    "total_tokens": 47 + 2 * i,
                },
                tags={"prod": "true", lang: "true", "service": "rag-app"},
                metadata={"tenant": "acme" if i % 2 else "globex", "ls_model_name": MODEL},
            )
            with (
                run.request(asked),
                using_session(asked.session_id or ""),
                using_user(asked.user_id or ""),
                using_metadata({"tenant": asked.metadata["tenant"]}),
                using_tags(["prod", lang]),
            ):
                if i % 2:
                    out: Any = message_chain.invoke({"question": question})
                    assert isinstance(out, AIMessage) and out.content == answers[i]
                else:
                    assert text_chain.invoke(question) == answers[i]
            asked.contexts = [
                {
                    "id": doc.id,
                    "url": doc.metadata["url"],
                    "text": doc.page_content,
                    "score": score,
                }
                for doc, score in retriever.found[-1]
            ]
    return run


@pytest.fixture(scope="module")
def app() -> Iterator[AppRun]:
    yield _run_app()


@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_every_request_is_stored_complete(
    sqlite_url: str, app: AppRun, encoding: str, split: bool
) -> None:
    messages = collector_messages(app.spans, encoding=encoding, split=split)
    result = ingest(sqlite_url, messages)
    assert result.invalid == 0 and result.not_request == {}
    pairs = stored_by_request(stored_traces(sqlite_url), app)
    for row, asked in pairs:
        check_stored(row, asked)
    # the two shapes of answer: text from the parser, a serialized AIMessage from the model
    assert {row.answer for row, _ in pairs} == {a.answer for a in app.asked}


def test_stored_alike_on_postgresql(postgres_url: str, app: AppRun) -> None:
    ingest(postgres_url, collector_messages(app.spans, split=True))
    for row, asked in stored_by_request(stored_traces(postgres_url), app):
        check_stored(row, asked)


def test_content_the_app_hides_is_stored_as_missing_not_as_a_marker(sqlite_url: str) -> None:
    """`OPENINFERENCE_HIDE_INPUTS` / `..._OUTPUTS` (here through `TraceConfig`): the
    instrumentor writes `__REDACTED__`; the traces are stored without question, answer and
    document texts (what the missing-content counters see), the rest intact."""
    run = _run_app(TraceConfig(hide_inputs=True, hide_outputs=True))
    ingest(sqlite_url, collector_messages(run.spans))
    for row, asked in stored_by_request(stored_traces(sqlite_url), run):
        assert row.not_request is None
        assert (row.question, row.answer) == ("", None)
        # a LangChain document's id, score and url ride in its metadata, hidden with its
        # content: each retrieved document is still there, in its rank
        assert row.contexts == [{} for _ in asked.contexts]
        assert (row.model, row.usage, row.session_id) == (
            asked.model,
            asked.usage,
            asked.session_id,
        )
        values = [getattr(row, a.key) for a in Trace.__mapper__.column_attrs]
        assert "__REDACTED__" not in json.dumps(values, default=str, ensure_ascii=False)
