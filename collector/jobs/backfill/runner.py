"""Back-fill: a job's windows and detectors as they were at past times.

A new install, or a new metric, has no history: its 7-day baselines, the drift detectors'
baselines and the dashboards start empty. `backfill` scores, for jobs that need no judge,
the traces of the whole span that have no outcomes yet (a chunk at a time, their sums
added to the job's buckets), then computes the per-sample metrics' windows and detectors
at every step from `start` to `end` from the bucket sums, exactly as a run at that time
would have from the same outcomes, and writes them to
`metric_results` with that time as `computed_at` (rows of an earlier back-fill at the same
times are replaced, so it can be run again). The steps run in blocks, on several
processes when asked (`backfill_workers`). Each step's points also go to `emit`, e.g.
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

from collector.jobs.backfill.workers import (
    STEPS_PER_COMMIT,
    Emit,
    Stepped,
    Steps,
    can_fork,
    plan,
    run_block,
    run_parallel,
    score_parallel,
)
from collector.jobs.buckets.history import BucketHistory, since_of
from collector.jobs.recording.cursor import epoch
from collector.jobs.run.definition import JobDefinition, JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.result_store import expire_results


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
    workers: int = 1,
) -> BackfillReport:
    """Compute and store `definition`'s per-sample windows and detectors at each of
    `times` (oldest first); `workers` > 1: the scoring and the steps on that many
    processes (PostgreSQL; on SQLite one)."""
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
    parallel = workers > 1 and can_fork(env)
    if definition.uses_judge:
        new = 0
    elif parallel:
        new = score_parallel(job, env, times[-1], workers)
    else:
        new = job.load_history(times[-1], evaluate=True)
    with env.session_factory() as session:
        sums = BucketHistory(
            session, definition.name, since_of(times, job.longest_s), epoch(times[-1])
        )
        expire_results(session, definition.name, times[-1], env.retention)
        session.commit()
    steps = Steps(job, env, sums, points=emit is not None)
    finished = 0

    def step_done(count: int = 1) -> None:
        nonlocal finished
        finished += count
        if progress is not None:
            progress(finished)

    if parallel and len(times) > STEPS_PER_COMMIT:
        first, *rest = plan(steps, times, workers)
        # the first block in this process: the workers inherit what it built (the
        # detectors' frame and its running sums) instead of each building its own
        written = run_block(steps, first, emit, step_done)

        def block_done(count: int, stepped: Stepped) -> None:
            for at, points in stepped:
                if emit is not None:
                    emit(at, points)
            step_done(count)

        written += run_parallel(steps, rest, workers, block_done)
    else:
        written = run_block(steps, times, emit, step_done)
    return BackfillReport(
        definition.name, "ok", len(times), written, new, time.perf_counter() - started
    )
