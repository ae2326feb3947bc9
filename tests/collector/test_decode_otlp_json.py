"""The direct OTLP/JSON reader decodes and refuses exactly as `ParseDict` + protobuf did.

Reference: the old path (`tests/collector/otlp_json_reference.py`). Compared: the fragments
(every span summary, warnings, evaluation results) or the refusal's reason. Messages: the
real OpenTelemetry SDK's (as the Collector writes them, hex ids, and as protobuf's
`MessageToJson`, base64 ids), hand-varied shapes the reader must read itself (snake_case
keys, integers as numbers or strings, NaN doubles, nested kvlists, bytes, missing fields,
enums as names or numbers), odd shapes it may leave to `ParseDict`, and a seeded generator
of random edits of real messages. The instrumentation harness checks every OTLP/JSON message
of the real-library tests the same way (`tests/instrumentation/harness.py`).
"""

from __future__ import annotations

import base64
import copy
import random
import re
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from benchmarks.otlp_decode import record_traces
from collector.ingest.decode.otlp import parse_otlp_request, request_spans
from collector.ingest.decode.otlp_json import json_spans
from tests.collector.evaluation_messages import evaluated_spans
from tests.collector.otlp_json_reference import UNUSUAL, check_same, direct, reference
from tests.collector.otlp_traces import (
    genai_llm_span,
    json_message,
    protobuf_json_message,
    rag_spans,
)

Edit = Callable[[dict[str, Any]], None]


def _real() -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(json_message(rag_spans() + genai_llm_span()))
    return obj


