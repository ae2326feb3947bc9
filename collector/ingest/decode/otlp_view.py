"""One span of an OTLP trace request as the fragment builder reads it, whatever the encoding.

Protobuf requests (`otlp`) and OTLP/JSON dicts read directly (`otlp_json`) both become
`SpanView`s, so grouping by trace and summarizing a span is written once
(`otlp.fragments_from_spans`). Ids stay raw bytes here: the builder checks their length and
that they are not all zero the same way for both encodings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SpanView:
    """What `summarize_span` and the evaluation reader need of one span."""

    path: str
    """Where the span is in the request (`resourceSpans[i].scopeSpans[j].spans[k]`)."""
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    """Empty for a root span."""
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    """The span's attributes as plain values (arrays as lists, kvlists as dicts)."""
    events: list[tuple[str, int, dict[str, Any]]]
    """(name, time in unix nanoseconds, attributes) of each span event, in order."""
    resource: dict[str, Any]
    """The attributes of the span's resource (shared by the spans of one resource)."""
    scope: str
    """The instrumentation scope's name."""
