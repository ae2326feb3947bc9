"""Exemplars end to end: stored traces -> the scheduled job -> the score histograms on
`/metrics` -> a real Prometheus with exemplar storage -> `/api/v1/query_exemplars` names
the trace behind a low-score bucket, and then the newer trace that replaced it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from collector.settings import load_settings
from collector.store.session import make_engine, make_session_factory
from exporters.score_histograms import FAMILY
from ragpulse.monitoring import Monitoring
from tests.jobs.helpers import add_trace

pytestmark = pytest.mark.timeout(180)

MISS_SERIES = f'{FAMILY}_bucket{{metric="hit_rate@1",tenant="acme",le="0.0"}}'


def _add(engine: Engine, first: int, count: int, now: datetime) -> None:
    """Benchmark-sampled traces: even ones a hit at rank 1, odd ones a miss at rank 1
    (the relevant document second); acme and beta in turn by pairs."""
    with make_session_factory(engine)() as session:
        for i in range(first, first + count):
            ts = now - timedelta(minutes=30) + timedelta(seconds=i)
            add_trace(
                session,
                f"trace-{i:03d}",
                ts,
                purposes=("real_users_benchmark",),
                contexts=[{"id": "d1"}, {"id": "d2"}],
                relevant_ids=["d1" if i % 2 == 0 else "d2"],
                tags={"tenant": "acme" if (i // 2) % 2 else "beta"},
            )
        session.commit()


def _exemplars(prom: Any, query: str) -> list[tuple[str, float, float]]:
    """(trace_id, value, timestamp) of every exemplar of `query`'s series, oldest first."""
    now = time.time()
    data = prom.api("query_exemplars", query=query, start=str(now - 600), end=str(now + 60))
    found = [
        (e["labels"]["trace_id"], float(e["value"]), float(e["timestamp"]))
        for series in data
        for e in series["exemplars"]
    ]
    return sorted(found, key=lambda e: e[2])


def _wait_exemplar(prom: Any, query: str, trace_id: str, timeout: float = 60.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = _exemplars(prom, query)
        if (found and found[-1][0] == trace_id) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


@pytest.mark.slow
def test_prometheus_returns_the_trace_id_of_a_low_score_bucket(
    sqlite_url: str, prometheus_server: Any
) -> None:
    now = datetime.now(UTC)
    engine = make_engine(sqlite_url)
    _add(engine, 0, 8, now)  # acme: trace-002 (hit), trace-003 (miss), 006, 007 (miss)
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        scheduler={"jobs": ["real_users_benchmark"], "interval_s": 1, "initial_delay_s": 0},
    )
    monitoring = Monitoring(settings, engine, CollectorRegistry(), role="scheduler")
    monitoring.start()
    try:
        assert monitoring.server is not None
        prom = prometheus_server(
            [f"127.0.0.1:{monitoring.server.port}"], features=["exemplar-storage"]
        )
        found = _wait_exemplar(prom, MISS_SERIES, "trace-007")
        assert found, prom.log.read_text()[-2000:]
        assert found[-1][:2] == ("trace-007", 0.0)  # the last acme miss, its score 0
        # the same bucket overall, and the hits' bucket of acme
        overall = f'{FAMILY}_bucket{{metric="hit_rate@1",tenant="",le="0.0"}}'
        assert _exemplars(prom, overall)[-1][0] == "trace-007"
        hits = f'{FAMILY}_bucket{{metric="hit_rate@1",tenant="acme",le="1.0"}}'
        assert _exemplars(prom, hits)[-1][:2] == ("trace-006", 1.0)
        # what Prometheus counted: 2 acme misses at rank 1 of 4 acme traces
        counts = prom.wait_for(MISS_SERIES)
        assert float(counts[0]["value"][1]) == 2.0
        total = prom.query(f'{FAMILY}_count{{metric="hit_rate@1",tenant="acme"}}')
        assert float(total[0]["value"][1]) == 4.0

        # A newer miss arrives: the bucket's exemplar moves to it on the next job run.
        _add(engine, 8, 8, now)  # acme: trace-010, 011 (miss), 014, 015 (miss)
        found = _wait_exemplar(prom, MISS_SERIES, "trace-015")
        assert found[-1][0] == "trace-015"
        assert {"trace-007", "trace-015"} <= {trace for trace, _, _ in found}
    finally:
        monitoring.stop()
        engine.dispose()
