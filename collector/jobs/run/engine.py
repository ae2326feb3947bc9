"""One incremental evaluation job: new traces in, per-window/group results out.

`IncrementalJob` runs the steps, each in its own module:
1. `sync`: find the candidate traces new or updated since the watermark whose version
   has no stored outcomes yet (a chunk of a backlog at a time), and the traces waiting
   to retry a transient judge failure (`retry.py`);
2. `evaluation`: score those with the per-sample metrics (the evaluators' runner); `sync`
   stores their outcomes and moves their contributions in the bucket sums;
3. `bucket_aggregation`: aggregate each window and group from the bucket sums (every
   trace in the window counts; nothing per trace is held in memory), `bucket_drift`: the
   detectors from the same sums; `dataset`: recompute dataset metrics (sessions,
   clusters, confusion matrices) on the most recent `dataset_cap` candidates of the
   longest window, when anything changed;
4. `result_store`: write one `metric_results` row per metric × window × group;
   `publish`: after the commit, hand the points to the results sink (the exporter's
   in-memory cache).

Sharded (`sharded.py`, PostgreSQL), the same steps are split: every worker runs 1-2 for
the shards it leased (`plan_shards`, then `score`), then one at a time 3-4 over all of
them (`aggregate_shared`): every worker's outcomes are in the same bucket sums.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, cast

from sqlalchemy.orm import Session

from collector.jobs.buckets.history import BucketHistory
from collector.jobs.buckets.store import WindowSums
from collector.jobs.buckets.window_points import foldings, window_points
from collector.jobs.buckets.window_source import from_db
from collector.jobs.drift.detector import MetricFacts
from collector.jobs.drift.source import drift_points_at
from collector.jobs.outcomes.retry import RetryPolicy
from collector.jobs.recording.cursor import (
    BACKLOG_CHUNK,
    Pending,
    Span,
    TraceCursor,
    epoch,
    oldest_first,
    time_bounds,
    version_s,
)
from collector.jobs.recording.observers import Evaluated, notify
from collector.jobs.recording.regroup import regroup
from collector.jobs.run.dataset import DatasetMetrics
from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.run.evaluation import (
    JobMetrics,
    PerSampleScoring,
    fetch_rows,
    judge_unreachable,
    signature,
)
from collector.jobs.run.gc_pause import paused_gc
from collector.jobs.run.job_state import load_state
from collector.jobs.run.publish import QualityPoint, quality_points
from collector.jobs.run.result_store import write_results
from collector.jobs.traces.seams import StoredTrace
from collector.jobs.traces.shard_scope import ShardScope
from collector.jobs.traces.trace_rows import SampleMemo, columns_for
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding, warn_folding
from collector.jobs.windows.window import OVERALL, TOPIC_LABEL, Window
from collector.store.models import JobState, Trace
from evaluators.aggregate import Aggregate
from evaluators.judge.errors import JudgeConnectionError
from evaluators.sample import Sample

logger = logging.getLogger(__name__)
NO_JUDGE = "no judge configured"
"""A judge job's skip reason (the log line adds how to configure one)."""


def _default_to_sample(row: StoredTrace) -> Sample:
    from collector.store.samples import trace_to_sample

    # A row of `trace_rows.SAMPLE_COLUMNS` has the attribute names of a `Trace`.
    return trace_to_sample(cast(Trace, row))


class Batch(NamedTuple):
    """Traces one step scored: how many, their newest version, their ids; and how many
    outcomes other workers stored it tailed first (sharded runs)."""

    new: int = 0
    latest: datetime | None = None
    trace_ids: tuple[str, ...] = ()
    tailed: int = 0


class Plan(NamedTuple):
    """A sharded batch before scoring: its traces, and whether more were pending in its
    shards than it takes (`max_new_per_run`)."""

    pending: list[Pending]
    capped: bool
    tailed: int
    now: datetime


