"""The exporter's own bound: whatever the cache holds, /metrics stays within it."""

from __future__ import annotations

from types import MappingProxyType

from prometheus_client import CollectorRegistry

from collector.jobs.run.publish import QualityPoint
from collector.jobs.windows.labels import OTHER, LabelLimits, LabelPolicy
from exporters.prometheus import OperationsMetrics, QualityCollector
from exporters.quality import ResultsCache


def _point(tenant: str | None, n: int, metric: str = "mrr", window: str = "1h") -> QualityPoint:
    labels = {} if tenant is None else {"tenant": tenant}
    key = "" if tenant is None else f"tenant={tenant}"
    return QualityPoint(
        metric, window, key, 0.5, n, 0.4, 0.6, job="j", group_labels=MappingProxyType(labels)
    )


def _registry(cache: ResultsCache, limits: LabelLimits) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(QualityCollector(cache, ["tenant"], limits))
    return registry


def test_values_past_the_bound_are_dropped_least_sampled_first() -> None:
    cache = ResultsCache()
    points = [_point(None, 1000), _point(OTHER, 5)]
    points += [_point(f"user-{i}", i) for i in range(1, 201)]  # rows of an older version
    cache.update(points)
    registry = _registry(cache, LabelLimits(LabelPolicy(max_values=10)))
    tenants = {
        s.labels["tenant"]
        for m in registry.collect()
        if m.name == "ragpulse_metric_samples"
        for s in m.samples
    }
    assert tenants == {"", OTHER} | {f"user-{i}" for i in range(191, 201)}
    assert registry.get_sample_value("ragpulse_label_values_exported", {"label": "tenant"}) == 11
    assert registry.get_sample_value("ragpulse_label_values_dropped", {"label": "tenant"}) == 190


def test_allow_list_and_cleaning() -> None:
    cache = ResultsCache()
    cache.update([_point("acme", 3), _point("acme\n", 1, metric="mrr@5"), _point("evil", 99)])
    registry = _registry(
        cache, LabelLimits(per_label={"tenant": LabelPolicy(allow=frozenset({"acme"}))})
    )
    got = {
        (s.labels["metric"], s.labels["tenant"])
        for m in registry.collect()
        if m.name == "ragpulse_metric_samples"
        for s in m.samples
    }
    assert got == {("mrr", "acme"), ("mrr@5", "acme")}


def test_a_label_set_that_cleans_to_one_is_exported_once() -> None:
    cache = ResultsCache()
    cache.update(
        [
            _point("acme", 3),
            QualityPoint(
                "mrr",
                "1h",
                "tenant=acme\t",
                0.1,
                9,
                job="old",
                group_labels=MappingProxyType({"tenant": "acme\t"}),
            ),
        ]
    )
    body = QualityCollector(cache, ["tenant"]).render().decode()
    lines = [line for line in body.splitlines() if line.startswith("ragpulse_metric_samples{")]
    assert lines == ['ragpulse_metric_samples{metric="mrr",tenant="acme",window="1h"} 9.0']


def test_job_label_counters() -> None:
    from collector.jobs.windows.labels import Folding

    registry = CollectorRegistry()
    ops = OperationsMetrics(registry)
    folding = Folding("tenant", 2003, frozenset({f"t{i}" for i in range(50)}), 1953)
    ops.record_labels("real_users_benchmark", [folding])
    ops.record_labels("real_users_benchmark", [folding])
    where = {"job": "real_users_benchmark", "label": "tenant"}
    assert registry.get_sample_value("ragpulse_label_values_seen", where) == 2003
    assert registry.get_sample_value("ragpulse_label_values_kept", where) == 50
    assert registry.get_sample_value("ragpulse_label_values_folded_total", where) == 2 * 1953
