"""A stand-alone exporter keeps up with results (and judge calls) other processes write; a
consumer-only process or a jobs worker exports no quality series (it could not keep them
current)."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy.orm import Session, sessionmaker

from collector.settings import load_settings
from collector.store.models import Judgment, MetricResult
from collector.store.session import make_engine, make_session_factory
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from exporters.refresh import ResultsRefresher
from ragpulse.monitoring import Monitoring
from tests.jobs.helpers import add_retrieval_traces

pytestmark = pytest.mark.timeout(60)


def _write(factory: sessionmaker[Session], metric: str, value: float, group: str = "") -> None:
    now = datetime.now(UTC)
    with factory() as session:
        session.add(
            MetricResult(
                job="real_users_benchmark",
                metric=metric,
                window="1h",
                group_key=group,
                group_labels={"tenant": group.partition("=")[2]} if group else None,
                value=value,
                n=5,
                window_start=now - timedelta(hours=1),
                window_end=now,
                computed_at=now,
                signature="ragpulse:test",
            )
        )
        session.commit()


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _values(cache: ResultsCache) -> dict[tuple[str, str], Any]:
    return {(p.metric, p.group_key): p.value for p in cache.snapshot()}


def test_load_latest_reads_only_what_was_written_since(db_url: str) -> None:
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    cache = ResultsCache()
    _write(factory, "mrr", 0.5)
    _write(factory, "mrr", 0.6, "tenant=a")
    with factory() as session:
        assert cache.load_latest(session) == 2
        assert cache.load_latest(session) == 0  # nothing new: the cache stays as it is
    version = cache.version
    _write(factory, "mrr", 0.7)
    _write(factory, "mrr", 0.8)
    _write(factory, "hit_rate@1", 0.9)
    with factory() as session:
        assert cache.load_latest(session) == 2  # the newest row per key only
    engine.dispose()
    assert cache.version > version
    assert _values(cache) == {("mrr", ""): 0.8, ("mrr", "tenant=a"): 0.6, ("hit_rate@1", ""): 0.9}


def test_refresher_loads_new_rows_and_renders_them(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    cache = ResultsCache()
    collector = QualityCollector(cache, ["tenant"])
    refresher = ResultsRefresher(cache, factory, 0.05, collector).start()
    try:
        _write(factory, "mrr", 0.25)
        _wait(lambda: b'metric="mrr"' in collector.render(), "the new row on /metrics")
    finally:
        refresher.stop()
        engine.dispose()
    assert refresher.failures == 0


def test_a_failed_refresh_is_counted_and_the_next_one_runs(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    calls = {"n": 0}

    def flaky() -> Session:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("database went away")
        return factory()

    cache = ResultsCache()
    _write(factory, "mrr", 0.4)
    refresher = ResultsRefresher(cache, flaky, 0.05).start()  # type: ignore[arg-type]
    try:
        _wait(lambda: len(cache) == 1, "a later pass to load the row")
    finally:
        refresher.stop()
        engine.dispose()
    assert refresher.failures == 1


def _metrics_body(monitoring: Monitoring) -> str:
    assert monitoring.server is not None
    url = f"http://127.0.0.1:{monitoring.server.port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        body: str = response.read().decode()
    return body


def test_exporter_role_serves_results_written_after_it_started(sqlite_url: str) -> None:
    settings = load_settings(
        database={"url": sqlite_url}, exporter={"port": 0}, scheduler={"interval_s": 0.1}
    )
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    _write(factory, "mrr", 0.5)
    monitoring = Monitoring(settings, engine, CollectorRegistry(), role="exporter").start()
    try:
        assert 'ragpulse_metric_value{metric="mrr"' in _metrics_body(monitoring)
        _write(factory, "ndcg@10", 0.75)  # as the scheduler process would
        _wait(
            lambda: 'ragpulse_metric_value{metric="ndcg@10"' in _metrics_body(monitoring),
            "the exporter to serve the new result",
        )
    finally:
        monitoring.stop()
        engine.dispose()


def test_consumer_role_exports_no_quality_series(sqlite_url: str) -> None:
    settings = load_settings(database={"url": sqlite_url}, exporter={"port": 0})
    engine = make_engine(sqlite_url)
    _write(make_session_factory(engine), "mrr", 0.5)
    monitoring = Monitoring(settings, engine, CollectorRegistry(), role="consumer").start()
    try:
        body = _metrics_body(monitoring)
    finally:
        monitoring.stop()
        engine.dispose()
    assert "ragpulse_metric_value" not in body
    assert monitoring.refresher is None


def test_exporter_role_serves_the_judge_counters_of_every_worker(sqlite_url: str) -> None:
    """With the jobs in `--role jobs` workers, the exporter counts their judge calls (from
    the shared `judgments` table: once, not once per worker)."""
    settings = load_settings(
        database={"url": sqlite_url}, exporter={"port": 0}, scheduler={"interval_s": 0.1}
    )
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    monitoring = Monitoring(settings, engine, CollectorRegistry(), role="exporter").start()
    try:
        with factory() as session:  # a call a worker made
            session.add(
                Judgment(
                    cache_key="k",
                    metric="faithfulness",
                    model="openai/judge-a",
                    prompt_version="v1",
                    input_hash="h",
                    temperature=0.1,
                    status="ok",
                )
            )
            session.commit()
        _wait(
            lambda: (
                'ragpulse_judge_requests_total{model="openai/judge-a",status="ok"} 1.0'
                in _metrics_body(monitoring)
            ),
            "the exporter to count the worker's judge call",
        )
    finally:
        monitoring.stop()
        engine.dispose()


def test_jobs_role_runs_the_jobs_and_serves_only_its_own_counters(sqlite_url: str) -> None:
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        scheduler={"interval_s": 0.2, "initial_delay_s": 0, "jobs": ["real_users_benchmark"]},
    )
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    with factory() as session:
        add_retrieval_traces(session, datetime.now(UTC), 5, 0.5, seed=1)
        session.commit()
    monitoring = Monitoring(settings, engine, CollectorRegistry(), role="jobs").start()
    try:
        assert monitoring.maintenance is None  # the scheduler roles' (README), not N workers'
        _wait(
            lambda: (
                'ragpulse_job_runs_total{job="real_users_benchmark",status="ok"}'
                in _metrics_body(monitoring)
            ),
            "a run of the job",
        )
        body = _metrics_body(monitoring)
    finally:
        monitoring.stop()
        engine.dispose()
    assert "ragpulse_metric_value" not in body  # the exporter's, from every worker's results
    assert "ragpulse_judge_requests_total{" not in body  # (the family is declared)
    with factory() as session:
        assert session.query(MetricResult).filter_by(job="real_users_benchmark").count() > 0
