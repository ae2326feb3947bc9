"""The score-distribution dashboard: a heatmap with exemplars for every per-trace metric
of every scheduled job, over the histogram the exporter serves, with edges for its unit."""

from __future__ import annotations

import json
from pathlib import Path

from dashboards.metrics_view import describe, scheduled
from dashboards.panels import drilldown
from exporters.score_histograms import FAMILY, UNIT_EDGES

BOARD = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"


def test_every_per_trace_metric_has_a_heatmap_with_exemplars() -> None:
    board = json.loads((BOARD / "distributions.json").read_text())
    panels = {p["title"]: p for p in board["panels"] if p["type"] == "heatmap"}
    expected = {m for _, _, metrics in scheduled() for m in metrics if drilldown.per_trace(m)}
    assert expected and {t.split(":")[0] for t in panels} == expected
    for metric in expected:
        panel = panels[f"{metric}: per-trace distribution"]
        (target,) = panel["targets"]
        assert target["exemplar"] is True and target["format"] == "heatmap"
        assert f'{FAMILY}_bucket{{metric="{metric}",tenant=~"$tenant"}}' in target["expr"]
        assert target["expr"].startswith("sum by (le) (increase(")
        assert describe(metric).unit in UNIT_EDGES  # the exporter has buckets for it
        assert panel["options"]["calculate"] is False  # the buckets are Prometheus' own


def test_dataset_metrics_have_no_heatmap() -> None:
    assert not drilldown.per_trace("n_clusters")
    assert not drilldown.per_trace("judge_accuracy")
    assert drilldown.per_trace("hit_rate@1") and drilldown.per_trace("faithfulness")
