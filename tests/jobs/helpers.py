"""Stored traces for job tests, written straight through the ORM."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from collector.store.models import SampleRecord, Trace
from evaluators.sample import Sample


def add_trace(
    session: Session,
    trace_id: str,
    ts: datetime,
    *,
    purposes: tuple[str, ...] = (),
    updated_at: datetime | None = None,
    **fields: Any,
) -> Trace:
    row = Trace(
        trace_id=trace_id,
        timestamp=ts,
        question=fields.pop("question", f"question {trace_id}"),
        updated_at=updated_at or ts,
        received_at=ts,
        **fields,
    )
    session.add(row)
    for purpose in purposes:
        session.add(SampleRecord(trace_id=trace_id, purpose=purpose, sampled_at=ts))
    return row


def row_to_sample(row: Trace) -> Sample:
    """A stand-in for collector.samples.trace_to_sample (same mapping, SPEC §2 names)."""
    record: dict[str, Any] = {
        "trace_id": row.trace_id,
        "timestamp": row.timestamp,
        "question": row.question,
        "answer": row.answer,
        "contexts": row.contexts,
        "reference": row.reference,
        "relevant_ids": row.relevant_ids,
        "relevance": row.relevance,
        "session_id": row.session_id,
        "turn": row.turn,
        "judge_label": row.judge_label,
        "tags": row.tags,
    }
    if row.judge_decision is not None:
        record["judge"] = {"decision": row.judge_decision, "latency_ms": row.judge_latency_ms}
    if row.cache_hit is not None:
        record["cache"] = {"hit": row.cache_hit, "similarity": row.cache_similarity}
    return Sample.from_record(record)
