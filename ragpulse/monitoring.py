"""Wiring of the monitoring side of `ragpulse run`: scheduler, `/metrics`, readiness.

`Monitoring` is a service component (`start()`/`stop()`): it loads the exporter's results
cache once from `metric_results`, registers the quality collector and the operations
metrics on the service's registry, starts the scheduler (roles `all`, `scheduler`, `jobs`),
the hourly storage maintenance (partitions ahead, trace retention: roles `all` and
`scheduler` only, as the README says, so N `jobs` workers do not each compete for the
maintenance's table locks beside their own reads) and the HTTP endpoint (every role). A
stand-alone exporter (`exporter`) reloads the results the job processes write every
`scheduler.interval_s` and serves the series made of every process's work (judge counters
from the `judgments` table, change attribution); a `jobs` worker, one of several sharing
the jobs (`collector.jobs.sharding.sharded`), serves only its own counters (job runs, score
histograms), as a `consumer` does, not series it could not keep current. The embedder is
created once here and shared by every job. Quality SLOs: the scheduling process records
their events, the exporting one serves their counters (`slo_setup.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine, text

from collector.jobs.scheduler import JobRunner, Scheduler, build_runner
from collector.settings import Settings
from collector.store.maintenance import StorageMaintenance
from collector.store.session import make_session_factory
from exporters.evaluation_events import EvaluationEvents, make_evaluation_events
from exporters.explanations import Explanations
from exporters.http import MetricsServer, Readiness, serve
from exporters.otel import Telemetry
from exporters.prometheus import JudgeStateCollector, OperationsMetrics, QualityCollector
from exporters.quality import ResultsCache
from exporters.refresh import ResultsRefresher
from exporters.score_histograms import ScoreHistograms
from exporters.slo import SloCollector
from exporters.topics import TopicSeries
from ragpulse.job_setup import (
    JudgmentsFeed,
    job_environment,
    label_limits,
    observe_scripts,
    storage_maintenance,
)
from ragpulse.slo_setup import catch_up, slo_recorder

logger = logging.getLogger(__name__)

ROLES = ("all", "consumer", "scheduler", "jobs", "exporter")


class Monitoring:
    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        registry: CollectorRegistry,
        *,
        role: str = "all",
        consumer: Any = None,
        embedder: Any = None,
        judge: Any = None,
    ) -> None:
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}")
        self.settings = settings
        self.engine = engine
        self.registry = registry
        self.role = role
        self.consumer = consumer
        self.results = ResultsCache()
        self.operations = OperationsMetrics(registry)
        self.operations.set_judge_budget(settings.judge.max_usd_per_day)
        self.telemetry = Telemetry(settings.otel)
        # Served pre-rendered next to the registry (see exporters/prometheus.py).
        self.quality = QualityCollector(
            self.results, settings.scheduler.group_labels, label_limits(settings)
        )
        # Per-trace score histograms with exemplars: fed by the jobs, so served only by a
        # process that schedules them (exporters/score_histograms.py).
        group_labels = settings.scheduler.group_labels
        self.histograms = ScoreHistograms(
            group_labels[0] if group_labels else None, label_limits(settings)
        )
        self.runner: JobRunner | None = None
        self.scheduler: Scheduler | None = None
        self.server: MetricsServer | None = None
        self.refresher: ResultsRefresher | None = None
        self.events: EvaluationEvents | None = None
        self.maintenance: StorageMaintenance | None = None
        self._embedder = embedder
        self._judge = judge

    @property
    def schedules(self) -> bool:
        return self.role in ("all", "scheduler", "jobs")

    @property
    def maintains_storage(self) -> bool:
        """Runs the storage maintenance: the scheduler roles, not the `jobs` workers (the
        maintenance's advisory lock lets one process at a time do it)."""
        return self.role in ("all", "scheduler")

    @property
    def exports_quality(self) -> bool:
        """Serves the quality series, the judge counters and the change attribution: the
        series made from every process's results, which a `jobs` worker (one of many)
        leaves to an `exporter`, and a `consumer` cannot keep current."""
        return self.role not in ("consumer", "jobs")

    def start(self) -> Monitoring:
        factory = make_session_factory(self.engine)
        if self.exports_quality:
            try:
                with factory() as session:
                    loaded = self.results.load_latest(session)
                logger.info("loaded %d latest metric results for /metrics", loaded)
            except Exception:
                logger.exception("could not load the latest metric results")
        specs = self.settings.slo.specs()
        if self.exports_quality and specs:
            self.registry.register(SloCollector(specs, factory))
        if self.role == "exporter":
            self.refresher = ResultsRefresher(
                self.results,
                factory,
                self.settings.scheduler.interval_s,
                self.quality,
                after=self._shared_series(factory),
            ).start()
        if self.schedules:
            # the jobs' outcomes as OTel evaluation events (off unless evaluation_events.enabled)
            self.events = make_evaluation_events(self.settings, factory, self.registry)
            env = job_environment(
                self.settings,
                self.engine,
                results=self.results if self.exports_quality else None,
                embedder=self._embedder,
                judge=self._judge,
                observers=(self.events,) if self.events is not None else (),
            )
            observe_scripts(env.embedder, self.operations.record_embedding_scripts)
            env.observers = (*env.observers, self.histograms)
            recorder = slo_recorder(self.settings, factory)
            if recorder is not None:
                env.observers = (*env.observers, recorder)
                try:
                    catch_up(self.settings, factory)
                except Exception:
                    logger.exception("could not record the SLO events of stored outcomes")
            self.registry.register(self.histograms)
            self.runner = build_runner(
                self.settings,
                self.engine,
                env,
                operations=self.operations,
                telemetry=self.telemetry,
            )
            if env.judge is not None:
                self.registry.register(JudgeStateCollector(env.judge))
            if self.exports_quality:
                refresh = self._shared_series(factory)
                self.runner.on_done = lambda _report: refresh()
            self.runner.register()
            if self.maintains_storage:
                self.maintenance = storage_maintenance(self.settings, self.engine).start()
            self.scheduler = Scheduler(
                self.runner,
                self.settings.scheduler.interval_s,
                self.settings.scheduler.initial_delay_s,
            ).start()
        try:
            self.server = serve(
                self.registry,
                self.settings.exporter,
                self.readiness,
                quality=self.quality if self.exports_quality else None,
            )
        except BaseException:
            self.stop()  # e.g. the port is taken: the scheduler started above must not linger
            raise
        return self

    def _shared_series(self, factory: Any) -> Callable[[], None]:
        """The series made from what every worker stored, served by one process: the
        judge counters (from the `judgments` table) and the slices behind live drops.
        Returns what brings them and the rendered quality series up to date (after each
        job run, or each reload of a stand-alone exporter)."""
        feed = JudgmentsFeed(self.operations, factory)
        feed.sync()
        explanations = self._explanations(factory)
        topics = self._topics(factory)

        def refresh() -> None:
            try:
                explanations.refresh(self.results.snapshot())
            except Exception:
                logger.exception("could not explain the metrics that are worse")
            topics.refresh()  # logs its own errors
            try:
                feed.sync()
            except Exception:
                logger.exception("could not read new judgments for the judge counters")
            try:
                self.quality.prerender()  # here, so no scrape pays for the formatting
            except Exception:
                logger.exception("could not render the quality series")

        return refresh

    def _explanations(self, factory: Any) -> Explanations:
        """The slices behind live drops (`ragpulse_change_attribution`), for the alerts."""
        from collector.settings import parse_duration
        from ragpulse.metric_jobs import per_trace_targets

        explanations = Explanations(
            factory,
            per_trace_targets(self.settings),
            dimensions=self.settings.slices.dimensions,
            max_values=self.settings.slices.max_values,
            min_drop=self.settings.alerting.ticket_drop,
            every_s=parse_duration(self.settings.alerting.every),
        )
        self.registry.register(explanations)
        return explanations

    def _topics(self, factory: Any) -> TopicSeries:
        """The kept topics' share and emerging flag (`ragpulse_topic_*`), for the
        `RagpulseTopicEmerging` ticket."""
        from collector.settings import parse_duration

        series = TopicSeries(
            factory,
            self.settings.topics,
            every_s=parse_duration(self.settings.alerting.every),
        )
        self.registry.register(series)
        series.refresh(force=True)
        return series

    def readiness(self) -> Readiness:
        checks: dict[str, str] = {}
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            checks["database"] = "ok"
        except Exception as exc:
            checks["database"] = f"unreachable: {type(exc).__name__}"
        inner = getattr(self.consumer, "_consumer", None) if self.consumer is not None else None
        if self.role in ("all", "consumer") and self.consumer is not None:
            assigned = bool(inner is not None and inner.assignment())
            checks["consumer"] = "assigned" if assigned else "no partition assigned"
            stuck = self._stuck()
            if stuck:
                checks["consumer"] = stuck
        if self.runner is not None:
            failed = sorted(j for j, r in self.runner.last.items() if r.status == "error")
            checks["jobs"] = "ok" if not failed else "failed: " + ",".join(failed)
        ready = all(v in ("ok", "assigned") for v in checks.values())
        return Readiness(ready, checks)

    def _stuck(self) -> str | None:
        """Why the consumer is not ready when it failed the same batch too often."""
        health = getattr(self.consumer, "health", None)
        if health is None:
            return None
        state = health()
        if state.failures < self.settings.kafka.unready_after_failures:
            return None
        return (
            f"stuck for {state.stuck_seconds():.0f}s: the batch at {state.where()} failed "
            f"{state.failures} times, last error: {state.error}"
        )

    def stop(self) -> None:
        if self.maintenance is not None:
            self.maintenance.stop()
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=True)
        if self.runner is not None:
            self.runner.close()
        if self.refresher is not None:
            self.refresher.stop()
        if self.server is not None:
            self.server.stop()
        if self.events is not None:
            self.events.shutdown()  # after the scheduler: the last run's events are flushed
        self.telemetry.shutdown()
