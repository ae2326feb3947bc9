"""A job's record of what it has evaluated, kept in step with the database.

Per-trace outcomes live in `job_outcomes` (shared by every replica) and, in memory, in
the job's `OutcomeColumns`; the `job_state` watermark is the newest trace version done.
`TraceCursor` loads the columns once after a start (the longest window), then tails the
rows another replica wrote since; it lists the traces new or updated since the watermark
(minus `GRACE`, for transactions that committed late) whose version the columns do not
hold yet; and it records a run's new outcomes in both places and moves the watermark.

Traces waiting to retry a transient judge failure (`retry.py`) are older than the
watermark, so the watermark query cannot find them: `pending` adds them from the marked
rows of `job_outcomes`, read afresh each run (another replica may have retried them).

A sharded job (`sharded.py`) has a watermark per shard: its columns `tail` every
worker's rows from the oldest of them, and `pending` lists only the traces of the shards
a worker leased (a `ShardScope`), each against its own shard's watermark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Row, Select, Text, cast, literal, select
from sqlalchemy.orm import Session

from collector.jobs.candidates import Filter, requests
from collector.jobs.observers import Evaluated
from collector.jobs.outcome_store import upsert_outcomes
from collector.jobs.outcomes import OutcomeColumns
from collector.jobs.retry import MARKER_PATTERN, RetryPolicy, Waiting, waiting_of
from collector.jobs.seams import StoredTrace
from collector.jobs.shard_scope import ShardScope, shard_of
from collector.jobs.slices import DEFAULT_DIMENSIONS, slice_values
from collector.jobs.versions import DEFAULT_SOURCES
from collector.jobs.windows import group_values
from collector.store.models import JobOutcome, JobState, Trace
from evaluators.outcome import Outcome

GRACE = timedelta(minutes=5)
"""Traces updated this long before the watermark are looked at again (late commits)."""

_CHUNK = 1000
_NO_RETRY = RetryPolicy(0)
"""Jobs without a judge: every failure is final at once (so nothing is ever scheduled)."""

STORED = (
    JobOutcome.trace_id,
    JobOutcome.trace_updated_at,
    JobOutcome.ts,
    cast(JobOutcome.groups, Text),
    cast(JobOutcome.outcomes, Text),
)
"""A stored outcome row as the columns are loaded from it (JSON as text, for orjson)."""


class Pending(NamedTuple):
    """A trace version still to evaluate: its row, id, version and shard (0 unsharded)."""

    row_id: int
    trace_id: str
    updated: datetime
    shard: int = 0


def epoch(ts: datetime) -> float:
    """Seconds since the epoch; a naive timestamp (as SQLite returns them) is UTC."""
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def oldest_first(pending: Pending) -> tuple[float, int]:
    """Sort key of pending trace versions: oldest update first."""
    return epoch(pending.updated), pending.row_id


def _versions(scope: ShardScope | None) -> Select[Any]:
    """SELECT id, trace_id, updated_at, shard FROM traces (of `scope`'s shards only), of
    the user requests only (`candidates.requests`)."""
    if scope is None:
        return requests(select(Trace.id, Trace.trace_id, Trace.updated_at, literal(0)))
    shard = shard_of(Trace.trace_id, scope.count)
    query = requests(select(Trace.id, Trace.trace_id, Trace.updated_at, shard))
    return query.where(shard.in_(sorted(scope.watermarks))) if scope.partial else query


def _after(updated: datetime, watermark: datetime | None) -> bool:
    """True when a trace version is newer than a shard's watermark minus `GRACE`."""
    return watermark is None or updated > watermark - GRACE


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
        version_sources: Sequence[str] = DEFAULT_SOURCES,
    ) -> None:
        self.job = job
        self.slice_dimensions = slice_dimensions
        self.version_sources = version_sources
        self.columns = columns
        self.group_labels = group_labels
        self.longest_s = longest_s
        self.watermark: datetime | None = None
        self._loaded = False
        self.retry: RetryPolicy | None = None
        """Set by a judge job: how often a transient judge failure is retried (None: the
        job keeps no retries and does not look for waiting traces)."""
        self.retrying: dict[str, Waiting] = {}
        """The traces waiting for a retry, by trace_id."""
        self._since: datetime | None = None
        """Sharded jobs: where the next `tail` reads from."""

    def load(self, session: Session, state: JobState, now: datetime) -> None:
        """Bring the columns up to date with `job_outcomes` (and the watermark with
        `job_state`): everything in the longest window at first, then what changed."""
        if not self._loaded:
            self.watermark = state.watermark
            self._read(session, now, None)
        else:
            self._read(session, now, self.watermark)
        if state.watermark is not None and (
            self.watermark is None or state.watermark > self.watermark
        ):
            self.watermark = state.watermark

    def tail(self, session: Session, now: datetime, floor: datetime | None) -> int:
        """A sharded job's `load` (`sharded.py`): `floor` is the oldest shard watermark,
        read just before. Every outcome stored after it was read is of a trace version
        newer than it minus `GRACE` (a shard's watermark only moves forward, and not while
        a worker holds the shard), so the next tail reads from it; this one reads from
        the floor the previous tail was given. Returns the rows put in the columns."""
        since = self._since if self._loaded else None
        self._since = floor
        return self._read(session, now, since)

    def _read(self, session: Session, now: datetime, since: datetime | None) -> int:
        """Put the stored outcomes of trace versions newer than `since` minus `GRACE` in
        the columns (None or the first time: every one in the longest window)."""
        # JSON read as text and parsed with orjson: after a restart this loads one row per
        # trace of the longest window (a million for the UX job at ~100 traces a minute).
        # Every query is bounded by the longest window (older rows are pruned from the
        # columns anyway), so PostgreSQL reads only that window's partitions.
        query = select(*STORED).where(
            JobOutcome.job == self.job, JobOutcome.ts >= now - timedelta(seconds=self.longest_s)
        )
        if self._loaded and since is not None:
            query = query.where(JobOutcome.trace_updated_at > since - GRACE)
        columns = self.columns
        put = 0
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
            put += 1
        self._loaded = True
        return put

    def pending(
        self,
        session: Session,
        now: datetime,
        candidates: Filter,
        limit: int | None,
        scope: ShardScope | None = None,
    ) -> list[Pending]:
        """The candidates in the longest window whose version is not evaluated yet, oldest
        update first (at most `limit`); with `scope`, only those of its shards, each
        newer than its own shard's watermark minus `GRACE`."""
        longest = Trace.timestamp >= now - timedelta(seconds=self.longest_s)
        floor = self.watermark if scope is None else scope.floor()
        query = _versions(scope).where(longest)
        if floor is not None:
            query = query.where(Trace.updated_at > floor - GRACE)
        query = candidates(query).order_by(Trace.updated_at, Trace.id)
        marks = {} if scope is None else scope.watermarks
        pending = [
            Pending(row_id, trace_id, updated, in_shard)
            for row_id, trace_id, updated, in_shard in session.execute(query)
            if not self.columns.is_current(trace_id, epoch(updated))
            and _after(updated, marks.get(in_shard))
        ]
        self.refresh_retrying(session, now)
        if self.retrying:
            seen = {p.trace_id for p in pending}
            waiting = sorted(self.retrying)
            for start in range(0, len(waiting), _CHUNK):
                retry = _versions(scope).where(
                    Trace.trace_id.in_(waiting[start : start + _CHUNK]), longest
                )
                pending.extend(
                    Pending(*row)
                    for row in session.execute(candidates(retry))
                    if row[1] not in seen
                )
            pending.sort(key=oldest_first)
        return pending if limit is None else pending[:limit]

    def refresh_retrying(self, session: Session, now: datetime) -> None:
        """Read which traces of the longest window wait for a retry, and with how many
        failed attempts, from `job_outcomes` (shared by replicas, kept over restarts). A
        trace that no longer waits because another replica retried it is reloaded into
        the columns (the tail in `load` only sees trace versions after the watermark).
        Costs one scan of the job's rows of the window (index on job, ts): judge jobs hold
        sampled traces only."""
        if self.retry is None:
            return
        query = select(
            JobOutcome.trace_id, JobOutcome.trace_updated_at, cast(JobOutcome.outcomes, Text)
        ).where(
            JobOutcome.job == self.job,
            JobOutcome.ts >= now - timedelta(seconds=self.longest_s),
            cast(JobOutcome.outcomes, Text).like(MARKER_PATTERN),
        )
        fresh: dict[str, Waiting] = {}
        for trace_id, updated, outcomes in session.execute(query):
            found = waiting_of(epoch(updated), orjson.loads(outcomes) if outcomes else {})
            if found is not None:
                fresh[trace_id] = found
        resolved = sorted(set(self.retrying) - set(fresh))
        for start in range(0, len(resolved), _CHUNK):
            rows = select(*STORED).where(
                JobOutcome.job == self.job,
                JobOutcome.trace_id.in_(resolved[start : start + _CHUNK]),
                JobOutcome.ts >= now - timedelta(seconds=self.longest_s),
            )
            for trace_id, updated, ts, groups, outcomes in session.execute(rows):
                self.columns.put_encoded(
                    trace_id,
                    epoch(updated),
                    epoch(ts),
                    orjson.loads(groups) if groups else None,
                    orjson.loads(outcomes) if outcomes else {},
                )
        self.retrying = fresh

    def forget(self, trace_ids: Sequence[str]) -> None:
        """Drop traces whose outcomes were recorded but then rolled back (a shard lease
        lost while scoring them): the tail brings back what their new owner stores."""
        for trace_id in trace_ids:
            self.columns.forget(trace_id)

    def record(
        self,
        session: Session,
        rows: Sequence[Row[Any]],
        outcomes: Mapping[str, Sequence[Outcome]],
    ) -> list[Evaluated]:
        """Put the outcomes of `rows` (one per metric and row, in order) in the columns and
        in `job_outcomes` (the caller commits), and move the watermark past them. Returns
        them as `Evaluated` values for the observers. Outcomes that failed transiently are
        stored as waiting for a retry (`self.retry`), and left out of the columns and the
        `Evaluated` values until they are final."""
        policy = self.retry or _NO_RETRY
        records = []
        evaluated = []
        moved = set()
        for i, row in enumerate(rows):
            before_ts = self.columns.ts_of(row.trace_id)
            if before_ts is not None and before_ts != epoch(row.timestamp):
                moved.add(row.trace_id)
            model = getattr(row, "model", None)
            groups = group_values(
                row.tags,
                self.group_labels,
                self.columns.max_length,
                model=model,
                version_sources=self.version_sources,
            )
            version = epoch(row.updated_at)
            before = self.retrying.get(row.trace_id)
            if before is not None and before.version != version:
                before = None  # a new version of the trace starts afresh
            sorted_ = policy.sort(
                {m: o[i] for m, o in outcomes.items()}, before.attempts if before else 0
            )
            if sorted_.waiting:
                self.retrying[row.trace_id] = Waiting(version, sorted_.attempts, sorted_.waiting)
            else:
                self.retrying.pop(row.trace_id, None)
            per_trace = sorted_.counted
            self.columns.put(row.trace_id, version, epoch(row.timestamp), groups, per_trace)
            # A retry tells the observers only of the outcomes that were waiting: the others
            # were handed over by the earlier run (histograms must not count them twice).
            told = (
                per_trace
                if before is None
                else {m: o for m, o in per_trace.items() if m in before.metrics}
            )
            if before is None or told:
                evaluated.append(
                    Evaluated(self.job, row.trace_id, epoch(row.timestamp), groups, told)
                )
            records.append(
                {
                    "job": self.job,
                    "trace_id": row.trace_id,
                    "trace_updated_at": row.updated_at,
                    "ts": row.timestamp,
                    "groups": groups or None,
                    "outcomes": sorted_.stored,
                    "slices": slice_values(
                        row.tags,
                        model=model,
                        question=row.question,
                        dimensions=self.slice_dimensions,
                        max_length=self.columns.max_length,
                        version_sources=self.version_sources,
                    )
                    or None,
                }
            )
        upsert_outcomes(session, records, moved)
        latest = max(r.updated_at for r in rows)
        if self.watermark is None or latest > self.watermark:
            self.watermark = latest
        return evaluated
