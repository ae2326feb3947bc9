"""GenAI operation details on the logs topic -> span summaries that complete their span.

When an app's GenAI instrumentation is told to put message content in events
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=event_only` or `span_and_event` with
`opentelemetry-util-genai`; `OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT=true` forces the event),
each model call also emits a `gen_ai.client.inference.operation.details` log record: the
call's attributes with `gen_ai.input.messages`, `gen_ai.output.messages` and
`gen_ai.system_instructions` in structured form, in the trace context of the call's span.
With `event_only` that record is the only place the question and the answer exist.

A record becomes a summary read by the `genai` convention, stored beside the span's own
under the key `<span id>:details` (so it never replaces it) and marked `of: <span id>`:
`otlp_mapping.record_from_spans` folds it into that span's summary when the span is known
(the span's own values win), so the trace is the same whichever arrives first, and a
replayed record changes nothing. Until the span arrives it stands alone, as no stage.

A record without a W3C trace and span id, or of a span that was not sampled (the sampled
trace flag off: its span was never exported, and a trace made of log records alone would
be a question nobody traced), is ignored. One holding a NUL character, which cannot be
stored, makes the message invalid (as in a span).
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from collector.ingest.decode.conventions.base import Span
from collector.ingest.decode.conventions.genai import DETAILS_EVENT, GenAI
from collector.ingest.decode.errors import INVALID_OTLP, DecodeError
from collector.ingest.decode.evaluations import EVENT_NAME_ATTRIBUTE
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.optional import FieldIssues
from collector.ingest.decode.otlp import OtlpFragment, attributes

EVENT_NAME: Final = DETAILS_EVENT
SUFFIX: Final = ":details"
"""Appended to the span id to key the record's summary."""
SAMPLED: Final = 0x01
"""The W3C `sampled` trace flag, in the low byte of a log record's `flags`."""
_CONVENTION: Final = GenAI()


def details_fragments(
    request: ExportLogsServiceRequest, max_depth: int = DEFAULT_MAX_DEPTH
) -> list[OtlpFragment]:
    """One fragment per trace holding the details records of its spans."""
    by_trace: dict[str, dict[str, dict[str, Any]]] = {}
    warned: dict[str, list[str]] = {}
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                if (record.event_name or _old_event_name(record.attributes)) != EVENT_NAME:
                    continue  # (most records of an app's logs: decide before converting)
                trace, span = record.trace_id, record.span_id
                if len(trace) != 16 or not any(trace) or len(span) != 8 or not any(span):
                    continue
                if not record.flags & SAMPLED:
                    continue
                attrs = attributes(record.attributes)
                issues = FieldIssues()
                at = record.time_unix_nano or record.observed_time_unix_nano
                summary = details_summary(attrs, span.hex(), at, issues, max_depth)
                if b"\\u0000" in orjson.dumps(summary):
                    raise DecodeError(INVALID_OTLP, f"{EVENT_NAME}: a string contains U+0000 (NUL)")
                spans = by_trace.setdefault(trace.hex(), {})
                key = span.hex() + SUFFIX
                # one record per call; should a span have two, keep a fixed one
                if key not in spans or _canonical(summary) > _canonical(spans[key]):
                    spans[key] = summary
                warned.setdefault(trace.hex(), []).extend(issues.fields)
    return [
        OtlpFragment(trace_id=t, spans=s, warnings=tuple(warned.get(t, ())))
        for t, s in sorted(by_trace.items())
    ]


def details_summary(
    attrs: dict[str, Any], span_id: str, time_ns: int, issues: FieldIssues, max_depth: int
) -> dict[str, Any]:
    """The summary of one details record of span `span_id` (see the module doc)."""
    fields = _CONVENTION.read(Span(attrs=attrs, name=EVENT_NAME, max_depth=max_depth), issues)
    fields.pop("kind", None)
    out: dict[str, Any] = {"parent": span_id, "kind": "", "name": EVENT_NAME}
    out |= {"start": time_ns, "end": time_ns, "of": span_id, **fields, "conv": [_CONVENTION.name]}
    if issues:
        out["invalid"] = dict(issues.raw)
    return out


def _old_event_name(items: Any) -> str:
    """The `event.name` attribute, which carried the name before `event_name` existed."""
    for kv in items:
        if kv.key == EVENT_NAME_ATTRIBUTE:
            return str(kv.value.string_value)
    return ""


def _canonical(summary: dict[str, Any]) -> str:
    return json.dumps(summary, sort_keys=True, ensure_ascii=False)
