"""Trace retention: traces older than the retention go, with everything that hangs off them.

What goes with a trace: its per-job outcomes (`job_outcomes`, by the trace's timestamp)
and the jobs' per-minute sums of the minutes before the cutoff (`job_buckets`),
its key (`trace_keys`, PostgreSQL), and the rows that name it by `trace_id`: samples,
feedback, human labels, evaluation events and judgments (`partitions.DEPENDENTS`). Those
are a small share of the traces (a trace is sampled at a few percent, feedback and
labels come for some), so they are deleted row by row, not partitioned. `metric_results`
and `embeddings` have retentions of their own; `dead_letters` belong to no trace.

PostgreSQL (partitioned, `collector/store/partitions.py`): every daily partition that
ends at or before the cutoff is detached and dropped — no long DELETE, no dead tuples,
the space is back at once — one partition per transaction; the default partition's
older rows (out-of-range timestamps, few) are deleted. So up to a day more than the
retention is kept. SQLite (the simple layout): rows are deleted in chunks of `CHUNK`
traces, one transaction each, so the consumer (SQLite's one writer) is never held up
for long.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine, delete, select

from collector.store import partitions
from collector.store.models import (
    BUCKET_S,
    EvaluationEventRow,
    Feedback,
    HumanLabel,
    JobBucket,
    JobOutcome,
    Judgment,
    SampleRecord,
    Trace,
)

logger = logging.getLogger(__name__)

CHUNK = 5000
"""SQLite: traces (or outcomes) deleted per transaction."""

_DEPENDENT_MODELS = (SampleRecord, Feedback, HumanLabel, EvaluationEventRow, Judgment)


@dataclass
class RetentionReport:
    """What one retention pass removed."""

    dropped: list[str] = field(default_factory=list)
    """PostgreSQL: the partitions dropped."""
    traces: int = 0
    outcomes: int = 0
    buckets: int = 0
    """Rows of the jobs' per-minute sums removed."""


def expire(engine: Engine, cutoff: datetime) -> RetentionReport:
    """Remove the traces whose timestamp is before `cutoff` (PostgreSQL: those of whole
    days ending by then) and everything that hangs off them."""
    if engine.dialect.name == "postgresql":
        report = _expire_partitions(engine, cutoff)
    else:
        report = _expire_rows(engine, cutoff)
    report.buckets = _expire_buckets(engine, cutoff)
    return report


def _expire_buckets(engine: Engine, cutoff: datetime) -> int:
    """The jobs' per-minute sums (`job_buckets`) of minutes wholly before the cutoff."""
    first_kept = math.ceil(cutoff.timestamp() / BUCKET_S)
    with engine.begin() as conn:
        result = conn.execute(delete(JobBucket).where(JobBucket.bucket < first_kept))
    return int(result.rowcount or 0)


def _expire_partitions(engine: Engine, cutoff: datetime) -> RetentionReport:
    report = RetentionReport()
    with engine.connect() as conn:
        tables = [t for t in partitions.PARTITIONED if partitions.is_partitioned(conn, t)]
        days = {t: partitions.expired_days(conn, t, cutoff) for t in tables}
        conn.rollback()
    for table in tables:
        for day in days[table]:
            with engine.begin() as conn:
                partitions.limit_lock_wait(conn)
                rows = partitions.drop_partition(conn, table, day)
            report.dropped.append(partitions.partition_name(table, day))
            if table == "traces":
                report.traces += rows
            else:
                report.outcomes += rows
        with engine.begin() as conn:
            rows = partitions.expire_default(conn, table, cutoff)
        if table == "traces":
            report.traces += rows
        else:
            report.outcomes += rows
    return report


def _expire_rows(engine: Engine, cutoff: datetime) -> RetentionReport:
    report = RetentionReport()
    while True:
        with engine.begin() as conn:
            ids = list(
                conn.execute(
                    select(Trace.trace_id).where(Trace.timestamp < cutoff).limit(CHUNK)
                ).scalars()
            )
            if not ids:
                break
            for model in _DEPENDENT_MODELS:
                conn.execute(delete(model).where(model.trace_id.in_(ids)))
            conn.execute(delete(Trace).where(Trace.trace_id.in_(ids)))
        report.traces += len(ids)
    while True:
        with engine.begin() as conn:
            chunk = select(JobOutcome.id).where(JobOutcome.ts < cutoff).limit(CHUNK)
            found = list(conn.execute(chunk).scalars())
            if not found:
                break
            conn.execute(delete(JobOutcome).where(JobOutcome.id.in_(found)))
        report.outcomes += len(found)
    return report
