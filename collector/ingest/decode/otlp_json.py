"""An OTLP/JSON trace request, read directly from its parsed dict into `SpanView`s.

Converting the dict to a protobuf message with `json_format.ParseDict` (pure Python) cost
~70% of decoding an OTLP/JSON message; this reads the dict itself. It must give exactly what
`ParseDict` followed by the protobuf walk gives, and refuse what that refuses, so it only
accepts the shapes whose meaning is plain and raises `Unusual` on anything else: a value of
an unexpected type, a field given both in lowerCamelCase and as the proto field name, an
extension key (`[...]`), a non-empty `links` list, a `null` list item, nesting deeper than
`MAX_VALUE_DEPTH`. The caller then falls back to `ParseDict`, which decides the odd case as it
always did (some of those decode, most are refused), so results and refusals are unchanged.

What is read as `ParseDict` reads it (`ignore_unknown_fields=True`): keys in lowerCamelCase
or as proto field names, unknown keys ignored, `null` as absent; 64-bit integers as numbers
or decimal strings; doubles as numbers or the strings "NaN", "Infinity", "-Infinity"; bytes
(`bytesValue`, ids) as base64 (standard or URL-safe alphabet, padding optional); enums as
names or numbers. Ids under the lowerCamelCase keys `traceId`, `spanId`, `parentSpanId`
reached through `resourceSpans`/`scopeSpans`/`spans` are hex when they have hex length (the
OTLP spec; `otlp._ids_to_base64` did that rewrite before `ParseDict`).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from collector.ingest.decode.otlp_view import SpanView

MAX_VALUE_DEPTH = 20
"""Nested arrays/kvlists beyond this are left to `ParseDict` (its own limit is 100
messages; this stays well inside it)."""

_DIGITS = re.compile(r"-?[0-9]+")
_SPECIAL_DOUBLES = frozenset(("NaN", "Infinity", "-Infinity"))
_INT32 = (-(2**31), 2**31 - 1)
_UINT32 = (0, 2**32 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_UINT64 = (0, 2**64 - 1)
_RANGES = {
    FieldDescriptor.TYPE_INT32: _INT32,
    FieldDescriptor.TYPE_SINT32: _INT32,
    FieldDescriptor.TYPE_SFIXED32: _INT32,
    FieldDescriptor.TYPE_UINT32: _UINT32,
    FieldDescriptor.TYPE_FIXED32: _UINT32,
    FieldDescriptor.TYPE_INT64: _INT64,
    FieldDescriptor.TYPE_SINT64: _INT64,
    FieldDescriptor.TYPE_SFIXED64: _INT64,
    FieldDescriptor.TYPE_UINT64: _UINT64,
    FieldDescriptor.TYPE_FIXED64: _UINT64,
}


class Unusual(Exception):
    """The dict has a shape this reader leaves to `ParseDict` (not necessarily an error)."""


def _names(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    """Every key `ParseDict` takes for a field of this message: json name and proto name."""
    out = {f.json_name: f for f in descriptor.fields}
    out.update((f.name, f) for f in descriptor.fields)
    return out


_REQUEST = _names(ExportTraceServiceRequest.DESCRIPTOR)
_RESOURCE_SPANS = _names(ResourceSpans.DESCRIPTOR)
_RESOURCE = _names(Resource.DESCRIPTOR)
_SCOPE_SPANS = _names(ScopeSpans.DESCRIPTOR)
_SCOPE = _names(InstrumentationScope.DESCRIPTOR)
_SPAN = _names(Span.DESCRIPTOR)
_EVENT = _names(Span.Event.DESCRIPTOR)
_STATUS = _names(Status.DESCRIPTOR)
_KEY_VALUE = _names(KeyValue.DESCRIPTOR)
_ANY_VALUE = _names(AnyValue.DESCRIPTOR)


def _fields(obj: Any, names: dict[str, FieldDescriptor]) -> dict[str, Any]:
    """A JSON object's known fields by proto field name (`null` ones dropped: `ParseDict`
    clears them); unknown keys ignored."""
    if type(obj) is not dict:
        raise Unusual
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for key, value in obj.items():
        field = names.get(key)
        if field is None:
            if key[:1] == "[":  # extension syntax: ParseDict refuses or looks it up
                raise Unusual
            continue
        if field.name in seen:
            raise Unusual  # the same field twice (json name and proto name)
        seen.add(field.name)
        if value is not None:
            out[field.name] = value
    return out


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise Unusual
    return value


def _int(value: Any, bounds: tuple[int, int]) -> int:
    if type(value) is int:
        number = value
    elif type(value) is str and _DIGITS.fullmatch(value):
        number = int(value)
    else:
        raise Unusual
    if not bounds[0] <= number <= bounds[1]:
        raise Unusual
    return number


def _string(value: Any) -> str:
    if type(value) is not str:
        raise Unusual
    return value


def _bytes(value: Any) -> bytes:
    """Base64 exactly as `ParseDict` decodes a bytes field."""
    if type(value) is not str:
        raise Unusual
    encoded = value.encode("utf-8")
    try:
        return base64.urlsafe_b64decode(encoded + b"=" * (4 - len(encoded) % 4))
    except ValueError:
        raise Unusual from None


def _enum(value: Any, field: FieldDescriptor) -> None:
    """Check an enum value `ParseDict` would take as it is (its number is not needed)."""
    if type(value) is str:
        if value in field.enum_type.values_by_name:
            return
        try:
            int(value)
        except ValueError:
            return  # an unknown name: ParseDict ignores it (ignore_unknown_fields)
        raise Unusual  # a number as a string
    _int(value, _INT32)


def _other(fields: dict[str, Any], names: dict[str, FieldDescriptor], read: set[str]) -> None:
    """Check the fields the spans do not use (dropped counts, flags, schema URLs, trace
    state, kind): what `ParseDict` would accept as they are, else `Unusual`."""
    for name, value in fields.items():
        if name in read:
            continue
        field = names[name]
        if field.is_repeated:
            if _list(value):
                raise Unusual  # links, entity refs: not read, left to ParseDict
        elif field.type == FieldDescriptor.TYPE_STRING:
            _string(value)
        elif field.type == FieldDescriptor.TYPE_ENUM:
            _enum(value, field)
        elif field.type in _RANGES:
            _int(value, _RANGES[field.type])
        else:
            raise Unusual


def attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    """An OTLP/JSON `KeyValue` list -> plain dict, as `otlp.attributes` gives it."""
    out: dict[str, Any] = {}
    for kv in _list(items):
        if type(kv) is dict and len(kv) == 2:
            key = kv.get("key")
            value = kv.get("value")
            if type(key) is str and type(value) is dict and len(value) == 1:
                # the common case, a string or an integer as the Collector writes them
                text = value.get("stringValue")
                if type(text) is str:
                    out[key] = text
                    continue
                text = value.get("intValue")
                if type(text) is str and _DIGITS.fullmatch(text):
                    number = int(text)
                    if _INT64[0] <= number <= _INT64[1]:
                        out[key] = number
                        continue
        if type(kv) is dict and len(kv) == 2 and "key" in kv and "value" in kv:
            key, value = kv["key"], kv["value"]
            if type(key) is not str:
                if key is not None:
                    raise Unusual
                key = ""
        else:
            fields = _fields(kv, _KEY_VALUE)
            _other(fields, _KEY_VALUE, {"key", "value"})
            key, value = _string(fields.get("key", "")), fields.get("value")
        out[key] = None if value is None else _value(value, depth)
    return out


def _value(value: Any, depth: int) -> Any:
    """An OTLP/JSON `AnyValue` -> its plain value (None when no value is set)."""
    if type(value) is dict and len(value) == 1:
        key, inner = next(iter(value.items()))
        field = _ANY_VALUE.get(key)
        if field is None or inner is None:
            return _value_slow(value, depth)
        return _one(field.name, inner, depth)
    return _value_slow(value, depth)


def _value_slow(value: Any, depth: int) -> Any:
    fields = _fields(value, _ANY_VALUE)
    if not fields:
        return None
    if len(fields) > 1:
        raise Unusual  # two members of the oneof
    ((name, inner),) = fields.items()
    return _one(name, inner, depth)


def _one(name: str, inner: Any, depth: int) -> Any:
    kind = type(inner)
    if name == "string_value":
        if kind is str:
            return inner
    elif name == "int_value":
        return _int(inner, _INT64)
    elif name == "double_value":
        if kind is float and math.isfinite(inner):
            return inner
        if kind is int:
            return float(inner)
        if kind is str and inner in _SPECIAL_DOUBLES:
            return float(inner)
    elif name == "bool_value":
        if kind is bool:
            return inner
    elif name == "bytes_value":
        return _bytes(inner).hex()
    elif name == "string_value_strindex":
        return _int(inner, _INT32)
    elif depth < MAX_VALUE_DEPTH:
        if name == "array_value":
            items = _list(_fields(inner, _ARRAY_VALUE).get("values"))
            if any(item is None for item in items):
                raise Unusual  # null array item: ParseDict refuses
            return [_value(item, depth + 1) for item in items]
        if name == "kvlist_value":
            kvs = _list(_fields(inner, _KEY_VALUE_LIST).get("values"))
            if any(kv is None for kv in kvs):
                raise Unusual
            return attributes(kvs, depth + 1)
    raise Unusual


_ARRAY_VALUE = _names(AnyValue.DESCRIPTOR.fields_by_name["array_value"].message_type)
_KEY_VALUE_LIST = _names(AnyValue.DESCRIPTOR.fields_by_name["kvlist_value"].message_type)


def _items(value: Any) -> list[Any]:
    """A repeated message field's items; `null` items are refused by `ParseDict`."""
    items = _list(value)
    if any(item is None for item in items):
        raise Unusual
    return items


