"""What an evaluation event needs beyond the outcome, read in one query per table.

For a batch of evaluated traces (the events worker's, never the job thread):
- the root span id of each OTLP-sourced trace with a W3C id (`traces.spans`), so the
  event attaches to the span the application's backend shows;
- the judge's latest successful reply per (trace, metric) in `judgments` (`parsed`), the
  source of `gen_ai.evaluation.explanation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.recording.observers import Evaluated
from collector.store.models import Judgment, Trace
from exporters.evaluation_records import root_span_id, w3c_trace_id

_CHUNK = 500
"""Ids per IN (...) list."""


@dataclass
class Lookup:
    spans: dict[str, int] = field(default_factory=dict)
    """trace id -> root span id (OTLP traces only)."""
    judged: dict[tuple[str, str], Any] = field(default_factory=dict)
    """(trace id, metric) -> the latest successful judgment's parsed reply."""


def lookup(session: Session, items: Sequence[Evaluated], *, explanations: bool) -> Lookup:
    found = Lookup()
    w3c = sorted({e.trace_id for e in items if w3c_trace_id(e.trace_id)})
    for start in range(0, len(w3c), _CHUNK):
        rows = session.execute(
            select(Trace.trace_id, Trace.spans).where(
                Trace.trace_id.in_(w3c[start : start + _CHUNK]), Trace.source == "otlp"
            )
        )
        for trace_id, spans in rows:
            span_id = root_span_id(spans if isinstance(spans, dict) else None)
            if span_id:
                found.spans[trace_id] = span_id
    if not explanations:
        return found
    wanted = {(e.trace_id, m) for e in items for m in e.outcomes}
    ids = sorted({e.trace_id for e in items})
    for start in range(0, len(ids), _CHUNK):
        rows = session.execute(
            select(Judgment.trace_id, Judgment.metric, Judgment.parsed)
            .where(Judgment.trace_id.in_(ids[start : start + _CHUNK]), Judgment.status == "ok")
            .order_by(Judgment.id)
        )
        for trace_id, metric, parsed in rows:
            if (trace_id, metric) in wanted and parsed is not None:
                found.judged[(trace_id, metric)] = parsed  # later rows win
    return found
