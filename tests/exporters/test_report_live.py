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
from html import escape
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.pipeline import BatchResult
from collector.settings import load_settings
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from dashboards.boards import SLO_EXAMPLE
from dashboards.conditions import NOT_WORSE, NOTHING_FIRING, TOPICS
from exporters.report.dashboards import load_dashboards
from exporters.report.verdict_data import overview
from ragpulse.cli import main
from ragpulse.monitoring import Monitoring
from tests.dashboards.test_prometheus_e2e import _traffic
from tests.fixtures.llm_server import ScriptedLLM, auto_reply
from tests.jobs.helpers import add_trace, ok_or_no_vectors

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"

HEAT = (
    "(() => { const panel = Array.from(document.querySelectorAll('.panel')).find("
    "   p => p.querySelector('h4').textContent === 'faithfulness: per-trace distribution');"
    " const div = panel.querySelector('.js-plotly-plot'); div.scrollIntoView();"
    " const z = div.data[0].z; let best = [0, 0, -1];"
    " z.forEach((row, i) => row.forEach((c, j) => { if (c !== null && c > best[2]) {"
    "   best = [i, j, c]; } }));"
    " const xa = div._fullLayout.xaxis, ya = div._fullLayout.yaxis;"
    " const box = div.querySelector('.main-svg').getBoundingClientRect();"
    " return {id: div.id, count: best[2], rows: div.data[0].y.length,"
    "  x: box.left + xa._offset + xa.c2p(xa.d2c(div.data[0].x[best[1]])),"
    "  y: box.top + ya._offset + ya.c2p(ya.d2c(div.data[0].y[best[0]])),"
    "  cells: z.flatMap((row, i) => row.filter(c => c !== null).map("
    "    c => [div.data[0].y[i], c])),"
    "  traces: div.data.length > 1 ? div.data[1].customdata.map(c => c[0]) : []}; })()"
)
"""The heatmap panel's fullest cell: its page position, count and rows; the exemplars' ids."""

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
    """A few new judged and benchmarked traces per tick, so the judge is called (and its
    rates move) and the SLOs' events grow in every rate window of the report, as in a live
    system."""
    now = datetime.now(UTC)
    with make_session_factory(engine)() as session:
        for i in range(3):
            add_trace(
                session,
                f"live-{tick}-{i}",
                now - timedelta(seconds=5),
                purposes=("judge", "real_users_benchmark"),
                question=f"how do I reset my password, variant {tick}.{i}",
                relevant_ids=["d1"],
                answer=f"Reset it on the portal, step {i}",
                reference="Reset it on the portal.",
                contexts=[{"id": "d1", "text": "Reset it on the portal."}],
                tags={"tenant": "acme" if i % 2 else "beta"},
                latency_ms=800.0 + 300.0 * i,  # the latency SLO's events, within its limit
                judge_decision=True,  # the agreement SLO's: a decision and its label
                judge_label=True,
            )
        # a conversation idle for ten minutes: the sessions job closes it (the
        # conversations SLO's events)
        for turn, question in enumerate(("where is my parcel", "thanks, found it")):
            add_trace(
                session,
                f"live-{tick}-turn{turn}",
                now - timedelta(minutes=11 - turn),
                question=f"{question} ({tick})",
                answer="It left the warehouse.",
                session_id=f"live-session-{tick}",
                turn=turn,
                tags={"tenant": "acme"},
            )
        session.commit()


