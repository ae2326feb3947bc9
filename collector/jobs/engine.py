"""One incremental evaluation job: new traces in, per-window/group results out.

A run
1. brings the job's outcome columns up to date: loaded once from `job_outcomes`, then
   tailed for rows another replica wrote since this process last looked;
2. finds candidate traces new or updated since the watermark (minus a grace period for
   transactions that committed late) and evaluates only those whose (trace id,
   updated_at) is not cached yet, with the evaluators' runner; stores their outcomes;
3. drops contributions older than the longest window and aggregates each window and
   group from the columns (per-sample metrics: every trace in the window counts);
4. recomputes dataset metrics (sessions, clusters, confusion matrices) on the most
   recent `dataset_cap` candidates of the longest window, when anything changed;
5. writes one `metric_results` row per metric × window × group and publishes the
   points to the exporter's in-memory cache.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Select, Text, cast, delete, select
from sqlalchemy import insert as insert_rows
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.outcome_store import upsert_outcomes
from collector.jobs.outcomes import OutcomeColumns, WindowAggregate, encode_outcome
from collector.jobs.publish import ResultsSink, quality_point
from collector.jobs.trace_rows import SampleMemo, columns_for, sample_rows
from collector.jobs.windows import OVERALL, Window, group_for, group_values
from collector.store.models import JobOutcome, JobState, MetricResult, Trace
from evaluators.aggregate import Aggregate
from evaluators.outcome import Outcome, Skipped
from evaluators.registry import EvalContext, ResolvedMetric, resolve
from evaluators.sample import Sample
from evaluators.signature import Signature
from evaluators.thresholds import threshold_signature

logger = logging.getLogger(__name__)

GRACE = timedelta(minutes=5)
"""Traces updated this long before the watermark are looked at again (late commits)."""
DATASET_REFRESH_S = 300.0
"""Dataset metrics are recomputed at least this often, even without new traces."""
NO_JUDGE = "no judge configured"
_CHUNK = 1000

Filter = Callable[[Select[Any]], Select[Any]]


def _all(query: Select[Any]) -> Select[Any]:
    return query


@dataclass(frozen=True)
class JobDefinition:
    """What a job evaluates: its metrics and which stored traces are its candidates."""

    name: str
    metrics: tuple[str, ...]
    description: str
    candidates: Filter = _all
    uses_judge: bool = False
    context_lookback_s: float = 0.0
    """Earlier traces within this look-back are given to per-sample metrics as context."""
    max_new_per_run: int | None = None
    dataset_candidates: Filter | None = None
    """Which candidates dataset metrics look at (default: `candidates`)."""
    dataset_cap: int = 5000
    dataset_groups: bool = True
    factory: Callable[[JobDefinition, JobEnvironment], IncrementalJob] | None = None
    """Builds a job that computes its own metrics (not registry metrics) instead of the
    per-trace `IncrementalJob` (e.g. judge_consistency, over the judgments table)."""


@dataclass
class JobEnvironment:
    """Everything a job needs, passed in explicitly (the service builds it once)."""

    session_factory: sessionmaker[Session]
    windows: Sequence[Window]
    group_labels: Sequence[str]
    embedder: Any = None
    judge: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    results: ResultsSink | None = None
    retention: timedelta = timedelta(days=30)
    to_sample: Callable[[Any], Sample] | None = None
    """Maps a stored trace (a `Trace` or a row of `trace_rows.SAMPLE_COLUMNS`) to a Sample."""


@dataclass(frozen=True)
class JobReport:
    job: str
    status: str
    new_traces: int = 0
    results: int = 0
    seconds: float = 0.0
    message: str = ""


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def _updated_s(row: Any) -> float:
    return _epoch(row.updated_at)


def sample_fields(metrics: Iterable[ResolvedMetric]) -> frozenset[str] | None:
    """The `Sample` fields the metrics read (`MetricSpec.reads`); None when one of them
    does not say, or there are none."""
    reads = [m.spec.reads for m in metrics]
    if not reads or any(r is None for r in reads):
        return None
    return frozenset().union(*(r for r in reads if r is not None))


def _default_to_sample(row: Any) -> Sample:
    from collector.store.samples import trace_to_sample

    sample: Sample = trace_to_sample(row)
    return sample


class IncrementalJob:
    """Runs one `JobDefinition` incrementally; keeps its state between runs."""

    def __init__(self, definition: JobDefinition, env: JobEnvironment) -> None:
        self.definition = definition
        self.env = env
        self.name = definition.name
        resolved = [resolve(m) for m in definition.metrics]
        self.per_sample = [m for m in resolved if m.spec.kind != "dataset"]
        self.dataset = [m for m in resolved if m.spec.kind == "dataset"]
        self.columns = OutcomeColumns([m.name for m in self.per_sample], env.group_labels)
        self._loaded = False
        self._watermark: datetime | None = None
        self._dataset_points: list[WindowAggregate] = []
        self._dataset_windows: dict[int, str] = {}
        self._dataset_at = 0.0
        self._to_sample = env.to_sample or _default_to_sample
        self._memo = SampleMemo(self._to_sample, columns_for(sample_fields(resolved)))
        self._longest = max(w.seconds for w in env.windows)

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
            state = session.get(JobState, self.name) or JobState(job=self.name)
            self._sync(session, state, now)
            new = self._evaluate_new(session, now)
            # Commit the per-trace outcomes (idempotent upserts) before aggregating: dataset
            # metrics may embed for minutes, and on SQLite an open write transaction would
            # block the consumer and the embedding store for all that time.
            session.commit()
            self.columns.prune(_epoch(now) - self._longest)
            points = self._aggregate(session, now, changed=bool(new))
            written = self._write(session, now, points)
            state.watermark = self._watermark
            state.last_run_at = now
            state.last_status = "ok"
            state.last_message = f"{new} new or updated traces"
            state.last_duration_s = time.perf_counter() - started
            session.merge(state)
            session.commit()
        return JobReport(self.name, "ok", new, written, time.perf_counter() - started)

    # -- state ----------------------------------------------------------------------------

    def _sync(self, session: Session, state: JobState, now: datetime) -> None:
        # JSON read as text and parsed with orjson: after a restart this loads one row per
        # trace of the longest window (a million for the UX job at ~100 traces a minute).
        query = select(
            JobOutcome.trace_id,
            JobOutcome.trace_updated_at,
            JobOutcome.ts,
            cast(JobOutcome.groups, Text),
            cast(JobOutcome.outcomes, Text),
        ).where(JobOutcome.job == self.name)
        if not self._loaded:
            query = query.where(JobOutcome.ts >= now - timedelta(seconds=self._longest))
            self._watermark = state.watermark
        elif self._watermark is not None:
            query = query.where(JobOutcome.trace_updated_at > self._watermark - GRACE)
        else:
            query = query.where(JobOutcome.ts >= now - timedelta(seconds=self._longest))
        columns = self.columns
        for trace_id, updated, ts, groups, outcomes in session.execute(query):
            updated_s = _epoch(updated)
            if columns.is_current(trace_id, updated_s):
                continue
            columns.put_encoded(
                trace_id,
                updated_s,
                _epoch(ts),
                orjson.loads(groups) if groups else None,
                orjson.loads(outcomes) if outcomes else {},
            )
        if state.watermark is not None and (
            self._watermark is None or state.watermark > self._watermark
        ):
            self._watermark = state.watermark
        self._loaded = True

    def _pending(self, session: Session, now: datetime) -> list[tuple[int, str, datetime]]:
        query = select(Trace.id, Trace.trace_id, Trace.updated_at).where(
            Trace.timestamp >= now - timedelta(seconds=self._longest)
        )
        if self._watermark is not None:
            query = query.where(Trace.updated_at > self._watermark - GRACE)
        query = self.definition.candidates(query).order_by(Trace.updated_at, Trace.id)
        pending = [
            (row_id, trace_id, updated)
            for row_id, trace_id, updated in session.execute(query)
            if not self.columns.is_current(trace_id, _epoch(updated))
        ]
        limit = self.definition.max_new_per_run
        return pending if limit is None else pending[:limit]

    def _evaluate_new(self, session: Session, now: datetime) -> int:
        pending = self._pending(session, now)
        if not pending:
            return 0
        rows: list[Any] = []
        ids = [p[0] for p in pending]
        for start in range(0, len(ids), _CHUNK):
            part = ids[start : start + _CHUNK]
            query = sample_rows(self._memo.columns).where(Trace.id.in_(part))
            rows.extend(session.execute(query))
        rows.sort(key=lambda r: (r.updated_at, r.id))
        samples = self._memo.map_rows(rows, _updated_s)
        outcomes = self._outcomes(session, rows, samples)
        records = []
        for i, row in enumerate(rows):
            groups = group_values(row.tags, self.env.group_labels)
            per_trace = {m: o[i] for m, o in outcomes.items()}
            self.columns.put(
                row.trace_id, _epoch(row.updated_at), _epoch(row.timestamp), groups, per_trace
            )
            records.append(
                {
                    "job": self.name,
                    "trace_id": row.trace_id,
                    "trace_updated_at": row.updated_at,
                    "ts": row.timestamp,
                    "groups": groups or None,
                    "outcomes": {m: encode_outcome(o) for m, o in per_trace.items()},
                }
            )
        upsert_outcomes(session, records)
        latest = max(r.updated_at for r in rows)
        if self._watermark is None or latest > self._watermark:
            self._watermark = latest
        return len(rows)

    def _outcomes(
        self, session: Session, rows: Sequence[Any], samples: list[Sample]
    ) -> dict[str, list[Outcome]]:
        if not self.per_sample:
            return {}
        from evaluators.runner import evaluate

        context: list[Sample] = []
        if self.definition.context_lookback_s > 0:
            context = self._context(session, rows)
        result = evaluate(context + samples, [m.name for m in self.per_sample], self._ctx())
        offset = len(context)
        return {
            m.name: list(
                result.per_sample.get(m.name, [Skipped("not computed")] * (offset + len(samples)))
            )[offset:]
            for m in self.per_sample
        }

    def _context(self, session: Session, rows: Sequence[Any]) -> list[Sample]:
        """Earlier candidates within the look-back before the new traces (not re-scored)."""
        first = min(r.timestamp for r in rows)
        last = max(r.timestamp for r in rows)
        fresh = {r.trace_id for r in rows}
        lookback = timedelta(seconds=self.definition.context_lookback_s)
        query = (
            self.definition.candidates(
                select(Trace.id, Trace.trace_id, Trace.updated_at).where(
                    Trace.timestamp >= first - lookback, Trace.timestamp <= last
                )
            )
            .order_by(Trace.timestamp.desc())
            .limit(20_000)
        )
        keys = [
            (row_id, trace_id, _epoch(updated))
            for row_id, trace_id, updated in session.execute(query)
            if trace_id not in fresh
        ]
        return [sample for _, sample in self._memo.samples(session, keys, _updated_s)]

    def _ctx(self) -> EvalContext:
        return EvalContext(
            embedder=self.env.embedder, judge=self.env.judge, options=self.env.options
        )

    # -- aggregation ------------------------------------------------------------------------

    def _signature(self, metric: ResolvedMetric) -> Signature:
        embedder = self.env.embedder if metric.spec.uses_embedder else None
        judge = self.env.judge if metric.spec.uses_judge else None
        model = getattr(embedder, "model_name", None) if embedder is not None else None
        return Signature(
            judge_model=getattr(judge, "model", None) if judge is not None else None,
            embedding_model=model,
            thresholds=(
                threshold_signature(metric.spec.family, self.env.options, model)
                if model is not None
                else None
            ),
        )

    def _aggregate(
        self, session: Session, now: datetime, *, changed: bool
    ) -> list[tuple[Window, WindowAggregate]]:
        end = _epoch(now)
        proportions = {m.name: m.spec.proportion for m in self.per_sample}
        signatures = {m.name: self._signature(m) for m in self.per_sample}
        points: list[tuple[Window, WindowAggregate]] = []
        for window in self.env.windows:
            for item in self.columns.aggregate(end - window.seconds, end, proportions, signatures):
                points.append((window, item))
        if self.dataset:
            stale = time.monotonic() - self._dataset_at > DATASET_REFRESH_S
            if changed or stale or not self._dataset_points:
                self._dataset_points = []
                self._dataset_windows = {}
                for window, item in self._dataset_aggregates(session, now):
                    self._dataset_windows[len(self._dataset_points)] = window.name
                    self._dataset_points.append(item)
                self._dataset_at = time.monotonic()
            by_name = {w.name: w for w in self.env.windows}
            for i, item in enumerate(self._dataset_points):
                points.append((by_name[self._dataset_windows[i]], item))
        return points

    def _dataset_aggregates(
        self, session: Session, now: datetime
    ) -> Iterable[tuple[Window, WindowAggregate]]:

        longest = now - timedelta(seconds=self._longest)
        narrow = self.definition.dataset_candidates or self.definition.candidates
        query = narrow(
            select(Trace.id, Trace.trace_id, Trace.updated_at, Trace.timestamp).where(
                Trace.timestamp >= longest, Trace.timestamp <= now
            )
        )
        keys = []
        ts_of: dict[str, float] = {}
        for row_id, trace_id, updated, ts in session.execute(
            query.order_by(Trace.timestamp.desc()).limit(self.definition.dataset_cap)
        ):
            keys.append((row_id, trace_id, _epoch(updated)))
            ts_of[trace_id] = _epoch(ts)
        samples = [
            (ts_of[trace_id], sample)
            for trace_id, sample in self._memo.samples(session, keys, _updated_s)
        ]
        names = [m.name for m in self.dataset]
        # `samples` is newest first, so a window's subset is a prefix of it; windows whose
        # prefixes are equally long (all candidates are recent) share one evaluation.
        done: dict[int, list[WindowAggregate]] = {}
        for window in self.env.windows:
            start = _epoch(now) - window.seconds
            size = sum(1 for ts, _ in samples if ts >= start)
            if size not in done:
                subset = [s for ts, s in samples if ts >= start]
                done[size] = self._dataset_items(subset, names)
            for item in done[size]:
                yield window, item

    def _dataset_items(self, subset: list[Sample], names: list[str]) -> list[WindowAggregate]:
        from evaluators.runner import evaluate

        if not subset:
            return [
                WindowAggregate(
                    OVERALL, Aggregate(metric, None, 0, skip_reasons={"no traces in window": 0})
                )
                for metric in names
            ]
        items = []
        labels = self.env.group_labels if self.definition.dataset_groups else ()
        first = True
        for label in labels or (None,):
            result = evaluate(subset, names, self._ctx(), group_by=label)
            if first:
                items += [WindowAggregate(OVERALL, result.aggregates[m]) for m in names]
                first = False
            if label is None:
                continue
            for value, aggregates in result.groups.items():
                if value == "(none)":
                    continue
                group = group_for(label, value)
                items += [WindowAggregate(group, aggregates[m]) for m in names]
        return items

    # -- output -----------------------------------------------------------------------------

    def _write(
        self, session: Session, now: datetime, points: list[tuple[Window, WindowAggregate]]
    ) -> int:
        session.execute(
            delete(MetricResult).where(
                MetricResult.job == self.name, MetricResult.computed_at < now - self.env.retention
            )
        )
        rows = []
        quality = []
        for window, item in points:
            agg = item.aggregate
            reasons = dict(agg.skip_reasons)
            for error_type, count in agg.error_types.items():
                reasons[f"error: {error_type}"] = count
            rows.append(
                {
                    "job": self.name,
                    "metric": agg.metric,
                    "window": window.name,
                    "group_key": item.group.key,
                    "group_labels": dict(item.group.labels) or None,
                    "value": agg.value,
                    "n": agg.n,
                    "skipped": agg.skipped,
                    "errors": agg.errors,
                    "skip_reasons": reasons or None,
                    "ci_lower": agg.ci_lower,
                    "ci_upper": agg.ci_upper,
                    "window_start": window.start(now),
                    "window_end": now,
                    "computed_at": now,
                    "signature": str(agg.signature),
                }
            )
            quality.append(quality_point(self.name, window, item.group, agg))
        if rows:
            session.execute(insert_rows(MetricResult), rows)
        self._publish = quality
        return len(rows)

    def publish(self) -> None:
        """Hand the last run's points to the exporter cache (after the commit)."""
        if self.env.results is not None and getattr(self, "_publish", None) is not None:
            self.env.results.replace_job(self.name, self._publish)

    def _record_skip(self, now: datetime, reason: str) -> int:
        """Without a judge: store visible skipped results (n = 0, the reason) and the state."""
        skipped = Aggregate
        points = [
            (window, WindowAggregate(OVERALL, skipped(m, None, 0, skip_reasons={reason: 0})))
            for window in self.env.windows
            for m in self.definition.metrics
        ]
        with self.env.session_factory() as session:
            written = self._write(session, now, points)
            state = session.get(JobState, self.name) or JobState(job=self.name)
            state.last_run_at = now
            state.last_status = "skipped"
            state.last_message = reason
            session.merge(state)
            session.commit()
        return written
