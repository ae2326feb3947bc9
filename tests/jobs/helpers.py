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


def add_retrieval_traces(
    session: Session, now: datetime, count: int, hours: float, seed: int, hit_rate: float = 0.6
) -> list[tuple[datetime, float]]:
    """`count` benchmark-sampled traces spread over the `hours` before `now`, two contexts
    each, the relevant one first with chance `hit_rate`, tenants acme and beta in turn;
    returns (timestamp, hit@1) of each. The caller commits."""
    from datetime import timedelta

    import numpy as np

    rng = np.random.default_rng(seed)
    hits = []
    for i in range(count):
        ts = now - timedelta(hours=float(rng.uniform(0, hours)))
        hit = bool(rng.random() < hit_rate)
        add_trace(
            session,
            f"t{i}",
            ts,
            purposes=("real_users_benchmark",),
            contexts=[{"id": "d1"}, {"id": "d2"}],
            relevant_ids=["d1" if hit else "d2"],
            tags={"tenant": "acme" if i % 2 else "beta"},
        )
        hits.append((ts, float(hit)))
    return hits
