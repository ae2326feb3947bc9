"""What ragpulse makes of captured OTLP messages, for `ragpulse inspect`.

The messages go through the ingest's own decoding (`decode.otlp`: the same parsing, the
same conventions, the same merge of a trace's fragments, the same `record_from_spans`), so
what is shown is what would be stored, without a database. Per trace: the record it
becomes, its conventions and missing fields (`decode.completeness`, as counted on
`/metrics`), whether its root span was among the messages (otherwise the trace is still
partial: its other spans are in messages not read), and per span the conventions detected
(precedence order), the attribute keys a convention read, and those left unread.

A message that cannot be decoded is reported with its `DecodeError` (reason and detail,
as in `dead_letters`) and the others are still read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector.ingest.decode.completeness import Completeness, completeness, has_root
from collector.ingest.decode.errors import DecodeError
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.otlp import fragments_from_request, parse_otlp_request
from collector.ingest.decode.otlp_mapping import record_from_spans
from collector.ingest.decode.trace_json import DEFAULT_MAX_BYTES
from collector.ingest.otlp_store import merge_span_sets
from collector.store.records import TraceRecord

SpanKey = tuple[str, str]
"""(trace id, span id), both hex."""


@dataclass(frozen=True, slots=True)
class SpanReading:
    """How one span was read."""

    span_id: str
    parent: str
    name: str
    scope: str
    kind: str
    conventions: tuple[str, ...]
    """Every convention detected on the span, in precedence order."""
    used: tuple[str, ...]
    """Attribute keys a convention (or the evaluations reader) read."""
    unread: tuple[str, ...]
    events: tuple[str, ...]
    stored_only: bool = False
    """Known only from the store's summary (its attributes are not kept there)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "span_id": self.span_id,
            "parent": self.parent or None,
            "name": self.name,
            "scope": self.scope,
            "kind": self.kind or None,
            "conventions": list(self.conventions),
            "used": list(self.used),
            "unread": list(self.unread),
            "events": list(self.events),
            "stored_only": self.stored_only,
        }


@dataclass(frozen=True, slots=True)
class TraceReading:
    """One trace as ragpulse would store it from the messages read."""

    trace_id: str
    record: TraceRecord
    completeness: Completeness
    has_root: bool
    sources: tuple[str, ...]
    """The messages that carried its spans."""
    spans: tuple[SpanReading, ...]
    warnings: tuple[str, ...] = ()
    """Fields whose values did not fit (kept raw under `metadata._invalid`)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "root_span_seen": self.has_root,
            "conventions": list(self.completeness.conventions),
            "missing": list(self.completeness.missing),
            "sources": list(self.sources),
            "record": record_json(self.record),
            "spans": [s.as_json() for s in self.spans],
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True, slots=True)
class MessageError:
    """A message that is not an OTLP trace message."""

    source: str
    reason: str
    detail: str


@dataclass
class Inspection:
    traces: list[TraceReading] = field(default_factory=list)
    errors: list[MessageError] = field(default_factory=list)
    messages: int = 0


@dataclass
class _Span:
    keys: set[str] = field(default_factory=set)
    scope: str = ""
    events: list[str] = field(default_factory=list)


STORED = "store"
"""The source name of span summaries read from the database (`stored` below)."""


def inspect_messages(
    messages: Iterable[tuple[str, bytes | None]],
    encoding: str = "otlp_proto",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    stored: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> Inspection:
    """Read (source, value) messages as the ingest would; traces in id order.

    `stored`: trace id -> the span summaries the store holds for it (`traces.spans`),
    merged in as the ingest merges fragments; such a trace is read even when no message
    holds a span of it. A span known only from the store has no attribute keys to show
    (the store keeps its summary, not its attributes)."""
    out = Inspection()
    used: dict[SpanKey, set[str]] = {}
    seen: dict[SpanKey, _Span] = {}
    summaries: dict[str, dict[str, Mapping[str, Any]]] = {}
    sources: dict[str, list[str]] = {}
    warnings: dict[str, list[str]] = {}
    for source, value in messages:
        out.messages += 1
        read: dict[SpanKey, set[str]] = {}
        try:
            request = parse_otlp_request(value, encoding, max_bytes, max_depth)
            fragments = fragments_from_request(request, max_depth, used=read)
        except DecodeError as exc:
            out.errors.append(MessageError(source, exc.reason, exc.detail))
            continue
        for key, keys in read.items():
            used.setdefault(key, set()).update(keys)
        _walk(request, seen)
        for fragment in fragments:
            trace = fragment.trace_id
            summaries[trace] = merge_span_sets(summaries.get(trace, {}), fragment.spans)
            sources.setdefault(trace, []).append(source)
            warnings.setdefault(trace, []).extend(fragment.warnings)
    for trace_id, spans in sorted((stored or {}).items()):
        if spans:
            summaries[trace_id] = merge_span_sets(spans, summaries.get(trace_id, {}))
            sources.setdefault(trace_id, []).append(STORED)
            warnings.setdefault(trace_id, [])
    for trace_id, spans in sorted(summaries.items()):
        record = record_from_spans(trace_id, spans)
        ordered = sorted(spans.items(), key=lambda item: (item[1]["start"], item[0]))
        readings = tuple(
            _reading(
                span_id,
                summary,
                seen.get((trace_id, span_id)),
                used.get((trace_id, span_id), set()),
            )
            for span_id, summary in ordered
        )
        out.traces.append(
            TraceReading(
                trace_id=trace_id,
                record=record,
                completeness=completeness(record, spans.values()),
                has_root=has_root(spans.values()),
                sources=tuple(dict.fromkeys(sources[trace_id])),
                spans=readings,
                warnings=tuple(sorted(set(warnings[trace_id]))),
            )
        )
    return out


def _walk(request: ExportTraceServiceRequest, seen: dict[SpanKey, _Span]) -> None:
    """Each span's attribute keys, scope and event names (a span id met twice: the union)."""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                found = seen.setdefault((span.trace_id.hex(), span.span_id.hex()), _Span())
                found.keys.update(kv.key for kv in span.attributes)
                found.scope = found.scope or ss.scope.name
                for event in span.events:
                    if event.name not in found.events:
                        found.events.append(event.name)


def _reading(
    span_id: str, summary: Mapping[str, Any], span: _Span | None, used: set[str]
) -> SpanReading:
    stored_only = span is None
    span = span or _Span()
    read = used & span.keys
    return SpanReading(
        span_id=span_id,
        parent=str(summary["parent"]),
        name=str(summary.get("name", "")),
        scope=span.scope,
        kind=str(summary.get("kind", "")),
        conventions=tuple(summary.get("conv", ())),
        used=tuple(sorted(read)),
        unread=tuple(sorted(span.keys - read)),
        events=tuple(span.events),
        stored_only=stored_only,
    )


def record_json(record: TraceRecord) -> dict[str, Any]:
    """The span-derived fields of a trace record, as JSON (only what OTLP can set)."""
    return {
        "timestamp": record.timestamp.isoformat(),
        "question": record.question,
        "answer": record.answer,
        "contexts": [c.to_json() for c in record.contexts],
        "session_id": record.session_id,
        "user_id": record.user_id,
        "model": record.model,
        "usage": dict(record.usage) if record.usage else None,
        "latency_ms": record.latency_ms,
        "latency_stages": dict(record.latency_stages) if record.latency_stages else None,
        "tags": dict(record.tags) if record.tags else None,
        "metadata": dict(record.metadata) if record.metadata else None,
        "shown_url": list(record.shown_urls) if record.shown_urls else None,
        "not_request": record.not_request,
    }
