"""Trace retention: traces older than the retention go, with everything that hangs off them.

What goes with a trace: its per-job outcomes (`job_outcomes`, by the trace's timestamp)
and the jobs' per-minute sums and quantile bins of the minutes before the cutoff
(`job_buckets`, `job_bucket_bins`),
its key (`trace_keys`, PostgreSQL), and the rows that name it by `trace_id`: samples,
feedback, human labels, evaluation events and judgments (`partitions.DEPENDENTS`). Those
are a small share of the traces (a trace is sampled at a few percent, feedback and
labels come for some), so they are deleted row by row, not partitioned. `metric_results`
and `embeddings` have retentions of their own; `dead_letters` belong to no trace.

PostgreSQL (partitioned, `collector/store/partitions.py`): every daily partition that
ends at or before the cutoff is detached and dropped — no long DELETE, no dead tuples,
the space is back at once — one partition per transaction; the default partition's
older rows (out-of-range timestamps, few) are deleted. So up to a day more than the
retention is kept. Beside the jobs' reads, under the regime of the making of partitions
(`collector/store/lock_retry.py`): each transaction waits at most
`partitions.LOCK_TIMEOUT` for a lock and is tried again with growing pauses; a day whose
readers hold it through every try is left for the next pass (`RetentionReport.busy`).

SQLite (the simple layout): rows are deleted in chunks of `CHUNK` traces, one transaction
each, so the consumer (SQLite's one writer) is never held up for long.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from sqlalchemy import Engine, delete, select

from collector.store import partitions
from collector.store.lock_retry import LOCK_TRIES, with_lock_retries
from collector.store.models import (
    BUCKET_S,
    EvaluationEventRow,
    Feedback,
    HumanLabel,
    JobBucket,
    JobBucketBin,
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
    busy: list[str] = field(default_factory=list)
    """PostgreSQL: the expired partitions (and default partitions) whose locks other
    transactions held through every try: left for the next pass."""
    traces: int = 0
    outcomes: int = 0
    buckets: int = 0
    """Rows of the jobs' per-minute sums removed."""
    bins: int = 0
    """Rows of the jobs' per-minute quantile bins removed."""

    def count(self, table: str, rows: int | None) -> bool:
        """Add `rows` removed from `table`; False when there are none to add (None: the
        step stayed busy)."""
        if rows is None:
            return False
        if table == "traces":
            self.traces += rows
        else:
            self.outcomes += rows
        return True


def expire(engine: Engine, cutoff: datetime, tries: int = LOCK_TRIES) -> RetentionReport:
    """Remove the traces whose timestamp is before `cutoff` (PostgreSQL: those of whole
    days ending by then; `tries` attempts at each while readers hold its locks) and
    everything that hangs off them."""
    if engine.dialect.name == "postgresql":
        report = _expire_partitions(engine, cutoff, tries)
    else:
        report = _expire_rows(engine, cutoff)
    report.buckets, report.bins = _expire_buckets(engine, cutoff)
    return report


def _expire_buckets(engine: Engine, cutoff: datetime) -> tuple[int, int]:
    """The jobs' per-minute sums and bins (`job_buckets`, `job_bucket_bins`) of minutes
    wholly before the cutoff, in one transaction (unpartitioned tables: plain DELETEs,
    which block no reader). The bins, tens of times more rows, job by job through their
    primary key (job, bucket, ...) rather than by a scan of the table; a job's bins are
    written with its sums, so the jobs with sums are all the jobs with bins. Rows removed
    from each."""
    first_kept = math.ceil(cutoff.timestamp() / BUCKET_S)
    with engine.begin() as conn:
        bins = 0
        for job in list(conn.execute(select(JobBucket.job).distinct()).scalars()):
            b = JobBucketBin
            expired = conn.execute(delete(b).where(b.job == job, b.bucket < first_kept))
            bins += int(expired.rowcount or 0)
        sums = conn.execute(delete(JobBucket).where(JobBucket.bucket < first_kept))
    return int(sums.rowcount or 0), bins


def _expire_partitions(engine: Engine, cutoff: datetime, tries: int) -> RetentionReport:
    report = RetentionReport()
    with engine.connect() as conn:
        tables = [t for t in partitions.PARTITIONED if partitions.is_partitioned(conn, t)]
        days = {t: partitions.expired_days(conn, t, cutoff) for t in tables}
        conn.rollback()
    for table in tables:
        for day in days[table]:
            name = partitions.partition_name(table, day)
            drop = partial(partitions.drop_partition, table=table, day=day)
            if report.count(table, with_lock_retries(engine, drop, name, tries)):
                report.dropped.append(name)
            else:
                report.busy.append(name)
        default = partitions.default_name(table)
        older = partial(partitions.expire_default, table=table, cutoff=cutoff)
        if not report.count(table, with_lock_retries(engine, older, default, tries)):
            report.busy.append(default)
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