def json_spans(obj: Any) -> list[SpanView]:
    """Every span of an OTLP/JSON `ExportTraceServiceRequest` dict, in request order, or
    `Unusual` (nothing is modified, so the caller can hand the same dict to `ParseDict`)."""
    request = _fields(obj, _REQUEST)
    hex_ids = "resourceSpans" in obj  # the keys the hex rewrite followed
    views: list[SpanView] = []
    for i, rs_obj in enumerate(_items(request.get("resource_spans"))):
        rs = _fields(rs_obj, _RESOURCE_SPANS)
        _other(rs, _RESOURCE_SPANS, {"resource", "scope_spans"})
        res = _fields(rs.get("resource", {}), _RESOURCE)
        _other(res, _RESOURCE, {"attributes"})
        resource = attributes(_items(res.get("attributes")))
        rs_hex = hex_ids and "scopeSpans" in rs_obj
        for j, ss_obj in enumerate(_items(rs.get("scope_spans"))):
            ss = _fields(ss_obj, _SCOPE_SPANS)
            _other(ss, _SCOPE_SPANS, {"scope", "spans"})
            scope = _fields(ss.get("scope", {}), _SCOPE)
            _other(scope, _SCOPE, {"attributes"})
            attributes(_items(scope.get("attributes")))  # not used, but must be valid
            scope_name = _string(scope.get("name", ""))
            ss_hex = rs_hex and "spans" in ss_obj
            for k, span_obj in enumerate(_items(ss.get("spans"))):
                path = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                views.append(_span(span_obj, path, ss_hex, resource, scope_name))
    return views


