"""The scrape part of the monitoring benchmark: `/metrics` over `--series` quality series
from the exporter's in-memory results, pre-rendered once per publish, against formatting
them on every scrape and against building them from `metric_results` on every scrape
(the baseline, on its own fresh database)."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import psycopg
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector
from sqlalchemy import Engine

from benchmarks.monitor_state import NON_JUDGE
from benchmarks.monitor_traffic import psycopg_url
from collector.jobs.catalog import (
    embedding_quality,
    judge_pipeline,
    real_users_benchmark,
    text_quality,
    ux,
)
from collector.jobs.run.publish import QualityPoint
from collector.settings import Settings
from collector.store.session import make_engine, make_session_factory
from exporters.http import scrape
from exporters.prometheus import OperationsMetrics, QualityCollector
from exporters.quality import ResultsCache
from migrations.runner import upgrade
from tests.fixtures.db import create_postgres_database, drop_postgres_database

# The quality metrics the non-judge jobs publish, as the jobs define them.
METRICS = (
    *real_users_benchmark.METRICS,
    *judge_pipeline.METRICS,
    *ux.METRICS,
    *text_quality.METRICS,
    *embedding_quality.METRICS,
)
WINDOWS = ("1h", "24h", "7d")


def scrape_points(series: int) -> list[QualityPoint]:
    """series / 4 points (each exports value, samples, ci_lower, ci_upper)."""
    wanted = max(1, series // 4)
    rng = random.Random(3)
    points: list[QualityPoint] = []
    group = 0
    while len(points) < wanted:
        tenant = "" if group == 0 else f"tenant-{group:04d}"
        for metric in METRICS:
            for window in WINDOWS:
                if len(points) >= wanted:
                    break
                value = rng.random()
                points.append(
                    QualityPoint(
                        metric=metric,
                        window=window,
                        group_key=f"tenant={tenant}" if tenant else "",
                        value=value,
                        n=rng.randint(10, 5000),
                        ci_lower=max(0.0, value - 0.05),
                        ci_upper=min(1.0, value + 0.05),
                        job="bench",
                        group_labels={"tenant": tenant} if tenant else {},
                    )
                )
        group += 1
    return points


class FromDatabase(Collector):
    """The baseline: read the newest row per (metric, window, group) on every scrape."""

    def __init__(self, engine: Engine, group_labels: tuple[str, ...]) -> None:
        self.factory = make_session_factory(engine)
        self.group_labels = group_labels

    def collect(self) -> Iterator[Any]:
        cache = ResultsCache()
        with self.factory() as session:
            cache.load_latest(session)
        yield from QualityCollector(cache, self.group_labels).collect()


@dataclass
class ScrapeFigures:
    points: int
    series: int
    rows: int
    cache_ms: float
    render_ms: float
    formatted_ms: float
    database_ms: float
    bytes: int


def _median_ms(scrape_once: Callable[[], bytes], repeat: int) -> tuple[float, int]:
    scrape_once()
    times = []
    size = 0
    for _ in range(repeat):
        started = time.perf_counter()
        size = len(scrape_once())
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times), size


def bench_scrape(series: int, settings: Settings, repeat: int = 21) -> ScrapeFigures:
    points = scrape_points(series)
    labels = ("tenant",)
    cache = ResultsCache()
    cache.update(points)
    operations = CollectorRegistry()
    OperationsMetrics(operations).declare_jobs(list(NON_JUDGE))
    quality = QualityCollector(cache, labels)
    # Formatting every scrape (the collector registered on a registry, no pre-rendering).
    formatted = CollectorRegistry()
    formatted.register(QualityCollector(cache, labels))
    OperationsMetrics(formatted).declare_jobs(list(NON_JUDGE))

    url = create_postgres_database("ragpulse_bench_scrape")
    try:
        upgrade(url)
        runs = 4
        base = datetime.now(UTC) - timedelta(minutes=runs)
        with psycopg.connect(psycopg_url(url)) as conn, conn.cursor() as cur:
            with cur.copy(
                'COPY metric_results (job, metric, "window", group_key, group_labels, value, n,'
                " skipped, errors, ci_lower, ci_upper, window_start, window_end, computed_at,"
                " signature) FROM STDIN"
            ) as copy:
                for run in range(runs):
                    at = base + timedelta(minutes=run)
                    for p in points:
                        copy.write_row(
                            (
                                p.job,
                                p.metric,
                                p.window,
                                p.group_key,
                                orjson.dumps(dict(p.group_labels)).decode()
                                if p.group_labels
                                else None,
                                p.value,
                                p.n,
                                0,
                                0,
                                p.ci_lower,
                                p.ci_upper,
                                at - timedelta(hours=1),
                                at,
                                at,
                                "ragpulse=bench",
                            )
                        )
            conn.commit()
            cur.execute("ANALYZE metric_results")
            conn.commit()
        engine = make_engine(url)
        try:
            database = CollectorRegistry()
            database.register(FromDatabase(engine, labels))
            OperationsMetrics(database).declare_jobs(list(NON_JUDGE))
            # The first scrape after a job published renders the families once.
            cache.update([])
            started = time.perf_counter()
            scrape(operations, quality)
            render_ms = (time.perf_counter() - started) * 1000.0
            cache_ms, size = _median_ms(lambda: scrape(operations, quality), repeat)
            database_ms, size_db = _median_ms(lambda: generate_latest(database), repeat)
            formatted_ms, size_f = _median_ms(lambda: generate_latest(formatted), repeat)
            cache_ms2, _ = _median_ms(lambda: scrape(operations, quality), repeat)
        finally:
            engine.dispose()
        # Equal up to the digits of the operations families' *_created timestamps.
        if max(size, size_db, size_f) - min(size, size_db, size_f) > 64:
            raise SystemExit(f"the scrapes differ in size: {size}, {size_db}, {size_f} bytes")
    finally:
        drop_postgres_database(url)
    exported = sum(4 if p.value is not None else 1 for p in points)
    return ScrapeFigures(
        len(points),
        exported,
        runs * len(points),
        min(cache_ms, cache_ms2),
        render_ms,
        formatted_ms,
        database_ms,
        size,
    )
