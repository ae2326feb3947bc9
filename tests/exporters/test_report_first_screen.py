"""The report's first screen in a real headless Chromium: a real Prometheus scrapes a
fixed /metrics (one metric drifting past the paging detector, one in a bad seed band,
one steady) and evaluates the shipped alert rules; `ragpulse report` then has to say,
in the first 1400×900 pixels, which tier pages and why (the change against the 7-day
value, the top slice, the firing alert with its runbook text), which is to watch, which
is fine and why the others have no data."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exporters.report.dashboards import load_dashboard
from exporters.report.promapi import PromClient
from exporters.report.verdict_data import tiers
from ragpulse.cli import main
from tests.fixtures.scrape_target import scrape_target

SHIPPED = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"
RULES = SHIPPED.parents[1] / "prometheus" / "rules"

METRICS = """\
ragpulse_metric_value{metric="faithfulness",window="1h"} 0.62
ragpulse_metric_value{metric="faithfulness",window="7d"} 0.81
ragpulse_metric_ci_lower{metric="faithfulness",window="1h"} 0.55
ragpulse_metric_ci_upper{metric="faithfulness",window="1h"} 0.69
ragpulse_metric_samples{metric="faithfulness",window="1h"} 85
ragpulse_drift_score{metric="faithfulness",detector="page"} 1.6
ragpulse_change_attribution{metric="faithfulness",rank="1",slice="tenant=acme"} 0.8
ragpulse_change_delta{metric="faithfulness"} -0.19
ragpulse_metric_value{metric="hit_rate@1",window="1h"} 0.9
ragpulse_metric_value{metric="hit_rate@1",window="7d"} 0.88
ragpulse_metric_ci_lower{metric="hit_rate@1",window="1h"} 0.85
ragpulse_metric_ci_upper{metric="hit_rate@1",window="1h"} 0.95
ragpulse_metric_value{metric="mrr",window="1h"} 0.45
ragpulse_metric_value{metric="mrr",window="7d"} 0.46
ragpulse_metric_ci_lower{metric="mrr",window="1h"} 0.4
ragpulse_metric_ci_upper{metric="mrr",window="1h"} 0.5
ragpulse_metric_value{metric="silhouette",window="1h"} 0.6
ragpulse_metric_value{metric="silhouette",window="7d"} 0.61
ragpulse_job_runs_total{job="judge_pipeline",status="ok"} 3
"""


@pytest.fixture
def metrics_target() -> Iterator[str]:
    with scrape_target(lambda: METRICS) as target:
        yield target


FIRST_SCREEN = """(() => {
  const inView = el => el !== null && el.getBoundingClientRect().bottom <= 900
    && el.getBoundingClientRect().top >= 0;
  const rows = Array.from(document.querySelectorAll('#verdict tr.tier')).map(r => ({
    tier: r.dataset.tier, level: r.dataset.level, seen: inView(r),
    changed: r.querySelector('.changed').innerText,
    slice: r.querySelector('.slice').innerText,
    alerts: r.querySelector('.alerts').innerText,
    runbook: Array.from(r.querySelectorAll('.alert .runbook')).map(x => inView(x)),
    link: r.querySelector('td.name a').getAttribute('href')}));
  const head = document.querySelector('#verdict h2');
  return {rows, headline: head.innerText, headSeen: inView(head),
    basis: document.querySelector('#verdict p.meta').innerText,
    level: document.querySelector('#verdict').dataset.level,
    height: document.documentElement.scrollHeight,
    anchors: rows.map(r => document.getElementById(r.link.slice(1)) !== null)};
})()"""


@pytest.mark.timeout(180)
def test_the_first_screen_says_what_pages_what_changed_and_where_to_look(
    prometheus_server: Any,
    metrics_target: str,
    chromium: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prom = prometheus_server([metrics_target], sorted(RULES.glob("*.yml")))
    firing = 'ALERTS{alertname="RagpulseQualityDropPage",alertstate="firing"}'
    assert prom.wait_for(firing, timeout=60), prom.log.read_text()[-2000:]
    output = tmp_path / "report.html"
    code = main(["report", "--prometheus", prom.url, "--output", str(output), "--no-traces"])
    assert code == 0, capsys.readouterr().err

    page = chromium.open(output.as_uri())
    shot = page.screenshot(tmp_path / "first.png", {"x": 0, "y": 0, "width": 1400, "height": 900})
    if os.environ.get("REPORT_SCREENSHOTS_DIR"):
        shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "first-screen.png")
        shutil.copy(output, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "first-screen.html")
    assert page.console_errors == []
    seen = page.evaluate(FIRST_SCREEN)
    overview = load_dashboard(SHIPPED / "overview.json")
    expected = tiers(overview)[0]
    # one line per tier of the overview, all in the first screen, each linking to its row
    assert [r["tier"] for r in seen["rows"]] == [t.title for t in expected]
    assert seen["headSeen"] and all(r["seen"] for r in seen["rows"]), seen
    assert all(seen["anchors"]), seen
    assert seen["level"] == "paging" and seen["headline"].startswith("Quality: PAGING")
    # a young Prometheus: the page says how much history the detectors need and have
    assert re.search(
        r"the drift detectors need 1h of results, Prometheus has \d+ min", seen["basis"]
    ), seen["basis"]
    by_tier = {r["tier"]: r for r in seen["rows"]}
    generation = next(r for t, r in by_tier.items() if t.startswith("Generation"))
    # the paging tier: what changed (1h with its CI against 7d, the delta, since when),
    # the top slice, the firing alert with its runbook text (expanded by Prometheus)
    assert generation["level"] == "paging"
    assert "faithfulness 0.62 (95% CI 0.55 to 0.69) vs 0.81 over 7d: −0.19" in generation["changed"]
    assert (
        "worse since" in generation["changed"] and "drift detector at 1.6×" in generation["changed"]
    )
    assert "tenant=acme: 80% of the faithfulness change" in generation["slice"]
    assert "CRITICAL RagpulseQualityDropPage (faithfulness)" in generation["alerts"]
    assert "80% of the last hour's change is tenant=acme" in generation["alerts"]
    assert generation["runbook"] == [True]
    retrieval = by_tier["Retrieval (Tier 1, real-users benchmark)"]
    assert retrieval["level"] == "watch"  # mrr 0.45 is in seed 004's "needs attention"
    assert (
        "mrr 0.45" in retrieval["changed"] and "band that needs attention" in retrieval["changed"]
    )
    assert retrieval["alerts"] == "none firing"
    embeddings = by_tier["Embeddings (Tier 0)"]
    assert embeddings["level"] == "fine" and "no change beyond noise" in embeddings["changed"]
    # a tier without data says why, with the setting that changes it
    judge_tier = by_tier["Production judge (judge pipeline)"]
    assert judge_tier["level"] == "no data"
    assert "no trace in its windows has both judge and judge_label" in judge_tier["changed"]
    # a panel that needs more history says how much there is
    waiting = page.evaluate(
        "Array.from(document.querySelectorAll('.panel .status')).map(s => s.textContent)"
        ".filter(t => t.startsWith('Needs history'))"
    )
    assert waiting and all(
        re.search(r"start after 1h of results \(this Prometheus has \d+ min\)$", t) for t in waiting
    ), waiting
    # a legend entry hides its series in the Plotly chart above it
    toggled = page.evaluate(
        "(() => { const item = document.querySelector('.panel .legend span[data-series]');"
        " const plot = item.closest('.panel').querySelector('.plotly-chart .js-plotly-plot');"
        " const name = item.dataset.series; item.click();"
        " return plot.data.filter(t => t.meta === name).map(t => t.visible); })()"
    )
    assert toggled and all(v is False for v in toggled), toggled
    assert page.console_errors == []
    # rows with nothing to show are folded: the page is a fraction of the old ~15,600 px
    # (the conversation row, read from the store when it has closed sessions, adds ~300)
    assert seen["height"] < 6500, seen["height"]


@pytest.mark.timeout(60)
def test_the_charts_start_at_the_first_sample_not_a_coarse_step_later(
    prometheus_server: Any, metrics_target: str
) -> None:
    prom = prometheus_server([metrics_target])
    assert prom.wait_for("up")
    time.sleep(3)
    raw = prom.query("up[1h]")[0]["values"]
    first = float(raw[0][0])
    now = time.time()
    # a day's range: the coarse search alone would step 173 s at a time
    found = PromClient(prom.url).first_sample_time(now - 86400, now)
    assert found is not None and first <= found <= first + 2.0, (found, first)
