"""`ragpulse report` end to end: traces in SQL -> jobs -> /metrics -> a real Prometheus ->
the HTML page -> a real headless Chromium. Every panel of the shipped dashboards (read
from their JSON, so panels added later are covered too) must render with data, with the
panel's own PromQL and threshold colours, and the page must log no console error."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.pipeline import BatchResult
from collector.settings import load_settings
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from exporters.report.dashboards import load_dashboards
from ragpulse.cli import main
from ragpulse.monitoring import Monitoring
from tests.dashboards.test_prometheus_e2e import _traffic
from tests.fixtures.llm_server import ScriptedLLM, auto_reply
from tests.jobs.helpers import add_trace

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"

# A dashboard the report has no code for: a gauge with its own thresholds and a table.
EXTRA = {
    "uid": "extra",
    "title": "extra panels",
    "time": {"from": "now-1h", "to": "now"},
    "templating": {"list": [{"name": "w", "type": "custom", "current": {"value": "1h"}}]},
    "panels": [
        {"type": "row", "title": "Added later", "panels": []},
        {
            "type": "gauge",
            "title": "mrr gauge",
            "gridPos": {"w": 6, "h": 6, "x": 0, "y": 1},
            "targets": [
                {
                    "refId": "A",
                    "expr": 'ragpulse_metric_value{metric="mrr",window="$w",tenant=""}',
                    "legendFormat": "mrr $w",
                }
            ],
            "fieldConfig": {
                "defaults": {
                    "unit": "percentunit",
                    "thresholds": {
                        "mode": "absolute",
                        "steps": [
                            {"color": "dark-red", "value": None},
                            {"color": "purple", "value": 0.01},
                        ],
                    },
                }
            },
        },
        {
            "type": "table",
            "title": "samples by tenant",
            "gridPos": {"w": 6, "h": 6, "x": 6, "y": 1},
            "targets": [
                {
                    "refId": "A",
                    "expr": 'ragpulse_metric_samples{metric="mrr",window="1h",tenant!=""}',
                    "legendFormat": "{{tenant}}",
                }
            ],
        },
    ],
}


def _more_traffic(engine: Any, tick: int) -> None:
    """A few new judged traces per tick, so the judge is called (and its rates move) in
    every rate window of the report, as in a live system."""
    now = datetime.now(UTC)
    with make_session_factory(engine)() as session:
        for i in range(3):
            add_trace(
                session,
                f"live-{tick}-{i}",
                now - timedelta(seconds=5),
                purposes=("judge",),
                question=f"how do I reset my password, variant {tick}.{i}",
                answer=f"Reset it on the portal, step {i}",
                reference="Reset it on the portal.",
                contexts=[{"id": "d1", "text": "Reset it on the portal."}],
                tags={"tenant": "acme" if i % 2 else "beta"},
            )
        session.commit()


def _run_jobs(settings: Any, engine: Any, embedder: Any, monitoring: Monitoring) -> Any:
    from collector.jobs.scheduler import build_runner
    from ragpulse.job_setup import JudgmentsFeed, job_environment, observe_scripts

    env = replace(
        job_environment(settings, engine, results=monitoring.results, embedder=embedder),
        to_sample=trace_to_sample,
        observers=(monitoring.histograms,),  # as the scheduler role wires them
    )
    monitoring.registry.register(monitoring.histograms)
    observe_scripts(env.embedder, monitoring.operations.record_embedding_scripts)
    runner = build_runner(settings, engine, env, operations=monitoring.operations)
    feed = JudgmentsFeed(monitoring.operations, make_session_factory(engine))
    return runner, feed


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_report_renders_every_dashboard_panel_in_chromium(
    sqlite_url: str,
    prometheus_server: Any,
    llm_server: ScriptedLLM,
    embedder: Any,
    chromium: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm_server.fallback = auto_reply
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        judge={
            "models": ["openai/judge-report"],
            "api_base": llm_server.base_url,
            "api_key": "test",
            "max_usd_per_day": 5.0,
        },
        scheduler={"consistency_sample": 4, "judge_traces_per_run": 40},
        canary={"min_traces": 5},
    )
    engine = make_engine(sqlite_url)
    _traffic(engine)
    registry = CollectorRegistry()
    stats = ConsumerStats(registry)
    monitoring = Monitoring(settings, engine, registry, role="exporter", embedder=embedder)
    monitoring.start()
    runner, feed = _run_jobs(settings, engine, embedder, monitoring)
    feed.sync()
    assert monitoring.server is not None
    rules = sorted((DASHBOARDS.parents[1] / "prometheus" / "rules").glob("*.yml"))
    prom = prometheus_server([f"127.0.0.1:{monitoring.server.port}"], rules)
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(EXTRA))
    output = tmp_path / "report.html"
    try:
        for tick in range(6):
            batch = BatchResult(consumed=10, stored=9, invalid=1, sampled=3)
            batch.invalid_by_reason = {"invalid_json": 1}
            batch.sampled_by_purpose = {"judge": 1, "real_users_benchmark": 2}
            batch.consumed_by_topic = {"rag.traces": 10}
            stats.record(batch)
            stats.set_lag("rag.traces", 0, 5 + tick)
            _more_traffic(engine, tick)
            assert all(r.status == "ok" for r in runner.run_many())
            feed.sync()
            time.sleep(1.5)
        assert prom.wait_for('ragpulse_metric_value{metric="faithfulness"}')
        capsys.readouterr()
        monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)  # the store: worst traces
        code = main(
            [
                "report",
                "--prometheus",
                prom.url,
                "--output",
                str(output),
                "--dashboards",
                str(DASHBOARDS),
                "--dashboards",
                str(extra),
            ]
        )
    finally:
        monitoring.stop()
        engine.dispose()
    out, err = capsys.readouterr()
    assert code == 0, err
    boards = load_dashboards([DASHBOARDS, extra])
    panels = [p for b in boards for p in b.panels]
    assert len(panels) == sum(
        1
        for path in [*sorted(DASHBOARDS.glob("*.json")), extra]
        for p in json.loads(path.read_text())["panels"]
        if p["type"] != "row"
    )
    summary = f"{len(panels)} panels from {len(boards)} dashboards, {len(panels)} with data"
    assert summary in out, err
    assert err == ""  # no panel without data, no failed query
    html = output.read_text()
    # Under each panel of a metric with per-trace scores: its worst traces from the store.
    assert "worst traces of faithfulness" in html and "worst traces of hit_rate@1" in html
    assert "worst traces of n_clusters" not in html  # a dataset metric: no per-trace scores
    # What the judge said, under a judge metric's traces (a trace judged from the cache,
    # an input judged before, has no call of its own to quote: not every row has one).
    judged = "".join(
        html.split(f"worst traces of {m}", 1)[1].split("</table>", 1)[0]
        for m in ("faithfulness", "answer_relevance", "context_relevance")
    )
    assert "<small>" in judged
    for fetching in ("<link", "src=", "@import", "url(", 'href="http'):
        assert fetching not in html  # self-contained: nothing loaded from the network

    page = chromium.open(output.as_uri())
    shot = page.screenshot(tmp_path / "report.png")
    if os.environ.get("REPORT_SCREENSHOTS_DIR"):
        shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "report.png")
        shutil.copy(output, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "report.html")
    assert page.console_errors == []
    root = page.evaluate(
        "[document.documentElement.dataset.report, document.documentElement.dataset.panels,"
        " document.documentElement.dataset.panelsWithData]"
    )
    assert root == ["rendered", str(len(panels)), str(len(panels))]
    rendered = page.evaluate(
        "Array.from(document.querySelectorAll('.panel')).map(p => ({"
        " title: p.querySelector('h4').textContent, state: p.dataset.state,"
        " width: p.getBoundingClientRect().width,"
        " queries: Array.from(p.querySelectorAll('pre.query')).map(q => q.textContent),"
        " lines: p.querySelectorAll('svg polyline.series, svg circle').length,"
        " stats: Array.from(p.querySelectorAll('.stat')).map("
        "   s => [parseFloat(s.dataset.value), s.dataset.color]),"
        " rows: p.querySelectorAll('table.values tr').length - 1}))"
    )
    assert [r["title"] for r in rendered] == [p.title for p in panels]
    for panel, shown in zip(panels, rendered, strict=True):
        assert shown["state"] == "ok" and shown["width"] > 100, shown
        # The panel's own PromQL, with the dashboard variables filled in as Grafana does.
        assert len(shown["queries"]) == len(panel.targets)
        for target, query in zip(panel.targets, shown["queries"], strict=True):
            pattern = (
                target.expr.replace('tenant=~"$tenant"', 'tenant=~""')
                .replace('version=~"$version"', 'version=~".+"')
                .replace("$w", "1h")
            )
            expected = re.escape(pattern).replace(re.escape("$__rate_interval"), r"\d+s")
            assert re.fullmatch(expected, query), (query, pattern)
        if panel.type in ("stat", "gauge"):
            assert shown["stats"], panel.title
            for value, color in shown["stats"]:
                assert color == panel.threshold_color(value) or not panel.thresholds
        elif panel.type == "table" and panel.row.startswith("Versions"):
            assert shown["rows"] >= 8  # value, CI and n of the traffic's two versions
        elif panel.type == "table":
            assert shown["rows"] == 2  # the two tenants of the traffic
        else:
            assert shown["lines"] > 0, panel.title
    # Hovering a chart reads out every series' value at that time.
    tip = page.evaluate(
        "(() => { const svg = document.querySelectorAll('svg.chart[data-plot]')[5];"
        " const box = svg.getBoundingClientRect();"
        " svg.dispatchEvent(new MouseEvent('mousemove', {bubbles: true,"
        "   clientX: box.left + box.width * 0.8, clientY: box.top + box.height / 2}));"
        " const tip = svg.closest('.panel').querySelector('.tip');"
        " return [getComputedStyle(tip).display, tip.innerText]; })()"
    )
    assert tip[0] == "block" and " UTC" in tip[1] and tip[1].count(": ") >= 1, tip
    assert page.console_errors == []
    gauge = next(r for r in rendered if r["title"] == "mrr gauge")
    assert gauge["stats"][0][1] == "#b877d9"  # Grafana's "purple": the step above 0.01
