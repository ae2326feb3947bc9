"""OTLP trace messages (as the OpenTelemetry Collector's Kafka exporter writes them) -> fragments.

A message is a serialized `ExportTraceServiceRequest`, either protobuf (`otlp_proto`) or
OTLP/JSON (`otlp_json`: camelCase keys, ids as hex strings, 64-bit integers as strings).
The encoding is sniffed (a protobuf request never starts with `{`), so a topic carrying
either works whatever `kafka.otlp_encoding` says. JSON ids are accepted as hex (the OTLP
spec) or base64 (protobuf's canonical JSON, e.g. `MessageToJson`): the lengths differ.
OTLP/JSON is read straight from the parsed dict (`otlp_json`); a shape that reader leaves
alone goes through protobuf's `ParseDict` as before. Both encodings yield `SpanView`s for
one fragment builder (`fragments_from_spans`).

Each message yields one `OtlpFragment` per trace id it contains: the span summaries of that
trace (see `otlp_mapping`), later merged with the other fragments of the same trace. A
span's `gen_ai.evaluation.result` events and `gen_ai.evaluation.*` attributes go into its
summary as `evals` (`evaluations`), the source of the trace's external scores.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from collector.ingest.decode.conventions.base import RecordingAttrs
from collector.ingest.decode.errors import EMPTY, INVALID_OTLP, OVERSIZED, TOO_DEEP, DecodeError
from collector.ingest.decode.evaluations import span_evaluations
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.optional import FieldIssues
from collector.ingest.decode.otlp_json import Unusual, json_spans
from collector.ingest.decode.otlp_mapping import summarize_span
from collector.ingest.decode.otlp_view import SpanView
from collector.ingest.decode.trace_json import DEFAULT_MAX_BYTES, decode_json_message

_ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


@dataclass(frozen=True, slots=True)
class OtlpFragment:
    """The spans of one trace found in one message: span id (16 hex) -> span summary."""

    trace_id: str
    spans: Mapping[str, Mapping[str, Any]]
    warnings: tuple[str, ...] = ()
    """Fields of these spans whose values did not fit (kept raw, see `otlp_mapping`)."""

    @property
    def span_ids(self) -> frozenset[str]:
        return frozenset(self.spans)

    @property
    def has_root(self) -> bool:
        return any(not s["parent"] for s in self.spans.values())


def decode_otlp_message(
    value: bytes | None,
    encoding: str = "otlp_proto",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> list[OtlpFragment]:
    """Decode one OTLP message into per-trace fragments, or raise `DecodeError`."""
    return fragments_from_spans(parse_otlp_spans(value, encoding, max_bytes, max_depth), max_depth)


def parse_otlp_spans(
    value: bytes | None,
    encoding: str = "otlp_proto",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Iterable[SpanView]:
    """The spans of one OTLP message (protobuf or JSON, sniffed), or `DecodeError`.

    OTLP/JSON is read directly from the parsed dict (`otlp_json`); only a shape that reader
    leaves alone goes through protobuf's `ParseDict`, as every JSON message did before."""
    payload, is_json = otlp_payload(value, encoding, max_bytes)
    if not is_json:
        return request_spans(_parse_proto(payload))
    obj = decode_json_message(payload, max_bytes, max_depth)
    try:
        return json_spans(obj)
    except Unusual:
        return request_spans(_request_from_json(obj))


