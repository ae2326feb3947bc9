"""Live canary -> alert, against a real Prometheus: stored outcomes of two versions, the
canary job, `/metrics`, the shipped rule (its 10-minute `for` shortened to 0s, which
promtool's tests cover) firing with its annotations read from the live series."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from collector.jobs.scheduler import build_runner
from collector.settings import load_settings
from collector.store.session import make_engine, make_session_factory
from ragpulse.job_setup import job_environment
from ragpulse.monitoring import Monitoring
from tests.jobs.test_canary import _seed

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "rules" / "quality.yml"


def _rules_without_delay(tmp_path: Path) -> Path:
    text = RULES.read_text(encoding="utf-8")
    start = text.index("- alert: RagpulseCanaryWorse")
    canary = re.sub(r"for: 10m", "for: 0s", text[start:], count=1)
    path = tmp_path / "quality.yml"
    path.write_text(text[:start] + canary, encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_worse_candidate_fires_ragpulse_canary_worse(
    sqlite_url: str, prometheus_server: Any, tmp_path: Path
) -> None:
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        scheduler={"jobs": ["canary"]},
        canary={"metrics": ["hit_rate@1", "mrr"]},
    )
    engine = make_engine(sqlite_url)
    now = datetime.now(UTC)
    _seed(make_session_factory(engine), shadow=False, hits={"v1": 0.8, "v2": 0.35}, now=now)
    runner = build_runner(settings, engine, job_environment(settings, engine))
    report = runner.jobs["canary"].run(now)
    assert "worse on hit_rate@1" in report.message, report.message
    monitoring = Monitoring(settings, engine, CollectorRegistry(), role="exporter").start()
    assert monitoring.server is not None
    prom = prometheus_server(
        [f"127.0.0.1:{monitoring.server.port}"], [_rules_without_delay(tmp_path)]
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            alerts = [
                a
                for a in prom.api("alerts")["alerts"]
                if a["labels"]["alertname"] == "RagpulseCanaryWorse" and a["state"] == "firing"
            ]
            if alerts or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        by_metric = {a["labels"]["metric"]: a for a in alerts}
        assert set(by_metric) == {"hit_rate@1", "mrr"}
        hit = by_metric["hit_rate@1"]
        assert hit["labels"]["baseline"] == "v1" and hit["labels"]["candidate"] == "v2"
        assert hit["labels"]["severity"] == "critical"
        text = hit["annotations"]["description"]
        # the difference, its interval and the detectable difference, read from /metrics
        numbers = re.search(
            r"by (-\d\.\d{4}) \(95% CI (-\d\.\d{4}) to (-\d\.\d{4})\).*differences of "
            r"(\d\.\d{4}) or more",
            text,
        )
        assert numbers is not None, text
        diff, low, high, detectable = (float(g) for g in numbers.groups())
        assert low < diff < high < 0 < detectable
        assert "--a v1 --b v2" in text
    finally:
        monitoring.stop()
        engine.dispose()
