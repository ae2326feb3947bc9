"""Which jobs exist, how one run is guarded, and the APScheduler that repeats them.

`JobRunner.run(name)` runs a job and never lets an exception escape: a failure is logged
with `logger.exception` and counted in `ragpulse_job_runs_total{status="error"}`, and the
other jobs go on. Given a `ShardConfig` (PostgreSQL with `scheduler.shards` > 0), a job
that evaluates traces one by one runs sharded (`sharded.py`): every replica takes a share
of its traces and one at a time aggregates. Otherwise (SQLite, the jobs that compute
their own way) the run takes the job's lock (advisory lock on PostgreSQL, so with several
replicas exactly one runs it). `Scheduler` runs every job every `interval_s` with
`max_instances=1` and `coalesce=True`, so a slow run is never overlapped by itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

from sqlalchemy import Engine

from collector.jobs.catalog import (
    canary,
    embedding_quality,
    external,
    judge_agreement,
    judge_consistency,
    judge_pipeline,
    rag_quality,
    real_users_benchmark,
    retrieval_health,
    sessions,
    text_quality,
    topics,
    ux,
)
from collector.jobs.run.definition import (
    JobDefinition,
    JobEnvironment,
    JobOptions,
    JobReport,
    SloRule,
)
from collector.jobs.run.engine import NO_JUDGE, IncrementalJob
from collector.jobs.sharding.leases import ShardConfig, ShardLeases, worker_id
from collector.jobs.sharding.sharded import ShardedRun
from collector.settings import Settings
from collector.store.job_lock import job_lock
from evaluators.errors import UnknownMetricError
from evaluators.judge.errors import JudgeConnectionError
from evaluators.registry import JOB_METRICS, resolve

logger = logging.getLogger(__name__)

JOB_MODULES = (
    real_users_benchmark,
    judge_pipeline,
    ux,
    rag_quality,
    judge_consistency,
    judge_agreement,
    text_quality,
    embedding_quality,
    retrieval_health,
    external,
    canary,
    sessions,
    topics,
)
JOB_NAMES = tuple(m.NAME for m in JOB_MODULES)
JUDGE_JOBS = ("rag_quality", "judge_consistency")


def definitions(settings: Settings) -> dict[str, JobDefinition]:
    """Every job's definition, keeping only metrics the evaluators know (others logged)."""
    out: dict[str, JobDefinition] = {}
    for module in JOB_MODULES:
        definition: JobDefinition = module.definition(settings)
        if definition.factory is not None:
            out[definition.name] = definition  # its metrics are computed by the job itself
            continue
        known = []
        for metric in definition.metrics:
            try:
                resolve(metric)
            except UnknownMetricError:
                logger.warning("job %s: metric %s is not available", definition.name, metric)
                continue
            known.append(metric)
        out[definition.name] = _with_metrics(definition, tuple(known))
    return out


def _with_metrics(definition: JobDefinition, metrics: tuple[str, ...]) -> JobDefinition:
    from dataclasses import replace

    return replace(definition, metrics=metrics)


def stored_per_trace(definition: JobDefinition) -> tuple[str, ...]:
    """The metrics whose per-trace outcomes a job stores: every metric of a per-trace job;
    of a job computing its own metrics, those declared `per_trace` (`sessions`)."""
    if definition.factory is None:
        return definition.metrics
    return tuple(m for m in definition.metrics if m in JOB_METRICS and JOB_METRICS[m].per_trace)


def metric_jobs(settings: Settings) -> dict[str, list[str]]:
    """Metric -> the jobs storing its per-trace outcomes."""
    out: dict[str, list[str]] = {}
    for job, definition in definitions(settings).items():
        for metric in stored_per_trace(definition):
            out.setdefault(metric, []).append(job)
    return out


def job_options(settings: Settings) -> JobOptions:
    """What the jobs read of the settings (`JobOptions`)."""
    return JobOptions(
        metric_options=MappingProxyType(settings.ux.model_dump()),
        canary=settings.canary,
        judge=settings.judge,
        metric_jobs=MappingProxyType(
            {metric: tuple(jobs) for metric, jobs in metric_jobs(settings).items()}
        ),
        slo_rules=slo_rules(settings),
    )


