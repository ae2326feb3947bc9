"""Versions reach /metrics: a job over stored traces of two versions writes per-version
metric_results and the quality series get a `version` label, while the overall and
tenant series keep theirs (version empty) and no detector runs per version."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import load_settings
from collector.store.models import MetricResult
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from collector.store.worst import worst_traces
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from ragpulse.job_setup import drift_config, label_limits
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def test_a_job_run_exports_a_series_per_version(db_url: str) -> None:
    settings = load_settings(versions={"sources": ["version", "model"]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(12):
            # v1 hits every other time, v2 always; the last two traces have no version
            version = None if i >= 10 else ("v1" if i % 2 else "v2")
            hit = version != "v1" or i % 4 == 1
            add_trace(
                session,
                f"t{i}",
                NOW - timedelta(minutes=5 + i),
                purposes=("real_users_benchmark",),
                contexts=[{"id": "d1"}, {"id": "d2"}],
                relevant_ids=["d1" if hit else "d9"],
                model="gpt-4o" if version else None,
                tags={"tenant": "acme", **({"version": version} if version else {})},
            )
        session.commit()
    cache = ResultsCache()
    env = JobEnvironment(
        session_factory=factory,
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        results=cache,
        to_sample=trace_to_sample,
        label_limits=label_limits(settings),
        drift=drift_config(settings),
        version_sources=tuple(settings.versions.sources),
    )
    job = IncrementalJob(definitions(settings)["real_users_benchmark"], env)
    assert job.run(NOW).status == "ok"
    job.publish()
    try:
        with factory() as session:
            rows = session.scalars(
                select(MetricResult).where(
                    MetricResult.metric == "hit_rate@1", MetricResult.window == "1h"
                )
            ).all()
            hits = {r.group_key: (r.n, r.value, r.group_labels) for r in rows}
            assert hits["version=v1/gpt-4o"] == (5, 0.6, {"version": "v1/gpt-4o"})
            assert hits["version=v2/gpt-4o"] == (5, 1.0, {"version": "v2/gpt-4o"})
            assert hits[""][0] == hits["tenant=acme"][0] == 12  # overall: every trace
            drift_groups = set(
                session.scalars(
                    select(MetricResult.group_key).where(MetricResult.window.like("drift:%"))
                )
            )
            assert drift_groups == {"", "tenant=acme"}  # no detector per version
            # `ragpulse traces --version` finds the traces of that version label
            found = worst_traces(
                session,
                metric="hit_rate@1",
                since=NOW - timedelta(hours=1),
                until=NOW,
                jobs=("real_users_benchmark",),
                where={"version": "v1/gpt-4o"},
            )
            assert sorted(t.trace_id for t in found) == [f"t{i}" for i in (1, 3, 5, 7, 9)]
    finally:
        engine.dispose()

    registry = CollectorRegistry()
    registry.register(
        QualityCollector(cache, settings.scheduler.group_labels, label_limits(settings))
    )
    text = generate_latest(registry).decode()
    assert 'tenant="",topic="",version="v1/gpt-4o",window="1h"} 0.6' in text
    values = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "ragpulse_metric_value" and s.labels["metric"] == "hit_rate@1":
                values[(s.labels["window"], s.labels["tenant"], s.labels["version"])] = s.value
            if s.name == "ragpulse_drift_score":
                assert s.labels["version"] == ""
    assert values[("1h", "", "v1/gpt-4o")] == 0.6
    assert values[("1h", "", "v2/gpt-4o")] == 1.0
    assert values[("1h", "", "")] == values[("1h", "acme", "")] == 10 / 12  # unchanged
