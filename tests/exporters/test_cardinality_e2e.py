"""20,000 distinct tenant values through Kafka -> store -> jobs -> /metrics stay bounded.

One client puts a user id into `tags.tenant` (plus a few values with control characters
and very long ones), three real tenants carry the rest. With the default bound (50 values
per label) the scrape holds at most (50 + 2) x metrics x windows x families quality
series, the real tenants' numbers are the ones computed without any bound, and `other`
is exactly the aggregate of every folded trace.
"""

from __future__ import annotations

import json
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from benchmarks.outcome_columns import summarize
from collector.ingest.kafka.producer import make_producer, publish
from collector.jobs.catalog import real_users_benchmark
from collector.jobs.scheduler import build_runner
from collector.jobs.windows.labels import OTHER
from collector.settings import KafkaSettings, load_settings
from collector.store.models import JobOutcome
from collector.store.session import make_engine, make_session_factory
from evaluators.registry import resolve
from evaluators.signature import Signature
from ragpulse.job_setup import job_environment
from ragpulse.monitoring import Monitoring
from ragpulse.service import Service
from tests.collector.traces import make_trace
from tests.fixtures.broker import KafkaTopics

pytestmark = pytest.mark.timeout(600)

TRACES = 25_000
DISTINCT = 20_000 + 3  # every fifth trace is a real tenant's, the others each their own
REAL = ("acme", "globex", "initech")
FAMILIES = 4


def _tenant(i: int) -> str:
    if i % 5 == 0:
        return REAL[(i // 5) % 7 % 3]  # 3/7, 2/7, 2/7 of the real traffic
    if i % 1001 == 1:
        return f"\x1b[31muser\n{i}\t"  # control characters: cleaned, still one value each
    if i % 1001 == 3:
        return "x" * 5000 + str(i)  # cut to 128 characters, kept distinct by a hash
    return f"user-{i}"


def _messages(now: datetime) -> list[bytes]:
    out = []
    for i in range(TRACES):
        trace = make_trace(i, "en" if i % 3 else "ru", n_contexts=3)
        trace["timestamp"] = (now - timedelta(seconds=50 * 60 * i / TRACES)).isoformat()
        trace["tags"] = {"tenant": _tenant(i)}
        if i % 4 == 0:  # misses too, so the numbers differ between groups
            trace["relevant_ids"] = ["doc-none"]
        out.append(json.dumps(trace, ensure_ascii=False).encode())
    return out


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        body: bytes = response.read()
    return body.decode()


def _quality(body: str) -> dict[tuple[str, str, str, str], float]:
    out = {}
    for family in text_string_to_metric_families(body):
        if family.name.startswith("ragpulse_metric_"):
            for s in family.samples:
                key = (s.name, s.labels["metric"], s.labels["window"], s.labels["tenant"])
                out[key] = s.value
    return out


@pytest.mark.slow
def test_twenty_thousand_tenants_stay_bounded(sqlite_url: str, kafka_topics: KafkaTopics) -> None:
    now = datetime.now(UTC)
    settings = load_settings(
        database={"url": sqlite_url},
        kafka=kafka_topics.kafka_settings(),
        sampling={"real_users_benchmark": 1.0, "judge": 0.0},
        exporter={"port": 0},
    )
    producer = make_producer(KafkaSettings(bootstrap_servers=[kafka_topics.bootstrap_servers]))
    try:
        assert publish(producer, _messages(now), topic=kafka_topics.traces) == TRACES
    finally:
        producer.close()
    service = Service(settings, registry=CollectorRegistry())
    service.run(idle_timeout_s=2.0)
    summary = service.stats.summary()
    assert summary["stored"] == TRACES, summary

    engine = make_engine(sqlite_url)
    registry = CollectorRegistry()
    monitoring = Monitoring(settings, engine, registry, role="exporter")
    monitoring.start()
    try:
        env = job_environment(settings, engine, results=monitoring.results, embedder=None)
        runner = build_runner(settings, engine, env, operations=monitoring.operations)
        report = runner.run(real_users_benchmark.NAME)
        assert report.status == "ok" and report.new_traces == TRACES
        assert monitoring.server is not None
        body = _scrape(monitoring.server.port)
    finally:
        monitoring.stop()

    quality = _quality(body)
    metrics, windows = len(real_users_benchmark.METRICS), len(settings.scheduler.windows)
    assert len(quality) <= (50 + 2) * metrics * windows * FAMILIES
    tenants = {key[3] for key in quality}
    assert set(REAL) | {"", OTHER} <= tenants and len(tenants) == 52
    assert len(body) < 2_000_000  # was 28 MB at 2,000 distinct values

    distinct = DISTINCT
    labels = {"job": real_users_benchmark.NAME, "label": "tenant"}
    assert registry.get_sample_value("ragpulse_label_values_seen", labels) == distinct
    assert registry.get_sample_value("ragpulse_label_values_kept", labels) == 50
    assert registry.get_sample_value("ragpulse_label_values_folded_total", labels) == distinct - 50
    assert 'ragpulse_label_values_exported{label="tenant"} 51.0' in body.splitlines()
    assert 'ragpulse_label_values_dropped{label="tenant"} 0.0' in body.splitlines()

    # The numbers, from the per-trace outcomes the job stored: unbounded for the real
    # tenants, and `other` pools exactly the traces of every value that was not kept.
    with make_session_factory(engine)() as session:
        rows = session.execute(
            select(JobOutcome.groups, JobOutcome.outcomes).where(
                JobOutcome.job == real_users_benchmark.NAME
            )
        ).all()
    engine.dispose()
    assert len(rows) == TRACES
    kept = {t for t in tenants if t not in ("", OTHER)}
    assert all(len(t) <= 128 and t.isprintable() for t in kept)
    for metric in ("hit_rate@1", "mrr", "ndcg@10"):
        by_group: dict[str, list[float]] = {}
        for groups, outcomes in rows:
            tenant = (groups or {})["tenant"]
            by_group.setdefault(tenant if tenant in kept else OTHER, []).append(outcomes[metric])
        for group, values in by_group.items():
            expected = _aggregate(metric, values)
            got = quality[("ragpulse_metric_value", metric, "1h", group)]
            assert got == pytest.approx(expected.value, rel=1e-12), (metric, group)
            assert quality[("ragpulse_metric_samples", metric, "1h", group)] == expected.n


def _aggregate(metric: str, values: list[float]) -> Any:
    return summarize(
        metric,
        np.asarray(values, dtype=np.float64),
        proportion=resolve(metric).spec.proportion,
        seed=0,
        signature=Signature(),
        skip_reasons={},
        error_types={},
    )