def slo_rules(settings: Settings) -> tuple[SloRule, ...]:
    """(slo, metric, op, threshold) of the threshold SLOs: the judge agreement job compares
    their classification with the human labels (`evaluators.threshold_agreement`)."""
    return tuple(
        (s.name, s.metric, s.op, s.threshold) for s in settings.slo.specs() if s.kind == "threshold"
    )


class JobRunner:
    """Runs jobs once each, sharded or guarded by the job lock, recording metrics and spans."""

    def __init__(
        self,
        jobs: dict[str, IncrementalJob],
        engine: Engine,
        *,
        operations: Any = None,
        telemetry: Any = None,
        on_done: Callable[[JobReport], None] | None = None,
        sharding: ShardConfig | None = None,
    ) -> None:
        self.jobs = jobs
        self.engine = engine
        self.operations = operations
        self.telemetry = telemetry
        self.on_done = on_done
        self.sharding = sharding
        self.worker = worker_id()
        """This process's name on the shard leases it takes."""
        self.last: dict[str, JobReport] = {}
        self._leases: dict[str, ShardLeases] = {}
        if operations is not None:
            operations.declare_jobs(list(jobs))

    def sharded(self, job: IncrementalJob) -> bool:
        """True when `job` runs sharded: a `ShardConfig` was given, the job evaluates
        trace by trace, and it will evaluate (a judge job without a judge only records
        its skip)."""
        return (
            self.sharding is not None
            and job.shardable
            and not (job.definition.uses_judge and job.env.judge is None)
        )

    def run(self, name: str) -> JobReport:
        job = self.jobs[name]
        started = time.perf_counter()
        if self.sharded(job):
            report = self._run_guarded(
                job, started, ShardedRun(job, self._leases_of(name), self.engine).run
            )
        else:
            with job_lock(self.engine, name) as held:
                if not held:
                    report = JobReport(name, "locked", message="another run holds the lock")
                    logger.info("job %s: skipped, another run holds the lock", name)
                else:
                    report = self._run_guarded(job, started, job.run)
        self.last[name] = report
        if self.operations is not None and report.status != "locked":
            self.operations.record_job(name, report.status, report.seconds)
            if report.labels:
                self.operations.record_labels(name, report.labels)
            if report.pending_retry is not None:
                self.operations.record_retries(name, report.retries, report.pending_retry)
        if self.on_done is not None:
            self.on_done(report)
        return report

    def _leases_of(self, name: str) -> ShardLeases:
        if self.sharding is None:
            raise ValueError("not sharded")
        leases = self._leases.get(name)
        if leases is None:
            leases = self._leases[name] = ShardLeases(self.engine, name, self.worker, self.sharding)
        return leases

    def register(self) -> None:
        """Count this process as a live worker of every sharded job now (at start-up,
        before the first runs), so processes started together share from the first run."""
        for name, job in self.jobs.items():
            if self.sharded(job):
                try:
                    self._leases_of(name).register()
                except Exception:
                    logger.exception("job %s: could not register this worker", name)

    def close(self) -> None:
        """This process stops running the jobs: no longer counted as a live worker (the
        others take bigger shares at once instead of after the presence expires)."""
        for leases in self._leases.values():
            try:
                leases.forget()
            except Exception:
                logger.exception("job %s: could not unregister this worker", leases.job)

    def _run_guarded(
        self, job: IncrementalJob, started: float, call: Callable[[], JobReport]
    ) -> JobReport:
        try:
            if self.telemetry is not None:
                with self.telemetry.job_run(job.name):
                    report = call()
            else:
                report = call()
        except Exception as exc:
            if isinstance(exc, JudgeConnectionError):
                # an outage, not a bug: one line; the job's traces stay pending for next time
                logger.error("job %s failed: %s", job.name, exc)
            else:
                logger.exception("job %s failed", job.name)
            return JobReport(
                job.name,
                "error",
                seconds=time.perf_counter() - started,
                message=f"{type(exc).__name__}: {exc}",
            )
        job.publish()
        logger.info(
            "job %s: %s%s, %d new traces, %d results in %.2fs",
            job.name,
            report.status,
            _why(report),
            report.new_traces,
            report.results,
            report.seconds,
        )
        return report

    def run_many(self, names: Sequence[str] | None = None) -> list[JobReport]:
        return [self.run(name) for name in (names or list(self.jobs))]