def _span(obj: Any, path: str, hex_ids: bool, resource: dict[str, Any], scope: str) -> SpanView:
    span = _fields(obj, _SPAN)
    _other(span, _SPAN, _SPAN_READ)
    status = _fields(span.get("status", {}), _STATUS)
    _other(status, _STATUS, set())
    events = []
    for event_obj in _items(span.get("events")):
        event = _fields(event_obj, _EVENT)
        _other(event, _EVENT, {"time_unix_nano", "name", "attributes"})
        events.append(
            (
                _string(event.get("name", "")),
                _int(event.get("time_unix_nano", 0), _UINT64),
                attributes(_items(event.get("attributes"))),
            )
        )
    return SpanView(
        path=path,
        trace_id=_id(obj, span, "traceId", "trace_id", 16, hex_ids),
        span_id=_id(obj, span, "spanId", "span_id", 8, hex_ids),
        parent_span_id=_id(obj, span, "parentSpanId", "parent_span_id", 8, hex_ids),
        name=_string(span.get("name", "")),
        start_ns=_int(span.get("start_time_unix_nano", 0), _UINT64),
        end_ns=_int(span.get("end_time_unix_nano", 0), _UINT64),
        attributes=attributes(_items(span.get("attributes"))),
        events=events,
        resource=resource,
        scope=scope,
    )


_SPAN_READ = {
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "attributes",
    "events",
    "status",
}


def _id(
    obj: dict[str, Any], span: dict[str, Any], key: str, name: str, size: int, hex_ok: bool
) -> bytes:
    """An id: hex under its lowerCamelCase key when it has hex length, else base64."""
    text = span.get(name)
    if text is None:
        return b""
    if hex_ok and key in obj and type(text) is str and len(text) == 2 * size:
        try:
            return binascii.unhexlify(text)
        except ValueError:
            raise Unusual from None  # not hex: the old rewrite refuses it
    return _bytes(text)
