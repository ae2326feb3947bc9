"""What an OTLP trace was read with, and which of its essential fields it lacks.

Both are counted on `/metrics` (`ragpulse_otlp_traces_total{convention}`,
`ragpulse_otlp_traces_incomplete_total{convention, missing}`) and printed by
`ragpulse inspect`, so the two always agree.

*A trace's conventions* are the conventions its spans were read with: for each span, the
first convention detected on it in the registry's precedence order (`conv` in its
summary), except that an add-on (`ragpulse`: the app's own attributes, set on top of an
instrumentation library's spans) names a span only when nothing else was detected on it.
So a LangChain app traced by OpenInference, with `ragpulse.tag.*` on its root and the
OpenAI client's GenAI attributes mirrored on the LLM span, is `openinference` alone; an
app mixing two libraries is both. A trace whose spans carry no known convention is `none`.

*Missing* fields (what the quality metrics need, in this order):
- `question`: empty, or a redaction placeholder;
- `answer`: absent, empty or a placeholder;
- `contexts`: no retrieved document with its text (ids alone feed the retrieval metrics,
  not the judge's faithfulness).

A placeholder is what a library writes instead of content it was told to hide
(OpenInference's `__REDACTED__`, e.g. with `OPENINFERENCE_HIDE_OUTPUTS=true`): the usual
cause of a field missing from every trace of a convention is content capture switched off
in the app (the `RagpulseOtlpContentMissing` alert names the variable per convention).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from collector.ingest.decode.conventions import registry
from collector.store.records import TraceRecord

NONE: Final = "none"
"""The convention of a trace none of whose spans carries a known convention."""
ADD_ONS: Final = frozenset({"ragpulse"})
"""Conventions set on top of another's spans: they name a span only when alone on it."""
MISSING: Final = ("question", "answer", "contexts")
PLACEHOLDERS: Final = frozenset({"__REDACTED__"})
"""Values instrumentation libraries write in place of hidden content."""


@dataclass(frozen=True, slots=True)
class Completeness:
    """One trace's conventions and the fields it lacks (both in a fixed order)."""

    conventions: tuple[str, ...]
    missing: tuple[str, ...]


def span_convention(conv: Iterable[str]) -> str | None:
    """The convention a span was read with, from its detected ones (precedence order)."""
    names = list(conv)
    return next((c for c in names if c not in ADD_ONS), names[0] if names else None)


def trace_conventions(spans: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The conventions a trace's spans (summaries) were read with, in precedence order
    (a name the registry does not know, from an older summary, after them); `none` alone
    when no span carries one."""
    found = {name for s in spans if (name := span_convention(s.get("conv", ()))) is not None}
    if not found:
        return (NONE,)
    order = list(registry.CONVENTIONS)
    return tuple(sorted(found, key=lambda n: (order.index(n) if n in order else len(order), n)))


def _has_text(value: str | None) -> bool:
    return value is not None and bool(value.strip()) and value.strip() not in PLACEHOLDERS


def missing_fields(record: TraceRecord) -> tuple[str, ...]:
    """Which of question, answer and contexts the trace lacks."""
    present = {
        "question": _has_text(record.question),
        "answer": _has_text(record.answer),
        "contexts": any(_has_text(c.text) for c in record.contexts),
    }
    return tuple(name for name in MISSING if not present[name])


def completeness(record: TraceRecord, spans: Iterable[Mapping[str, Any]]) -> Completeness:
    """The trace's conventions and missing fields, from its record and span summaries."""
    return Completeness(trace_conventions(spans), missing_fields(record))


def has_root(spans: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the trace's root span (one without a parent) is among these summaries."""
    return any(not s["parent"] for s in spans)


def tally(
    traces: Iterable[Completeness],
) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Traces per convention, and per (convention, missing field): a trace counts once
    under each of its conventions."""
    total: dict[str, int] = {}
    incomplete: dict[tuple[str, str], int] = {}
    for trace in traces:
        for name in trace.conventions:
            total[name] = total.get(name, 0) + 1
            for field in trace.missing:
                incomplete[(name, field)] = incomplete.get((name, field), 0) + 1
    return total, incomplete
