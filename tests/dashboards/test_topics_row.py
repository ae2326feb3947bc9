"""The overview's topics row (issue 41): what it queries, that its panels say why they are
empty, that the other quality panels leave the topic series out, and, on a real Prometheus
scraping the topics' series, that every table row is named and the change is 1h - 7d; with
Chromium, the row as `ragpulse report` draws it (`REPORT_SCREENSHOTS_DIR` keeps the PNG)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from dashboards import boards
from dashboards.conditions import TOPICS
from dashboards.panels import topics
from ragpulse.cli import main

ROW = "Topics: what users ask about, and each topic's quality"
TOPIC_NAMES = {
    "0": "card, lost, block / карту, заблокировать",
    "1": "dollar, exchange, rate / курс, доллара",
    "other": "other",
}
VALUES = {"0": (0.82, 0.74, 0.88, 0.90, 140), "1": (0.10, 0.05, 0.18, 0.35, 60)}
"""topic -> (1h value, CI lower, CI upper, 7d value, n) of the first tier metric; the i-th
metric's are `STEP` x i higher (n the same)."""
STEP = 0.01


def _values(topic: str, i: int) -> tuple[float, float, float, float, int]:
    value, lower, upper, baseline, n = VALUES[topic]
    up = STEP * i
    return value + up, lower + up, upper + up, baseline + up, n


def _built(board: Any) -> dict[str, Any]:
    built: dict[str, Any] = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    return built


def _overview() -> dict[str, Any]:
    return _built(boards.overview())


def _topics() -> dict[str, Any]:
    return _built(boards.topics_board())


def _row(board: dict[str, Any], title: str) -> list[dict[str, Any]]:
    """The panels under the row titled `title`."""
    out: list[dict[str, Any]] = []
    inside = False
    for panel in board["panels"]:
        if panel["type"] == "row":
            inside = panel["title"] == title
        elif inside:
            out.append(panel)
    return out


def test_the_topics_row_names_every_topic_and_says_why_it_is_empty() -> None:
    panels = _row(_topics(), ROW)
    assert [p["type"] for p in panels] == ["table", "timeseries", "table"]
    for panel in panels:
        assert panel["fieldConfig"]["defaults"]["noValue"] == TOPICS.text
        for target in panel["targets"]:
            assert (
                "* on(topic) group_left(label) max by (topic, label) (ragpulse_topic_info)"
                in (target["expr"])
            )
    quality = panels[2]
    exprs = " ".join(t["expr"] for t in quality["targets"])
    for family in ("metric_value", "metric_ci_lower", "metric_ci_upper", "metric_samples"):
        assert f"ragpulse_{family}{{" in exprs
    assert 'window="7d"' in exprs and "- ignoring(window)" in exprs
    chosen = topics.tier_metrics()
    assert {"hit_rate@1", "retrieval_empty_rate", "faithfulness_rating"} <= set(chosen)
    assert "judge_consistency" not in chosen  # the judge's own metric has no topic series
    assert f'metric=~"{"|".join(chosen)}"' in exprs
    # every overview panel reading a quality family draws the overall or a tenant's value
    # (topic=""), or the versions row's version series
    board = _overview()
    assert not _row(board, ROW)  # the topics are a dashboard of their own
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        for target in panel.get("targets", []):
            expr = target.get("expr", "")
            if "ragpulse_metric_value{" in expr and 'version=~"$version"' not in expr:
                assert 'topic=""' in expr, (panel["title"], expr)


