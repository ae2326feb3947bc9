"""An OpenAI-client RAG app instrumented with the real openinference-instrumentation-openai:
its traces are stored complete.

The app calls the official `openai` client against the project's local OpenAI-compatible
server (`tests/fixtures/llm_server.py`): at start it embeds its knowledge base (a trace that
is no request), then per question it embeds the question, ranks the documents by cosine in
its own OpenInference RETRIEVER span (`get_retriever_attributes`: ids, contents, scores,
urls) and asks the chat model, all under its own CHAIN span. Every fifth question is small
talk: a bare chat call, whose trace is that one LLM span (the last one's message sent as
content parts).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openinference.instrumentation import (
    OITracer,
    TraceConfig,
    get_retriever_attributes,
    using_metadata,
    using_session,
    using_tags,
    using_user,
)
from openinference.instrumentation.openai import OpenAIInstrumentor

from tests.fixtures.llm_server import Reply, start_server
from tests.instrumentation.harness import (
    Capture,
    collector_messages,
    ingest,
    instrumented,
    stored_traces,
)
from tests.instrumentation.oi_checks import AppRun, Asked, check_stored, stored_by_request

CHAT = "gpt-4o-mini"
EMBEDDING = "text-embedding-3-small"
KB = {
    "kb-1": ("Загранпаспорт нового образца действует десять лет.", "https://kb.example.org/1"),
    "kb-2": ("Заявление подают через Госуслуги или в МФЦ.", "https://kb.example.org/2"),
    "kb-3": ("A biometric passport is valid for ten years.", "https://kb.example.org/3"),
    "kb-4": ("Processing takes up to one month.", "https://kb.example.org/4"),
}
QUESTIONS = [
    ("ru", "Сколько действует загранпаспорт?"),
    ("en", "How long is a passport valid?"),
    ("ru", "Где подать заявление?"),
    ("en", "How long does processing take?"),
    ("ru", "Привет! Как дела?"),
    ("en", "Can I apply online?"),
    ("ru", "Нужна ли запись в МФЦ?"),
    ("en", "Is the old passport still valid?"),
    ("ru", "Что нужно для заявления?"),
    ("en", "Thanks, bye!"),
]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = (sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5
    return float(dot / norm)


def _run_app() -> AppRun:
    server, stop = start_server()
    run = AppRun(Capture())
    tracer = OITracer(run.capture.provider.get_tracer("rag-app"), TraceConfig())
    try:
        with instrumented(OpenAIInstrumentor(), run.capture):
            client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
            with run.other():  # indexing the knowledge base: no user request
                built = client.embeddings.create(
                    model=EMBEDDING, input=[text for text, _ in KB.values()]
                )
            vectors = dict(zip(KB, (d.embedding for d in built.data), strict=True))
            for i, (lang, question) in enumerate(QUESTIONS):
                answer = (
                    f"Ответ {i} по базе знаний." if lang == "ru" else f"Answer {i} from the KB."
                )
                server.script(question, Reply(content=answer))
                asked = Asked(
                    question=question,
                    answer=answer,
                    contexts=[],
                    session_id=f"chat-{i // 2}",
                    user_id=f"user-{i % 3}",
                    model=CHAT,
                    tags={"prod": "true", lang: "true", "service": "rag-app"},
                    metadata={"tenant": "acme", "channel": "web" if i % 2 else "app"},
                )
                with (
                    run.request(asked),
                    using_session(asked.session_id or ""),
                    using_user(asked.user_id or ""),
                    using_metadata(asked.metadata),
                    using_tags(["prod", lang]),
                ):
                    if i % 5 == 4:  # small talk; the last one sent as content parts
                        content: Any = question if i < 9 else [{"type": "text", "text": question}]
                        reply = client.chat.completions.create(
                            model=CHAT, messages=[{"role": "user", "content": content}]
                        )
                        embedding_tokens = None
                    else:
                        reply, embedding_tokens = _rag(client, tracer, question, vectors, asked)
                assert reply.choices[0].message.content == answer
                assert reply.usage is not None
                asked.usage = {
                    "prompt_tokens": reply.usage.prompt_tokens,
                    "completion_tokens": reply.usage.completion_tokens,
                    "total_tokens": reply.usage.total_tokens,
                }
                if embedding_tokens is not None:
                    asked.usage["embedding_tokens"] = embedding_tokens
    finally:
        stop()
    return run


def _rag(
    client: openai.OpenAI,
    tracer: OITracer,
    question: str,
    vectors: dict[str, list[float]],
    asked: Asked,
) -> tuple[openai.types.chat.ChatCompletion, int]:
    """Embed, retrieve (top 2 by cosine) and answer, under the app's CHAIN span."""
    with tracer.start_as_current_span("rag", openinference_span_kind="chain") as root:
        root.set_input(question)
        embedded = client.embeddings.create(model=EMBEDDING, input=question)
        query = embedded.data[0].embedding
        ranked = sorted(KB, key=lambda d: -_cosine(query, vectors[d]))[:2]
        asked.contexts = [
            {"id": d, "url": KB[d][1], "text": KB[d][0], "score": _cosine(query, vectors[d])}
            for d in ranked
        ]
        with tracer.start_as_current_span("search", openinference_span_kind="retriever") as span:
            span.set_input(question)
            span.set_attributes(
                get_retriever_attributes(
                    documents=[
                        {
                            "id": c["id"],
                            "content": c["text"],
                            "score": c["score"],
                            "metadata": {"url": c["url"]},
                        }
                        for c in asked.contexts
                    ]
                )
            )
        context = "\n".join(c["text"] for c in asked.contexts)
        reply = client.chat.completions.create(
            model=CHAT,
            messages=[
                {"role": "system", "content": f"Answer from the context.\n{context}"},
                {"role": "user", "content": question},
            ],
        )
        root.set_output(reply.choices[0].message.content or "")
    return reply, embedded.usage.total_tokens


@pytest.fixture(scope="module")
def app() -> Iterator[AppRun]:
    yield _run_app()


@pytest.mark.parametrize("split", [False, True], ids=["whole", "split"])
@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_every_request_is_stored_complete(
    sqlite_url: str, app: AppRun, encoding: str, split: bool
) -> None:
    result = ingest(sqlite_url, collector_messages(app.spans, encoding=encoding, split=split))
    assert result.invalid == 0
    stored = stored_traces(sqlite_url)
    for row, asked in stored_by_request(stored, app):
        check_stored(row, asked)
    (indexing,) = {f"{s.context.trace_id:032x}" for spans in app.others for s in spans}
    assert stored[indexing].not_request == "embedding"
    assert stored[indexing].usage == {"embedding_tokens": sum(len(t) // 4 for t, _ in KB.values())}
    assert result.not_request == {"embedding": 1}


def test_stored_alike_on_postgresql(postgres_url: str, app: AppRun) -> None:
    ingest(postgres_url, collector_messages(app.spans, encoding="otlp_json", split=True))
    for row, asked in stored_by_request(stored_traces(postgres_url), app):
        check_stored(row, asked)
