"""What one `gen_ai.evaluation.result` event says: attributes, severity, trace context.

Pure functions (no I/O), used by `exporters.evaluation_events` in its background worker.
The names are the OpenTelemetry GenAI semantic conventions (status Development):
`gen_ai.evaluation.name`, `gen_ai.evaluation.score.value`, `gen_ai.evaluation.score.label`,
`gen_ai.evaluation.explanation` and `error.type`; the event itself is a log record whose
`event_name` is `gen_ai.evaluation.result`. A skipped outcome (no reference, ...) is not a
result and makes no event.

Trace context: a trace id of exactly 32 lowercase hex digits (not all zero) is a W3C id,
as every OTLP-sourced trace has; the event then carries it, and the root span id when the
trace came from OTLP, so a tracing backend shows the scores on the trace. Other ids (a
JSON trace's free-form id) give no trace context; every event also carries the id as
`ragpulse.trace_id`, so such events can still be matched, and read back (`collector.ingest`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from collector.ingest.decode.evaluations import (  # the names ingest reads back
    ERROR_TYPE,
    EXPLANATION,
    NAME,
    SCORE_LABEL,
    SCORE_VALUE,
    TRACE_ID,
)
from evaluators.outcome import Failed, Outcome, Score

JOB = "ragpulse.job"

SEVERITY_INFO = 9  # SeverityNumber.INFO
SEVERITY_WARN = 13  # SeverityNumber.WARN: the evaluation itself failed
_W3C_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_REASON_KEYS = ("explanation", "reason", "reasoning", "rationale")


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event, ready for the SDK logger."""

    attributes: Mapping[str, str | float]
    severity_number: int
    severity_text: str
    trace_id: int
    """0 without a trace context."""
    span_id: int
    """0 when the span is not known."""


def w3c_trace_id(trace_id: str) -> int:
    """The trace id as the 128-bit W3C id, or 0 when it is not one (see the module doc)."""
    if _W3C_TRACE_ID.fullmatch(trace_id) is None:
        return 0
    return int(trace_id, 16)


def root_span_id(spans: Mapping[str, Any] | None) -> int:
    """The root span's id (no parent; else the earliest span) of a stored OTLP trace's span
    summaries (`traces.spans`), 0 when there are none."""
    if not spans:
        return 0
    roots = [sid for sid, s in spans.items() if isinstance(s, Mapping) and not s.get("parent")]
    candidates = roots or list(spans)

    def start(sid: str) -> tuple[int, str]:
        summary = spans[sid]
        value = summary.get("start", 0) if isinstance(summary, Mapping) else 0
        return (value if isinstance(value, int) else 0, sid)

    chosen = min(candidates, key=start)
    try:
        return int(chosen, 16) if len(chosen) == 16 else 0
    except ValueError:
        return 0


def explanation_text(parsed: Any, max_chars: int) -> str | None:
    """A judge reply's reasons as bounded text: its `explanation`/`reason`/... string when
    it has one, else the whole parsed reply as compact JSON (per-statement verdicts)."""
    if max_chars <= 0 or parsed is None:
        return None
    text: str | None = None
    if isinstance(parsed, Mapping):
        for key in _REASON_KEYS:
            value = parsed.get(key)
            if isinstance(value, str) and value.strip():
                text = value.strip()
                break
    if text is None:
        try:
            text = orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        except TypeError:
            return None
    if len(text) > max_chars:
        text = text[: max(0, max_chars - 1)] + "…"
    return text


def score_label(
    metric: str, value: float, thresholds: Mapping[str, float], direction: str | None
) -> str | None:
    """`pass` / `fail` against the metric's configured threshold (lower-is-better metrics
    pass at or below it), None when none is configured."""
    threshold = thresholds.get(metric)
    if threshold is None:
        return None
    ok = value <= threshold if direction == "lower" else value >= threshold
    return "pass" if ok else "fail"


def event_record(
    *,
    job: str,
    trace_id: str,
    metric: str,
    outcome: Outcome,
    span_id: int = 0,
    explanation: str | None = None,
    label: str | None = None,
) -> EventRecord | None:
    """The event for one metric's outcome on one trace; None for a skipped outcome."""
    attributes: dict[str, str | float] = {NAME: metric, JOB: job, TRACE_ID: trace_id}
    severity, severity_text = SEVERITY_INFO, "INFO"
    if isinstance(outcome, Score):
        attributes[SCORE_VALUE] = float(outcome.value)
        if label is not None:
            attributes[SCORE_LABEL] = label
    elif isinstance(outcome, Failed):
        attributes[ERROR_TYPE] = outcome.error_type or "unknown"
        severity, severity_text = SEVERITY_WARN, "WARN"
    else:
        return None
    if explanation:
        attributes[EXPLANATION] = explanation
    w3c = w3c_trace_id(trace_id)
    return EventRecord(attributes, severity, severity_text, w3c, span_id if w3c else 0)


def emitted_count(outcomes: Mapping[str, Outcome]) -> int:
    """How many events `outcomes` make (skipped ones make none)."""
    return sum(1 for o in outcomes.values() if isinstance(o, Score | Failed))
