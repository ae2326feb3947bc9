"""The jobs' drift detectors on simulated traffic: quiet when steady, fast on a real drop."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.outcome_columns import OutcomeColumns, drift_points
from collector.jobs.drift.detector import DETECTABLE, Detector, DriftConfig, MetricFacts
from evaluators.outcome import Score

H = 3600.0
WEEK = 7 * 24 * H
FACTS = [MetricFacts("hit_rate@1", "higher", "ratio"), MetricFacts("latency", "lower", "ms")]


def _traffic(
    rate_per_tenant: float, hours: float, drop_at: float | None, seed: int
) -> OutcomeColumns:
    rng = np.random.default_rng(seed)
    n = int(rate_per_tenant * 3 * hours)
    ts = np.sort(rng.uniform(0, hours * H, n))
    tenant = rng.integers(0, 3, n)
    p = np.full(n, 0.6)
    if drop_at is not None:
        p[(tenant == 0) & (ts >= drop_at)] *= 0.8  # -20% for one tenant
    hits = (rng.random(n) < p).astype(float)
    latency = rng.lognormal(6.0, 0.5, n)
    columns = OutcomeColumns(["hit_rate@1", "latency"], ["tenant"])
    for i in range(n):
        columns.put(
            f"t{i}",
            ts[i],
            ts[i],
            {"tenant": f"t{tenant[i]}"},
            {"hit_rate@1": Score(hits[i]), "latency": Score(latency[i])},
        )
    return columns


CONFIG = DriftConfig(
    (
        Detector("page", 0.15, 0.5, H, series_metrics=2),
        Detector("ticket", 0.05, 2.0, H, series_metrics=2),
    ),
    span_s=24 * H,
)


def _scores(columns: OutcomeColumns, now: float) -> dict[tuple[str, str, str], float | None]:
    return {
        (w.name, item.group.key, item.aggregate.metric): item.aggregate.value
        for w, item in drift_points(columns, FACTS, now, WEEK, None, CONFIG)
    }


@pytest.mark.slow
def test_steady_traffic_does_not_page() -> None:
    """Two steady days of 8 paged series at a budget of 0.5 false pages a week: none.
    (The ticket detector's budget is 2 a week; benchmarks/alerting.py measures both.)"""
    columns = _traffic(100, 9 * 24, None, seed=1)
    worst = 0.0
    for now in np.arange(7 * 24 * H, 9 * 24 * H, H / 2):
        scores = _scores(columns, float(now))
        worst = max(
            worst,
            *(v for (w, _, _), v in scores.items() if w == "drift:page" and v is not None),
        )
    assert worst < 1.0


def test_a_drop_of_one_tenant_pages_within_hours_and_only_that_tenant() -> None:
    drop_at = 8 * 24 * H
    columns = _traffic(200, 8 * 24 + 4, drop_at, seed=2)
    before = _scores(columns, drop_at)
    assert before[("drift:page", "tenant=t0", "hit_rate@1")] < 1.0
    fired_at = None
    for minutes in range(10, 240, 10):
        scores = _scores(columns, drop_at + minutes * 60)
        if scores[("drift:page", "tenant=t0", "hit_rate@1")] >= 1.0:
            fired_at = minutes
            break
    assert fired_at is not None and fired_at <= 120
    assert scores[("drift:page", "tenant=t1", "hit_rate@1")] < 1.0
    assert scores[("drift:page", "tenant=t0", "latency")] < 1.0


def test_detectable_drop_shrinks_with_volume() -> None:
    low = _scores(_traffic(20, 7 * 24 + 1, None, seed=3), 7 * 24 * H + H)
    high = _scores(_traffic(200, 7 * 24 + 1, None, seed=3), 7 * 24 * H + H)
    key = (DETECTABLE, "tenant=t0", "hit_rate@1")
    assert high[key] is not None and low[key] is not None
    assert high[key] < low[key]
    assert 0.1 < high[key] < 0.4  # ~0.25 at 200 an hour within an hour


def test_no_baseline_no_statistic() -> None:
    columns = _traffic(5, 25, None, seed=4)  # only the span, nothing before it
    scores = _scores(columns, 25 * H)
    assert all(v is None for v in scores.values())


def test_a_scheduled_job_writes_and_publishes_its_detectors(tmp_path: object) -> None:
    """real_users_benchmark with the shipped settings: drift and mde rows per metric and
    group once a baseline exists, published to the results sink."""
    from datetime import UTC, datetime
    from pathlib import Path

    from sqlalchemy import select

    from collector.jobs.run.engine import IncrementalJob
    from collector.jobs.scheduler import definitions
    from collector.settings import load_settings
    from collector.store.models import MetricResult
    from collector.store.session import make_engine, make_session_factory
    from exporters.quality import ResultsCache
    from migrations.runner import upgrade
    from ragpulse.job_setup import job_environment
    from tests.jobs.helpers import add_retrieval_traces

    url = f"sqlite:///{Path(str(tmp_path)) / 'd.db'}"
    upgrade(url)
    engine = make_engine(url)
    settings = load_settings(database={"url": url}, alerting={"min_baseline": 20})
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    with make_session_factory(engine)() as session:
        add_retrieval_traces(session, now, 400, 6 * 24, seed=7)
        session.commit()
    cache = ResultsCache()
    env = job_environment(settings, engine, results=cache, embedder=None, judge=None)
    job = IncrementalJob(definitions(settings)["real_users_benchmark"], env)
    assert job.run(now).status == "ok"
    job.publish()
    with make_session_factory(engine)() as session:
        rows = session.execute(
            select(
                MetricResult.window, MetricResult.metric, MetricResult.group_key, MetricResult.value
            ).where(MetricResult.window.in_(["drift:page", "drift:ticket", "mde"]))
        ).all()
    engine.dispose()
    found = {(w, m, g) for w, m, g, _ in rows}
    assert ("drift:page", "hit_rate@1", "tenant=acme") in found
    assert ("drift:ticket", "recall@10", "") in found
    assert ("drift:page", "recall@10", "") not in found  # not a paged metric
    assert ("mde", "mrr", "tenant=beta") in found
    # steady data: no alarm; a metric constant in the baseline (hit_rate@5 with two
    # contexts) has no spread to standardise by, so no statistic
    scores = {(w, m, g): v for w, m, g, v in rows if w.startswith("drift:")}
    assert [k for k, v in scores.items() if v is not None and v >= 1] == []
    assert scores[("drift:page", "hit_rate@1", "tenant=acme")] is not None
    assert scores[("drift:page", "hit_rate@5", "")] is None
    assert {p.window for p in cache.snapshot()} >= {"1h", "drift:page", "mde"}


def test_a_job_recomputes_its_detectors_at_most_every_few_minutes(
    tmp_path: object, monkeypatch: object
) -> None:
    from datetime import UTC, datetime, timedelta

    import collector.jobs.run.engine as engine
    from collector.jobs.run.engine import IncrementalJob
    from collector.jobs.scheduler import definitions
    from collector.settings import load_settings
    from collector.store.session import make_engine
    from migrations.runner import upgrade
    from ragpulse.job_setup import job_environment

    calls = []
    real = engine.drift_points_at

    def counted(*args: object, **kw: object) -> object:
        calls.append(args[3])
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "drift_points_at", counted)  # type: ignore[attr-defined]
    url = f"sqlite:///{tmp_path}/e.db"
    upgrade(url)
    settings = load_settings(database={"url": url})  # alerting.every: 5m
    env = job_environment(settings, make_engine(url), embedder=None, judge=None)
    job = IncrementalJob(definitions(settings)["real_users_benchmark"], env)
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    with env.session_factory() as session:
        for minutes in (0, 1, 4, 5, 6, 11):
            job.points_at(session, now + timedelta(minutes=minutes))
    assert [round((t - calls[0]) / 60) for t in calls] == [0, 5, 11]
