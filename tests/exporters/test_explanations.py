"""The slices behind a live drop on /metrics: explained only when worse, bounded, named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from collector.jobs.outcomes.store import upsert_outcomes
from collector.jobs.run.publish import QualityPoint
from collector.store.session import make_engine, make_session_factory
from exporters.explanations import Explanations, worse_metrics

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
TENANTS = ("acme",) * 5 + ("globex",) * 3 + ("initech",) * 2


def _point(metric: str, window: str, value: float) -> QualityPoint:
    return QualityPoint(metric=metric, window=window, group_key="", value=value, n=100)


def test_only_metrics_worse_by_the_bar_in_their_bad_direction() -> None:
    points = [
        _point("hit_rate@1", "1h", 0.50),
        _point("hit_rate@1", "7d", 0.60),  # -17%: worse
        _point("mrr", "1h", 0.59),
        _point("mrr", "7d", 0.60),  # -1.7%: under the bar
        _point("noise_sensitivity", "1h", 0.30),
        _point("noise_sensitivity", "7d", 0.20),  # +50%, lower is better: worse
        _point("faithfulness", "1h", 0.95),
        _point("faithfulness", "7d", 0.80),  # better
        _point("ndcg@10", "7d", 0.5),  # no last hour
    ]
    directions = {
        "hit_rate@1": "higher",
        "mrr": "higher",
        "noise_sensitivity": "lower",
        "faithfulness": "higher",
        "ndcg@10": "higher",
    }
    assert worse_metrics(points, directions, 0.05) == ["hit_rate@1", "noise_sensitivity"]


def _outcomes(url: str) -> None:
    engine = make_engine(url)
    records = []
    seen: dict[tuple[str, bool], int] = {}
    for i in range(2000):
        ts = NOW - timedelta(hours=1, seconds=(i + 0.5) * 6.5 * 86400 / 2000)
        records.append(_record(f"b{i}", ts, TENANTS[i % 10], "v6", (i // 10) % 10 < 6))
    for i in range(300):
        ts = NOW - timedelta(seconds=(i + 0.5) * 12)
        tenant = TENANTS[i % 10]
        v7 = tenant == "acme" and (i // 10) % 2 == 0
        k = seen[tenant, v7] = seen.get((tenant, v7), -1) + 1
        records.append(
            _record(f"w{i}", ts, tenant, "v7" if v7 else "v6", k % 10 < (1 if v7 else 6))
        )
    with make_session_factory(engine)() as session:
        upsert_outcomes(session, records)
        session.commit()
    engine.dispose()


def _record(trace_id: str, ts: datetime, tenant: str, version: str, hit: bool) -> dict[str, object]:
    return {
        "job": "real_users_benchmark",
        "trace_id": trace_id,
        "trace_updated_at": ts,
        "ts": ts,
        "groups": {"tenant": tenant},
        "outcomes": {"hit_rate@1": float(hit), "mrr": {"skipped": "no ground truth"}},
        "slices": {"tenant": tenant, "version": version, "language": "en"},
    }


def test_a_live_drop_is_attributed_on_metrics(db_url: str) -> None:
    _outcomes(db_url)
    engine = make_engine(db_url)
    clock = [NOW.timestamp()]
    explanations = Explanations(
        make_session_factory(engine),
        {"hit_rate@1": (("real_users_benchmark",), "higher"), "mrr": (("x",), "higher")},
        dimensions=("tenant", "model", "version", "language"),
        max_values=20,
        min_drop=0.05,
        every_s=300,
        clock=lambda: clock[0],
    )
    registry = CollectorRegistry()
    registry.register(explanations)
    steady = [_point("hit_rate@1", "1h", 0.6), _point("hit_rate@1", "7d", 0.6)]
    assert explanations.refresh(steady) == 0
    assert registry.get_sample_value("ragpulse_change_delta", {"metric": "hit_rate@1"}) is None

    dropped = [_point("hit_rate@1", "1h", 0.48), _point("hit_rate@1", "7d", 0.6)]
    assert explanations.refresh(dropped) == 0  # within `every_s` of the last look
    clock[0] += 300
    assert explanations.refresh(dropped) == 1
    delta = registry.get_sample_value("ragpulse_change_delta", {"metric": "hit_rate@1"})
    assert delta is not None and -0.13 < delta < -0.11  # 5 minutes later: 275 of the 300
    top = registry.get_sample_value(
        "ragpulse_change_attribution",
        {"metric": "hit_rate@1", "rank": "1", "slice": "tenant acme, version v7"},
    )
    assert top is not None and top == pytest.approx(1.0, abs=0.1)
    ranks = [
        s.labels["rank"]
        for m in registry.collect()
        if m.name == "ragpulse_change_attribution"
        for s in m.samples
    ]
    assert ranks == ["1", "2", "3"]

    clock[0] += 300
    assert explanations.refresh(steady) == 0  # recovered: the series go away
    assert registry.get_sample_value("ragpulse_change_delta", {"metric": "hit_rate@1"}) is None
    engine.dispose()
