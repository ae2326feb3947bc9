"""Limits at decode (issue 13): poison is refused early, each with a precise reason.

Depth, duplicate keys, timestamps whose UTC conversion overflows: every one is a
`DecodeError` (a dead letter), never a `RecursionError`/`OverflowError` escaping a parser.
"""

from __future__ import annotations

import json

import pytest

from collector.ingest.decode.errors import DecodeError
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.trace_json import decode_json_message, parse_message
from collector.store.records import FeedbackEvent, TraceRecord
from tests.collector.traces import make_feedback, make_trace


def _trace(**changes: object) -> dict[str, object]:
    return make_trace(1) | changes


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def _deep_text(depth: int) -> bytes:
    trace = make_trace(1)
    del trace["metadata"]
    head = json.dumps(trace)[:-1]
    return (head + ', "metadata": ' + '{"a": ' * depth + "1" + "}" * depth + "}").encode()


def _refused(value: bytes, reason: str, *parts: str, **kw: int) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        parse_message(decode_json_message(value, **kw))
    assert info.value.reason == reason, info.value.detail
    for part in parts:
        assert part in info.value.detail, info.value.detail
    return info.value


def test_default_depth_is_far_below_what_every_writer_accepts() -> None:
    assert DEFAULT_MAX_DEPTH == 64  # orjson writes 254 levels; a stored span nests +2


@pytest.mark.parametrize("depth", [70, 300, 1_000, 10_000, 100_000])
def test_deep_nesting_is_refused_as_too_deep(depth: int) -> None:
    _refused(_deep_text(depth), "too_deep")


def test_depth_limit_is_a_setting_and_counts_the_top_level_object() -> None:
    at_limit = _deep_text(63)  # the top-level object + 63 nested objects = 64 levels
    assert isinstance(parse_message(decode_json_message(at_limit)), TraceRecord)
    _refused(_deep_text(64), "too_deep", "limit of 64")
    _refused(at_limit, "too_deep", "limit of 10", max_depth=10)


def test_deep_nesting_with_a_syntax_error_never_raises_recursion_error() -> None:
    # orjson stops at 1024 levels and the standard library (used to explain errors)
    # would raise RecursionError: both paths must give a dead letter
    for depth in (1_500, 10_000, 100_000):
        _refused(b'{"a": ' + b"[" * depth + b"1,]", "too_deep")
    for depth in range(900, 1_030, 10):  # around both parsers' own limits
        with pytest.raises(DecodeError):
            decode_json_message(b'{"a": ' + b"[" * depth + b"1,]")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (b'{"trace_id": "a", "trace_id": "b", "timestamp": "2026-01-01T00:00:00Z"}', "trace_id"),
        (b'{"metadata": {"x": 1, "y": {"z": 1, "z": 2}}}', "z"),
        (b'{"a": "\\":", "a": 2}', "a"),  # a quote-colon inside a string is not a key
        (b'{"a\\\\" : 1, "a\\\\": 2}', "a\\"),
        # no backslash: counted by quotes (two per key and per string value)
        (b'{"a": 1, "a" : 2}', "a"),
        (b'{"a": "x", "b": {"c": [1, "d", {"e": "f"}]}, "a": ["y"]}', "a"),
        (b'{"m": {"k": "v", "k": "v"}}', "k"),
    ],
)
def test_duplicate_keys_are_reported(text: bytes, key: str) -> None:
    _refused(text, "duplicate_key", repr(key))


def test_escaped_quotes_and_colons_inside_strings_are_not_duplicates() -> None:
    trace = _trace(answer='He said: "x": y \\": z', metadata={"k": 'a\\":b', '"q":': 1})
    rec = parse_message(decode_json_message(json.dumps(trace).encode()))
    assert isinstance(rec, TraceRecord) and rec.answer == trace["answer"]
    pretty = json.dumps(trace, indent=2, separators=(" , ", " : ")).encode()
    assert isinstance(parse_message(decode_json_message(pretty)), TraceRecord)


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_timestamps_that_overflow_utc_are_refused(stamp: str) -> None:
    error = _refused(json.dumps(_trace(timestamp=stamp)).encode(), "invalid_value", stamp)
    assert "UTC" in error.detail
    feedback = make_feedback(1) | {"timestamp": stamp}
    _refused(json.dumps(feedback).encode(), "invalid_value", "timestamp", "UTC")


def test_extreme_but_convertible_timestamps_are_kept() -> None:
    for stamp in ("0001-01-01T00:00:00Z", "9999-12-31T23:30:00+01:00"):
        rec = parse_message(decode_json_message(json.dumps(_trace(timestamp=stamp)).encode()))
        assert isinstance(rec, TraceRecord)


def test_non_finite_numbers_never_decode() -> None:
    for literal in (b"NaN", b"Infinity", b"-Infinity", b"1e400"):
        body = b'{"trace_id": "t", "timestamp": "2026-01-01T00:00:00Z", "question": "q", '
        _refused(body + b'"latency_ms": ' + literal + b"}", "invalid_json")


def test_feedback_stays_strict() -> None:
    ev = parse_message(decode_json_message(json.dumps(make_feedback(1)).encode()))
    assert isinstance(ev, FeedbackEvent)
    _refused(json.dumps(make_feedback(1) | {"rating": "bad"}).encode(), "wrong_type", "rating")


def test_otlp_json_nesting_beyond_the_limit_is_too_deep() -> None:
    from collector.ingest.decode.otlp import decode_otlp_message

    value = b'{"resourceSpans": [' + b"[" * 5_000 + b"]" * 5_000 + b"]}"
    with pytest.raises(DecodeError) as info:
        decode_otlp_message(value, "otlp_json")
    assert info.value.reason == "too_deep"


def _kvlist_request(depth: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = bytes(range(1, 17)), bytes(range(1, 9)), "rag"
    span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
    span.attributes.add(key="input.value").value.string_value = "question"
    value = span.attributes.add(key="deep").value
    for _ in range(depth):
        entry = value.kvlist_value.values.add()
        entry.key = "k"
        value = entry.value
    value.double_value = float("nan")
    return request.SerializeToString()


def test_otlp_protobuf_attributes_nested_past_the_parser_limit_are_too_deep() -> None:
    from collector.ingest.decode.otlp import decode_otlp_message

    with pytest.raises(DecodeError) as info:
        decode_otlp_message(_kvlist_request(150))
    assert info.value.reason == "too_deep"
    # under the parser's limit, a deep attribute (holding NaN) is decoded and not stored
    (fragment,) = decode_otlp_message(_kvlist_request(20))
    assert json.dumps(fragment.spans, allow_nan=False)
