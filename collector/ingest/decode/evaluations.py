"""OpenTelemetry `gen_ai.evaluation.result` attributes -> one evaluation (a plain dict).

The application's own evaluators may report a result three ways, all read here: a log
record (`otlp_logs`), a span event named `gen_ai.evaluation.result`, or the attributes of a
span (an evaluator's span). The attributes are the GenAI semantic conventions:
`gen_ai.evaluation.name` (required), `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label`, `gen_ai.evaluation.explanation`, `error.type`.

Values are untrusted: the name must be a non-empty string, a score a finite number (else
it is left out), texts are cut to bounds. The result is JSON-ready:
`{"name", "score", "label", "explanation", "error_type", "time"}` (`time`: ns since the
epoch, which orders two results of one name).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from collector.ingest.decode.conventions.attributes import Attribute, event_or_record

EVENT_NAME = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
ERROR_TYPE = "error.type"
TRACE_ID = "ragpulse.trace_id"
"""The stored trace's own id, which ragpulse's events carry (a JSON trace's id may not be a
W3C trace id); it wins over the record's trace context."""

EVENT_NAME_ATTRIBUTE = "event.name"
"""A log record's or event's name as an attribute (before OTLP had `event_name`)."""

_ON = event_or_record(EVENT_NAME)
ATTRIBUTES: Final = (
    Attribute(
        NAME,
        "string (required; at most 128 characters kept)",
        "an app's own evaluation result, the series `external:<name>` (also read on an "
        "evaluator span's own attributes)",
        on=_ON,
    ),
    Attribute(SCORE_VALUE, "number (finite, else left out)", "its score", on=_ON),
    Attribute(SCORE_LABEL, "string", "its label", on=_ON),
    Attribute(EXPLANATION, "string (2,000 characters kept)", "its explanation", on=_ON),
    Attribute(ERROR_TYPE, "string", "the evaluation failed: its error type", on=_ON),
    Attribute(
        TRACE_ID,
        "string (the stored trace's id, 1..128 characters)",
        "the trace it is about (wins over the record's trace context)",
        on=_ON,
    ),
    Attribute(
        EVENT_NAME_ATTRIBUTE,
        f"string: `{EVENT_NAME}`",
        "names the record or event when OTLP's `event_name` is empty",
        on=_ON,
    ),
)
"""The attributes of a `gen_ai.evaluation.result` log record, span event, or evaluator
span (the connect-your-app page's GenAI table is generated with them)."""

MAX_NAME = 128
MAX_LABEL = 128
MAX_EXPLANATION = 2000
MAX_PER_SPAN = 32
"""Evaluation events read per span (a span with thousands of events is not a reason to
store thousands of results)."""


def _text(value: Any, limit: int) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.replace("\x00", "").strip()
    return value[:limit] if value else None


def evaluation(attrs: Mapping[str, Any], time_ns: int) -> dict[str, Any] | None:
    """The evaluation these attributes state, or None when they name none."""
    name = _text(attrs.get(NAME), MAX_NAME)
    if name is None:
        return None
    raw = attrs.get(SCORE_VALUE)
    score = None
    if isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw):
        score = float(raw)
    return {
        "name": name,
        "score": score,
        "label": _text(attrs.get(SCORE_LABEL), MAX_LABEL),
        "explanation": _text(attrs.get(EXPLANATION), MAX_EXPLANATION),
        "error_type": _text(attrs.get(ERROR_TYPE), MAX_LABEL),
        "time": int(time_ns),
    }


def span_evaluations(
    attrs: Mapping[str, Any],
    events: Iterable[tuple[str, int, Mapping[str, Any]]],
    end_ns: int,
) -> list[dict[str, Any]]:
    """A span's evaluations: its `gen_ai.evaluation.result` events (name, time, attributes)
    and, when the span's own attributes name one, that one (timed at the span's end)."""
    out = []
    for name, time_ns, event_attrs in events:
        if name == EVENT_NAME or event_attrs.get(EVENT_NAME_ATTRIBUTE) == EVENT_NAME:
            found = evaluation(event_attrs, time_ns or end_ns)
            if found is not None:
                out.append(found)
                if len(out) >= MAX_PER_SPAN:
                    break
    own = evaluation(attrs, end_ns)
    if own is not None:
        out.append(own)
    return out
