"""Content capture switched off in an app, with the real instrumentation libraries: the
traces still arrive, and `/metrics` counts them per convention as missing exactly the
fields the switch hides, which is what `RagpulseOtlpContentMissing` warns about; switched
on (as the alert's annotation says), nothing is missing.

OpenInference (LangChain) hides outputs with `OPENINFERENCE_HIDE_OUTPUTS` (here its
`TraceConfig(hide_outputs=True)`, the same setting), writing `__REDACTED__` in their
place; the OTel GenAI OpenAI instrumentation captures no message unless
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `SPAN_ONLY` or `SPAN_AND_EVENT`.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.pipeline import BatchResult
from tests.fixtures.llm_server import Reply, ScriptedLLM
from tests.instrumentation.harness import Capture, collector_messages, ingest, instrumented

QUESTION = "How long does a passport renewal take?"
ANSWER = "About thirty days once the form is filed."


def _langchain_rag(capture: Capture, **config: Any) -> None:
    """A small LangChain RAG chain (retriever, prompt, fake chat model) under OpenInference."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.langchain import LangChainInstrumentor

    class Docs(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(page_content="Renewals take thirty days.", metadata={"id": "d1"}),
                Document(page_content="File the form online.", metadata={"id": "d2"}),
            ]

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from: {context}"), ("human", "{question}")]
    )
    chain = (
        {"context": Docs(), "question": RunnablePassthrough()}
        | prompt
        | FakeListChatModel(responses=[ANSWER])
        | StrOutputParser()
    )
    with instrumented(LangChainInstrumentor(), capture, config=TraceConfig(**config)):
        assert chain.invoke(QUESTION) == ANSWER


def _counts(result: BatchResult) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    return result.otlp_traces, result.otlp_incomplete


def _exported(result: BatchResult) -> dict[tuple[str, ...], float]:
    """The two families as `/metrics` shows them after the batch is recorded."""
    registry = CollectorRegistry()
    ConsumerStats(registry).record(result)
    out = {}
    for family in registry.collect():
        if family.name.startswith("ragpulse_otlp_traces"):
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    out[(sample.name, *sorted(sample.labels.values()))] = sample.value
    return out


def test_openinference_outputs_hidden_are_counted_missing(sqlite_url: str) -> None:
    capture = Capture()
    _langchain_rag(capture, hide_outputs=True)
    hidden = ingest(sqlite_url, collector_messages(capture.spans, split=True))
    assert _counts(hidden) == (
        {"openinference": 1},
        {("openinference", "answer"): 1, ("openinference", "contexts"): 1},
    )
    assert _exported(hidden) == {
        ("ragpulse_otlp_traces_total", "openinference"): 1.0,
        ("ragpulse_otlp_traces_incomplete_total", "answer", "openinference"): 1.0,
        ("ragpulse_otlp_traces_incomplete_total", "contexts", "openinference"): 1.0,
    }
    shown = Capture()
    _langchain_rag(shown)
    shown_messages = collector_messages(shown.spans, encoding="otlp_json")
    assert _counts(ingest(sqlite_url, shown_messages)) == (
        {"openinference": 1},
        {},
    )


@pytest.mark.parametrize(
    ("capture_mode", "missing"),
    [
        (None, {"question", "answer", "contexts"}),  # the library's default: NO_CONTENT
        ("SPAN_ONLY", {"contexts"}),  # a chat call retrieves nothing
    ],
)
def test_genai_openai_content_capture(
    sqlite_url: str,
    llm_server: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    capture_mode: str | None,
    missing: set[str],
) -> None:
    import openai
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    if capture_mode is None:
        monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    else:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture_mode)
    llm_server.script("passport", Reply(content=ANSWER))
    capture = Capture()
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0)
    with instrumented(OpenAIInstrumentor(), capture):
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}]
        )
    assert reply.choices[0].message.content == ANSWER
    result = ingest(sqlite_url, collector_messages(capture.spans))
    assert result.otlp_traces == {"genai": 1}
    assert result.otlp_incomplete == {("genai", name): 1 for name in missing}