def _run_jobs(settings: Any, engine: Any, embedder: Any, monitoring: Monitoring) -> Any:
    from collector.jobs.scheduler import build_runner
    from ragpulse.job_setup import JudgmentsFeed, job_environment, observe_scripts
    from ragpulse.slo_setup import slo_recorder

    # as the scheduler role wires them: the score histograms, the SLO events (if any)
    recorder = slo_recorder(settings, make_session_factory(engine))
    env = replace(
        job_environment(settings, engine, results=monitoring.results, embedder=embedder),
        to_sample=trace_to_sample,
        observers=(monitoring.histograms, *([recorder] if recorder else [])),
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
        slo={"openslo_file": str(SLO_EXAMPLE)},
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
    prom = prometheus_server(
        [f"127.0.0.1:{monitoring.server.port}"], rules, features=["exemplar-storage"]
    )
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(EXTRA))
    output = tmp_path / "report.html"
    try:
        for tick in range(6):
            batch = BatchResult(consumed=10, stored=9, invalid=1, sampled=3)
            batch.invalid_by_reason = {"invalid_json": 1}
            batch.sampled_by_purpose = {"judge": 1, "real_users_benchmark": 2}
            batch.consumed_by_topic = {"rag.traces": 10}
            batch.otlp_traces = {"openinference": 3, "genai": 1}
            batch.otlp_incomplete = {("genai", "answer"): 1, ("openinference", "contexts"): 1}
            stats.record(batch)
            stats.set_lag("rag.traces", 0, 5 + tick)
            _more_traffic(engine, tick)
            # the topics job has no stored vectors to cluster on SQLite by default
            assert all(ok_or_no_vectors(r) for r in runner.run_many())
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
    loaded = load_dashboards([DASHBOARDS, extra])
    boards = sorted(loaded, key=lambda b: b is not overview(loaded))  # the page's order
    panels = [p for b in boards for p in b.panels]
    assert len(panels) == sum(
        1
        for path in [*sorted(DASHBOARDS.glob("*.json")), extra]
        for p in json.loads(path.read_text())["panels"]
        if p["type"] != "row"
    )
    # Every panel has data but those that are empty on a healthy system by design (nothing
    # firing, nothing worse to explain), and those say so, on the page and on stderr.
    # The topics row too: SQLite keeps no question vectors by default, so no topics.
    by_design = [
        p
        for p in panels
        if (p.no_value in (NOTHING_FIRING.text, NOT_WORSE.text) and p.type == "table")
        or p.no_value == TOPICS.text
    ]
    assert {p.title for p in by_design} == {
        "Firing alerts",
        "Where the change is (top slice)",
        "Topics: traffic, share and emerging (topics.emerging_window)",
        "Topics: share of the traffic",
        "Topics: each tier's headline metric, 1h with 95% CI against 7d",
    }
    shown = len(panels) - len(by_design)
    # One line counts the empty panels by reason (no other panel without data), one says
    # where the page is; nothing on stderr (no failed query).
    assert out.splitlines() == [
        f"{shown} panels with data; 5 empty: 3 no topics yet, 1 nothing firing, 1 nothing "
        "worse to explain (--verbose lists them)",
        f"wrote {output} ({len(panels)} panels from {len(boards)} dashboards)",
    ], err
    assert err == ""
    html = output.read_text()
    assert all(escape(p.no_value or "") in html for p in by_design)
    # Under each panel of a metric with per-trace scores: its worst traces from the store.
    assert "worst traces of faithfulness" in html and "worst traces of hit_rate@1" in html
    # The topics from the store, after the dashboards: none yet without stored vectors.
    assert '<h2 class="dashboard" id="topics">Topics</h2>' in html and "No topics yet" in html
    assert "worst traces of n_clusters" not in html  # a dataset metric: no per-trace scores
    # What the judge said, under a judge metric's traces (a trace judged from the cache,
    # an input judged before, has no call of its own to quote: not every row has one).
    judged = "".join(
        html.split(f"worst traces of {m}", 1)[1].split("</table>", 1)[0]
        for m in ("faithfulness", "answer_relevance", "context_relevance")
    )
    assert "<small>" in judged
    # self-contained: nothing loaded from the network (plotly.js is embedded whole, its
    # own source names URLs it never loads here; the browser check below covers it)
    mine = re.sub(r'<script id="plotly-js">.*?</script>', "", html, flags=re.S)
    assert html.count('<script id="plotly-js">') == 1
    for fetching in ("<link", "src=", "@import", "url(", 'href="http'):
        assert fetching not in mine

    page = chromium.open(output.as_uri())
    shot = page.screenshot(tmp_path / "report.png")
    if os.environ.get("REPORT_SCREENSHOTS_DIR"):
        shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "report.png")
        shutil.copy(output, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "report.html")
    assert page.console_errors == []
    assert page.evaluate("performance.getEntriesByType('resource').length") == 0
    root = page.evaluate(
        "[document.documentElement.dataset.report, document.documentElement.dataset.panels,"
        " document.documentElement.dataset.panelsWithData]"
    )
    assert root == ["rendered", str(len(panels)), str(shown)]
    rendered = page.evaluate(
        "Array.from(document.querySelectorAll('.panel')).map(p => ({"
        " title: p.querySelector('h4').textContent, state: p.dataset.state,"
        " width: p.getBoundingClientRect().width,"
        " queries: Array.from(p.querySelectorAll('pre.query')).map(q => q.textContent),"
        " lines: Array.from(p.querySelectorAll('.plotly-chart .js-plotly-plot')).map("
        "   d => d.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length)"
        "   .reduce((a, b) => a + b, 0),"
        " heatmap: Array.from(p.querySelectorAll('.plotly-heatmap .js-plotly-plot')).map("
        "   d => d.data[0].type + ':' + (d.querySelector('.main-svg') !== null)),"
        " stats: Array.from(p.querySelectorAll('.stat')).map("
        "   s => [parseFloat(s.dataset.value), s.dataset.color]),"
        " rows: p.querySelectorAll('table.values tr').length - 1,"
        " columns: p.querySelectorAll('table.values tr:first-child th').length}))"
    )
    assert [r["title"] for r in rendered] == [p.title for p in panels]
    for panel, drawn in zip(panels, rendered, strict=True):
        if panel in by_design:
            assert drawn["state"] == "nodata", drawn
            continue
        assert drawn["state"] == "ok" and drawn["width"] > 100, drawn
        # The panel's own PromQL, with the dashboard variables filled in as Grafana does.
        assert len(drawn["queries"]) == len(panel.targets)
        for target, query in zip(panel.targets, drawn["queries"], strict=True):
            pattern = (
                target.expr.replace('tenant=~"$tenant"', 'tenant=~""')
                .replace('version=~"$version"', 'version=~".+"')
                .replace('tenant=~"$slo_tenant"', 'tenant=~".*"')
                .replace("$w", "1h")
            )
            expected = re.escape(pattern).replace(re.escape("$__rate_interval"), r"\d+s")
            assert re.fullmatch(expected, query), (query, pattern)
        if panel.type in ("stat", "gauge"):
            assert drawn["stats"], panel.title
            for value, color in drawn["stats"]:
                assert color == panel.threshold_color(value) or not panel.thresholds
        elif panel.type == "table" and panel.row.startswith("Versions"):
            # merged as Grafana does: a row per metric and version with value, CI and n
            assert drawn["rows"] >= 4 and drawn["columns"] >= 5, drawn
        elif panel.type == "table" and panel.row == "Conversations per tenant":
            # a row per tenant and rate: value, CI and n
            assert drawn["rows"] >= 6 and drawn["columns"] >= 6, drawn
        elif panel.type == "table":
            assert drawn["rows"] == 2  # the two tenants of the traffic
        elif panel.type == "heatmap":
            assert drawn["heatmap"] == ["heatmap:true"], panel.title  # Plotly's, not lines
        else:
            assert drawn["lines"] > 0, panel.title
    # Hovering a chart (a real mouse move) reads out the series' values at that time.
    chart = page.evaluate(
        "(() => { const div = document.querySelectorAll('.plotly-chart .js-plotly-plot')[5];"
        " div.scrollIntoView(); const box = div.querySelector('.nsewdrag')"
        ".getBoundingClientRect(); return {id: div.id, x: box.left + box.width * 0.8,"
        " y: box.top + box.height / 2, names: div.data.filter(t => t.meta).map(t => t.meta),"
        " values: div.data.filter(t => t.meta).flatMap(t => t.customdata)}; })()"
    )
    page.browser.call(
        "Input.dispatchMouseEvent",
        {"type": "mouseMoved", "x": chart["x"], "y": chart["y"]},
        page.session,
    )
    time.sleep(0.3)
    tip = page.evaluate(
        f"document.getElementById('{chart['id']}').querySelector('.hoverlayer').textContent"
    )
    assert " UTC" in tip and any(name in tip for name in chart["names"]), (tip, chart)
    assert any(v and v in tip for v in chart["values"]), (tip, chart)  # the unit's format
    assert page.console_errors == []
    # A heatmap: buckets x time; hovering a cell (a real mouse move) reads out its count,
    # and the exemplars carry the trace ids of the histogram.
    heat = page.evaluate(HEAT)
    assert heat["count"] > 0, heat  # the judged traffic of the ticks: cells with traces
    assert heat["rows"] >= 2, heat
    assert heat["traces"] and all(isinstance(t, str) and t for t in heat["traces"]), heat

    def hover_at(x: float, y: float) -> str:
        page.browser.call(
            "Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, page.session
        )
        text = ""
        for _ in range(30):  # a loaded machine draws the hover label late
            time.sleep(0.1)
            text = str(
                page.evaluate(
                    f"document.getElementById('{heat['id']}')"
                    ".querySelector('.hoverlayer').textContent"
                )
            )
            if text or (x, y) == (5, 5):
                break
        return text

    # the cell, with the exemplar markers hidden (the closest point wins the hover); its
    # position is read after the restyle, which may move the plot area
    page.evaluate(f"Plotly.restyle('{heat['id']}', {{visible: false}}, [1])")
    heat.update({k: v for k, v in page.evaluate(HEAT).items() if k in ("x", "y")})
    hover = hover_at(heat["x"], heat["y"])
    read = re.search(r" UTCscore (.+): ([\d.]+) traces$", hover)
    assert read, (hover, heat)
    bucket, count = read.group(1), float(read.group(2))
    assert any(  # a cell's bucket and count (3 significant digits)
        row == bucket and abs(c - count) <= 0.01 * max(1.0, c) for row, c in heat["cells"]
    ), (hover, heat)
    hover_at(5, 5)
    # an exemplar marker: its trace id
    page.evaluate(f"Plotly.restyle('{heat['id']}', {{visible: true}}, [1])")
    marker = page.evaluate(
        f"(() => {{ const div = document.getElementById('{heat['id']}');"
        " const xa = div._fullLayout.xaxis, ya = div._fullLayout.yaxis, e = div.data[1];"
        " const box = div.querySelector('.main-svg').getBoundingClientRect();"
        " return [box.left + xa._offset + xa.c2p(xa.d2c(e.x[e.x.length - 1])),"
        "  box.top + ya._offset + ya.c2p(ya.d2c(e.y[e.y.length - 1]))]; })()"
    )
    hover = hover_at(marker[0], marker[1])
    assert any(f"trace {t}score" in hover for t in heat["traces"]), (hover, heat)
    # The first screen: a verdict per tier, the tiers with data link to their worst
    # traces, and following a link opens the (folded) table it points to.
    verdict = page.evaluate(
        "Array.from(document.querySelectorAll('#verdict tr.tier')).map(r => ({"
        " level: r.dataset.level, tier: r.dataset.tier,"
        " links: Array.from(r.querySelectorAll('a.worst')).map(a => a.getAttribute('href'))}))"
    )
    assert verdict and all(r["level"] in ("fine", "watch", "paging", "no data") for r in verdict)
    generation = next(r for r in verdict if r["tier"].startswith("Generation"))
    assert generation["links"], verdict  # judged traces in the store: links to the worst
    link = generation["links"][0]
    opened = page.evaluate(
        "(() => { const a = document.querySelector('a.worst[href=\"" + link + "\"]');"
        " const target = document.getElementById('" + link[1:] + "');"
        " const before = target.open; a.click();"
        " return [before, target.open, target.querySelectorAll('tbody tr').length]; })()"
    )
    assert opened[0] is False and opened[1] is True and opened[2] > 0, opened
    gauge = next(r for r in rendered if r["title"] == "mrr gauge")
    assert gauge["stats"][0][1] == "#b877d9"  # Grafana's "purple": the step above 0.01
