"""A back-fill's work on several processes: its traces scored by span of time, its steps by block.

Scoring: with `workers` > 1 on PostgreSQL each forked worker scores the pending traces of
one span of timestamps (the span's traces cut in equal counts), a chunk at a time: their
outcome rows never meet and neither do their minutes' sums, so they never wait for each
other. (A shard of the trace ids' hash, as the sharded jobs split theirs, made
PostgreSQL's planner misjudge the backlog's anti-join by 200x: minutes a chunk.)

Steps: after its traces are scored, a back-fill's steps read only what the job stored (its
bucket sums, held in `BucketHistory`, and the rows of its small windows) and write their
own times' results, so blocks of steps are independent and CPU-bound: with `workers`
> 1 on PostgreSQL they run on forked processes, which share the sums read once by the
parent (copy-on-write) and each open their own connections.

One thing ties a step to the one before: the detectors are recomputed at most every
`DriftConfig.every_s` and given again in between (`IncrementalJob._drift_at`). A block
therefore starts only at a time where one process stepping through every time would
have recomputed them (`blocks`), and forgets what it computed before, so each step gets
what it gets in one process.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from collector.jobs.buckets.history import BucketHistory
from collector.jobs.recording.cursor import Span, epoch
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.publish import QualityPoint, quality_points
from collector.jobs.run.result_store import write_steps

STEPS_PER_COMMIT = 20
"""Steps whose results are written in one transaction (~5,600 rows for a job of ~20
metrics): a commit per step cost more than the step's COPY."""
PARALLEL_SCORING = 40_000
"""Traces a worker at least (two backlog chunks) before a back-fill's scoring is split:
a worker costs a fork and, for jobs that embed, loading the model again (seconds)."""
BLOCKS_PER_WORKER = 8
"""Blocks per worker process: enough to even out blocks of unequal cost, few enough that
each is a good run of consecutive steps (a small window's rows roll from step to step)."""

Emit = Callable[[datetime, list[QualityPoint]], None]
Stepped = list[tuple[datetime, list[QualityPoint]]]
"""A block's steps' times and points, handed back by a worker for the caller's `Emit`."""


@dataclass
class Steps:
    """What every block needs: the job (scored), its environment and its sums."""

    job: IncrementalJob
    env: JobEnvironment
    sums: BucketHistory
    points: bool
    """Hand each step's points on (the caller emits them)."""


def recomputed(times: Sequence[datetime], every_s: float) -> list[bool]:
    """Whether one process stepping through `times` recomputes the detectors at each."""
    out = []
    last: float | None = None
    for at in times:
        t = epoch(at)
        fresh = last is None or not 0 <= t - last < every_s
        if fresh:
            last = t
        out.append(fresh)
    return out


def blocks(
    times: Sequence[datetime], every_s: float, size: int, first: int | None = None
) -> list[list[datetime]]:
    """`times` cut into consecutive blocks of at least `size` (the first: of at least
    `first`; the last may be shorter), each starting where the detectors are recomputed."""
    out: list[list[datetime]] = []
    for at, fresh in zip(times, recomputed(times, every_s), strict=True):
        least = size if len(out) != 1 or first is None else first
        if not out or (fresh and len(out[-1]) >= least):
            out.append([])
        out[-1].append(at)
    return out


def plan(steps: Steps, times: Sequence[datetime], workers: int) -> list[list[datetime]]:
    """The blocks of a back-fill on `workers` processes: a first one of a single step
    where possible (the parent runs it, so that the workers inherit what it builds), then
    `BLOCKS_PER_WORKER` a worker."""
    config = steps.env.drift
    size = max(STEPS_PER_COMMIT, math.ceil(len(times) / (workers * BLOCKS_PER_WORKER)))
    return blocks(times, config.every_s if config is not None else 0.0, size, first=1)


