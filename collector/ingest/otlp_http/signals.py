"""The two OTLP signals the receiver takes, and the check a body passes before it is written.

The check is the least that tells an OTLP request from garbage, cheaply: a protobuf body
parses as the signal's `Export*ServiceRequest` (upb, C); an OTLP/JSON body is a JSON object
whose resource, scope and item lists have the request's shape, with ids in hex (or
base64, protobuf's own JSON) of the right length; other fields are not looked at (OTLP/JSON
receivers ignore unknown ones). Nothing is mapped or re-encoded: the bytes go to Kafka as
they came, and the consumer decodes them as it decodes the Collector's (a request that
passes here but cannot be mapped is a dead letter there). The check also counts the spans
(log records) and takes the first trace id, the message's key.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from collector.ingest.otlp_http.body import Encoding
from collector.ingest.otlp_http.errors import BadRequestError

_ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


@dataclass(frozen=True)
class Checked:
    """What the check learnt of a request: its spans or log records, and the Kafka key
    (the first trace id, 32 lowercase hex digits, or None when no item carries one)."""

    items: int
    key: bytes | None


@dataclass(frozen=True)
class Signal:
    """One OTLP signal: its path, request and response types, and the names of its three
    nested lists (resources, scopes, items) in protobuf and in OTLP/JSON."""

    name: str
    path: str
    request: type[Message]
    response: type[Message]
    fields: tuple[str, str, str]
    json_fields: tuple[str, str, str]

    def check(self, body: bytes, encoding: Encoding) -> Checked:
        """Count the items and find the key, or raise `BadRequestError` (one line)."""
        if encoding == "json":
            return self._check_json(body)
        request = self._proto(body)
        count, key = 0, None
        for item in self._proto_items(request):
            count += 1
            if key is None:
                key = _hex_key(item.trace_id)
        return Checked(count, key)

    def _proto(self, body: bytes) -> Any:
        name = self.request.DESCRIPTOR.name
        if body[:1] == b"{":
            # field 15 as a group, never a real request; the consumer would read it as JSON
            raise BadRequestError(f"not a protobuf {name}: it starts with '{{' (JSON?)")
        request = self.request()
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise BadRequestError(f"not a protobuf {name}: {exc}") from None
        if body and not request.ListFields():
            raise BadRequestError(f"not a protobuf {name}: no field of it in {len(body)} bytes")
        return request

    def _proto_items(self, request: Any) -> Iterator[Any]:
        resources, scopes, items = self.fields
        for resource in getattr(request, resources):
            for scope in getattr(resource, scopes):
                yield from getattr(scope, items)

    def _check_json(self, body: bytes) -> Checked:
        name = self.request.DESCRIPTOR.name
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequestError(f"not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise BadRequestError(f"not an OTLP/JSON {name}: the top level is not an object")
        if self.fields[0] in obj and self.json_fields[0] not in obj:
            raise BadRequestError(
                f"OTLP/JSON names fields in lowerCamelCase: {self.json_fields[0]}, "
                f"not {self.fields[0]}"
            )
        count, key = 0, None
        for path, item in self._json_items(obj):
            count += 1
            for field, size in _ID_BYTES.items():
                raw = item.get(field)
                if raw is not None and raw != "" and _id_bytes(raw, size) is None:
                    raise BadRequestError(
                        f"not an OTLP/JSON {name}: {path}.{field} is not a {size}-byte id "
                        f"in hex: {str(raw)[:40]!r}"
                    )
            if key is None:
                key = _hex_key(_id_bytes(item.get("traceId"), 16) or b"")
        return Checked(count, key)

    def _json_items(self, obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        resources, scopes, items = self.json_fields
        for i, resource in enumerate(_objects(obj, resources, resources)):
            at = f"{resources}[{i}].{scopes}"
            for j, scope in enumerate(_objects(resource, scopes, at)):
                for k, item in enumerate(_objects(scope, items, f"{at}[{j}].{items}")):
                    yield f"{at}[{j}].{items}[{k}]", item


def _objects(parent: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    """`parent[key]`, a list of objects (absent or null: none), else `BadRequestError`."""
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequestError(f"not an OTLP/JSON request: {path}: expected an array")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadRequestError(f"not an OTLP/JSON request: {path}[{i}]: expected an object")
    return value


def _id_bytes(raw: Any, size: int) -> bytes | None:
    """A JSON id's bytes: OTLP/JSON writes hex, protobuf's own JSON base64."""
    if not isinstance(raw, str):
        return None
    try:
        data = (
            binascii.unhexlify(raw)
            if len(raw) == 2 * size
            else base64.b64decode(raw, validate=True)
        )
    except (binascii.Error, ValueError):
        return None
    return data if len(data) == size else None


def _hex_key(raw: bytes) -> bytes | None:
    return raw.hex().encode("ascii") if len(raw) == 16 and any(raw) else None


TRACES = Signal(
    "traces",
    "/v1/traces",
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
    ("resource_spans", "scope_spans", "spans"),
    ("resourceSpans", "scopeSpans", "spans"),
)
LOGS = Signal(
    "logs",
    "/v1/logs",
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
    ("resource_logs", "scope_logs", "log_records"),
    ("resourceLogs", "scopeLogs", "logRecords"),
)
SIGNALS = {signal.path: signal for signal in (TRACES, LOGS)}
