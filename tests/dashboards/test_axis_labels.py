"""Every chart of a metric titles its axes (Grafana's `axisLabel`, which the report draws
too): the metric and its unit on the value axis, "n (traces)" on the sample counts'."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dashboards.panels.common import N_AXIS, axis_label

BOARDS = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"
_METRIC = re.compile(r'metric="([^"$]+)"')


def test_metric_charts_title_their_axes() -> None:
    checked = 0
    for path in sorted(BOARDS.glob("*.json")):
        for panel in json.loads(path.read_text())["panels"]:
            if panel["type"] != "timeseries":
                continue
            metrics = {m for t in panel["targets"] for m in _METRIC.findall(t["expr"])}
            if len(metrics) != 1:
                continue
            (metric,) = metrics
            where = f"{path.name}: {panel['title']}"
            assert panel["fieldConfig"]["defaults"]["custom"]["axisLabel"] == axis_label(metric)
            for override in panel["fieldConfig"]["overrides"]:
                props = {p["id"]: p["value"] for p in override["properties"]}
                if props.get("custom.axisPlacement") == "right":
                    assert props.get("custom.axisLabel") == N_AXIS, where
            checked += 1
    assert checked > 40
    assert axis_label("latency_ms") == "latency_ms (ms)"
