"""A job's record of what it has evaluated, kept in step with the database.

Per-trace outcomes live in `job_outcomes` (shared by every replica) and their sums in
`job_buckets` (the quantile metrics' bins in `job_bucket_bins`, `bucket_store`); the
`job_state` watermark is the newest trace version done. Nothing per trace is held in
memory: `TraceCursor` lists the traces new or updated since the watermark (minus
`GRACE`, for transactions that committed late) whose version has no stored outcomes yet
(an anti-join in the database, so a backlog is taken in bounded chunks), and records a
run's outcomes: the row upserted, and in the same transaction the trace's old
contribution taken out of the buckets and the new one put in, so a trace scored again
counts once, and a crash before the commit changes neither.

Traces waiting to retry a transient judge failure (`retry.py`) are older than the
watermark, so the watermark query cannot find them: `pending` adds them from the marked
rows of `job_outcomes`, read afresh each run (another replica may have retried them).

A sharded job (`sharded.py`) has a watermark per shard: `pending` lists only the traces
of the shards a worker leased (a `ShardScope`), each against its own shard's watermark;
`tail` counts the outcomes other workers stored since it last looked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Row, Select, Text, and_, cast, exists, func, literal, select
from sqlalchemy.orm import Session

from collector.jobs.buckets import store as bucket_store
from collector.jobs.buckets.bulk_write import apply_changes
from collector.jobs.buckets.contributions import Contributions
from collector.jobs.buckets.stats import binned
from collector.jobs.outcomes.codec import MARKER_PATTERN, read_groups, read_outcomes
from collector.jobs.outcomes.retry import RetryPolicy, Waiting, waiting_of
from collector.jobs.outcomes.store import upsert_outcomes
from collector.jobs.recording.observers import Evaluated
from collector.jobs.traces.candidates import Filter, requests
from collector.jobs.traces.seams import StoredTrace
from collector.jobs.traces.shard_scope import ShardScope, shard_of
from collector.jobs.windows.labels import DEFAULT_MAX_LENGTH
from collector.jobs.windows.slices import DEFAULT_DIMENSIONS, slice_values
from collector.jobs.windows.versions import DEFAULT_SOURCES
from collector.jobs.windows.window import TOPIC_LABEL, group_values
from collector.store.id_filter import among, unprepared
from collector.store.job_lock import job_lock
from collector.store.models import JobOutcome, JobState, Trace
from collector.store.topics import topics_of
from evaluators.outcome import Outcome

logger = logging.getLogger(__name__)

GRACE = timedelta(minutes=5)
"""Traces updated this long before the watermark are looked at again (late commits)."""

_CHUNK = 1000
REBUILD_WAIT_S = 600.0
BACKLOG_CHUNK = 20_000
"""Most trace versions one `pending` call lists: a run over a backlog (a first start over a
full topic, a new metric over 7 days) scores it in chunks of this many, so its memory
does not grow with the backlog."""
_NO_RETRY = RetryPolicy(0)
"""Jobs without a judge: every failure is final at once (so nothing is ever scheduled)."""


Span = tuple[datetime, datetime | None]
"""Trace timestamps from (inclusive) to (exclusive; None: no end): a worker's share of a
back-fill's backlog (`backfill_workers`)."""


class Pending(NamedTuple):
    """A trace version still to evaluate: its row, id, version, shard (0 unsharded) and
    timestamp (None: not known)."""

    row_id: int
    trace_id: str
    updated: datetime
    shard: int = 0
    ts: datetime | None = None


def time_bounds(pending: Sequence[Pending], since: datetime) -> tuple[datetime, datetime | None]:
    """The oldest and newest timestamp of `pending` (the oldest no older than `since`; the
    newest None if one is not known): fetched between them, PostgreSQL reads only their
    partitions. A trace whose timestamp moved since (a late root span) is not fetched;
    its new version is pending for the next run."""
    stamps = [p.ts for p in pending if p.ts is not None]
    if not stamps or len(stamps) < len(pending):
        return since, None
    return max(since, min(stamps)), max(stamps)


