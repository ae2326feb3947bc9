"""The two OTLP signals the receiver takes, and the check a body passes before it is written.

The check is the least that tells an OTLP request from garbage: the body parses as the
signal's `Export*ServiceRequest` (protobuf, or OTLP/JSON through protobuf's JSON parser,
unknown fields ignored as OTLP/JSON asks). Nothing is mapped or re-encoded: the bytes go to
Kafka as they came, and the consumer decodes them as it decodes the Collector's. The check
also counts the spans (log records) and takes the first trace id, the message's key.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf import json_format
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


@dataclass(frozen=True)
class Checked:
    """What the check learnt of a request: its spans or log records, and the Kafka key
    (the first trace id, 32 lowercase hex digits, or None when no item carries one)."""

    items: int
    key: bytes | None


@dataclass(frozen=True)
class Signal:
    """One OTLP signal: its path, request and response types, and how to walk its items
    (yielding each item's raw trace id: bytes from protobuf, a string from JSON)."""

    name: str
    path: str
    request: type[Message]
    response: type[Message]
    proto_ids: Callable[[Any], Iterator[bytes]]
    json_ids: Callable[[dict[str, Any]], Iterator[Any]]

    def check(self, body: bytes, encoding: Encoding) -> Checked:
        """Count the items and find the key, or raise `BadRequestError` (one line)."""
        if encoding == "json":
            obj = self._json(body)
            ids: Iterator[Any] = self.json_ids(obj)
            count = sum(1 for _ in self.json_ids(obj))
            return Checked(count, _first_key(ids, _json_id))
        request = self._proto(body)
        count = sum(1 for _ in self.proto_ids(request))
        return Checked(count, _first_key(self.proto_ids(request), _proto_id))

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

    def _json(self, body: bytes) -> dict[str, Any]:
        name = self.request.DESCRIPTOR.name
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequestError(f"not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise BadRequestError(f"not an OTLP/JSON {name}: the top level is not an object")
        try:
            json_format.ParseDict(obj, self.request(), ignore_unknown_fields=True)
        except (json_format.ParseError, TypeError, ValueError, RecursionError) as exc:
            reason = " ".join(str(exc).split())[:300]
            raise BadRequestError(f"not an OTLP/JSON {name}: {reason}") from None
        return obj


def _first_key(ids: Iterator[Any], as_hex: Callable[[Any], str | None]) -> bytes | None:
    for raw in ids:
        text = as_hex(raw)
        if text is not None:
            return text.encode("ascii")
    return None


def _proto_id(raw: bytes) -> str | None:
    return raw.hex() if len(raw) == 16 and any(raw) else None


def _json_id(raw: Any) -> str | None:
    """A JSON trace id as hex: OTLP/JSON writes hex, protobuf's own JSON base64."""
    if not isinstance(raw, str) or not raw:
        return None
    if len(raw) == 32:
        try:
            return _proto_id(binascii.unhexlify(raw))
        except binascii.Error:
            pass
    try:
        return _proto_id(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError):
        return None


def _list(obj: Any, key: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


def _span_ids(request: Any) -> Iterator[bytes]:
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield span.trace_id


def _json_span_ids(obj: dict[str, Any]) -> Iterator[Any]:
    for rs in _list(obj, "resourceSpans"):
        for ss in _list(rs, "scopeSpans"):
            for span in _list(ss, "spans"):
                yield span.get("traceId") if isinstance(span, dict) else None


def _log_ids(request: Any) -> Iterator[bytes]:
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                yield record.trace_id


def _json_log_ids(obj: dict[str, Any]) -> Iterator[Any]:
    for rl in _list(obj, "resourceLogs"):
        for sl in _list(rl, "scopeLogs"):
            for record in _list(sl, "logRecords"):
                yield record.get("traceId") if isinstance(record, dict) else None


TRACES = Signal(
    "traces",
    "/v1/traces",
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
    _span_ids,
    _json_span_ids,
)
LOGS = Signal(
    "logs",
    "/v1/logs",
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
    _log_ids,
    _json_log_ids,
)
SIGNALS = {signal.path: signal for signal in (TRACES, LOGS)}