class IncrementalJob:
    """Runs one `JobDefinition` incrementally; keeps its state between runs."""

    def __init__(
        self, definition: JobDefinition, env: JobEnvironment, history_s: float = 0.0
    ) -> None:
        """`history_s`: seconds of traces kept beyond the longest window, for `points_at`
        past times (`collector.jobs.backfill.runner`); 0 for the scheduled job."""
        self.definition = definition
        self.env = env
        self.name = definition.name
        metrics = JobMetrics.resolve(definition.metrics)
        self.per_sample = metrics.per_sample
        self.dataset = metrics.dataset
        self._labels: tuple[Folding, ...] = ()
        self._labels_logged: tuple[Folding, ...] = ()
        self._last_folds: list[Folding] = []
        self._drift_cache: tuple[float, list[tuple[Window, WindowAggregate]]] | None = None
        self._facts = [
            MetricFacts(m.name, m.spec.direction or "none", m.spec.unit) for m in self.per_sample
        ]
        self._longest = max(w.seconds for w in env.windows)
        to_sample = env.to_sample or _default_to_sample
        self._memo = SampleMemo(to_sample, columns_for(metrics.fields))
        self._cursor = TraceCursor(
            self.name,
            [m.name for m in self.per_sample],
            env.group_labels,
            self._longest + history_s,
            env.slice_dimensions,
            env.version_sources,
            env.label_limits.max_length,
        )
        if definition.uses_judge:
            self._cursor.retry = RetryPolicy(env.judge_transient_retries)
        self._scoring = PerSampleScoring(definition, env, self.per_sample, self._memo)
        self._dataset = DatasetMetrics(definition, env, self.dataset, self._memo, self._longest)
        self._evaluated: list[Evaluated] = []

    # -- public -------------------------------------------------------------------------

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        if self.definition.uses_judge and self.env.judge is None:
            written = self._record_skip(now, NO_JUDGE)
            return JobReport(
                self.name, "skipped", 0, written, time.perf_counter() - started, NO_JUDGE
            )
        self._memo.next_run()
        with self.env.session_factory() as session:
            state = load_state(session, self.name)
            self._cursor.load(session, state, now)
            new = self._evaluate_backlog(session, now)
            message = f"{new} new or updated traces"
            written = self._store(session, now, state, changed=bool(new), message=message)
            # set after the aggregation: set before, the next query's autoflush would write
            # it and hold SQLite's write lock while the dataset metrics embed, so the
            # embedding store's write (another connection) waited out its busy timeout
            state.watermark = self._cursor.watermark
            state.last_duration_s = time.perf_counter() - started
            session.merge(state)
            session.commit()
        return self.report(new, written, started)

    def report(self, new: int, written: int, started: float, **extra: Any) -> JobReport:
        """The report of a run that evaluated `new` traces and wrote `written` results."""
        retry = self._cursor.retry
        return JobReport(
            self.name,
            "ok",
            new,
            written,
            time.perf_counter() - started,
            labels=self._labels,
            retries=retry.take_scheduled() if retry is not None else {},
            pending_retry=len(self._cursor.retrying) if retry is not None else None,
            **extra,
        )

    @property
    def longest_s(self) -> float:
        """The longest window, in seconds."""
        return self._longest

    @property
    def history_s(self) -> float:
        """How far before a time its traces are scored: the longest window and the
        history kept for `points_at` past times."""
        return self._cursor.longest_s

    # -- sharded runs (`sharded.py`) --------------------------------------------------------

    @property
    def shardable(self) -> bool:
        """True when its runs may be split across workers by shard: per-trace evaluation
        of registry metrics. Jobs built by a `factory` (judge_consistency, judge_agreement,
        external) compute their own way and stay whole, under the job's lock."""
        return self.definition.factory is None

    def begin(self) -> None:
        """Start a sharded run (the per-run sample memo)."""
        self._memo.next_run()

    def plan_shards(
        self,
        session: Session,
        now: datetime,
        scope: ShardScope,
        floor: datetime | None,
        more: Callable[[], ShardScope | None],
    ) -> Plan:
        """The batch of `scope`'s shards (after counting what other workers stored since
        the last look, `floor`: `TraceCursor.tail`): their pending traces, oldest
        first, at most the job's `max_new_per_run`. While they are fewer, `more()` claims
        more shards to fill the batch (None: no shard is left)."""
        tailed = self._cursor.tail(session, now, floor)
        limit = self.definition.max_new_per_run
        candidates = self.definition.candidates
        pending = self._cursor.pending(session, now, candidates, None, scope)
        while limit is not None and len(pending) < limit and (extra := more()) is not None:
            pending += self._cursor.pending(session, now, candidates, None, extra)
            pending.sort(key=oldest_first)
        capped = (limit is not None and len(pending) > limit) or len(pending) >= BACKLOG_CHUNK
        return Plan(pending[:limit], capped, tailed, now)

    def score(self, session: Session, plan: Plan) -> Batch:
        """Score a plan's traces; their outcomes are recorded in `session`, which the
        caller commits (or rolls back, then `forget`s the batch)."""
        return self._score(session, plan.pending, plan.now)._replace(tailed=plan.tailed)

    def forget(self, batch: Batch) -> None:
        self._cursor.forget(batch.trace_ids)
        self._evaluated = []

    def aggregate_shared(
        self, session: Session, now: datetime, floor: datetime | None, *, changed: bool, stores: int
    ) -> int:
        """Aggregate every window from the outcomes of every worker (tailed first) and
        write them with the job's state (`stores`: the shards' counter read before the
        tail); the caller holds the job's lock and commits. The results written."""
        changed = self._cursor.tail(session, now, floor) > 0 or changed
        self._cursor.refresh_retrying(session, now)
        state = load_state(session, self.name)
        if floor is not None:
            state.watermark = floor  # safe for a later unsharded run: no shard is behind it
        state.aggregated_stores = stores
        written = self._store(session, now, state, changed=changed, message="aggregated")
        session.merge(state)
        return written

    def notify(self) -> None:
        """Tell the observers of the outcomes just committed."""
        notify(self.env.observers, self._evaluated)
        self._evaluated = []

    def _store(
        self, session: Session, now: datetime, state: JobState, *, changed: bool, message: str
    ) -> int:
        """Aggregate every window from the bucket sums and write the results and `state`
        (first moving the outcomes of traces given a topic since the last run, `regroup`)."""
        cursor = self._cursor
        moved = regroup(
            session,
            job=self.name,
            metrics=cursor.metrics,
            since=now - timedelta(seconds=cursor.longest_s),
            assigned_after=state.last_run_at,
            grouped=TOPIC_LABEL in cursor.group_labels,
            sliced=TOPIC_LABEL in cursor.slice_dimensions,
        )
        if moved:
            # committed before the aggregation: on SQLite the moves would hold the write
            # lock while the dataset metrics embed, and the embedding store's write (another
            # connection) and the consumer would wait out their busy timeout
            session.commit()
        points = self._aggregate(session, now, changed=changed or moved > 0)
        written = self._write(session, now, points)
        state.last_run_at = now
        state.last_status = "ok"
        state.last_message = message
        return written

    def load_history(self, now: datetime, *, evaluate: bool, span: Span | None = None) -> int:
        """With `evaluate`, score the traces of the longest window plus the history before
        `now` that have no outcomes yet (stored like a run's, a chunk at a time; `span`:
        only those with timestamps in it); the job's state (watermark, last run) is not
        touched. New traces scored."""
        if not evaluate:
            return 0
        with self.env.session_factory() as session:
            self._cursor.load(session, JobState(job=self.name), now)
            return self._evaluate_backlog(session, now, span)

    def prepare_history(self, now: datetime) -> None:
        """What `load_history` does first (the job's sums built if it has outcomes but no
        sums), before its backlog is scored by worker processes that inherit it."""
        with self.env.session_factory() as session:
            self._cursor.load(session, JobState(job=self.name), now)

    def points_at(
        self, session: Session, at: datetime, history: BucketHistory | None = None
    ) -> list[tuple[Window, WindowAggregate]]:
        """The per-sample metrics' windows (with the quantiles of those read by quantile)
        and detectors as they were at `at`, from the bucket sums and bins (`history`: a
        back-fill's sums in hand; else read). Dataset metrics are left out: they are
        recomputed from traces."""
        at_s = epoch(at)
        env = self.env
        source = from_db(session, self.name) if history is None else history.source(session)
        read = source.sums
        seen: dict[tuple[float, float | None], WindowSums] = {}

        def sums_of(start: float, end: float | None) -> WindowSums:
            if (start, end) not in seen:
                seen[(start, end)] = read(start, end)
            return seen[(start, end)]

        source = replace(source, sums=sums_of)
        longest = at_s - self._longest
        kept = foldings(sums_of, longest, env.group_labels, env.label_limits)
        self._last_folds = list(kept.values())
        points = window_points(
            source,
            env.windows,
            [m.name for m in self.per_sample],
            {m.name: m.spec.proportion for m in self.per_sample},
            {m.name: signature(m, env) for m in self.per_sample},
            kept,
            at_s,
            [m.name for m in self.per_sample if m.spec.quantiles],
        )
        if env.drift is not None:
            points += self._drift_at(session, at_s, kept, history)
        return points

    def forget_detectors(self) -> None:
        """Recompute the detectors at the next `points_at` (a back-fill's block of steps
        starts where a run would have)."""
        self._drift_cache = None

    def _drift_at(
        self,
        session: Session,
        at: float,
        kept: Mapping[str, Folding],
        history: BucketHistory | None = None,
    ) -> list[tuple[Window, WindowAggregate]]:
        """The detectors' points, recomputed at most every `DriftConfig.every_s` (steps of a
        few minutes do not change what pages): the previous ones are given again in
        between."""
        config = self.env.drift
        if config is None:
            return []
        cached = self._drift_cache
        if cached is not None and 0 <= at - cached[0] < config.every_s:
            return cached[1]
        made = drift_points_at(
            session, self.name, self._facts, at, self._longest, kept, config, history
        )
        self._drift_cache = (at, made)
        return made

    def publish(self) -> None:
        """Hand the last run's points to the results sink (after the commit)."""
        if self.env.results is not None and getattr(self, "_publish", None) is not None:
            self.env.results.replace_job(self.name, self._publish)

    # -- steps ----------------------------------------------------------------------------

    def _evaluate_backlog(self, session: Session, now: datetime, span: Span | None = None) -> int:
        """Score the pending traces a chunk at a time (`sync.BACKLOG_CHUNK`), committing
        each chunk's outcomes before the next (so memory does not grow with a backlog,
        and on SQLite no write transaction stays open while dataset metrics embed), up to
        the job's `max_new_per_run`. Traces scored."""
        done = 0
        cap = self.definition.max_new_per_run
        while True:
            if done:
                self._memo.next_run()
            with paused_gc():
                batch = self._evaluate_new(session, now, span)
            session.commit()
            self.notify()
            done += batch.new
            if batch.new < BACKLOG_CHUNK or cap is not None:
                return done

    def _evaluate_new(self, session: Session, now: datetime, span: Span | None = None) -> Batch:
        pending = self._cursor.pending(
            session, now, self.definition.candidates, self.definition.max_new_per_run, None, span
        )
        return self._score(session, pending, now)

    def _score(self, session: Session, pending: list[Pending], now: datetime) -> Batch:
        """Score `pending` and record the outcomes (the caller commits)."""
        self._evaluated = []
        if not pending:
            return Batch()
        # bounded by the longest window, so PostgreSQL reads only its partitions
        since = now - timedelta(seconds=self._cursor.longest_s)
        ids = [p.row_id for p in pending]
        rows = fetch_rows(session, self._memo, ids, *time_bounds(pending, since))
        if not rows:  # deleted (retention) between finding and fetching them
            return Batch()
        samples = self._memo.map_rows(rows, version_s)
        outcomes = self._scoring.outcomes(session, rows, samples)
        if self.definition.uses_judge and judge_unreachable(outcomes):
            raise JudgeConnectionError(
                f"the judge could not be reached for any of {len(rows)} new traces; "
                "they stay pending for the next run"
            )
        self._evaluated = self._cursor.record(session, rows, outcomes)
        return Batch(len(rows), max(r.updated_at for r in rows), tuple(r.trace_id for r in rows))

    def _aggregate(
        self, session: Session, now: datetime, *, changed: bool
    ) -> list[tuple[Window, WindowAggregate]]:
        points = self.points_at(session, now)
        self._labels = tuple(self._last_folds)
        warn_folding(self.name, self._labels_logged, self._labels)
        self._labels_logged = self._labels
        if self.dataset:
            points += self._dataset.points(session, now, changed=changed)
        return points

    def _write(
        self, session: Session, now: datetime, points: list[tuple[Window, WindowAggregate]]
    ) -> int:
        """Store the run's results; keep their published form for `publish`."""
        written = write_results(session, self.name, now, self.env.retention, points)
        self._publish: list[QualityPoint] = quality_points(self.name, points, epoch(now))
        return written

    def _record_skip(self, now: datetime, reason: str) -> int:
        """Without a judge: store visible skipped results (n = 0, the reason) and the state."""
        points = [
            (window, WindowAggregate(OVERALL, Aggregate(m, None, 0, skip_reasons={reason: 0})))
            for window in self.env.windows
            for m in self.definition.metrics
        ]
        with self.env.session_factory() as session:
            written = self._write(session, now, points)
            state = load_state(session, self.name)
            state.last_run_at = now
            state.last_status = "skipped"
            state.last_message = reason
            session.merge(state)
            session.commit()
        return written
