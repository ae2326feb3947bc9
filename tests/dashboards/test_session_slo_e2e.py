"""The shipped conversations SLO (`examples/slo.yaml`: 95% of conversations resolved over
28 days) on a real Prometheus: the sessions job closes sessions, the SLO recorder counts
each one good or bad, the exporter serves the counts, and Prometheus evaluates the shipped
`slo-conversations-resolved.yml`. Steady resolved sessions fire nothing; a planted burst of
failed ones (re-asks and requests for a person) fires the page, which amtool routes to the
pager as every `critical` alert."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, start_http_server

from collector.settings.openslo import load_openslo
from collector.slo.events import SloEventRecorder
from collector.store.session import make_engine, make_session_factory
from dashboards.boards import SLO_EXAMPLE
from exporters.slo import SloCollector
from tests.jobs.session_plant import failed, resolved, sessions_job_of

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "rules"
SLO = "conversations-resolved"
FIRING = f'ALERTS{{alertname="RagpulseSloFastBurn",slo="{SLO}",alertstate="firing"}}'


@pytest.mark.slow
def test_a_burst_of_failed_sessions_fires_the_shipped_slo_page(
    sqlite_url: str, prometheus_server: Any
) -> None:
    spec = next(s for s in load_openslo(SLO_EXAMPLE) if s.name == SLO)
    assert spec.metric == "session_resolved" and spec.target == 0.95
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    recorder = SloEventRecorder([spec], factory, max_tenants=10)
    job = sessions_job_of(engine, observers=(recorder,))
    registry = CollectorRegistry()
    registry.register(SloCollector([spec], factory))
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        now = datetime.now(UTC)
        # steady traffic: 40 resolved sessions and one failed (both counters exist)
        resolved(factory, "ok", 40, now - timedelta(minutes=40))
        failed(factory, "early", 1, now - timedelta(minutes=40))
        assert job.run(now).status == "ok"
        prom = prometheus_server([f"127.0.0.1:{server.server_port}"], [RULES / f"slo-{SLO}.yml"])
        counted = f'ragpulse_slo_events_total{{slo="{SLO}",tenant="acme"}}'
        assert len(prom.wait_for(counted)) == 2
        time.sleep(4)  # a few scrapes and evaluations of the steady counts
        assert prom.query(f'ALERTS{{slo="{SLO}"}}') == []

        # more resolved sessions keep it quiet ...
        resolved(factory, "calm", 4, now - timedelta(minutes=20))
        assert job.run(datetime.now(UTC)).status == "ok"
        assert prom.wait_for(f'ragpulse_slo:events:increase5m{{slo="{SLO}"}} > 0')
        time.sleep(3)
        assert prom.query(f'ALERTS{{slo="{SLO}"}}') == []

        # ... a burst of 20 failed sessions (10 re-asks, 10 escalations) pages
        failed(factory, "burst", 20, now - timedelta(minutes=15))
        assert job.run(datetime.now(UTC)).status == "ok"
        firing = prom.wait_for(FIRING, timeout=30)
        labels = firing[0]["metric"]
        assert labels["tenant"] == "acme" and labels["severity"] == "critical"
        assert labels["tier"] == "conversation" and labels["metric"] == "session_resolved"
        # on the burst's bad events: at least the minimum that tells a burn from chance
        bad = prom.query(f'ragpulse_slo:bad_events:increase1h{{slo="{SLO}",tenant="acme"}}')
        assert float(bad[0]["value"][1]) >= 3

        from tests.deploy.test_alertmanager import AMTOOL, _route

        if AMTOOL is not None:
            alert = {k: v for k, v in labels.items() if k not in ("__name__", "alertstate")}
            assert _route(alert) == "pager"
    finally:
        server.shutdown()
        thread.join(timeout=5)
        engine.dispose()
