"""Build the jobs' environment from settings: the shared embedder, the judge, the windows.

The service and `ragpulse jobs run` both call `job_environment`; the embedder is created
once here (lazy: the model loads on the first encode) and shared by every job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from types import MappingProxyType
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.drift.detector import Detector, DriftConfig
from collector.jobs.recording.observers import OutcomeObserver
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.embeddings import RecentEmbeddings
from collector.jobs.run.evaluation import JobMetrics
from collector.jobs.run.publish import ResultsSink
from collector.jobs.scheduler import definitions, job_options
from collector.jobs.windows.labels import LabelLimits, LabelPolicy, clean_value
from collector.jobs.windows.versions import VERSION_LABEL
from collector.jobs.windows.window import TOPIC_LABEL, parse_windows
from collector.settings import Settings, parse_duration
from collector.store.maintenance import StorageMaintenance
from collector.store.models import Judgment
from collector.store.session import make_session_factory
from evaluators.embedder import TextEncoder
from evaluators.judge.protocol import Judge
from evaluators.registry import JobMetric, describe
from ragpulse.judge import make_judge


def make_embedder(settings: Settings) -> TextEncoder:
    from evaluators.embedder import Embedder

    cfg = settings.embeddings
    return Embedder(
        cfg.model, batch_size=cfg.batch_size, device=cfg.device, precision=cfg.precision
    )


def observe_scripts(embedder: Any, observer: Callable[[str, int, int], None]) -> bool:
    """Route the script counts of the `Embedder` inside `embedder` (through its caches'
    `inner`) to `observer` (the Prometheus counters), created at zero; False when there is
    no model watching scripts (a stand-in encoder)."""
    seen = 0
    while embedder is not None and seen < 8:
        watch = getattr(embedder, "scripts", None)
        if watch is not None and hasattr(watch, "observer"):
            watch.observer = observer
            if watch.scripts is not None:
                observer(watch.model_name, 0, 0)
            return True
        embedder = getattr(embedder, "inner", None)
        seen += 1
    return False


def shared_embedder(
    embedder: TextEncoder | None,
    settings: Settings | None = None,
    session_factory: sessionmaker[Session] | None = None,
) -> TextEncoder | None:
    """`embedder` behind the cross-run cache (once, never wrapped twice): recent texts in
    memory and, with `embeddings.persist` and a session factory, the `embeddings` table."""
    if embedder is None or isinstance(embedder, RecentEmbeddings):
        return embedder
    if settings is None:
        return RecentEmbeddings(embedder)
    cfg = settings.embeddings
    store = None
    persist = cfg.persist
    if persist is None and session_factory is not None:
        bind = session_factory.kw.get("bind")
        persist = bind is not None and bind.dialect.name == "postgresql"
    if persist and session_factory is not None:
        from collector.store.embeddings import SqlEmbeddingStore

        store = SqlEmbeddingStore(session_factory)
    return RecentEmbeddings(
        embedder,
        cfg.cache_texts,
        store=store,
        retention=timedelta(seconds=parse_duration(cfg.retention)),
    )


def job_environment(
    settings: Settings,
    engine: Engine,
    *,
    results: ResultsSink | None = None,
    embedder: TextEncoder | None = None,
    judge: Judge | None = None,
    observers: Sequence[OutcomeObserver] = (),
) -> JobEnvironment:
    factory = make_session_factory(engine)
    return JobEnvironment(
        session_factory=factory,
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        embedder=shared_embedder(
            embedder if embedder is not None else make_embedder(settings), settings, factory
        ),
        judge=judge if judge is not None else make_judge(settings.judge, factory),
        options=job_options(settings),
        results=results,
        retention=timedelta(seconds=parse_duration(settings.scheduler.results_retention)),
        to_sample=sample_mapper(settings),
        label_limits=label_limits(settings),
        drift=drift_config(settings),
        slice_dimensions=tuple(settings.slices.dimensions),
        version_sources=tuple(settings.versions.sources),
        observers=tuple(observers),
        judge_transient_retries=settings.judge.transient_retries,
    )


def drift_config(settings: Settings) -> DriftConfig | None:
    """The page and ticket detectors, each with the number of metrics it watches across
    every scheduled job (its family of series is that x the groups)."""
    cfg = settings.alerting
    if not cfg.enabled:
        return None
    watched: list[tuple[str, bool]] = []  # (metric, judged) of every per-sample metric
    for definition in definitions(settings).values():
        if definition.factory is not None:
            # a job computing its own metrics: those it stores per trace have detectors
            for name in definition.metrics:
                facts = describe(name)
                per_trace = isinstance(facts, JobMetric) and facts.per_trace
                if per_trace and facts.direction in ("higher", "lower"):
                    watched.append((name, False))
            continue
        for m in JobMetrics.resolve(definition.metrics).per_sample:
            if m.spec.direction in ("higher", "lower"):
                watched.append((m.name, m.spec.uses_judge))
    page_metrics = frozenset(cfg.page_metrics)
    judged = {name: parse_duration(cfg.judge_page_within) for name, judge in watched if judge}
    page = Detector(
        "page",
        cfg.page_drop,
        cfg.false_pages_per_week,
        parse_duration(cfg.page_within),
        metrics=page_metrics,
        series_metrics=max(1, sum(1 for name, _ in watched if name in page_metrics)),
        within_by_metric=MappingProxyType(judged),
    )
    ticket = Detector(
        "ticket",
        cfg.ticket_drop,
        cfg.false_tickets_per_week,
        parse_duration(cfg.page_within),
        series_metrics=max(1, len(watched)),
        within_by_metric=MappingProxyType(judged),
    )
    return DriftConfig(
        (page, ticket), parse_duration(cfg.span), cfg.min_baseline, parse_duration(cfg.every)
    )


def label_limits(settings: Settings) -> LabelLimits:
    """The `labels` settings as the jobs' and exporter's `LabelLimits` (allow-listed values
    cleaned the way tag values are, so they compare equal); the `version` label is bounded
    by `versions.max_values` and the `topic` label by `topics.series` unless
    `labels.per_label` says otherwise."""
    cfg = settings.labels
    per_label = {
        VERSION_LABEL: LabelPolicy(settings.versions.max_values),
        TOPIC_LABEL: LabelPolicy(settings.topics.series),
    }
    for label, limit in cfg.per_label.items():
        allow = None
        if limit.values is not None:
            allow = frozenset(
                v for v in (clean_value(x, cfg.max_length) for x in limit.values) if v
            )
        default = per_label[label].max_values if label in per_label else cfg.max_values
        per_label[label] = LabelPolicy(limit.max_values or default, allow)
    return LabelLimits(LabelPolicy(cfg.max_values), MappingProxyType(per_label), cfg.max_length)


def sample_mapper(settings: Settings) -> Callable[[Any], Any]:
    """Stored trace -> Sample with the configured ground-truth priority."""
    from collector.store.samples import trace_to_sample

    return partial(trace_to_sample, priority=tuple(settings.ground_truth.priority))


class JudgmentsFeed:
    """Feeds `ragpulse_judge_*` from new rows of the `judgments` table (one per call)."""

    def __init__(self, operations: Any, session_factory: sessionmaker[Session]) -> None:
        self.operations = operations
        self.session_factory = session_factory
        self.last_id: int | None = None

    def sync(self) -> int:
        with self.session_factory() as session:
            if self.last_id is None:
                # Start from now: counters count this process's lifetime.
                self.last_id = (
                    session.scalar(select(Judgment.id).order_by(Judgment.id.desc()).limit(1)) or 0
                )
                return 0
            rows = session.execute(
                select(
                    Judgment.id,
                    Judgment.model,
                    Judgment.status,
                    Judgment.prompt_tokens,
                    Judgment.completion_tokens,
                    Judgment.cost_usd,
                    Judgment.latency_ms,
                )
                .where(Judgment.id > self.last_id)
                .order_by(Judgment.id)
            ).all()
        for row_id, model, status, prompt, completion, cost, latency in rows:
            self.operations.record_judge_call(
                model,
                status,
                prompt_tokens=prompt or 0,
                completion_tokens=completion or 0,
                cost_usd=cost or 0.0,
                latency_s=latency / 1000.0 if latency is not None else None,
            )
            self.last_id = row_id
        return len(rows)


def storage_maintenance(settings: Settings, engine: Engine) -> StorageMaintenance:
    """The scheduler's hourly storage maintenance (partitions ahead, trace retention)."""
    db = settings.database
    retention = None if db.retention is None else timedelta(seconds=parse_duration(db.retention))
    return StorageMaintenance(
        engine,
        ahead=db.partitions_ahead,
        retention=retention,
        initial_delay_s=settings.scheduler.initial_delay_s,
    )
