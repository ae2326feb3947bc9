"""The latency quantiles end to end: on `/metrics` through the exporter, and from two
sharded workers' bins (each adds its own traces, nothing counted twice)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import select

from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.sharding.leases import ShardConfig, ShardLeases
from collector.jobs.sharding.sharded import ShardedRun
from collector.settings import load_settings
from collector.store.models import MetricResult
from collector.store.session import make_engine, make_session_factory
from evaluators.quantiles import RELATIVE_ACCURACY
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_trace, assert_buckets_match_outcomes
from tests.jobs.test_bucket_bins import NAMES, TENANTS, _compare, _latency

NOW = datetime(2026, 3, 2, 12, 0, 30, tzinfo=UTC)


def test_the_exporter_serves_the_latency_quantiles(db_url: str) -> None:
    settings = load_settings(database={"url": db_url}, scheduler={"jobs": ["ux"]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    latencies = [100.0 * (i + 1) for i in range(40)]  # 100 ... 4000 ms, 30 s apart
    with factory() as session:
        for i, latency in enumerate(latencies):
            ts = NOW - timedelta(seconds=30 * i + 5)
            add_trace(session, f"t{i}", ts, latency_ms=latency, tags={"tenant": "acme"})
        session.commit()
    cache = ResultsCache()
    env = job_environment(settings, engine, results=cache, embedder=None, judge=None)
    job = IncrementalJob(definitions(settings)["ux"], env)
    assert job.run(NOW).status == "ok"
    job.publish()
    # 40 values: rank q * 39 -> p50 the 20th value (2000 ms), p95 the 38th, p99 the 39th;
    # served from the bins, within their relative accuracy
    want = dict(zip(NAMES, np.quantile(latencies, [0.5, 0.95, 0.99], method="lower"), strict=True))
    assert want == {"latency_ms_p50": 2000.0, "latency_ms_p95": 3800.0, "latency_ms_p99": 3900.0}
    labels = settings.scheduler.group_labels
    reloaded = ResultsCache()
    with factory() as session:
        reloaded.load_latest(session)  # an exporter started later reads metric_results
        stored = session.scalars(
            select(MetricResult).where(MetricResult.metric == "latency_ms_p95")
        ).all()
    assert {(r.window, r.group_key, r.n, r.ci_lower) for r in stored} >= {("1h", "", 40, None)}
    for served in (cache, reloaded):
        body = QualityCollector(served, labels).render().decode()
        for name, value in want.items():
            for window in ("1h", "24h", "7d"):
                for tenant in ("", "acme"):
                    series = (
                        f'metric="{name}",tenant="{tenant}",topic="",version="",window="{window}"'
                    )
                    line = f"ragpulse_metric_value{{{series}}} "
                    served_value = float(body.split(line, 1)[1].split("\n", 1)[0])
                    assert served_value == pytest.approx(value, rel=RELATIVE_ACCURACY), series
                    assert f"ragpulse_metric_samples{{{series}}} 40.0" in body, series
            assert f'ragpulse_metric_ci_lower{{metric="{name}"' not in body  # no interval


@pytest.mark.timeout(120)
def test_two_sharded_workers_each_add_their_traces_bins(postgres_url: str) -> None:
    settings = load_settings(
        database={"url": postgres_url}, scheduler={"jobs": ["ux"]}, labels={"max_values": 2}
    )
    engine = make_engine(postgres_url)
    factory = make_session_factory(engine)
    now = datetime.now(UTC)  # a sharded run reads the database's clock
    with factory() as session:
        for i in range(400):
            ts = now - timedelta(seconds=7 * i + 3)
            tags = {"tenant": TENANTS[i % len(TENANTS)]}
            add_trace(session, f"s{i:04d}", ts, latency_ms=_latency(i), tags=tags)
        session.commit()
    env = job_environment(settings, engine, embedder=None, judge=None)
    config = ShardConfig(8, 30.0, interval_s=60.0, start_grace_s=0.0)
    jobs = [IncrementalJob(definitions(settings)["ux"], env) for _ in range(2)]
    leases = [ShardLeases(engine, "ux", f"w{i}", config) for i in range(2)]
    runs = [ShardedRun(job, lease, engine) for job, lease in zip(jobs, leases, strict=True)]
    for lease in leases:
        lease.register()
    since = [lease.prepare(None) for lease in leases]
    assert [lease.live for lease in leases] == [2, 2]
    claims = [lease.claim(s) for lease, s in zip(leases, since, strict=True)]
    scored = []
    for run, claim, start in zip(runs, claims, since, strict=True):
        assert claim is not None and len(claim.shards) == 4  # disjoint halves
        run.job.begin()
        scored.append(run._batch(claim, start, now)[0])
    assert all(n > 0 for n in scored) and sum(scored) == 400
    assert runs[0].run().results > 0  # nothing left to score: it aggregates both halves
    with factory() as session:
        assert_buckets_match_outcomes(session, "ux")  # each trace's bins counted once
        assert _compare(jobs[0], session, datetime.now(UTC)) > 10
    engine.dispose()
