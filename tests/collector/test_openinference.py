"""The OpenInference convention's reading of values the real instrumentors write (the
shapes below are copied from their spans; `tests/instrumentation/` runs the libraries)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collector.ingest.decode.conventions import io_values
from collector.ingest.decode.otlp_mapping import record_from_spans, summarize_span

JSON = "application/json"
AI_MESSAGE = {
    "type": "ai",
    "data": {"content": "Десять лет.", "type": "ai", "id": "run-1", "tool_calls": []},
}


def _summary(attrs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"parent": "", "name": "s", "start_ns": 0, "end_ns": 1, "resource": {}}
    return summarize_span(attrs, **(args | kw))


@pytest.mark.parametrize(
    ("value", "mime", "expected"),
    [
        ("Сколько действует паспорт?", None, "Сколько действует паспорт?"),
        (json.dumps({"question": "Q1", "chat_history": []}), JSON, "Q1"),
        (json.dumps({"query_str": "Q2", "image_path": None}), JSON, "Q2"),
        (
            json.dumps({"query_bundle": {"query_str": "Q3"}}),
            JSON,
            '{"query_bundle": {"query_str": "Q3"}}',
        ),
        # a list of LangChain messages (message_to_dict form): the last human one
        (
            json.dumps(
                [
                    {"type": "system", "data": {"content": "Be brief.", "type": "system"}},
                    {"type": "human", "data": {"content": "Q4", "type": "human"}},
                ]
            ),
            JSON,
            "Q4",
        ),
        # OpenAI-style messages under "messages", content blocks
        (
            json.dumps(
                {"messages": [{"role": "user", "content": [{"type": "text", "text": "Q5"}]}]}
            ),
            JSON,
            "Q5",
        ),
        ("[черновик] вопрос", None, "[черновик] вопрос"),  # looks like JSON, is not
    ],
)
def test_the_question_inside_an_input_value(value: str, mime: str | None, expected: str) -> None:
    assert io_values.question(value, mime) == expected


@pytest.mark.parametrize(
    "value",
    [
        json.dumps(AI_MESSAGE, ensure_ascii=False),  # message_to_dict
        json.dumps(AI_MESSAGE["data"], ensure_ascii=False),  # model_dump
        json.dumps(  # the constructor form (dumpd)
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "AIMessage"],
                "kwargs": {"content": "Десять лет.", "type": "ai"},
            },
            ensure_ascii=False,
        ),
        json.dumps({"answer": AI_MESSAGE, "context": ["doc"]}, ensure_ascii=False),
        json.dumps(
            {"type": "ai", "data": {"content": [{"type": "text", "text": "Десять лет."}]}},
            ensure_ascii=False,
        ),
        json.dumps({"response": "Десять лет.", "source_nodes": []}, ensure_ascii=False),
    ],
)
def test_a_chain_root_answering_a_serialized_message_stores_its_text(value: str) -> None:
    span = _summary(
        {"openinference.span.kind": "CHAIN", "output.value": value, "output.mime_type": JSON}
    )
    assert span["output"] == "Десять лет."


def test_tags_are_flags_and_metadata_an_object() -> None:
    span = _summary(
        {
            "openinference.span.kind": "CHAIN",
            "tag.tags": ["prod", "beta-ui"],
            "metadata": json.dumps({"tenant": "acme", "ab": {"arm": "b"}}),
        }
    )
    assert span["tags"] == {"prod": "true", "beta-ui": "true"}
    assert span["metadata"] == {"tenant": "acme", "ab": {"arm": "b"}}


def test_document_id_score_and_url_fall_back_to_the_metadata() -> None:
    prefix = "retrieval.documents."
    span = _summary(
        {
            "openinference.span.kind": "RETRIEVER",
            f"{prefix}0.document.content": "A",
            f"{prefix}0.document.metadata": json.dumps({"id": "a", "score": 0.5, "url": "u"}),
            f"{prefix}1.document.content": "B",
            f"{prefix}1.document.metadata": json.dumps(
                {"doc_id": 7, "source": "https://kb.example.org/b"}
            ),
            f"{prefix}2.document.content": "C",
            f"{prefix}2.document.metadata": json.dumps({"source": "/srv/docs/c.txt"}),
        }
    )
    assert span["docs"] == [
        {"id": "a", "text": "A", "score": 0.5, "url": "u"},
        {"id": "7", "text": "B", "url": "https://kb.example.org/b"},
        {"text": "C"},  # a file path is no url
    ]


def test_a_completion_models_prompt_is_its_question() -> None:
    span = _summary(
        {
            "openinference.span.kind": "LLM",
            "input.value": json.dumps({"args": ["Context: ...\nQuery: Q?"], "kwargs": {}}),
            "input.mime_type": JSON,
            "llm.prompts": ["Context: ...\nQuery: Q?"],
        }
    )
    assert span["input"] == "Context: ...\nQuery: Q?"


def test_usage_repeated_by_a_wrapping_llm_span_is_counted_once() -> None:
    """LlamaIndex's `chat` over the `complete` it calls: both report the same tokens; two
    sibling calls both count."""
    tokens = {"llm.token_count.prompt": 5, "llm.token_count.completion": 2}
    llm = {"openinference.span.kind": "LLM", **tokens}
    spans = {
        "root": _summary({"openinference.span.kind": "CHAIN"}, start_ns=0, end_ns=10),
        "chat": _summary(llm, parent="root", start_ns=1, end_ns=4),
        "complete": _summary(llm, parent="chat", start_ns=2, end_ns=3),
        "other": _summary(llm, parent="root", start_ns=5, end_ns=6),
    }
    usage = {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}
    assert record_from_spans("t" * 32, spans).usage == usage
    # before the inner span arrives, the wrapper's tokens stand for it
    partial = {k: v for k, v in spans.items() if k != "complete"}
    assert record_from_spans("t" * 32, partial).usage == usage


def test_a_message_sent_as_content_parts_is_read_from_its_text_parts() -> None:
    at = "llm.input_messages.0.message."
    span = _summary(
        {
            "openinference.span.kind": "LLM",
            f"{at}role": "user",
            f"{at}contents.0.message_content.type": "text",
            f"{at}contents.0.message_content.text": "Что на фото? ",
            f"{at}contents.1.message_content.type": "image",
            f"{at}contents.1.message_content.image.image.url": "https://img.example.org/1",
            f"{at}contents.2.message_content.type": "text",
            f"{at}contents.2.message_content.text": "Коротко.",
        }
    )
    assert span["input"] == "Что на фото? Коротко."
