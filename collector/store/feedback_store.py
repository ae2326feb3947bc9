"""Feedback events: stored once (by `event_hash`) and folded onto their trace when both exist.

The trace's feedback fields are always recomputed from *all* feedback rows of the trace in
(timestamp, event_hash) order: each event sets the fields it carries, the latest wins. The
result does not depend on arrival order, and folding again changes nothing — so events
that arrive before their trace, out of order, or twice all end in the same state.
Feedback `relevant_ids` replaces the trace's own; a graded `relevance` is left as sent.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.orm import Session

from collector.store.bulk import insert_ignore_returning, is_postgresql, upsert_insert
from collector.store.id_filter import among
from collector.store.models import Feedback, HumanLabel, utcnow
from collector.store.records import FeedbackEvent, TraceRecord
from collector.store.repository import TRACES, stored_candidates

FEEDBACK: Table = Feedback.__table__  # type: ignore[assignment]
HUMAN_LABELS: Table = HumanLabel.__table__  # type: ignore[assignment]

# traces column -> feedback column it is taken from
_FIELDS = (
    ("judge_label", "judge_label"),
    ("relevant_ids", "relevant_ids"),
    ("feedback_rating", "rating"),
    ("feedback_comment", "comment"),
)


@dataclass(frozen=True, slots=True)
class TraceState:
    """What sampling needs to know about a trace after feedback was applied."""

    trace_id: str
    has_ground_truth: bool
    has_answer: bool
    tags: dict[str, Any] | None
    has_shown_url: bool = False
    is_request: bool = True
    """False for a trace that is no user request (`traces.not_request`): never sampled."""


def insert_feedback(session: Session, events: Sequence[FeedbackEvent]) -> list[FeedbackEvent]:
    """Store events not seen before; return the new ones (the rest are replays)."""
    unique: dict[str, FeedbackEvent] = {}
    for ev in events:
        unique.setdefault(ev.event_hash, ev)
    if not unique:
        return []
    now = utcnow()
    rows = [
        {
            "event_hash": ev.event_hash,
            "trace_id": ev.trace_id,
            "timestamp": ev.timestamp,
            "received_at": now,
            "judge_label": ev.judge_label,
            "relevant_ids": list(ev.relevant_ids) if ev.relevant_ids is not None else None,
            "rating": ev.rating,
            "comment": ev.comment,
            "applied": False,
        }
        for ev in unique.values()
    ]
    keys = ["event_hash"]
    inserted = {r[0] for r in insert_ignore_returning(session, FEEDBACK, rows, keys, keys)}
    return [ev for h, ev in unique.items() if h in inserted]


def traces_with_pending_feedback(session: Session, trace_ids: Collection[str]) -> list[str]:
    """Of `trace_ids`, those that have feedback not applied yet (one query)."""
    if not trace_ids:
        return []
    column = FEEDBACK.c.trace_id
    match = among(session, column, trace_ids)
    stmt = select(column).where(FEEDBACK.c.applied.is_(False), match).distinct()
    return list(session.execute(stmt).scalars())


def apply_feedback(session: Session, trace_ids: Collection[str]) -> list[TraceState]:
    """Fold all feedback onto those of `trace_ids` that are stored; return their new state."""
    ids = stored_candidates(session, trace_ids)
    if not ids:
        return []
    t = TRACES
    query = select(
        t.c.trace_id,
        t.c.judge_label,
        t.c.relevant_ids,
        t.c.feedback_rating,
        t.c.feedback_comment,
        t.c.relevance,
        t.c.answer,
        t.c.tags,
        t.c.shown_url,
        t.c.not_request,
    ).where(t.c.trace_id.in_(ids))
    if is_postgresql(session):
        query = query.with_for_update()
    current = {row.trace_id: dict(row._mapping) for row in session.execute(query)}
    if not current:
        return []
    fb = FEEDBACK
    events = session.execute(
        select(fb)
        .where(fb.c.trace_id.in_(list(current)))
        .order_by(fb.c.trace_id, fb.c.timestamp, fb.c.event_hash)
    )
    folded = {tid: dict(row) for tid, row in current.items()}
    for ev in events:
        row = folded[ev.trace_id]
        for trace_col, fb_col in _FIELDS:
            value = getattr(ev, fb_col)
            if value is not None:
                row[trace_col] = value
    now = utcnow()
    changed = [
        {"b_trace_id": tid, "b_updated_at": now, **{f"b_{c}": row[c] for c, _ in _FIELDS}}
        for tid, row in folded.items()
        if any(row[c] != current[tid][c] for c, _ in _FIELDS)
    ]
    if changed:
        session.execute(
            update(t)
            .where(t.c.trace_id == bindparam("b_trace_id"))
            .values(
                updated_at=bindparam("b_updated_at"),
                **{c: bindparam(f"b_{c}") for c, _ in _FIELDS},
            ),
            changed,
        )
    session.execute(
        update(fb)
        .where(fb.c.trace_id.in_(list(current)), fb.c.applied.is_(False))
        .values(applied=True)
    )
    return [
        TraceState(
            trace_id=tid,
            has_ground_truth=row["relevant_ids"] is not None or row["relevance"] is not None,
            has_answer=row["answer"] is not None,
            tags=row["tags"],
            has_shown_url=bool(row["shown_url"]),
            is_request=row["not_request"] is None,
        )
        for tid, row in folded.items()
    ]


def store_labels(session: Session, sources: Sequence[TraceRecord | FeedbackEvent]) -> int:
    """Keep the human labels of traces and feedback events, once per (trace, metric,
    labeler): a label replaces a stored one only when it is newer (at an equal timestamp,
    the larger value), so the result does not depend on arrival order and a replay
    changes nothing. Returns the number of labels offered."""
    best: dict[tuple[str, str, str], dict[str, Any]] = {}
    now = utcnow()
    for src in sources:
        for metric, value in (src.labels or {}).items():
            key = (src.trace_id, metric, src.labeler or "")
            row = {
                "trace_id": key[0],
                "metric": metric,
                "labeler": key[2],
                "value": value,
                "timestamp": src.timestamp,
                "received_at": now,
            }
            seen = best.get(key)
            if seen is None or (row["timestamp"], value) > (seen["timestamp"], seen["value"]):
                best[key] = row
    if not best:
        return 0
    t = HUMAN_LABELS
    stmt = upsert_insert(session, t)
    newer = (stmt.excluded.timestamp > t.c.timestamp) | (
        (stmt.excluded.timestamp == t.c.timestamp) & (stmt.excluded.value > t.c.value)
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["trace_id", "metric", "labeler"],
        set_={
            "value": stmt.excluded.value,
            "timestamp": stmt.excluded.timestamp,
            "received_at": stmt.excluded.received_at,
        },
        where=newer,
    )
    session.execute(stmt, list(best.values()))
    return len(best)
