"""OTLP log messages -> the evaluation results and GenAI operation details they carry.

A message is a serialized `ExportLogsServiceRequest` (what the OpenTelemetry Collector's
Kafka exporter writes for logs), protobuf or OTLP/JSON, sniffed like trace messages
(`otlp`). Of its records, those that are `gen_ai.evaluation.result` events (`event_name`,
or the older `event.name` attribute, or simply a `gen_ai.evaluation.name` attribute) become
`EvaluationEvent`s; every other record is ignored (an application may send all its logs).

The trace an event belongs to: the `ragpulse.trace_id` attribute when present (the stored
id, which ragpulse's own events carry), else the record's W3C trace id as 32 lowercase hex
digits (how OTLP traces are stored). A record with neither belongs to no trace and is
ignored.

`gen_ai.client.inference.operation.details` records (the messages of a model call, when the
app's GenAI instrumentation emits content as events) become span fragments of their trace
(`otlp_details`), merged with its spans like any other fragment.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from collector.ingest.decode.errors import INVALID_OTLP, TOO_DEEP, DecodeError
from collector.ingest.decode.evaluations import (
    EVENT_NAME,
    EVENT_NAME_ATTRIBUTE,
    NAME,
    TRACE_ID,
    evaluation,
)
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.otlp import OtlpFragment, attributes, otlp_payload
from collector.ingest.decode.otlp_details import details_fragments
from collector.ingest.decode.trace_json import DEFAULT_MAX_BYTES, decode_json_message
from collector.store.evaluation_store import EvaluationEvent

_ID_BYTES = {"traceId": 16, "spanId": 8}
MAX_TRACE_ID = 128


@dataclass(frozen=True, slots=True)
class OtlpLogs:
    """What one OTLP logs message carries for ragpulse (either may be empty)."""

    events: list[EvaluationEvent]
    fragments: list[OtlpFragment]


def decode_otlp_logs(
    value: bytes | None,
    encoding: str = "otlp_proto",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> OtlpLogs:
    """The evaluation events and details fragments of one OTLP logs message, or
    `DecodeError`."""
    payload, is_json = otlp_payload(value, encoding, max_bytes)
    request = _parse_json(payload, max_bytes, max_depth) if is_json else _parse_proto(payload)
    return OtlpLogs(events_from_request(request), details_fragments(request, max_depth))


def decode_otlp_logs_message(
    value: bytes | None,
    encoding: str = "otlp_proto",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> list[EvaluationEvent]:
    """The evaluation events of one OTLP logs message (maybe none), or `DecodeError`."""
    return decode_otlp_logs(value, encoding, max_bytes, max_depth).events


def _parse_proto(value: bytes) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(value)
    except ProtobufDecodeError as exc:
        if "MaxDepth" in str(exc):
            raise DecodeError(
                TOO_DEEP, "protobuf nesting exceeds the parser's limit of 100 levels"
            ) from None
        raise DecodeError(INVALID_OTLP, f"not a protobuf ExportLogsServiceRequest: {exc}") from None
    return request


def _parse_json(value: bytes, max_bytes: int, max_depth: int) -> ExportLogsServiceRequest:
    obj = decode_json_message(value, max_bytes, max_depth)
    try:
        if isinstance(obj, dict):
            for rl in obj.get("resourceLogs") or []:
                for sl in (rl or {}).get("scopeLogs") or []:
                    for record in (sl or {}).get("logRecords") or []:
                        _ids_to_base64(record)
        request = ExportLogsServiceRequest()
        json_format.ParseDict(obj, request, ignore_unknown_fields=True)
        return request
    except (json_format.ParseError, TypeError, AttributeError) as exc:
        raise DecodeError(
            INVALID_OTLP, f"not an OTLP/JSON ExportLogsServiceRequest: {exc}"
        ) from None


def _ids_to_base64(record: Any) -> None:
    """OTLP/JSON writes ids as hex; protobuf's JSON parser wants base64."""
    if not isinstance(record, dict):
        return
    for key, size in _ID_BYTES.items():
        text = record.get(key)
        if isinstance(text, str) and len(text) == 2 * size:
            try:
                record[key] = base64.b64encode(binascii.unhexlify(text)).decode("ascii")
            except binascii.Error:
                raise DecodeError(INVALID_OTLP, f"logRecords.{key}: {text!r} is not hex") from None


def events_from_request(request: ExportLogsServiceRequest) -> list[EvaluationEvent]:
    out = []
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                attrs = attributes(record.attributes)
                name = record.event_name or attrs.get(EVENT_NAME_ATTRIBUTE)
                if name != EVENT_NAME and not (not name and NAME in attrs):
                    continue
                trace_id = _trace_id(attrs.get(TRACE_ID), record.trace_id)
                if trace_id is None:
                    continue
                found = evaluation(attrs, record.time_unix_nano or record.observed_time_unix_nano)
                if found is None:
                    continue
                span = record.span_id
                span_id = span.hex() if len(span) == 8 and any(span) else None
                out.append(EvaluationEvent(trace_id, span_id, found))
    return out


def _trace_id(own: Any, raw: bytes) -> str | None:
    if isinstance(own, str) and 0 < len(own) <= MAX_TRACE_ID and "\x00" not in own:
        return own
    if len(raw) == 16 and any(raw):
        return raw.hex()
    return None
