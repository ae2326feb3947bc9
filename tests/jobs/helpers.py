"""Stored traces for job tests, written straight through the ORM."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from collector.store.models import SampleRecord, Trace


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
