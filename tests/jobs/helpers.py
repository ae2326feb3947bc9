"""Stored traces for job tests, written straight through the ORM."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from collector.jobs.run.definition import JobReport
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


def bucket_rows(session: Session, job: str) -> dict[tuple[Any, ...], tuple[float, ...]]:
    """The job's stored `job_buckets` rows: key -> (n, total, squares, positives)."""
    from sqlalchemy import select

    from collector.store.models import JobBucket

    rows = session.execute(select(JobBucket).where(JobBucket.job == job)).scalars()
    return {
        (r.metric, r.grp, r.bucket, r.outcome): (r.n, r.total, r.squares, r.positives) for r in rows
    }


def recomputed_bucket_rows(session: Session, job: str) -> dict[tuple[Any, ...], tuple[float, ...]]:
    """The bucket rows the job's stored outcomes make, summed afresh."""
    return {k: (s.n, s.total, s.squares, s.positives) for k, s in _recounted(session, job).items()}


def bin_rows(session: Session, job: str) -> dict[tuple[Any, ...], int]:
    """The job's stored `job_bucket_bins` rows: (metric, grp, bucket, bin) -> count."""
    from sqlalchemy import select

    from collector.store.models import JobBucketBin

    rows = session.execute(select(JobBucketBin).where(JobBucketBin.job == job)).scalars()
    return {(r.metric, r.grp, r.bucket, r.bin): r.n for r in rows}


def recomputed_bin_rows(session: Session, job: str) -> dict[tuple[Any, ...], int]:
    """The bin rows the job's stored outcomes make, counted afresh."""
    return dict(_recounted(session, job).bin_items())


def assert_buckets_match_outcomes(session: Session, job: str) -> None:
    """Every contribution counted exactly once: the stored sums are the outcomes' sums,
    the stored bins (quantile metrics) the outcomes' bins."""
    import pytest

    stored, fresh = bucket_rows(session, job), recomputed_bucket_rows(session, job)
    assert stored.keys() == fresh.keys()
    for key, want in fresh.items():
        assert stored[key] == pytest.approx(want, rel=1e-12, abs=1e-9), key
    assert bin_rows(session, job) == recomputed_bin_rows(session, job)


def _recounted(session: Session, job: str) -> Any:
    """The `Changes` of every stored outcome of the job, added afresh."""
    from datetime import UTC

    import orjson
    from sqlalchemy import Text, cast, select

    from collector.jobs.buckets.contributions import Contributions
    from collector.store.models import JobOutcome

    gathered = Contributions()
    query = select(
        JobOutcome.ts, cast(JobOutcome.groups, Text), cast(JobOutcome.outcomes, Text)
    ).where(JobOutcome.job == job)
    for ts, groups, outcomes in session.execute(query):
        at = (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp()
        gathered.add(at, orjson.loads(groups) if groups else None, orjson.loads(outcomes))
    return gathered.changes()


def ok_or_no_vectors(report: JobReport) -> bool:
    """A run that went well: `ok`, or the topics job skipped for want of stored question
    vectors (SQLite does not keep them by default: `embeddings.persist`)."""
    return report.status == "ok" or (report.job, report.status) == ("topics", "skipped")
