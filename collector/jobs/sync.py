"""A job's record of what it has evaluated, kept in step with the database.

Per-trace outcomes live in `job_outcomes` (shared by every replica) and, in memory, in
the job's `OutcomeColumns`; the `job_state` watermark is the newest trace version done.
`TraceCursor` loads the columns once after a start (the longest window), then tails the
rows another replica wrote since; it lists the traces new or updated since the watermark
(minus `GRACE`, for transactions that committed late) whose version the columns do not
hold yet; and it records a run's new outcomes in both places and moves the watermark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Row, Text, cast, select
from sqlalchemy.orm import Session

from collector.jobs.definition import Filter
from collector.jobs.observers import Evaluated
from collector.jobs.outcome_store import upsert_outcomes
from collector.jobs.outcomes import OutcomeColumns, encode_outcome
from collector.jobs.seams import StoredTrace
from collector.jobs.slices import DEFAULT_DIMENSIONS, slice_values
from collector.jobs.windows import group_values
from collector.store.models import JobOutcome, JobState, Trace
from evaluators.outcome import Outcome

GRACE = timedelta(minutes=5)
"""Traces updated this long before the watermark are looked at again (late commits)."""

Pending = tuple[int, str, datetime]
"""(traces.id, trace_id, updated_at) of a trace version still to evaluate."""


def epoch(ts: datetime) -> float:
    """Seconds since the epoch; a naive timestamp (as SQLite returns them) is UTC."""
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def version_s(row: StoredTrace) -> float:
    """A stored trace's version: its `updated_at` in epoch seconds."""
    return epoch(row.updated_at)


class TraceCursor:
    """Which trace versions one job has evaluated: its columns and its watermark."""

    def __init__(
        self,
        job: str,
        columns: OutcomeColumns,
        group_labels: Sequence[str],
        longest_s: float,
        slice_dimensions: Sequence[str] = DEFAULT_DIMENSIONS,
    ) -> None:
        self.job = job
        self.slice_dimensions = slice_dimensions
        self.columns = columns
        self.group_labels = group_labels
        self.longest_s = longest_s
        self.watermark: datetime | None = None
        self._loaded = False

    def load(self, session: Session, state: JobState, now: datetime) -> None:
        """Bring the columns up to date with `job_outcomes` (and the watermark with
        `job_state`): everything in the longest window at first, then what changed."""
        # JSON read as text and parsed with orjson: after a restart this loads one row per
        # trace of the longest window (a million for the UX job at ~100 traces a minute).
        query = select(
            JobOutcome.trace_id,
            JobOutcome.trace_updated_at,
            JobOutcome.ts,
            cast(JobOutcome.groups, Text),
            cast(JobOutcome.outcomes, Text),
        ).where(JobOutcome.job == self.job)
        if not self._loaded:
            query = query.where(JobOutcome.ts >= now - timedelta(seconds=self.longest_s))
            self.watermark = state.watermark
        elif self.watermark is not None:
            query = query.where(JobOutcome.trace_updated_at > self.watermark - GRACE)
        else:
            query = query.where(JobOutcome.ts >= now - timedelta(seconds=self.longest_s))
        columns = self.columns
        for trace_id, updated, ts, groups, outcomes in session.execute(query):
            updated_s = epoch(updated)
            if columns.is_current(trace_id, updated_s):
                continue
            columns.put_encoded(
                trace_id,
                updated_s,
                epoch(ts),
                orjson.loads(groups) if groups else None,
                orjson.loads(outcomes) if outcomes else {},
            )
        if state.watermark is not None and (
            self.watermark is None or state.watermark > self.watermark
        ):
            self.watermark = state.watermark
        self._loaded = True

    def pending(
        self, session: Session, now: datetime, candidates: Filter, limit: int | None
    ) -> list[Pending]:
        """The candidates in the longest window whose version is not evaluated yet, oldest
        update first (at most `limit`)."""
        query = select(Trace.id, Trace.trace_id, Trace.updated_at).where(
            Trace.timestamp >= now - timedelta(seconds=self.longest_s)
        )
        if self.watermark is not None:
            query = query.where(Trace.updated_at > self.watermark - GRACE)
        query = candidates(query).order_by(Trace.updated_at, Trace.id)
        pending = [
            (row_id, trace_id, updated)
            for row_id, trace_id, updated in session.execute(query)
            if not self.columns.is_current(trace_id, epoch(updated))
        ]
        return pending if limit is None else pending[:limit]

    def record(
        self,
        session: Session,
        rows: Sequence[Row[Any]],
        outcomes: Mapping[str, Sequence[Outcome]],
    ) -> list[Evaluated]:
        """Put the outcomes of `rows` (one per metric and row, in order) in the columns and
        in `job_outcomes` (the caller commits), and move the watermark past them. Returns
        them as `Evaluated` values for the observers."""
        records = []
        evaluated = []
        for i, row in enumerate(rows):
            groups = group_values(row.tags, self.group_labels, self.columns.max_length)
            per_trace = {m: o[i] for m, o in outcomes.items()}
            self.columns.put(
                row.trace_id, epoch(row.updated_at), epoch(row.timestamp), groups, per_trace
            )
            evaluated.append(
                Evaluated(self.job, row.trace_id, epoch(row.timestamp), groups, per_trace)
            )
            records.append(
                {
                    "job": self.job,
                    "trace_id": row.trace_id,
                    "trace_updated_at": row.updated_at,
                    "ts": row.timestamp,
                    "groups": groups or None,
                    "outcomes": {m: encode_outcome(o) for m, o in per_trace.items()},
                    "slices": slice_values(
                        row.tags,
                        model=getattr(row, "model", None),
                        question=row.question,
                        dimensions=self.slice_dimensions,
                        max_length=self.columns.max_length,
                    )
                    or None,
                }
            )
        upsert_outcomes(session, records)
        latest = max(r.updated_at for r in rows)
        if self.watermark is None or latest > self.watermark:
            self.watermark = latest
        return evaluated
