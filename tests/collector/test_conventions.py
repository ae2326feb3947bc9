"""The conventions' interface: detection per span, precedence, used attributes, wall-time stages."""

from __future__ import annotations

import pytest

from collector.ingest.decode.conventions import registry
from collector.ingest.decode.conventions.base import Span
from collector.ingest.decode.otlp_mapping import record_from_spans, summarize_span, union_ns


def _summary(attrs: dict[str, object], **kw: object) -> dict[str, object]:
    args: dict[str, object] = {
        "parent": "",
        "name": "s",
        "start_ns": 0,
        "end_ns": 1,
        "resource": {},
    }
    args.update(kw)
    return summarize_span(attrs, **args)  # type: ignore[arg-type]


def test_union_counts_nested_and_parallel_time_once() -> None:
    assert union_ns([]) == 0
    assert union_ns([(0, 10), (2, 5)]) == 10  # nested
    assert union_ns([(0, 10), (5, 15)]) == 15  # overlapping (parallel)
    assert union_ns([(0, 10), (20, 25)]) == 15  # apart
    assert union_ns([(20, 25), (0, 10), (0, 10)]) == 15  # any order, repeated


def test_nested_llm_spans_count_their_wall_time() -> None:
    ms = 1_000_000
    spans = {
        "a" * 16: _summary({"openinference.span.kind": "CHAIN"}, start_ns=0, end_ns=100 * ms),
        "b" * 16: _summary(
            {"openinference.span.kind": "LLM"}, parent="a" * 16, start_ns=10 * ms, end_ns=60 * ms
        ),
        "c" * 16: _summary(
            {"openinference.span.kind": "LLM"}, parent="b" * 16, start_ns=20 * ms, end_ns=50 * ms
        ),
    }
    record = record_from_spans("f" * 32, spans)
    assert record.latency_stages == {"generation": 50.0}


def test_each_convention_is_detected_per_span_in_precedence_order() -> None:
    span = Span(
        attrs={
            "openinference.span.kind": "LLM",
            "gen_ai.request.model": "m",
            "ragpulse.tag.tenant": "acme",
        }
    )
    assert [c.name for c in registry.detect(span)] == ["ragpulse", "openinference", "genai"]
    assert registry.detect(Span(attrs={"http.method": "GET"})) == []
    # an evaluator's span (gen_ai.evaluation.* only) is no GenAI call
    assert registry.detect(Span(attrs={"gen_ai.evaluation.name": "x"})) == []


def test_the_first_convention_to_give_a_field_wins() -> None:
    summary = _summary(
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "from-openinference",
            "gen_ai.request.model": "from-genai",
            "gen_ai.operation.name": "chat",
        }
    )
    assert summary["model"] == "from-openinference"
    assert summary["conv"] == ["openinference", "genai"]


def test_a_genai_retrieval_span_is_no_llm_call() -> None:
    assert _summary({"gen_ai.operation.name": "retrieval"})["kind"] == "RETRIEVER"
    assert _summary({"gen_ai.operation.name": "chat"})["kind"] == "LLM"


def test_used_attributes_are_recorded() -> None:
    used: set[str] = set()
    _summary({"openinference.span.kind": "CHAIN", "input.value": "q", "x.unread": 1}, used=used)
    assert {"openinference.span.kind", "input.value"} <= used
    assert "x.unread" not in used


def test_an_unknown_convention_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="openinference"):
        registry.convention("nope")
