"""OTLP traces counted per convention and per missing field: once per trace, when its root
span is stored, whatever the order and repetition of its fragments; on SQLite and
PostgreSQL (the row lock decides which batch brought the root)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collector.ingest.decode.completeness import (
    missing_fields,
    span_convention,
    tally,
    trace_conventions,
)
from collector.ingest.pipeline import BatchResult
from collector.store.records import ContextRecord, TraceRecord
from tests.collector.otlp_traces import (
    ANSWER,
    QUESTION,
    genai_llm_span,
    json_message,
    proto_message,
    rag_spans,
)
from tests.instrumentation.harness import ingest, stored_traces


def _counts(result: BatchResult) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    return result.otlp_traces, result.otlp_incomplete


def test_split_trace_counts_once_when_its_root_arrives(db_url: str) -> None:
    root, *children = rag_spans()
    # children first (no root yet): stored, not counted
    first = ingest(db_url, [proto_message(children)])
    assert first.stored == 1 and _counts(first) == ({}, {})
    # the root: counted, complete
    second = ingest(db_url, [json_message([root])])
    assert _counts(second) == ({"openinference": 1}, {})
    # a replay of everything, and the root again in a batch of its own: nothing more
    again = ingest(db_url, [proto_message(children), proto_message([root])])
    assert again.duplicates == 2 and _counts(again) == ({}, {})


def test_root_first_counts_what_the_trace_had_then(sqlite_url: str) -> None:
    """The rule is the root's arrival, not "complete": a root exported before its children
    (an SDK never does this; a reordering Collector can) is counted with what it had."""
    root, retriever, llm = rag_spans(root_attributes={"output.value": ""})
    early = ingest(sqlite_url, [proto_message([root])])
    assert _counts(early) == (
        {"openinference": 1},
        {("openinference", "answer"): 1, ("openinference", "contexts"): 1},
    )
    late = ingest(sqlite_url, [proto_message([retriever, llm])])
    assert _counts(late) == ({}, {})
    (trace,) = stored_traces(sqlite_url).values()
    assert trace.contexts is not None and len(trace.contexts) == 3  # stored all the same


def test_one_batch_several_traces_and_conventions(sqlite_url: str) -> None:
    hidden = rag_spans(
        session_id="s-hidden",
        root_attributes={"output.value": "__REDACTED__", "input.value": "__REDACTED__"},
    )
    # the LLM span's messages are what OpenInference drops with OPENINFERENCE_HIDE_*_MESSAGES
    messages = [
        proto_message(rag_spans()),
        proto_message([hidden[0]]),
        proto_message(genai_llm_span()),  # content capture off: no messages at all
    ]
    result = ingest(sqlite_url, messages)
    assert result.otlp_traces == {"openinference": 2, "genai": 1}
    assert result.otlp_incomplete == {
        ("openinference", "question"): 1,
        ("openinference", "answer"): 1,
        ("openinference", "contexts"): 1,
        ("genai", "question"): 1,
        ("genai", "answer"): 1,
        ("genai", "contexts"): 1,
    }
    total = BatchResult()
    total.add(result)
    total.add(result)
    assert total.otlp_traces == {"openinference": 4, "genai": 2}
    assert total.otlp_incomplete[("genai", "answer")] == 2


def _span(*conv: str, parent: str = "") -> dict[str, Any]:
    return {"parent": parent, "conv": list(conv)} if conv else {"parent": parent}


def test_a_traces_conventions() -> None:
    # the first detected names the span; ragpulse's own attributes yield to a library's
    assert span_convention(["ragpulse", "openinference", "genai"]) == "openinference"
    assert span_convention(["openinference", "genai"]) == "openinference"
    assert span_convention(["ragpulse"]) == "ragpulse"
    assert span_convention([]) is None
    # a trace: its spans' conventions, in precedence order; an unknown name after them
    spans = [_span("genai"), _span("ragpulse", "openinference", parent="a"), _span()]
    assert trace_conventions(spans) == ("openinference", "genai")
    assert trace_conventions([_span("zz-new"), _span("genai")]) == ("genai", "zz-new")
    assert trace_conventions([_span("ragpulse")]) == ("ragpulse",)
    assert trace_conventions([_span(), _span()]) == ("none",)


@pytest.mark.parametrize(
    ("fields", "missing"),
    [
        ({"question": QUESTION, "answer": ANSWER, "contexts": ("text",)}, ()),
        ({"question": " ", "answer": None, "contexts": ()}, ("question", "answer", "contexts")),
        (
            {"question": "__REDACTED__", "answer": "__REDACTED__", "contexts": ("__REDACTED__",)},
            ("question", "answer", "contexts"),
        ),
        ({"question": QUESTION, "answer": "", "contexts": (None, "")}, ("answer", "contexts")),
    ],
)
def test_missing_fields(fields: dict[str, Any], missing: tuple[str, ...]) -> None:
    from datetime import UTC, datetime

    record = TraceRecord(
        trace_id="t",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        question=fields["question"],
        answer=fields["answer"],
        contexts=tuple(ContextRecord(id="d", text=t) for t in fields["contexts"]),
    )
    assert missing_fields(record) == missing


def test_tally_counts_a_trace_under_each_of_its_conventions() -> None:
    from collector.ingest.decode.completeness import Completeness

    found = [
        Completeness(("openinference", "genai"), ("answer",)),
        Completeness(("genai",), ()),
    ]
    assert tally(found) == (
        {"openinference": 1, "genai": 2},
        {("openinference", "answer"): 1, ("genai", "answer"): 1},
    )
    assert json.dumps(tally([])) == "[{}, {}]"
