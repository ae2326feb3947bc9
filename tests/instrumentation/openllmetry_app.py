"""A small LangChain RAG app over fake models, and Traceloop's LangChain instrumentor on it,
for the OpenLLMetry real-library tests.

The chat model answers with its context's first line and reports its model name and token
usage where `ChatOpenAI` does; the chain retrieves, joins the documents into a system
prompt, asks the model and parses its text. Questions and knowledge in English and Russian.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackManager
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.sdk.trace import ReadableSpan

from tests.instrumentation.harness import Capture, instrumented

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


def _join(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs)


def rag_chain(retriever: BaseRetriever) -> Runnable[str, str]:
    """retrieve -> the documents joined into the system prompt -> the model -> its text."""
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context only:\n{context}"), ("human", "{question}")]
    )
    return (
        {"context": retriever | RunnableLambda(_join), "question": RunnablePassthrough()}
        | prompt
        | ChatModel()
        | StrOutputParser()
    )


@contextmanager
def traceloop_langchain(capture: Capture) -> Iterator[None]:
    """The instrumentor on `capture` for the block. Its `uninstrument()` (0.62.4) unwraps
    `BaseCallbackManager.__init__` by a dotted path `unwrap` cannot resolve, leaving its
    callback handler in every later LangChain run of the process; undo the wrap here so
    that other tests run LangChain uninstrumented."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACELOOP_TRACE_CONTENT", "true")  # the default, stated
        try:
            with instrumented(LangchainInstrumentor(), capture):
                yield
        finally:
            unwrap(BaseCallbackManager, "__init__")


def attr_json(span: ReadableSpan, name: str) -> Any:
    """A span attribute's JSON value, parsed."""
    return json.loads(str((span.attributes or {})[name]))


def one(spans: list[ReadableSpan], test: Callable[[ReadableSpan], bool]) -> ReadableSpan:
    """The one span passing `test`."""
    found = [s for s in spans if test(s)]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def ms(span: ReadableSpan) -> float:
    """A span's duration in milliseconds."""
    assert span.start_time is not None and span.end_time is not None
    return (span.end_time - span.start_time) / 1e6
