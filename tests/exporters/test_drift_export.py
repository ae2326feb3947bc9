"""The detectors' points become their own families, never quality values."""

from __future__ import annotations

from types import MappingProxyType

from prometheus_client import CollectorRegistry

from collector.jobs.run.publish import QualityPoint
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache


def _point(window: str, value: float | None, tenant: str = "acme") -> QualityPoint:
    return QualityPoint(
        "hit_rate@1",
        window,
        f"tenant={tenant}",
        value,
        40,
        job="real_users_benchmark",
        group_labels=MappingProxyType({"tenant": tenant}),
    )


def test_drift_and_detectable_points_have_their_own_families() -> None:
    cache = ResultsCache()
    cache.update(
        [
            _point("1h", 0.6),
            _point("drift:page", 1.25),
            _point("drift:ticket", 0.4),
            _point("mde", 0.22),
            _point("drift:page", None, tenant="new"),  # no baseline yet: no series
        ]
    )
    registry = CollectorRegistry()
    registry.register(QualityCollector(cache, ["tenant"]))
    get = registry.get_sample_value
    drift = {"metric": "hit_rate@1", "detector": "page", "tenant": "acme"}
    assert get("ragpulse_drift_score", drift) == 1.25
    assert get("ragpulse_drift_score", {**drift, "detector": "ticket"}) == 0.4
    assert get("ragpulse_drift_score", {**drift, "tenant": "new"}) is None
    assert get("ragpulse_detectable_drop", {"metric": "hit_rate@1", "tenant": "acme"}) == 0.22
    windows = {
        s.labels["window"]
        for m in registry.collect()
        if m.name.startswith("ragpulse_metric_")
        for s in m.samples
    }
    assert windows == {"1h"}


def test_a_backfilled_point_never_replaces_a_newer_one() -> None:
    cache = ResultsCache()
    live = QualityPoint("mrr", "1h", "", 0.7, 10, computed_at=2_000.0)
    cache.update([live])
    cache.update([QualityPoint("mrr", "1h", "", 0.1, 10, computed_at=1_000.0)])
    assert cache.snapshot() == [live]
    newer = QualityPoint("mrr", "1h", "", 0.6, 10, computed_at=3_000.0)
    cache.update([newer])
    assert cache.snapshot() == [newer]
