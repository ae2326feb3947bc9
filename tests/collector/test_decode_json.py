"""The JSON trace contract: every bad input has its reason code and a detail that locates it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from collector.ingest.decode.errors import REASONS, DecodeError
from collector.ingest.decode.trace_json import (
    decode_json_message,
    parse_message,
    parse_trace_record,
)
from collector.store.records import FeedbackEvent, TraceRecord
from collector.store.samples import record_to_sample
from tests.collector.traces import make_feedback, make_trace, trace_bytes


def _decode(value: bytes, **kw: Any) -> TraceRecord | FeedbackEvent:
    return parse_message(decode_json_message(value, **kw))


def _fails(value: bytes, reason: str, *detail_parts: str, **kw: Any) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        _decode(value, **kw)
    assert info.value.reason == reason, info.value.detail
    for part in detail_parts:
        assert part in info.value.detail, info.value.detail
    return info.value


def _with(**changes: Any) -> bytes:
    trace = make_trace(1)
    for key, value in changes.items():
        if value is _DROP:
            trace.pop(key)
        else:
            trace[key] = value
    return json.dumps(trace, ensure_ascii=False).encode()


_DROP = object()


def test_full_russian_trace_round_trips() -> None:
    raw = make_trace(3, "ru")
    rec = _decode(json.dumps(raw, ensure_ascii=False).encode())
    assert isinstance(rec, TraceRecord)
    assert rec.question == raw["question"] and "?" in rec.question
    assert rec.answer == raw["answer"]
    assert rec.timestamp == datetime(2026, 11, 20, 9, 0, 3, tzinfo=UTC)
    assert [c.text for c in rec.contexts] == [c["text"] for c in raw["contexts"]]
    assert [c.id for c in rec.contexts] == [c["id"] for c in raw["contexts"]]
    assert rec.contexts[0].score == raw["contexts"][0]["score"]
    assert rec.relevant_ids == tuple(raw["relevant_ids"])
    assert rec.judge is not None and rec.judge.model == "judge-mini"
    assert rec.cache_hit is False and rec.cache_similarity == 0.3
    assert rec.tags == {"tenant": "acme", "lang": "ru"}
    assert rec.usage == raw["usage"] and rec.metadata == raw["metadata"]
    assert rec.turn == 0 and rec.session_id == "session-1"
    sample = record_to_sample(rec)
    assert sample.question == raw["question"]
    assert sample.relevance == {raw["relevant_ids"][0]: 1}
    assert sample.tags["tenant"] == "acme"


def test_minimal_trace_and_unknown_fields_are_ignored() -> None:
    rec = parse_trace_record(
        {"trace_id": "t", "timestamp": "2026-01-02T03:04:05+03:00", "question": "Вопрос?", "x": 1}
    )
    assert rec.timestamp == datetime(2026, 1, 2, 0, 4, 5, tzinfo=UTC)
    assert rec.answer is None and rec.contexts == () and rec.relevance is None


def test_relevance_overrides_relevant_ids_in_the_sample() -> None:
    rec = _decode(_with(relevance={"doc-1": 2, "doc-2": 0}, relevant_ids=["doc-9"]))
    assert isinstance(rec, TraceRecord)
    assert dict(record_to_sample(rec).relevance or {}) == {"doc-1": 2, "doc-2": 0}


@pytest.mark.parametrize(
    ("value", "reason", "parts"),
    [
        (b"", "empty", ("empty",)),
        (b"  \n", "empty", ("whitespace",)),
        (b'{"trace_id": "a",\n "x": }', "invalid_json", ("line 2", "column")),
        (b'{"a": NaN}', "invalid_json", ("NaN",)),
        (b'{"a": "\\ud800"}', "invalid_json", ("surrogate",)),
        (b"[1, 2]", "wrong_type", ("top level", "object", "array")),
        (b'"text"', "wrong_type", ("top level", "string")),
        ('{"q": "Привет"}'.encode("cp1251"), "not_utf8", ("byte offset 7",)),
    ],
)
def test_envelope_errors(value: bytes, reason: str, parts: tuple[str, ...]) -> None:
    _fails(value, reason, *parts)


def test_oversized_names_size_and_limit() -> None:
    value = trace_bytes(1, size_bytes=5000)
    _fails(value, "oversized", f"{len(value)} bytes", "limit is 4096", max_bytes=4096)
    assert isinstance(_decode(value, max_bytes=len(value)), TraceRecord)


def test_nul_character_is_rejected_before_it_reaches_postgresql() -> None:
    _fails(_with(answer="a\u0000b"), "invalid_value", "U+0000")


@pytest.mark.parametrize(
    ("changes", "reason", "parts"),
    [
        ({"trace_id": _DROP}, "missing_field", ("trace_id", "missing")),
        ({"question": None}, "missing_field", ("question", "null")),
        ({"timestamp": _DROP}, "missing_field", ("timestamp",)),
        ({"trace_id": ""}, "invalid_value", ("trace_id", "length 0")),
        ({"trace_id": "x" * 129}, "invalid_value", ("trace_id", "129")),
        ({"trace_id": 17}, "wrong_type", ("trace_id", "string", "integer")),
        ({"timestamp": "yesterday"}, "invalid_value", ("timestamp", "RFC 3339")),
        ({"timestamp": "2026-01-02T03:04:05"}, "invalid_value", ("UTC offset",)),
        ({"timestamp": "2026-01-02"}, "invalid_value", ("timestamp",)),
        ({"timestamp": 1700000000}, "wrong_type", ("timestamp", "integer")),
        ({"question": ["a"]}, "wrong_type", ("question", "string", "array")),
        ({"type": "metric"}, "unknown_schema", ("'metric'",)),
        ({"type": 3}, "wrong_type", ("type", "string")),
    ],
)
def test_field_errors(changes: dict[str, Any], reason: str, parts: tuple[str, ...]) -> None:
    _fails(_with(**changes), reason, *parts)


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"answer": 5}, "answer"),
        ({"contexts": {"id": "a"}}, "contexts"),
        ({"contexts": [{"id": "a"}, {"score": "high"}]}, "contexts[1].score"),
        ({"contexts": [{"id": "a"}, 7]}, "contexts[1]"),
        ({"turn": True}, "turn"),
        ({"turn": 1.5}, "turn"),
        ({"turn": 2**40}, "turn"),
        ({"turn": -1}, "turn"),
        ({"latency_ms": False}, "latency_ms"),
        ({"latency_ms": -5}, "latency_ms"),
        ({"relevant_ids": ["a", {"b": 1}]}, "relevant_ids"),
        ({"relevance": {"doc-1": "yes"}}, "relevance"),
        ({"relevance": {"doc-1": True}}, "relevance"),
        ({"relevance": {"doc-1": 2, "doc-2": None}}, "relevance"),
        ({"judge": {"decision": "maybe"}}, "judge.decision"),
        ({"judge": []}, "judge"),
        ({"judge_label": 7}, "judge_label"),
        ({"cache": {"hit": True, "similarity": "close"}}, "cache.similarity"),
        ({"tags": {"tenant": None}}, "tags.tenant"),
        ({"tags": ["a"]}, "tags"),
        ({"usage": 3}, "usage"),
        ({"usage": {"prompt_tokens": -3}}, "usage.prompt_tokens"),
        ({"metadata": "m"}, "metadata"),
        ({"session_id": "s" * 300}, "session_id"),
        ({"shown_url": {"url": "https://x"}}, "shown_url"),
    ],
)
def test_an_optional_field_that_does_not_fit_keeps_the_trace(
    changes: dict[str, Any], path: str
) -> None:
    """The trace is kept; the raw value is preserved under metadata._invalid and named."""
    rec = _decode(_with(**changes))
    assert isinstance(rec, TraceRecord)
    assert rec.question == make_trace(1)["question"]
    assert rec.metadata is not None
    (field, raw), *_ = changes.items()
    kept = rec.metadata["_invalid"][path]
    expected = raw
    for part in path.replace("[", ".").replace("]", "").split(".")[1:]:
        expected = expected[int(part)] if part.isdigit() else expected[part]
    assert kept == expected
    assert rec.field_warnings == (field,)


def test_every_reason_code_is_known() -> None:
    assert {
        "invalid_json",
        "not_utf8",
        "oversized",
        "wrong_type",
        "missing_field",
        "invalid_value",
        "unknown_schema",
        "invalid_otlp",
        "empty",
        "too_deep",
        "duplicate_key",
    } == REASONS
    with pytest.raises(ValueError, match="unknown decode reason"):
        DecodeError("bogus", "x")


def test_feedback_event_and_its_hash() -> None:
    raw = make_feedback(4, relevant_ids=["doc-1"], rating=4, comment="Хороший ответ")
    ev = _decode(json.dumps(raw, ensure_ascii=False).encode())
    assert isinstance(ev, FeedbackEvent)
    assert ev.trace_id == "trace-00000004" and ev.rating == 4.0
    assert ev.relevant_ids == ("doc-1",) and ev.comment == "Хороший ответ"
    # the same event with other key order and spacing hashes alike; a change does not
    reordered = json.dumps(dict(reversed(list(raw.items()))), indent=2, ensure_ascii=False)
    again = _decode(reordered.encode())
    assert isinstance(again, FeedbackEvent) and again.event_hash == ev.event_hash
    changed = _decode(json.dumps(raw | {"rating": 5}).encode())
    assert isinstance(changed, FeedbackEvent) and changed.event_hash != ev.event_hash
    assert len(ev.event_hash) == 64


def test_feedback_topic_implies_feedback_and_rejects_traces() -> None:
    raw = make_feedback(1)
    del raw["type"]
    ev = parse_message(raw, feedback_topic=True)
    assert isinstance(ev, FeedbackEvent)
    with pytest.raises(DecodeError) as info:
        parse_message(make_trace(1) | {"type": "trace"}, feedback_topic=True)
    assert info.value.reason == "unknown_schema"
    with pytest.raises(DecodeError) as info:
        parse_message({"type": "feedback", "timestamp": "2026-01-01T00:00:00Z"})
    assert (info.value.reason, info.value.detail) == (
        "missing_field",
        "trace_id: required field is missing",
    )


def test_feedback_field_errors() -> None:
    base = make_feedback(1)
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"rating": "5"}, "wrong_type", "rating"),
        ({"judge_label": "yes"}, "wrong_type", "judge_label"),
        ({"relevant_ids": [1]}, "wrong_type", "relevant_ids[0]"),
        ({"timestamp": "soon"}, "invalid_value", "timestamp"),
    ]
    for changes, reason, field in cases:
        with pytest.raises(DecodeError) as info:
            parse_message(base | changes)
        assert info.value.reason == reason and info.value.detail.startswith(field)


def test_utf8_bom_is_tolerated() -> None:
    assert isinstance(_decode(b"\xef\xbb\xbf" + trace_bytes(2)), TraceRecord)