def _spans(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in obj["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _values(obj: Any) -> list[dict[str, Any]]:
    """Every AnyValue object in the message."""
    found: list[dict[str, Any]] = []
    if isinstance(obj, dict):
        if "key" in obj and isinstance(obj.get("value"), dict):
            found.append(obj["value"])
        for value in obj.values():
            found.extend(_values(value))
    elif isinstance(obj, list):
        for item in obj:
            found.extend(_values(item))
    return found


def _snake(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {re.sub("([A-Z])", r"_\1", k).lower(): _snake(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_snake(v) for v in obj]
    return obj


@pytest.mark.parametrize(
    "spans",
    [rag_spans, genai_llm_span, evaluated_spans, lambda: record_traces(1)[0]],
    ids=["rag", "genai", "evaluations", "benchmark"],
)
def test_real_sdk_messages_read_directly_and_alike(spans: Callable[[], Any]) -> None:
    for message in (json_message(spans()), protobuf_json_message(spans())):
        check_same(message, direct_read=True)


def test_a_batch_of_many_traces() -> None:
    traces = record_traces(20)
    message = json_message([s for t in traces for s in t])
    check_same(message, direct_read=True)
    assert reference(message).count("OtlpFragment(") == 20


def test_snake_case_keys_with_base64_ids() -> None:
    obj = orjson.loads(protobuf_json_message(rag_spans()))
    check_same(orjson.dumps(_snake(obj)), direct_read=True)


def _times_as_numbers(obj: dict[str, Any]) -> None:
    for span in _spans(obj):
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            span[key] = int(span[key])


def _ints_as_numbers(obj: dict[str, Any]) -> None:
    for value in _values(obj):
        if "intValue" in value:
            value["intValue"] = int(value["intValue"])


def _special_doubles(obj: dict[str, Any]) -> None:
    span = _spans(obj)[1]
    for i, text in enumerate(("NaN", "Infinity", "-Infinity")):
        span["attributes"][4 * i + 3]["value"] = {"doubleValue": text}  # document scores
    span["attributes"].append({"key": "x.int_double", "value": {"doubleValue": 3}})


def _nested(obj: dict[str, Any]) -> None:
    inner = {"kvlistValue": {"values": [{"key": "b", "value": {"bytesValue": "AQID/w=="}}]}}
    _spans(obj)[0]["attributes"] += [
        {"key": "x.kv", "value": {"kvlistValue": {"values": [{"key": "a", "value": inner}]}}},
        {"key": "x.arr", "value": {"arrayValue": {"values": [{"intValue": "1"}, inner, {}]}}},
        {"key": "x.empty", "value": {}},
        {"key": "x.no_value"},
        {"key": "x.bytes_urlsafe", "value": {"bytesValue": "-_8"}},
        {"key": "x.strindex", "value": {"stringValueStrindex": 3}},
        {"value": {"boolValue": True}},
        {"key": "x.empties", "value": {"arrayValue": {}}},
        {"key": "x.kvempty", "value": {"kvlistValue": {"values": []}}},
    ]


def _missing_fields(obj: dict[str, Any]) -> None:
    del obj["resourceSpans"][0]["resource"]
    del obj["resourceSpans"][0]["scopeSpans"][0]["scope"]
    for span in _spans(obj):
        for key in ("name", "startTimeUnixNano", "kind", "status", "attributes"):
            span.pop(key, None)


def _enums_and_extras(obj: dict[str, Any]) -> None:
    for n, span in enumerate(_spans(obj)):
        span["kind"] = [1, "SPAN_KIND_CLIENT", 7, "SPAN_KIND_UNKNOWN_NAME"][n % 4]
        span["status"] = {"code": ["STATUS_CODE_ERROR", 2, 0][n % 3], "message": "m"}
        span["flags"] = 768
        span["droppedAttributesCount"] = "2"
        span["links"] = []
        span["traceState"] = "a=b"
        span["x-unknown"] = {"anything": [1, None]}
        span["events"] = [
            {"name": "e", "timeUnixNano": "5", "attributes": [], "droppedAttributesCount": 1}
        ]
    obj["resourceSpans"][0]["schemaUrl"] = "https://opentelemetry.io/schemas/1.26.0"
    obj["resourceSpans"][0]["resource"]["entityRefs"] = []
    obj["resourceSpans"][0]["scopeSpans"][0]["scope"]["version"] = "1.0"


def _nulls(obj: dict[str, Any]) -> None:
    span = _spans(obj)[0]
    span["name"] = None
    span["parentSpanId"] = None
    span["events"] = None
    span["attributes"][0]["value"] = {"stringValue": None, "intValue": "4"}
    obj["resourceSpans"][0]["scopeSpans"][0]["scope"] = None


def _upper_hex(obj: dict[str, Any]) -> None:
    for span in _spans(obj):
        span["traceId"] = span["traceId"].upper()


def _zero_trace_id(obj: dict[str, Any]) -> None:
    _spans(obj)[1]["traceId"] = "0" * 32


def _short_span_id(obj: dict[str, Any]) -> None:
    _spans(obj)[1]["spanId"] = "abcd"


def _no_spans(obj: dict[str, Any]) -> None:
    for rs in obj["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = []


def _snake_containers(obj: dict[str, Any]) -> None:
    """Hex ids were only rewritten under `resourceSpans`: elsewhere they are base64."""
    obj["resource_spans"] = obj.pop("resourceSpans")


def _nul(obj: dict[str, Any]) -> None:
    _spans(obj)[0]["name"] = "a\u0000b"


READ_DIRECTLY: list[Edit] = [
    _times_as_numbers,
    _ints_as_numbers,
    _special_doubles,
    _nested,
    _missing_fields,
    _enums_and_extras,
    _nulls,
    _upper_hex,
    _zero_trace_id,
    _short_span_id,
    _no_spans,
    _snake_containers,
    _nul,
]


@pytest.mark.parametrize("edit", READ_DIRECTLY, ids=lambda e: e.__name__.strip("_"))
def test_shapes_the_reader_reads_itself(edit: Edit) -> None:
    obj = _real()
    edit(obj)
    check_same(orjson.dumps(obj), direct_read=True)


def _set_value(value: Any) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        _spans(obj)[0]["attributes"][0]["value"] = value

    edit.__name__ = f"value {value!r}"
    return edit


def _set_span(key: str, value: Any) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        _spans(obj)[0][key] = value

    edit.__name__ = f"{key} {value!r}"
    return edit


def _both_spellings(obj: dict[str, Any]) -> None:
    span = _spans(obj)[0]
    span["start_time_unix_nano"] = span["startTimeUnixNano"]


def _deep(levels: int) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        value: dict[str, Any] = {"stringValue": "leaf"}
        for _ in range(levels):
            value = {"arrayValue": {"values": [value]}}
        _spans(obj)[0]["attributes"][0]["value"] = value

    edit.__name__ = f"{levels} nested arrays"
    return edit


@pytest.mark.parametrize("levels", [15, 30, 60])
def test_deep_values_with_the_largest_depth_setting(levels: int) -> None:
    """With `ingest.max_depth` at its maximum (200), 60 nested arrays pass the JSON depth
    check but exceed ParseDict's 100 nested messages: refused as before."""
    obj = _real()
    _deep(levels)(obj)
    check_same(orjson.dumps(obj), direct_read=levels <= 15, max_depth=200)


ODD: list[Edit] = [
    _set_value({"stringValue": "a", "intValue": "1"}),
    _set_value({"stringValue": "a", "string_value": "b"}),
    _set_value({"intValue": 5.0}),
    _set_value({"intValue": 5.5}),
    _set_value({"intValue": True}),
    _set_value({"intValue": " 5"}),
    _set_value({"intValue": "1e3"}),
    _set_value({"intValue": str(2**63)}),
    _set_value({"doubleValue": "nan"}),
    _set_value({"doubleValue": "1.5"}),
    _set_value({"doubleValue": True}),
    _set_value({"boolValue": "true"}),
    _set_value({"stringValue": 7}),
    _set_value({"bytesValue": "not base64!"}),
    _set_value({"bytesValue": "A"}),
    _set_value({"arrayValue": {"values": [None]}}),
    _set_value({"arrayValue": []}),
    _set_value({"kvlistValue": {"values": [{"key": 1}]}}),
    _set_value("stringValue"),
    _set_value([1]),
    _set_value({"[ext.x]": 1}),
    _set_span("traceId", "zz" * 16),
    _set_span("traceId", "é" * 32),
    _set_span("traceId", 12),
    _set_span("spanId", "AAAAAAAAAAE="),
    _set_span("name", 5),
    _set_span("kind", "1"),
    _set_span("kind", 2**40),
    _set_span("flags", -1),
    _set_span("startTimeUnixNano", "-5"),
    _set_span("startTimeUnixNano", 1.0e18),
    _set_span("links", [{"traceId": "AAAAAAAAAAAAAAAAAAAAAQ==", "spanId": "AAAAAAAAAAE="}]),
    _set_span("status", "STATUS_CODE_OK"),
    _set_span("links", [{"spanId": 5}]),
    _set_span("links", [7]),
    _set_span("events", [None]),
    _set_span("events", {}),
    _set_span("attributes", "a"),
    _both_spellings,
    _deep(30),
]


@pytest.mark.parametrize("edit", ODD, ids=lambda e: e.__name__)
def test_odd_shapes_decode_or_are_refused_as_before(edit: Edit) -> None:
    obj = _real()
    edit(obj)
    check_same(orjson.dumps(obj), direct_read=False)


_POOL: list[Any] = [
    None, "", "0", "12", "-3", " 7", "1e3", "NaN", "nan", "Infinity", "abc", "AQID", "é",
    0, 5, -1, 2**32, 2**63, 2**64 - 1, 5.0, 2.5, True, False, [], [None], {}, [{}],
    {"stringValue": "x"}, {"intValue": "7"}, {"doubleValue": "NaN"}, {"boolValue": 1},
    {"kvlistValue": {"values": [{"key": "k", "value": {"intValue": 3}}]}},
    {"arrayValue": {"values": [{"doubleValue": 1}, {}]}}, {"bytesValue": "AQID"},
    [{"key": "k", "value": {"stringValue": "v"}}], "0" * 32, "ab" * 16, "AB" * 8,
    "AAAAAAAAAAAAAAAAAAAAAQ==", "AAAAAAAAAAE", "SPAN_KIND_SERVER", "STATUS_CODE_OK",
]  # fmt: skip


def _positions(obj: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of the message."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.append((obj, key))
            _positions(value, out)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            out.append((obj, i))
            _positions(value, out)
    return out


def _mutate(rng: random.Random, obj: dict[str, Any]) -> None:
    positions = _positions(obj, [])
    if not positions:
        return
    container, key = rng.choice(positions)
    action = rng.randrange(5)
    if action <= 1:
        container[key] = copy.deepcopy(rng.choice(_POOL))
    elif action == 2 and isinstance(container, dict):
        renamed = re.sub("([A-Z])", r"_\1", key).lower()
        container[renamed if renamed != key else key + "X"] = container.pop(key)
    elif action == 3 and isinstance(container, dict):
        del container[key]
    elif isinstance(container, dict):
        container[rng.choice(["traceId", "spanId", "name", "value", "key", "values"])] = (
            copy.deepcopy(rng.choice(_POOL))
        )


def test_random_edits_of_real_messages() -> None:
    rng = random.Random(28)
    sources = [
        orjson.loads(json_message(rag_spans())),
        orjson.loads(protobuf_json_message(rag_spans())),
        orjson.loads(json_message(evaluated_spans())),
    ]
    read = 0
    runs = 400
    for _ in range(runs):
        obj = copy.deepcopy(rng.choice(sources))
        for _ in range(rng.randint(1, 3)):
            _mutate(rng, obj)
        message = orjson.dumps(obj)
        check_same(message, direct_read=False)
        read += direct(message) != UNUSUAL
    # most random edits still leave a plain shape: the reader, not ParseDict, decided them
    assert read > runs // 2


def test_attribute_values_as_the_protobuf_walk_gives_them() -> None:
    """Not all attributes reach a summary: the span views themselves are compared too."""
    obj = _real()
    _nested(obj)
    _special_doubles(obj)
    raw = bytes(range(256))
    _spans(obj)[0]["attributes"].append(
        {"key": "b", "value": {"bytesValue": base64.b64encode(raw).decode()}}
    )
    message = orjson.dumps(obj)
    views = json_spans(orjson.loads(message))
    protobuf = list(request_spans(parse_otlp_request(message, "otlp_json")))
    assert repr(views) == repr(protobuf)
    assert views[0].attributes["b"] == raw.hex()
    assert views[0].attributes["x.kv"] == {"a": {"b": "010203ff"}}
