"""External evaluation results: kept as received, folded onto their traces.

An application's `gen_ai.evaluation.result` reaches ragpulse as span events or span
attributes (kept in the span summaries, `traces.spans[*].evals`) or as log records (kept
here, in `evaluation_events`, whether or not the trace is stored yet). A trace's
`evaluations` column is a pure function of both sets (`merge_evaluations`: per name, the
latest result; ties broken on content), recomputed by `refresh_evaluations` whenever
either grows, so arrival order does not matter and a replay changes nothing. A change
bumps the trace's `updated_at`, which is how the `external` job sees it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.orm import Session

from collector.store.bulk import insert_ignore_returning, is_postgresql
from collector.store.id_filter import among
from collector.store.models import EvaluationEventRow, utcnow
from collector.store.repository import TRACES

EVENTS: Table = EvaluationEventRow.__table__  # type: ignore[assignment]
MAX_NAMES_PER_TRACE = 64
"""Evaluation names kept per trace (the first in name order): bounds the row's size."""
FIELDS = ("score", "label", "explanation", "error_type")


@dataclass(frozen=True, slots=True)
class EvaluationEvent:
    """One evaluation result for one trace, as a log record stated it."""

    trace_id: str
    span_id: str | None
    evaluation: Mapping[str, Any]
    """name, score, label, explanation, error_type, time (ns)."""

    @property
    def event_hash(self) -> str:
        """Identity of the event: a replayed message yields the same hash."""
        key = orjson.dumps(
            [self.trace_id, self.span_id, dict(self.evaluation)], option=orjson.OPT_SORT_KEYS
        )
        return hashlib.sha256(key).hexdigest()


def merge_evaluations(items: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """name -> {"score", "label", "explanation", "error_type"} of the latest result per
    name (same time: the larger canonical JSON), whatever the order of `items`."""
    best: dict[str, tuple[int, bytes, Mapping[str, Any]]] = {}
    for item in items:
        name = item.get("name")
        if not isinstance(name, str) or not name:
            continue
        time_ns = item.get("time")
        key = (
            time_ns if isinstance(time_ns, int) else 0,
            orjson.dumps(dict(item), option=orjson.OPT_SORT_KEYS),
        )
        current = best.get(name)
        if current is None or key > current[:2]:
            best[name] = (*key, item)
    kept = sorted(best)[:MAX_NAMES_PER_TRACE]
    return {name: {f: best[name][2].get(f) for f in FIELDS} for name in kept}


def insert_evaluation_events(session: Session, events: Sequence[EvaluationEvent]) -> dict[str, str]:
    """Store events not seen before; return the new ones' hash -> trace id."""
    unique: dict[str, EvaluationEvent] = {}
    for ev in events:
        unique.setdefault(ev.event_hash, ev)
    if not unique:
        return {}
    now = utcnow()
    rows = []
    for event_hash, ev in unique.items():
        e = ev.evaluation
        rows.append(
            {
                "event_hash": event_hash,
                "trace_id": ev.trace_id,
                "span_id": ev.span_id,
                "name": e["name"],
                "time_ns": int(e.get("time") or 0),
                "score": e.get("score"),
                "label": e.get("label"),
                "explanation": e.get("explanation"),
                "error_type": e.get("error_type"),
                "received_at": now,
            }
        )
    keys = ["event_hash"]
    inserted = {r[0] for r in insert_ignore_returning(session, EVENTS, rows, keys, keys)}
    return {h: unique[h].trace_id for h in sorted(inserted)}


def traces_with_evaluation_events(session: Session, trace_ids: Collection[str]) -> list[str]:
    """Of `trace_ids`, those with stored evaluation events (one query)."""
    if not trace_ids:
        return []
    column = EVENTS.c.trace_id
    stmt = select(column).where(among(session, column, set(trace_ids))).distinct()
    return list(session.execute(stmt).scalars())


def span_evaluations(spans: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The evaluations of a stored trace's span summaries (`evals`)."""
    out: list[Mapping[str, Any]] = []
    for summary in (spans or {}).values():
        if isinstance(summary, Mapping):
            out.extend(e for e in summary.get("evals", ()) if isinstance(e, Mapping))
    return out


def refresh_evaluations(session: Session, trace_ids: Collection[str]) -> list[str]:
    """Recompute `evaluations` of those of `trace_ids` that are stored; write the ones
    that changed (and their `updated_at`); return their ids."""
    ids = sorted(set(trace_ids))
    if not ids:
        return []
    t = TRACES
    query = select(t.c.trace_id, t.c.spans, t.c.evaluations).where(t.c.trace_id.in_(ids))
    if is_postgresql(session):
        query = query.with_for_update()
    current = {row.trace_id: row for row in session.execute(query)}
    if not current:
        return []
    logged: dict[str, list[Mapping[str, Any]]] = {}
    events = select(
        EVENTS.c.trace_id,
        EVENTS.c.name,
        EVENTS.c.time_ns,
        EVENTS.c.score,
        EVENTS.c.label,
        EVENTS.c.explanation,
        EVENTS.c.error_type,
    ).where(EVENTS.c.trace_id.in_(sorted(current)))
    for row in session.execute(events):
        item = {"name": row.name, "time": row.time_ns, **{f: getattr(row, f) for f in FIELDS}}
        logged.setdefault(row.trace_id, []).append(item)
    now = utcnow()
    changes = []
    for trace_id, row in sorted(current.items()):
        merged = merge_evaluations([*span_evaluations(row.spans), *logged.get(trace_id, ())])
        if not merged or merged == (row.evaluations or {}):
            continue
        changes.append({"b_trace_id": trace_id, "b_evaluations": merged, "b_updated_at": now})
    if changes:
        session.execute(
            update(t)
            .where(t.c.trace_id == bindparam("b_trace_id"))
            .values(evaluations=bindparam("b_evaluations"), updated_at=bindparam("b_updated_at")),
            changes,
        )
    return [c["b_trace_id"] for c in changes]
