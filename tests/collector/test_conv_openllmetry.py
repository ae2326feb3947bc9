"""The OpenLLMetry convention on the shapes the real-library tests cannot produce here: the
releases before 0.55 (flattened prompts; attribute names as in the 0.54 LangChain
instrumentor's `span_utils.py` and, for 2024, semantic-conventions-ai before 0.2), the
Traceloop SDK's decorators, LangGraph's message state, Pinecone's and Milvus' result events
(names as in opentelemetry-instrumentation-pinecone `query_handlers.py` and -milvus
`wrapper.py`), and nested retrievals at the trace level."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from collector.ingest.decode.conventions import registry
from collector.ingest.decode.conventions.base import Event, Span
from collector.ingest.decode.otlp_mapping import record_from_spans, summarize_span


def _summary(attrs: dict[str, Any], events: Sequence[Event] = (), **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"parent": "", "name": "s", "start_ns": 0, "end_ns": 1, "resource": {}}
    args.update(kw)
    return summarize_span(attrs, events=events, **args)


def test_a_pre_055_llm_span_gives_its_flattened_prompt_and_completion() -> None:
    summary = _summary(
        {
            "llm.request.type": "chat",
            "gen_ai.system": "Langchain",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "Answer from the context: limits are 300 000 roubles.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Какой лимит?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "300 000 рублей.",
            "gen_ai.completion.0.finish_reason": "stop",
            "gen_ai.usage.input_tokens": 20,
            "gen_ai.usage.output_tokens": 4,
            "llm.usage.total_tokens": 24,
        },
        parent="a" * 16,
    )
    assert summary["conv"] == ["openllmetry", "genai"]
    assert summary["kind"] == "LLM"
    assert (summary["input"], summary["output"]) == ("Какой лимит?", "300 000 рублей.")
    assert summary["model"] == "gpt-4o-mini-2024-07-18"
    assert summary["usage"] == {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}


def test_a_content_list_and_the_2024_names() -> None:
    blocks = json.dumps([{"type": "text", "text": "What is "}, {"type": "text", "text": "KYC?"}])
    summary = _summary(
        {
            "llm.request.type": "chat",
            "llm.vendor": "OpenAI",
            "llm.request.model": "gpt-3.5-turbo",
            "llm.prompts.0.role": "user",
            "llm.prompts.0.content": blocks,
            "llm.completions.0.role": "assistant",
            "llm.completions.0.content": "Know your customer.",
            "llm.usage.prompt_tokens": 7,
            "llm.usage.completion_tokens": 3,
            "llm.usage.total_tokens": 10,
        }
    )
    assert (summary["input"], summary["output"]) == ("What is KYC?", "Know your customer.")
    assert summary["model"] == "gpt-3.5-turbo"
    assert summary["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert _summary({"llm.request.type": "embedding"})["kind"] == "EMBEDDING"


def test_the_gen_ai_prompt_name_alone_is_no_openllmetry_span() -> None:
    found = registry.detect(Span(attrs={"gen_ai.prompt.name": "rag-v2"}))
    assert [c.name for c in found] == ["genai"]


def test_traceloop_sdk_decorator_spans() -> None:
    workflow = _summary(
        {
            "traceloop.span.kind": "workflow",
            "traceloop.workflow.name": "answer_question",
            "traceloop.entity.name": "answer_question",
            "traceloop.entity.input": json.dumps({"args": ["Как открыть вклад?"], "kwargs": {}}),
            "traceloop.entity.output": json.dumps("В приложении: Вклады, Открыть."),
            "traceloop.association.properties.user_id": "u-7",
            "traceloop.association.properties.chat_id": "chat-3",
            "traceloop.association.properties.customer_id": "acme",
            "traceloop.association.properties.beta": True,
        }
    )
    assert workflow["kind"] == "CHAIN"
    assert workflow["input"] == "Как открыть вклад?"
    assert workflow["output"] == "В приложении: Вклады, Открыть."
    assert (workflow["session_id"], workflow["user_id"]) == ("chat-3", "u-7")
    assert workflow["tags"] == {
        "customer_id": "acme",
        "beta": "true",
        "workflow": "answer_question",
    }
    kwargs = _summary(
        {
            "traceloop.span.kind": "task",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"question": "q?"}}),
            "traceloop.entity.output": json.dumps({"answer": "a.", "sources": ["x"]}),
        }
    )
    assert (kwargs["input"], kwargs["output"]) == ("q?", "a.")


def test_langgraph_message_state_and_the_task_names() -> None:
    human = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"],
    }
    ai = {**human, "id": ["langchain", "schema", "messages", "AIMessage"]}
    summary = _summary(
        {
            "traceloop.span.kind": "workflow",
            "gen_ai.operation.name": "invoke_agent",
            # only the 0.55+ copies of the entity input/output
            "gen_ai.task.input": json.dumps(
                {"inputs": {"messages": [["user", "Hi, what's my limit?"]]}}
            ),
            "gen_ai.task.output": json.dumps(
                {
                    "outputs": {
                        "messages": [
                            {
                                **human,
                                "kwargs": {"content": "Hi, what's my limit?", "type": "human"},
                            },
                            {
                                **ai,
                                "kwargs": {
                                    "content": [{"type": "text", "text": "300 000."}],
                                    "type": "ai",
                                },
                            },
                        ]
                    }
                }
            ),
            "gen_ai.conversation.id": "thread-1",
            "traceloop.association.properties.langgraph_node": "agent",
            "traceloop.association.properties.ls_model_name": "gpt-4o",
            "traceloop.association.properties.thread_id": "thread-1",
        }
    )
    assert summary["kind"] == "CHAIN"  # not genai's AGENT for a LangChain workflow
    assert (summary["input"], summary["output"]) == ("Hi, what's my limit?", "300 000.")
    assert summary["session_id"] == "thread-1"  # gen_ai.conversation.id, read by genai
    assert summary["tags"] == {"thread_id": "thread-1"}


def test_a_tool_span_gives_neither_question_nor_answer() -> None:
    summary = _summary(
        {
            "traceloop.span.kind": "tool",
            "gen_ai.operation.name": "execute_tool",
            "traceloop.entity.input": json.dumps({"input_str": "rates", "inputs": {"q": "rates"}}),
            "traceloop.entity.output": json.dumps({"output": "5%", "kwargs": {}}),
        }
    )
    assert summary["kind"] == "TOOL"
    assert "input" not in summary and "output" not in summary


def test_pinecone_and_milvus_result_events() -> None:
    pinecone: list[Event] = [
        (
            "db.query.result",
            {
                "db.query.result.id": "doc-1",
                "db.query.result.score": 0.91,
                "db.query.result.metadata": "{'url': 'https://kb/1'}",  # str(dict), no JSON
                "db.query.result.vector": (0.1, 0.2),
            },
        ),
        ("db.query.result", {"db.query.result.id": "doc-2", "db.query.result.score": float("nan")}),
        ("db.query.embeddings", {"db.query.embeddings.vector": (0.1, 0.2)}),
    ]
    summary = _summary(
        {"db.system": "pinecone", "db.operation": "query"}, pinecone, parent="a" * 16
    )
    assert summary["conv"] == ["openllmetry"]
    assert summary["kind"] == "RETRIEVER"
    assert summary["docs"] == [{"id": "doc-1", "score": 0.91}, {"id": "doc-2"}]
    assert summary["invalid"] == {"contexts[1].score": "nan"}
    milvus: list[Event] = [
        (
            "db.search.result",
            {
                "db.search.query.id": 0,
                "db.search.result.id": 42,
                "db.search.result.distance": "0.12",
                "db.search.result.entity": "{'text': 'x'}",
            },
        ),
        ("db.query.result", {"pk": 1, "text": "raw row"}),  # a raw row: no canonical keys
    ]
    assert _summary({"db.system": "milvus"}, milvus)["docs"] == [{"id": "42"}]


def test_a_nested_retrieval_fills_the_outer_one_and_is_not_repeated() -> None:
    ms = 1_000_000
    root, retriever, query, other = "a" * 16, "b" * 16, "c" * 16, "d" * 16
    outer_docs = {"documents": [{"page_content": "t1", "metadata": {"url": "https://kb/1"}}, "t2"]}
    events: list[Event] = [
        ("db.query.result", {"db.query.result.id": "id-2", "db.query.result.document": "t2"}),
        ("db.query.result", {"db.query.result.id": "id-1", "db.query.result.document": "t1"}),
    ]
    retrieve = {
        "traceloop.span.kind": "task",
        "gen_ai.operation.name": "vector_db_retrieve",
        "traceloop.entity.output": json.dumps(outer_docs),
    }
    spans = {
        root: _summary({"traceloop.span.kind": "workflow"}, end_ns=100 * ms),
        retriever: _summary(retrieve, parent=root, start_ns=10 * ms, end_ns=40 * ms),
        query: _summary(
            {"db.system": "chroma"}, events, parent=retriever, start_ns=20 * ms, end_ns=30 * ms
        ),
        # a second, separate retrieval keeps its own documents
        other: _summary(
            {"db.system": "chroma"}, events[:1], parent=root, start_ns=50 * ms, end_ns=60 * ms
        ),
    }
    record = record_from_spans("f" * 32, spans)
    assert [c.to_json() for c in record.contexts] == [
        {"id": "id-1", "url": "https://kb/1", "text": "t1"},
        {"id": "id-2", "text": "t2"},
        {"id": "id-2", "text": "t2"},
    ]
    assert record.latency_stages == {"retrieval": 40.0}
    # parents in a circle (corrupt input): the walk ends, every span keeps its documents
    loop = {**spans, root: {**spans[root], "parent": query}}
    assert len(record_from_spans("f" * 32, loop).contexts) == 2 + 2 + 1
