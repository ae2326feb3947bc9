"""Bulk, idempotent writes of traces, dead letters and samples (one statement per table per batch).

Every insert is `INSERT ... ON CONFLICT DO NOTHING ... RETURNING <key>`, so a replayed
message changes nothing and the caller still learns which rows are new (the rest are
duplicates). Nothing here commits: the caller owns the transaction.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from collector.store import copy_text as ct
from collector.store import partitions
from collector.store.bulk import copy_new_rows, insert_ignore_returning, is_postgresql
from collector.store.id_filter import among
from collector.store.models import DeadLetter, SampleRecord, Trace, TraceKey, utcnow
from collector.store.records import TraceRecord

TRACES: Table = Trace.__table__  # type: ignore[assignment]
TRACE_KEYS: Table = TraceKey.__table__  # type: ignore[assignment]
DEAD_LETTERS: Table = DeadLetter.__table__  # type: ignore[assignment]
SAMPLES: Table = SampleRecord.__table__  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class DeadLetterRow:
    """A rejected message, kept whole, at its Kafka position."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    raw: bytes
    reason: str
    detail: str


def trace_row(
    rec: TraceRecord, now: datetime, spans: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The `traces` row (column names) for a validated record."""
    judge = rec.judge
    return {
        "trace_id": rec.trace_id,
        "timestamp": rec.timestamp,
        "received_at": now,
        "updated_at": now,
        "source": rec.source,
        "question": rec.question,
        "answer": rec.answer,
        "contexts": [c.to_json() for c in rec.contexts] if rec.contexts else None,
        "reference": rec.reference,
        "relevant_ids": list(rec.relevant_ids) if rec.relevant_ids is not None else None,
        "relevance": rec.relevance,
        "session_id": rec.session_id,
        "user_id": rec.user_id,
        "turn": rec.turn,
        "judge_decision": judge.decision if judge else None,
        "judge_score": judge.score if judge else None,
        "judge_model": judge.model if judge else None,
        "judge_latency_ms": judge.latency_ms if judge else None,
        "judge_label": rec.judge_label,
        "cache_hit": rec.cache_hit,
        "cache_similarity": rec.cache_similarity,
        "model": rec.model,
        "latency_ms": rec.latency_ms,
        "latency_stages": rec.latency_stages,
        "usage": rec.usage,
        "tags": rec.tags,
        "metadata": rec.metadata,
        "shown_url": list(rec.shown_urls) if rec.shown_urls is not None else None,
        "spans": spans,
        "not_request": rec.not_request,
        "feedback_rating": None,
        "feedback_comment": None,
    }


# column order of `trace_copy_line` (the COPY fast path); spans and feedback stay NULL
TRACE_COLUMNS = (
    "trace_id",
    "timestamp",
    "received_at",
    "updated_at",
    "source",
    "question",
    "answer",
    "contexts",
    "reference",
    "relevant_ids",
    "relevance",
    "session_id",
    "user_id",
    "turn",
    "judge_decision",
    "judge_score",
    "judge_model",
    "judge_latency_ms",
    "judge_label",
    "cache_hit",
    "cache_similarity",
    "model",
    "latency_ms",
    "usage",
    "tags",
    "metadata",
    "latency_stages",
    "shown_url",
)


def trace_copy_line(rec: TraceRecord, now: bytes) -> bytes:
    """A new JSON trace as one COPY text line of `TRACE_COLUMNS` (`now`: encoded timestamp)."""
    judge = rec.judge
    text, json, number, boolean = ct.text, ct.json, ct.number, ct.boolean
    return ct.line(
        (
            text(rec.trace_id),
            ct.timestamp(rec.timestamp),
            now,
            now,
            text(rec.source),
            text(rec.question),
            text(rec.answer),
            json([c.to_json() for c in rec.contexts]) if rec.contexts else ct.NULL,
            text(rec.reference),
            json(rec.relevant_ids),
            json(rec.relevance),
            text(rec.session_id),
            text(rec.user_id),
            number(rec.turn),
            boolean(judge.decision) if judge else ct.NULL,
            number(judge.score) if judge else ct.NULL,
            text(judge.model) if judge else ct.NULL,
            number(judge.latency_ms) if judge else ct.NULL,
            boolean(rec.judge_label),
            boolean(rec.cache_hit),
            number(rec.cache_similarity),
            text(rec.model),
            number(rec.latency_ms),
            json(rec.usage),
            json(rec.tags),
            json(rec.metadata),
            json(rec.latency_stages),
            json(rec.shown_urls),
        )
    )


def insert_traces(session: Session, records: Sequence[TraceRecord]) -> list[TraceRecord]:
    """Insert records not stored yet; return the newly stored ones (the rest are duplicates).

    Records repeating a trace id within `records` keep only the first occurrence.
    """
    unique: dict[str, TraceRecord] = {}
    for rec in records:
        unique.setdefault(rec.trace_id, rec)
    for tid in existing_trace_ids(session, list(unique)):
        del unique[tid]  # cheap to ask; a replayed 8 KB trace is costly to send and parse
    if not unique:
        return []
    now = utcnow()
    if is_postgresql(session):
        stamp = ct.timestamp(now)
        lines = (trace_copy_line(rec, stamp) for rec in unique.values())
        if copy_new_rows(session, TRACES, TRACE_COLUMNS, lines):
            return list(unique.values())
        # a concurrent writer stored some meanwhile: the savepoint undid the COPY
    rows = [trace_row(rec, now) for rec in unique.values()]
    conflict = trace_conflict(session)
    inserted = {
        r[0] for r in insert_ignore_returning(session, TRACES, rows, conflict, ["trace_id"])
    }
    return [rec for tid, rec in unique.items() if tid in inserted]


def trace_conflict(session: Session) -> list[str]:
    """The `ON CONFLICT` target of an insert into `traces`.

    SQLite (and the plain layout): the unique `trace_id`. PostgreSQL partitioned by
    timestamp (rev. 0011): the unique (trace_id, timestamp); a row whose id is stored
    under another timestamp is skipped by the table's trigger instead (`trace_keys`), so
    either way an insert stores only new trace ids and RETURNING names exactly those.
    """
    return ["trace_id", "timestamp"] if _partitioned(session) else ["trace_id"]


def _partitioned(session: Session) -> bool:
    return partitions.partitioned_layout(session.connection())


def stored_candidates(session: Session, trace_ids: Collection[str]) -> list[str]:
    """`trace_ids` narrowed, on the partitioned layout, to those stored (one probe of
    `trace_keys` each), so that a lookup of traces by id (feedback, OTLP fragments)
    probes every daily partition's index only for traces that exist; elsewhere all of
    them, sorted. A trace stored meanwhile by another writer is caught by the caller's
    insert, as before (its key is taken)."""
    ids = sorted(set(trace_ids))
    return sorted(existing_trace_ids(session, ids)) if _partitioned(session) else ids


def existing_trace_ids(session: Session, trace_ids: Sequence[str]) -> list[str]:
    """Which of `trace_ids` are stored already (one query; on PostgreSQL one probe of
    `trace_keys` per id rather than of every partition's index)."""
    if not trace_ids:
        return []
    column = (TRACE_KEYS if _partitioned(session) else TRACES).c.trace_id
    return list(session.execute(select(column).where(among(session, column, trace_ids))).scalars())


def insert_dead_letters(session: Session, letters: Sequence[DeadLetterRow]) -> int:
    """Store rejected messages once per (topic, partition, offset); return how many are new."""
    if not letters:
        return 0
    now = utcnow()
    rows = [
        {
            "topic": d.topic,
            "partition": d.partition,
            "offset": d.offset,
            "key": d.key,
            "raw": d.raw,
            "reason": d.reason,
            "detail": d.detail,
            "received_at": now,
        }
        for d in letters
    ]
    conflict = ["topic", "partition", "offset"]
    return len(insert_ignore_returning(session, DEAD_LETTERS, rows, conflict, ["id"]))


def insert_samples(session: Session, decisions: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Record (trace_id, purpose) sample memberships; return the newly recorded ones."""
    unique = list(dict.fromkeys(decisions))
    if not unique:
        return []
    now = utcnow()
    rows = [{"trace_id": t, "purpose": p, "sampled_at": now} for t, p in unique]
    keys = ["trace_id", "purpose"]
    return [(t, p) for t, p in insert_ignore_returning(session, SAMPLES, rows, keys, keys)]
