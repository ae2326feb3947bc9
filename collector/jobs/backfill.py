"""Back-fill: a job's windows and detectors as they were at past times.

A new install, or a new metric, has no history: its 7-day baselines, the drift detectors'
baselines and the dashboards start empty. `backfill` scores, for jobs that need no judge,
the traces of the whole span that have no outcomes yet (a chunk at a time, their sums
added to the job's buckets), then computes the per-sample metrics' windows and detectors
at every step from `start` to `end` from the bucket sums, exactly as a run at that time
would have from the same outcomes, and writes them to
`metric_results` with that time as `computed_at` (rows of an earlier back-fill at the same
times are replaced, so it can be run again). Each step's points also go to `emit`, e.g.
an OpenMetrics file to back-fill Prometheus with (`exporters.openmetrics`). The
percentiles of the metrics read by quantile (`latency_ms_p50`, `_p95`, `_p99`) are
back-filled too, from the bins, which each step reads by a query (`bucket_history`).

What it cannot know: a trace's version as it was then (feedback that arrived later counts
from the start), and dataset metrics (sessions, clusters, confusion matrices: recomputed
from traces and embeddings at every run, too costly per step), which are left out. Judge
jobs only use what was judged already: a back-fill pays for no judge call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from collector.jobs.bucket_history import BucketHistory, since_of
from collector.jobs.definition import JobDefinition, JobEnvironment
from collector.jobs.engine import IncrementalJob
from collector.jobs.publish import QualityPoint, quality_points
from collector.jobs.result_store import write_steps
from collector.jobs.sync import epoch

Emit = Callable[[datetime, list[QualityPoint]], None]
STEPS_PER_COMMIT = 20
"""Steps whose results are written in one transaction (~5,600 rows for a job of ~20
metrics): a commit per step cost more than the step's COPY."""


@dataclass(frozen=True)
class BackfillReport:
    job: str
    status: str
    """ok, or skipped (with the reason in `message`)."""
    steps: int = 0
    results: int = 0
    new_traces: int = 0
    seconds: float = 0.0
    message: str = ""


def steps(start: datetime, end: datetime, step: timedelta) -> list[datetime]:
    """`end`, `end - step`, ... down to `start`, oldest first (aligned on `end`)."""
    if step <= timedelta(0):
        raise ValueError("the step must be positive")
    out = []
    at = end
    while at >= start:
        out.append(at)
        at -= step
    return out[::-1]


def backfill(
    definition: JobDefinition,
    env: JobEnvironment,
    times: Sequence[datetime],
    *,
    emit: Emit | None = None,
    progress: Callable[[int], None] | None = None,
) -> BackfillReport:
    """Compute and store `definition`'s per-sample windows and detectors at each of
    `times` (oldest first)."""
    started = time.perf_counter()
    if definition.factory is not None:
        return BackfillReport(
            definition.name, "skipped", message="computes its own metrics (not per trace)"
        )
    if not times:
        return BackfillReport(definition.name, "ok")
    span = (times[-1] - times[0]).total_seconds()
    job = IncrementalJob(definition, env, history_s=span)
    if not job.per_sample:
        return BackfillReport(
            definition.name, "skipped", message="only dataset metrics (not back-filled)"
        )
    evaluate = not definition.uses_judge
    new = job.load_history(times[-1], evaluate=evaluate)
    written = 0
    with env.session_factory() as session:
        sums = BucketHistory(
            session, definition.name, since_of(times, job.longest_s), epoch(times[-1])
        )
    for first in range(0, len(times), STEPS_PER_COMMIT):
        batch = times[first : first + STEPS_PER_COMMIT]
        with env.session_factory() as session:
            sums.preload_ends(session, [epoch(at) for at in batch])
            done = []
            for i, at in enumerate(batch, start=first + 1):
                points = job.points_at(session, at, sums)
                done.append((at, points))
                if emit is not None:
                    emit(at, quality_points(definition.name, points, epoch(at)))
                if progress is not None:
                    progress(i)
            written += write_steps(session, definition.name, done, env.retention, replace=True)
            session.commit()
    return BackfillReport(
        definition.name, "ok", len(times), written, new, time.perf_counter() - started
    )