def run_block(
    steps: Steps,
    block: Sequence[datetime],
    emit: Emit | None = None,
    on_step: Callable[[], None] | None = None,
) -> int:
    """Compute and store the results at each time of `block`, each step's points handed
    to `emit` (when `steps.points`); the rows written."""
    job, env, sums = steps.job, steps.env, steps.sums
    job.forget_detectors()
    written = 0
    for first in range(0, len(block), STEPS_PER_COMMIT):
        batch = block[first : first + STEPS_PER_COMMIT]
        with env.session_factory() as session:
            sums.preload_ends(session, [epoch(at) for at in batch])
            done = []
            for at in batch:
                points = job.points_at(session, at, sums)
                done.append((at, points))
                if steps.points and emit is not None:
                    emit(at, quality_points(job.name, points, epoch(at)))
                if on_step is not None:
                    on_step()
            written += write_steps(session, job.name, done, None, replace=True)
            session.commit()
    return written


_HELD: Steps | None = None
"""The parent's `Steps`, inherited by the forked workers (never pickled)."""


def _start_worker(engine: Engine) -> None:
    # the parent's pooled connections are not this process's to use or close
    engine.dispose(close=False)


def _run_held(block: list[datetime]) -> tuple[int, Stepped]:
    if _HELD is None:
        raise RuntimeError("a back-fill worker started without its steps")
    stepped: Stepped = []
    written = run_block(_HELD, block, lambda at, points: stepped.append((at, points)))
    return written, stepped


def run_parallel(
    steps: Steps,
    parts: Sequence[list[datetime]],
    workers: int,
    done: Callable[[int, Stepped], None],
) -> int:
    """Run the blocks `parts` on `workers` forked processes; `done(steps, stepped)` is
    called as each block ends, in time order. The rows written."""
    global _HELD
    engine = steps.env.session_factory.kw["bind"]
    _HELD = steps
    written = 0
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(workers, initializer=_start_worker, initargs=(engine,)) as pool:
            for block, (count, stepped) in zip(parts, pool.imap(_run_held, parts), strict=True):
                written += count
                done(len(block), stepped)
    finally:
        _HELD = None
    return written


_SCORING: tuple[IncrementalJob, datetime] | None = None
"""The job and the back-fill's end, inherited by the scoring workers."""


def _score_span(span: Span) -> int:
    if _SCORING is None:
        raise RuntimeError("a back-fill worker started without its job")
    job, now = _SCORING
    return job.load_history(now, evaluate=True, span=span)


def spans(session: Session, since: datetime, workers: int) -> list[Span]:
    """[since, ...) cut into `workers` spans holding as many traces each (the last
    without an end); one span while they are fewer than `PARALLEL_SCORING` a worker."""
    cuts = [i / workers for i in range(1, workers)]
    query = text(
        "SELECT count(*), percentile_disc(CAST(:cuts AS float8[])) WITHIN GROUP "
        "(ORDER BY timestamp) FROM traces WHERE timestamp >= :since"
    ).bindparams(cuts=cuts, since=since)
    count, found = session.execute(query).one()
    if count < PARALLEL_SCORING * workers:
        return [(since, None)]
    bounds = sorted({since, *(b for b in found or () if b is not None and b > since)})
    return [
        (start, bounds[i + 1] if i + 1 < len(bounds) else None) for i, start in enumerate(bounds)
    ]


def score_parallel(job: IncrementalJob, env: JobEnvironment, now: datetime, workers: int) -> int:
    """Score the job's pending traces up to `now` on `workers` forked processes, a span
    of timestamps each (after `prepare_history` in this process); a small backlog in
    this process. Traces scored."""
    global _SCORING
    job.prepare_history(now)
    with env.session_factory() as session:
        parts = spans(session, now - timedelta(seconds=job.history_s), workers)
    if len(parts) == 1:
        return job.load_history(now, evaluate=True)
    engine = env.session_factory.kw["bind"]
    _SCORING = (job, now)
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(len(parts), initializer=_start_worker, initargs=(engine,)) as pool:
            return sum(pool.map(_score_span, parts, chunksize=1))
    finally:
        _SCORING = None


def can_fork(env: JobEnvironment) -> bool:
    """Whether steps may run on forked workers: PostgreSQL (SQLite allows one writer)."""
    bind: Any = env.session_factory.kw.get("bind")
    return (
        bind is not None
        and bind.dialect.name == "postgresql"
        and "fork" in multiprocessing.get_all_start_methods()
    )