def _exposition() -> str:
    lines = []
    for topic, label in TOPIC_NAMES.items():
        lines.append(f'ragpulse_topic_info{{topic="{topic}",label="{label}"}} 1')
    traffic = {
        "0": (420, 0.42, 0.05, 0),
        "1": (130, 0.13, 0.10, 1),
        "other": (450, 0.45, None, None),
    }
    for topic, (traces, share, change, emerging) in traffic.items():
        lines.append(f'ragpulse_topic_traces{{topic="{topic}"}} {traces}')
        lines.append(f'ragpulse_topic_share{{topic="{topic}"}} {share}')
        if change is not None:
            lines.append(f'ragpulse_topic_share_change{{topic="{topic}"}} {change}')
            lines.append(f'ragpulse_topic_emerging{{topic="{topic}"}} {emerging}')
    for i, metric in enumerate(topics.tier_metrics()):
        for topic in VALUES:
            value, lower, upper, baseline, n = _values(topic, i)
            for window, v in (("1h", value), ("7d", baseline)):
                labels = f'metric="{metric}",window="{window}",tenant="",version="",topic="{topic}"'
                lines.append(f"ragpulse_metric_value{{{labels}}} {v}")
                lines.append(
                    f"ragpulse_metric_samples{{{labels}}} {n * (1 if window == '1h' else 50)}"
                )
                if window == "1h":
                    lines.append(f"ragpulse_metric_ci_lower{{{labels}}} {lower}")
                    lines.append(f"ragpulse_metric_ci_upper{{{labels}}} {upper}")
        overall = f'metric="{metric}",window="1h",tenant="",version="",topic=""'
        lines.append(f"ragpulse_metric_value{{{overall}}} 0.5")
    return "\n".join(lines) + "\n"


@pytest.fixture
def topic_series() -> Iterator[str]:
    """A /metrics serving the topics' series, as the exporter and the jobs write them."""
    body = _exposition().encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_topics_row_on_a_real_prometheus(
    topic_series: str, prometheus_server: Any, chromium: Any, tmp_path: Path
) -> None:
    prom = prometheus_server([topic_series])
    assert prom.wait_for("ragpulse_topic_info")
    panels = _row(_topics(), ROW)
    traffic, share, quality = panels
    assert prom.wait_for(traffic["targets"][0]["expr"])  # scraped
    for target in traffic["targets"] + share["targets"]:
        rows = prom.query(target["expr"])
        assert rows, target["expr"]
        for row in rows:
            assert set(row["metric"]) == {"topic", "label"}
            assert row["metric"]["label"] == TOPIC_NAMES[row["metric"]["topic"]]
    emerging = {
        r["metric"]["topic"]: float(r["value"][1])
        for r in prom.query(traffic["targets"][3]["expr"])
    }
    assert emerging == {"0": 0.0, "1": 1.0}  # `other` has no flag
    columns = {}
    for target in quality["targets"]:
        found = prom.query(target["expr"])
        columns[target["refId"]] = {
            (r["metric"]["topic"], r["metric"]["metric"]): float(r["value"][1]) for r in found
        }
        for row in found:
            assert set(row["metric"]) == {"topic", "label", "metric"}
            assert row["metric"]["label"] == TOPIC_NAMES[row["metric"]["topic"]]
    expected = {(t, m) for t in VALUES for m in topics.tier_metrics()}
    assert all(set(c) == expected for c in columns.values())  # no overall series, no other
    position = {m: i for i, m in enumerate(topics.tier_metrics())}
    for (topic, metric), change in columns["E"].items():
        value, lower, upper, baseline, n = _values(topic, position[metric])
        assert change == pytest.approx(value - baseline)
        assert columns["B"][(topic, metric)] == pytest.approx(lower)
        assert columns["C"][(topic, metric)] == pytest.approx(upper)
        assert columns["F"][(topic, metric)] == n

    # the row as `ragpulse report` draws it, in Chromium
    board = tmp_path / "topics.json"
    board.write_text(json.dumps(_topics()))
    output = tmp_path / "topics.html"
    code = main(
        ["report", "--prometheus", prom.url, "--output", str(output), "--dashboards", str(board)]
    )
    assert code == 0
    html = output.read_text()
    assert TOPIC_NAMES["1"] in html and TOPICS.text not in html
    page = chromium.open(output.as_uri())
    shot = page.screenshot(tmp_path / "topics.png")
    assert page.console_errors == []
    if os.environ.get("REPORT_SCREENSHOTS_DIR"):
        shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "topics-row.png")
