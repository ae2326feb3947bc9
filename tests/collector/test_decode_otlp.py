"""OTLP messages made by the real OpenTelemetry SDK decode into the expected trace fields."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from collector.ingest.decode.errors import DecodeError
from collector.ingest.decode.otlp import OtlpFragment, decode_otlp_message
from collector.ingest.decode.otlp_mapping import record_from_spans, summarize_span
from collector.ingest.otlp_store import merge_span_sets
from tests.collector.otlp_traces import (
    ANSWER,
    DOCS,
    QUESTION,
    genai_llm_span,
    json_message,
    proto_message,
    protobuf_json_message,
    rag_spans,
    trace_hex,
)


def _one(fragments: list[OtlpFragment]) -> OtlpFragment:
    assert len(fragments) == 1
    return fragments[0]


@pytest.mark.parametrize("encode", [proto_message, json_message, protobuf_json_message])
def test_rag_request_maps_to_one_trace(encode: object) -> None:
    spans = rag_spans()
    fragment = _one(decode_otlp_message(encode(spans)))  # type: ignore[operator]
    assert fragment.trace_id == trace_hex(spans)
    assert len(fragment.trace_id) == 32 and fragment.trace_id == fragment.trace_id.lower()
    assert fragment.has_root and len(fragment.span_ids) == 3
    rec = record_from_spans(fragment.trace_id, fragment.spans)
    assert rec.source == "otlp"
    assert rec.question == QUESTION  # unwrapped from the root's JSON input
    assert rec.answer == ANSWER
    assert [(c.id, c.text, c.score) for c in rec.contexts] == list(DOCS)
    assert rec.contexts[0].url == "https://kb.example.org/doc-1"
    assert (rec.session_id, rec.user_id, rec.model) == ("session-7", "user-3", "gpt-4o-mini")
    # OpenInference and GenAI counts on one span are counted once
    assert rec.usage == {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020}
    root = spans[0]
    assert root.start_time is not None and root.end_time is not None
    assert rec.latency_ms == pytest.approx((root.end_time - root.start_time) / 1e6)
    # datetime keeps whole microseconds (the nanoseconds are cut), and float seconds near
    # 1.8e9 carry ~2e-7 of rounding: allow 2 µs.
    assert rec.timestamp.timestamp() == pytest.approx(root.start_time / 1e9, abs=2e-6)
    assert rec.tags == {"tenant": "acme", "service": "rag-app"}
    assert rec.metadata == {"app_version": "2.3.1"}
    assert rec.shown_urls is None and rec.field_warnings == ()


def test_stages_and_shown_url_come_from_the_spans() -> None:
    spans = rag_spans(root_attributes={"ragpulse.shown_url": "https://kb.example.org/doc-1"})
    fragment = _one(decode_otlp_message(proto_message(spans)))
    rec = record_from_spans(fragment.trace_id, fragment.spans)
    assert rec.shown_urls == ("https://kb.example.org/doc-1",)
    durations = {s.name: (s.end_time or 0) - (s.start_time or 0) for s in spans}
    assert rec.latency_stages == {
        "retrieval": pytest.approx(durations["retrieve"] / 1e6),
        "generation": pytest.approx(durations["generate"] / 1e6),
    }


def test_proto_and_json_encodings_agree() -> None:
    spans = rag_spans()
    a = _one(decode_otlp_message(proto_message(spans)))
    b = _one(decode_otlp_message(json_message(spans), "otlp_json"))
    assert a == b


def test_collector_style_json_with_integer_enums_and_string_ints() -> None:
    spans = rag_spans()
    obj = json.loads(json_message(spans))
    for span in obj["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["kind"] = 1  # enums may come as numbers
    fragment = _one(decode_otlp_message(json.dumps(obj).encode()))
    rec = record_from_spans(fragment.trace_id, fragment.spans)
    assert rec.usage is not None and rec.usage["prompt_tokens"] == 900


def test_children_without_root_fall_back_to_llm_fields() -> None:
    spans = rag_spans()
    children = _one(decode_otlp_message(proto_message(spans[1:])))
    assert not children.has_root
    rec = record_from_spans(children.trace_id, children.spans)
    assert rec.question == QUESTION  # from the retriever input / LLM user message
    assert rec.answer == ANSWER  # from the LLM output message
    assert rec.latency_ms is None  # only the root knows the request's duration


def test_fragments_in_any_order_merge_to_the_whole() -> None:
    spans = rag_spans()
    whole = _one(decode_otlp_message(proto_message(spans)))
    parts = [_one(decode_otlp_message(proto_message([s]))) for s in reversed(spans)]
    merged: dict[str, Mapping[str, Any]] = {}
    for part in parts:
        merged = merge_span_sets(merged, part.spans)
    again = merge_span_sets(merged, parts[0].spans)
    assert merged == again == dict(whole.spans)
    assert record_from_spans(whole.trace_id, merged) == record_from_spans(
        whole.trace_id, whole.spans
    )


def test_genai_conventions() -> None:
    spans = genai_llm_span("conv-42")
    fragment = _one(decode_otlp_message(proto_message(spans)))
    rec = record_from_spans(fragment.trace_id, fragment.spans)
    assert rec.session_id == "conv-42"
    assert rec.model == "gpt-4o-2024-08-06"  # the response model over the requested one
    assert rec.usage == {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}
    assert rec.question == ""  # no input recorded: nothing to ask the judge about


def test_two_traces_in_one_message() -> None:
    a, b = rag_spans(), rag_spans(session_id="other")
    fragments = decode_otlp_message(proto_message(a + b))
    assert sorted(f.trace_id for f in fragments) == sorted([trace_hex(a), trace_hex(b)])


@pytest.mark.parametrize(
    ("value", "reason", "part"),
    [
        (b"", "empty", "empty"),
        (b"\x0a\xff\xff\xff\xff\x0f", "invalid_otlp", "protobuf"),
        (b"\x12\x03abc", "invalid_otlp", "no spans"),
        (b'{"resourceSpans": 5}', "invalid_otlp", "resourceSpans"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            "invalid_otlp",
            "",
        ),
        (b'{"resourceSpans": [', "invalid_json", "line 1"),
        (b"[]", "invalid_otlp", "protobuf"),
    ],
)
def test_malformed_messages(value: bytes, reason: str, part: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_otlp_message(value)
    assert info.value.reason == reason, info.value.detail
    assert part in info.value.detail


def test_json_encoding_setting_reports_json_errors() -> None:
    with pytest.raises(DecodeError) as info:
        decode_otlp_message(b"[]", "otlp_json")
    assert (info.value.reason, info.value.detail) == (
        "wrong_type",
        "top level: expected object, got array",
    )


def test_bad_ids_are_located() -> None:
    obj = json.loads(json_message(rag_spans()))
    obj["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "00" * 8
    with pytest.raises(DecodeError) as info:
        decode_otlp_message(json.dumps(obj).encode())
    assert info.value.reason == "invalid_otlp"
    assert "spans[1].spanId" in info.value.detail and "zero" in info.value.detail


def test_oversized() -> None:
    value = proto_message(rag_spans())
    with pytest.raises(DecodeError) as info:
        decode_otlp_message(value, max_bytes=100)
    assert info.value.reason == "oversized"


def test_service_version_is_the_version_tag_unless_a_span_tags_one() -> None:
    """The resource's `service.version` becomes `tags.version` (the default version
    source), as `service.name` becomes `tags.service`; a `ragpulse.tag.version` wins."""
    resource = {"service.name": "rag-app", "service.version": "2.4.0"}
    span = summarize_span({}, parent="", name="rag", start_ns=0, end_ns=1, resource=resource)
    assert span["tags"] == {"service": "rag-app", "version": "2.4.0"}
    tagged = {"ragpulse.tag.version": "canary-7"}
    span = summarize_span(tagged, parent="", name="rag", start_ns=0, end_ns=1, resource=resource)
    assert span["tags"] == {"service": "rag-app", "version": "canary-7"}
