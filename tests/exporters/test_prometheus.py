"""The quality collector and the operations metrics, on a fresh registry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collector.jobs.run.publish import QualityPoint
from collector.store.models import MetricResult
from collector.store.session import make_engine, make_session_factory
from exporters.prometheus import OperationsMetrics, QualityCollector
from exporters.quality import ResultsCache


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_quality_families_have_metric_window_and_group_labels() -> None:
    cache = ResultsCache()
    cache.update(
        [
            QualityPoint("mrr", "1h", "", 0.5, 10, 0.3, 0.7, job="real_users_benchmark"),
            QualityPoint(
                "mrr",
                "1h",
                "tenant=acme",
                0.75,
                4,
                0.4,
                0.9,
                "real_users_benchmark",
                {"tenant": "acme"},
            ),
            QualityPoint("faithfulness", "7d", "", None, 0, job="rag_quality"),
        ]
    )
    registry = CollectorRegistry()
    registry.register(QualityCollector(cache, ["tenant"]))
    got = _samples(registry)
    overall = (("metric", "mrr"), ("tenant", ""), ("window", "1h"))
    acme = (("metric", "mrr"), ("tenant", "acme"), ("window", "1h"))
    assert got[("ragpulse_metric_value", overall)] == 0.5
    assert got[("ragpulse_metric_samples", overall)] == 10
    assert got[("ragpulse_metric_ci_lower", overall)] == 0.3
    assert got[("ragpulse_metric_ci_upper", acme)] == 0.9
    assert got[("ragpulse_metric_value", acme)] == 0.75
    # An undefined value exports its n (0) but no value, never NaN.
    empty = (("metric", "faithfulness"), ("tenant", ""), ("window", "7d"))
    assert got[("ragpulse_metric_samples", empty)] == 0
    assert ("ragpulse_metric_value", empty) not in got


def test_replace_job_drops_groups_that_vanished() -> None:
    cache = ResultsCache()
    cache.update(
        [QualityPoint("mrr", "1h", "tenant=a", 1.0, 1, job="j", group_labels={"tenant": "a"})]
    )
    cache.replace_job("j", [QualityPoint("mrr", "1h", "", 1.0, 1, job="j")])
    assert [p.group_key for p in cache.snapshot()] == [""]


def test_cache_loads_the_newest_row_per_key(db_url: str) -> None:
    engine = make_engine(db_url)
    now = datetime.now(UTC)
    with make_session_factory(engine)() as session:
        for i, value in enumerate([0.1, 0.2]):
            session.add(
                MetricResult(
                    job="real_users_benchmark",
                    metric="mrr",
                    window="1h",
                    group_key="tenant=a",
                    group_labels={"tenant": "a"},
                    value=value,
                    n=3 + i,
                    ci_lower=0.0,
                    ci_upper=1.0,
                    window_start=now - timedelta(hours=1),
                    window_end=now,
                    computed_at=now,
                    signature="ragpulse:0.1.0",
                )
            )
        session.commit()
        cache = ResultsCache()
        assert cache.load_latest(session) == 1
    engine.dispose()
    (point,) = cache.snapshot()
    assert (point.value, point.n, dict(point.group_labels)) == (0.2, 4, {"tenant": "a"})


def test_operations_metrics_series() -> None:
    registry = CollectorRegistry()
    ops = OperationsMetrics(registry)
    ops.declare_jobs(["ux"])
    ops.record_job("ux", "ok", 0.2)
    ops.record_judge_call(
        "gpt-x", "ok", prompt_tokens=10, completion_tokens=5, cost_usd=0.01, latency_s=0.3
    )
    got = _samples(registry)
    assert got[("ragpulse_job_runs_total", (("job", "ux"), ("status", "ok")))] == 1
    assert got[("ragpulse_job_runs_total", (("job", "ux"), ("status", "error")))] == 0
    assert got[("ragpulse_job_last_success_timestamp_seconds", (("job", "ux"),))] > 0
    assert got[("ragpulse_job_duration_seconds_count", (("job", "ux"),))] == 1
    assert got[("ragpulse_judge_requests_total", (("model", "gpt-x"), ("status", "ok")))] == 1
    assert got[("ragpulse_judge_tokens_total", (("kind", "prompt"), ("model", "gpt-x")))] == 10
    assert got[("ragpulse_judge_cost_usd_total", (("model", "gpt-x"),))] == 0.01
    assert got[("ragpulse_judge_latency_seconds_count", ())] == 1