def epoch(ts: datetime) -> float:
    """Seconds since the epoch; a naive timestamp (as SQLite returns them) is UTC."""
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def oldest_first(pending: Pending) -> tuple[float, int]:
    """Sort key of pending trace versions: oldest update first."""
    return epoch(pending.updated), pending.row_id


def _versions(scope: ShardScope | None) -> Select[Any]:
    """SELECT id, trace_id, updated_at, shard, timestamp FROM traces (of `scope`'s shards
    only), of the user requests only (`candidates.requests`)."""
    shard: ColumnElement[int] = (
        literal(0) if scope is None else shard_of(Trace.trace_id, scope.count)
    )
    query = requests(select(Trace.id, Trace.trace_id, Trace.updated_at, shard, Trace.timestamp))
    if scope is not None and scope.partial:
        query = query.where(shard.in_(sorted(scope.watermarks)))
    return query


def _after(updated: datetime, watermark: datetime | None) -> bool:
    """True when a trace version is newer than a shard's watermark minus `GRACE`."""
    return watermark is None or updated > watermark - GRACE


def version_s(row: StoredTrace) -> float:
    """A stored trace's version: its `updated_at` in epoch seconds."""
    return epoch(row.updated_at)


class TraceCursor:
    """Which trace versions one job has evaluated: its stored outcomes and its watermark."""

    def __init__(
        self,
        job: str,
        metrics: Sequence[str] | None,
        group_labels: Sequence[str],
        longest_s: float,
        slice_dimensions: Sequence[str] = DEFAULT_DIMENSIONS,
        version_sources: Sequence[str] = DEFAULT_SOURCES,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        self.job = job
        self.metrics = None if metrics is None else frozenset(metrics)
        """The metrics whose outcomes count in the sums; None: every stored one (a job whose
        metric names come with the traces, `external`)."""
        self.slice_dimensions = slice_dimensions
        self.version_sources = version_sources
        self.max_length = max_length
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
        """Take the watermark from `job_state` (the first time: and build the job's
        buckets from its stored outcomes if it has outcomes but no buckets, as after the
        upgrade that added them)."""
        if not self._loaded:
            self.watermark = state.watermark
            self._ensure_buckets(session, now)
            self._loaded = True
        if state.watermark is not None and (
            self.watermark is None or state.watermark > self.watermark
        ):
            self.watermark = state.watermark

    def _ensure_buckets(self, session: Session, now: datetime) -> None:
        """Build the job's buckets (and bins) from its stored outcomes when it has outcomes
        in the longest window but no buckets yet, or buckets of a quantile metric but no
        bins (stored before rev. 0015), in a transaction of its own under a lock of its
        own (two workers starting together build them once)."""
        since = now - timedelta(seconds=self.longest_s)
        binned_metrics = sorted(m for m in self.metrics or () if binned(m))
        if bucket_store.has_buckets(session, self.job, binned_metrics):
            return
        if not bucket_store.has_outcomes(session, self.job, since):
            return
        engine = session.get_bind()
        with job_lock(engine, f"{self.job}:buckets", wait_s=REBUILD_WAIT_S) as held:  # type: ignore[arg-type]
            if not held:
                raise RuntimeError(f"job {self.job}: another worker is still building its buckets")
            with Session(bind=engine) as own:
                if bucket_store.has_buckets(own, self.job, binned_metrics):
                    return
                read = bucket_store.rebuild(own, self.job, since)
                own.commit()
                bucket_store.analyze(own)
        logger.info("job %s: built its bucket sums from %d stored outcomes", self.job, read)

    def tail(self, session: Session, now: datetime, floor: datetime | None) -> int:
        """A sharded job's look at what other workers stored (`sharded.py`): the outcomes
        of trace versions newer than the floor the previous tail was given, minus `GRACE`
        (everything in the longest window the first time). `floor` is the oldest shard
        watermark, read just before; the next tail counts from it."""
        if not self._loaded:
            self._ensure_buckets(session, now)
        since = self._since if self._loaded else None
        self._since = floor
        self._loaded = True
        query = select(func.count()).where(
            JobOutcome.job == self.job, JobOutcome.ts >= now - timedelta(seconds=self.longest_s)
        )
        if since is not None:
            query = query.where(JobOutcome.trace_updated_at > since - GRACE)
        return int(session.execute(query).scalar() or 0)

    def pending(
        self,
        session: Session,
        now: datetime,
        candidates: Filter,
        limit: int | None,
        scope: ShardScope | None = None,
        span: Span | None = None,
    ) -> list[Pending]:
        """The candidates in the longest window whose version is not evaluated yet, oldest
        update first (at most `limit`, and at most `BACKLOG_CHUNK`: a backlog is taken a
        chunk at a time); with `scope`, only those of its shards, each newer than its own
        shard's watermark minus `GRACE`; with `span`, only those of its timestamps."""
        since = now - timedelta(seconds=self.longest_s)
        longest = Trace.timestamp >= since
        if span is not None:
            since = max(since, span[0])
            longest = Trace.timestamp >= since
            if span[1] is not None:
                longest = and_(longest, Trace.timestamp < span[1])
        floor = self.watermark if scope is None else scope.floor()
        o = JobOutcome
        # bounded like the traces (a trace's outcomes carry its ts), so PostgreSQL probes
        # only the window's partitions
        done = exists().where(
            and_(
                o.job == self.job,
                o.trace_id == Trace.trace_id,
                o.trace_updated_at == Trace.updated_at,
                o.ts >= since,
            )
        )
        query = _versions(scope).where(longest, ~done)
        if floor is not None:
            query = query.where(Trace.updated_at > floor - GRACE)
        query = candidates(query).order_by(Trace.updated_at, Trace.id)
        query = query.limit(BACKLOG_CHUNK if limit is None else min(limit, BACKLOG_CHUNK))
        marks = {} if scope is None else scope.watermarks
        pending = [
            Pending(row_id, trace_id, updated, in_shard, ts)
            for row_id, trace_id, updated, in_shard, ts in session.connection().execute(query).all()
            if _after(updated, marks.get(in_shard))
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
        failed attempts, from `job_outcomes` (shared by replicas, kept over restarts).
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
            found = waiting_of(epoch(updated), read_outcomes(outcomes))
            if found is not None:
                fresh[trace_id] = found
        self.retrying = fresh

    def _stored(
        self, session: Session, rows: Sequence[Row[Any]]
    ) -> dict[str, tuple[float, Any, Any]]:
        """trace_id -> (ts, groups, outcomes) of the stored outcomes of `rows`' traces.

        A trace never updated since it arrived (`received_at` = `updated_at`) still has the
        timestamp it was scored with, so its stored row, if any, is looked up at that
        timestamp: a batch of such rows, in time order, reads only the outcome rows
        between its oldest and newest timestamp (one or two partitions, a few rows even
        when PostgreSQL's statistics lag a back-fill's inserts). An updated trace may have
        moved: looked up under any timestamp."""
        out: dict[str, tuple[float, Any, Any]] = {}
        fixed: dict[str, datetime] = {}
        moving: set[str] = set()
        for row in rows:
            if getattr(row, "received_at", None) == row.updated_at:
                fixed[row.trace_id] = row.timestamp
            else:
                moving.add(row.trace_id)
        fixed = {t: ts for t, ts in fixed.items() if t not in moving}
        in_time = sorted(fixed, key=fixed.__getitem__)
        for start in range(0, len(in_time), _CHUNK):
            part = in_time[start : start + _CHUNK]
            between = JobOutcome.ts.between(fixed[part[0]], fixed[part[-1]])
            self._read_stored(session, part, out, between)
        ids = sorted(moving)
        for start in range(0, len(ids), _CHUNK):
            self._read_stored(session, ids[start : start + _CHUNK], out)
        return out

    def _read_stored(
        self,
        session: Session,
        ids: Sequence[str],
        out: dict[str, tuple[float, Any, Any]],
        *where: ColumnElement[bool],
    ) -> None:
        query = select(
            JobOutcome.trace_id,
            JobOutcome.ts,
            cast(JobOutcome.groups, Text),
            cast(JobOutcome.outcomes, Text),
        ).where(JobOutcome.job == self.job, among(session, JobOutcome.trace_id, ids), *where)
        if session.get_bind().dialect.name == "postgresql":
            # the rows about to be replaced: a concurrent `regroup` waits for this commit
            query = query.with_for_update()
        with unprepared(session):
            found = session.connection().execute(query).all()
        for trace_id, ts, groups, outcomes in found:
            out[trace_id] = (
                epoch(ts),
                read_groups(groups),
                read_outcomes(outcomes),
            )

    def forget(self, trace_ids: Sequence[str]) -> None:
        """Traces whose outcomes were recorded but then rolled back (a shard lease lost
        while scoring them): nothing of them is held here, the rollback undid it all."""

    def record(
        self,
        session: Session,
        rows: Sequence[Row[Any]],
        outcomes: Mapping[str, Sequence[Outcome]],
    ) -> list[Evaluated]:
        """Store the outcomes of `rows` (one per metric and row, in order) in
        `job_outcomes` and move their contributions in `job_buckets` and
        `job_bucket_bins` (the stored version's out, this one's in; the caller
        commits all), and move the watermark past them. Returns them as `Evaluated`
        values for the observers. Outcomes that failed transiently are stored as
        waiting for a retry (`self.retry`), and left out of the sums and the
        `Evaluated` values until they are final."""
        per_row = [{m: o[i] for m, o in outcomes.items()} for i in range(len(rows))]
        return self.record_each(session, rows, per_row)

    def record_each(
        self,
        session: Session,
        rows: Sequence[Row[Any]],
        outcomes: Sequence[Mapping[str, Outcome]],
    ) -> list[Evaluated]:
        """`record`, given each row's outcomes by metric (`outcomes[i]` of `rows[i]`): for
        a job whose rows have metrics of their own (`external`)."""
        policy = self.retry or _NO_RETRY
        records = []
        evaluated = []
        moved = set()
        delta = Contributions(self.metrics)
        stored = self._stored(session, rows)
        topics = (
            topics_of(session, [row.trace_id for row in rows])
            if TOPIC_LABEL in self.group_labels or TOPIC_LABEL in self.slice_dimensions
            else {}
        )
        for ts, groups_before, outcomes_before in stored.values():
            delta.add(ts, groups_before, outcomes_before, -1)
        for i, row in enumerate(rows):
            before_row = stored.get(row.trace_id)
            if before_row is not None and before_row[0] != epoch(row.timestamp):
                moved.add(row.trace_id)
            model = getattr(row, "model", None)
            groups = group_values(
                row.tags,
                self.group_labels,
                self.max_length,
                model=model,
                version_sources=self.version_sources,
                topic=topics.get(row.trace_id),
            )
            version = epoch(row.updated_at)
            before = self.retrying.get(row.trace_id)
            if before is not None and before.version != version:
                before = None  # a new version of the trace starts afresh
            sorted_ = policy.sort(outcomes[i], before.attempts if before else 0)
            if sorted_.waiting:
                self.retrying[row.trace_id] = Waiting(version, sorted_.attempts, sorted_.waiting)
            else:
                self.retrying.pop(row.trace_id, None)
            per_trace = sorted_.counted
            delta.add(epoch(row.timestamp), groups, sorted_.stored)
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
                        max_length=self.max_length,
                        version_sources=self.version_sources,
                        topic=topics.get(row.trace_id),
                    )
                    or None,
                }
            )
        upsert_outcomes(session, records, moved)
        apply_changes(session, self.job, delta.changes())
        latest = max(r.updated_at for r in rows)
        if self.watermark is None or latest > self.watermark:
            self.watermark = latest
        return evaluated