JUDGE_HINT = (
    "set RAGPULSE_JUDGE__MODELS, e.g. openai/gpt-4o-mini, and RAGPULSE_JUDGE__API_BASE for "
    "an OpenAI-compatible server of your own"
)


def _why(report: JobReport) -> str:
    """A skipped run's reason, for the log line (' (no judge configured: set ...)')."""
    if report.status != "skipped":
        return ""
    if report.message == NO_JUDGE:
        return f" ({NO_JUDGE}: {JUDGE_HINT})"
    return f" ({report.message or 'nothing to do'})"


def build_job(definition: JobDefinition, env: JobEnvironment) -> IncrementalJob:
    """The job that runs `definition`: the one its `factory` builds (a job computing its
    own way, a subclass of `IncrementalJob`), else the per-trace `IncrementalJob`."""
    if definition.factory is None:
        return IncrementalJob(definition, env)
    job = definition.factory(definition, env)
    if not isinstance(job, IncrementalJob):
        raise TypeError(
            f"job {definition.name}: its factory built a {type(job).__name__}, "
            "not an IncrementalJob"
        )
    return job


def build_runner(
    settings: Settings,
    engine: Engine,
    env: JobEnvironment,
    *,
    names: Sequence[str] | None = None,
    operations: Any = None,
    telemetry: Any = None,
    once: bool = False,
) -> JobRunner:
    """The runner of the chosen jobs (`once`: for one run each, `ragpulse jobs run`)."""
    defs = definitions(settings)
    chosen = list(names or settings.scheduler.jobs or JOB_NAMES)
    unknown = [n for n in chosen if n not in defs]
    if unknown:
        raise ValueError(f"unknown job(s) {', '.join(unknown)}; known: {', '.join(JOB_NAMES)}")
    jobs = {name: build_job(defs[name], env) for name in chosen}
    return JobRunner(
        jobs,
        engine,
        operations=operations,
        telemetry=telemetry,
        sharding=shard_config(settings, engine, once=once),
    )


def shard_config(settings: Settings, engine: Engine, *, once: bool) -> ShardConfig | None:
    """How the jobs are split across workers: on PostgreSQL with `scheduler.shards` > 0
    (SQLite serves one process: its jobs run whole). Scheduled runs write a job's
    results at most twice an interval; a run `once` (`ragpulse jobs run`) whenever it
    has anything new."""
    cfg = settings.scheduler
    if engine.dialect.name != "postgresql" or cfg.shards == 0:
        return None
    gap = 0.0 if once else cfg.interval_s / 2
    return ShardConfig(
        cfg.shards,
        cfg.shard_lease_s,
        cfg.interval_s,
        aggregate_gap_s=gap,
        start_grace_s=cfg.shard_start_grace_s,
    )


class Scheduler:
    """APScheduler 3 background scheduler running every job on the interval."""

    def __init__(self, runner: JobRunner, interval_s: float, initial_delay_s: float = 5.0):
        from apscheduler.schedulers.background import BackgroundScheduler

        self.runner = runner
        self._scheduler = BackgroundScheduler(timezone=UTC)
        first = datetime.now(UTC) + timedelta(seconds=initial_delay_s)
        for i, name in enumerate(runner.jobs):
            self._scheduler.add_job(
                runner.run,
                "interval",
                seconds=interval_s,
                args=[name],
                id=name,
                name=name,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=max(1, int(interval_s)),
                # Staggered by a second so the jobs do not all start in the same instant.
                next_run_time=first + timedelta(seconds=i),
            )

    def start(self) -> Scheduler:
        self._scheduler.start()
        return self

    def shutdown(self, wait: bool = True) -> None:
        self._scheduler.shutdown(wait=wait)