def parse_otlp_request(
    value: bytes | None,
    encoding: str = "otlp_proto",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> ExportTraceServiceRequest:
    """One OTLP message as a parsed request (protobuf or JSON, sniffed), or `DecodeError`."""
    payload, is_json = otlp_payload(value, encoding, max_bytes)
    return _parse_json(payload, max_bytes, max_depth) if is_json else _parse_proto(payload)


def otlp_payload(value: bytes | None, encoding: str, max_bytes: int) -> tuple[bytes, bool]:
    """An OTLP message's bytes and whether they are JSON (else protobuf); `DecodeError`
    for an empty or oversized one. A protobuf request starts with field 1 (0x0a); '{' can
    only be JSON."""
    if not value:
        raise DecodeError(EMPTY, "message value is empty")
    if len(value) > max_bytes:
        raise DecodeError(OVERSIZED, f"message is {len(value)} bytes, limit is {max_bytes}")
    first = value.lstrip()[:1]
    return value, first == b"{" or (encoding == "otlp_json" and first != b"\x0a")


def _parse_proto(value: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(value)
    except ProtobufDecodeError as exc:
        if "MaxDepth" in str(exc):  # upb refuses messages nested past 100 levels
            raise DecodeError(
                TOO_DEEP, "protobuf nesting exceeds the parser's limit of 100 levels"
            ) from None
        raise DecodeError(
            INVALID_OTLP, f"not a protobuf ExportTraceServiceRequest: {exc}"
        ) from None
    return request


def _parse_json(value: bytes, max_bytes: int, max_depth: int) -> ExportTraceServiceRequest:
    return _request_from_json(decode_json_message(value, max_bytes, max_depth))


def _request_from_json(obj: Any) -> ExportTraceServiceRequest:
    """An OTLP/JSON dict as a protobuf request through `ParseDict` (ids rewritten in place)."""
    try:
        for i, rs in enumerate(_list(obj, "resourceSpans")):
            for j, ss in enumerate(_list(rs, "scopeSpans")):
                for k, span in enumerate(_list(ss, "spans")):
                    _ids_to_base64(span, f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]")
        request = ExportTraceServiceRequest()
        json_format.ParseDict(obj, request, ignore_unknown_fields=True)
        return request
    except (json_format.ParseError, TypeError, AttributeError) as exc:
        raise DecodeError(
            INVALID_OTLP, f"not an OTLP/JSON ExportTraceServiceRequest: {exc}"
        ) from None


def _list(obj: Any, key: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError(INVALID_OTLP, f"{key}: expected an array")
    return value


def _ids_to_base64(span: Any, path: str) -> None:
    """Rewrite hex ids (OTLP/JSON) as base64, which protobuf's JSON parser expects."""
    if not isinstance(span, dict):
        return
    for key, size in _ID_BYTES.items():
        text = span.get(key)
        if isinstance(text, str) and len(text) == 2 * size:
            try:
                raw = binascii.unhexlify(text)
            except binascii.Error:
                raise DecodeError(INVALID_OTLP, f"{path}.{key}: {text!r} is not hex") from None
            span[key] = base64.b64encode(raw).decode("ascii")


def fragments_from_request(
    request: ExportTraceServiceRequest,
    max_depth: int = DEFAULT_MAX_DEPTH,
    used: dict[tuple[str, str], set[str]] | None = None,
) -> list[OtlpFragment]:
    """Group the request's spans by trace id and summarize each span. With `used`, each
    (trace id, span id) gets the attribute keys the mapping read (the inspect command)."""
    return fragments_from_spans(request_spans(request), max_depth, used)


def request_spans(request: ExportTraceServiceRequest) -> Iterator[SpanView]:
    """The spans of a protobuf request, in request order."""
    for i, rs in enumerate(request.resource_spans):
        resource = attributes(rs.resource.attributes)
        for j, ss in enumerate(rs.scope_spans):
            for k, span in enumerate(ss.spans):
                yield SpanView(
                    path=f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]",
                    trace_id=span.trace_id,
                    span_id=span.span_id,
                    parent_span_id=span.parent_span_id,
                    name=span.name,
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes=attributes(span.attributes),
                    events=[
                        (e.name, e.time_unix_nano, attributes(e.attributes)) for e in span.events
                    ],
                    resource=resource,
                    scope=ss.scope.name,
                )


def fragments_from_spans(
    views: Iterable[SpanView],
    max_depth: int = DEFAULT_MAX_DEPTH,
    used: dict[tuple[str, str], set[str]] | None = None,
) -> list[OtlpFragment]:
    """Group spans (of either encoding) by trace id and summarize each span. With `used`,
    each (trace id, span id) gets the attribute keys the mapping read."""
    by_trace: dict[str, dict[str, dict[str, Any]]] = {}
    warned: dict[str, list[str]] = {}
    total = 0
    for view in views:
        path = view.path
        trace_id = _hex_id(view.trace_id, 16, f"{path}.traceId")
        span_id = _hex_id(view.span_id, 8, f"{path}.spanId")
        parent = view.parent_span_id
        parent_hex = _hex_id(parent, 8, f"{path}.parentSpanId") if parent else ""
        issues = FieldIssues()
        span_attrs = view.attributes
        read = None if used is None else used.setdefault((trace_id, span_id), set())
        events = view.events
        summary = summarize_span(
            span_attrs,
            parent=parent_hex,
            name=view.name,
            start_ns=view.start_ns,
            end_ns=max(view.end_ns, view.start_ns),
            resource=view.resource,
            scope=view.scope,
            events=[(name, attrs) for name, _, attrs in events],
            issues=issues,
            max_depth=max_depth,
            used=read,
        )
        seen = span_attrs if read is None else RecordingAttrs(span_attrs, read)
        evals = span_evaluations(seen, events, summary["end"])
        if evals:
            summary["evals"] = evals  # gen_ai.evaluation.result events/attributes
        warned.setdefault(trace_id, []).extend(issues.fields)
        if b"\\u0000" in orjson.dumps(summary):
            raise DecodeError(
                INVALID_OTLP,
                f"{path}: a string contains U+0000 (NUL), which cannot be stored",
            )
        spans = by_trace.setdefault(trace_id, {})
        spans[span_id] = _later(spans.get(span_id), summary)
        total += 1
    if total == 0:
        raise DecodeError(INVALID_OTLP, "the request holds no spans")
    return [
        OtlpFragment(trace_id=t, spans=s, warnings=tuple(warned.get(t, ())))
        for t, s in sorted(by_trace.items())
    ]


def _later(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Of two summaries for one span id, a deterministic choice (independent of order)."""
    if old is None:
        return new
    return max(old, new, key=lambda s: json.dumps(s, sort_keys=True))


def _hex_id(raw: bytes, size: int, path: str) -> str:
    if len(raw) != size:
        raise DecodeError(INVALID_OTLP, f"{path}: {len(raw)} bytes, expected {size}")
    if not any(raw):
        raise DecodeError(INVALID_OTLP, f"{path}: all zero (invalid id)")
    return raw.hex()


def attributes(items: Any) -> dict[str, Any]:
    """OTLP `KeyValue` list -> plain dict (arrays become lists, kvlists dicts)."""
    return {kv.key: _value(kv.value) for kv in items}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, which)
