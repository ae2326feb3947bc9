"""The shipped Versions table (a `merge` of four queries) as Grafana shows it: one row
per metric and version, grouped by metric, counts without decimals."""

from __future__ import annotations

import re
from pathlib import Path

from exporters.report.dashboards import load_dashboard
from exporters.report.tables import Cell, merged_table, merges

SHIPPED = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"


def test_the_versions_table_has_one_row_per_metric_and_version() -> None:
    board = load_dashboard(SHIPPED / "overview.json")
    panel = next(p for p in board.panels if p.title.startswith("Versions:"))
    assert merges(panel)
    found = []
    for metric in ("mrr", "faithfulness"):
        for version, base in (("v1", 0.8), ("v2", 0.7)):
            labels = {"metric": metric, "version": version, "window": "24h", "job": "ragpulse"}
            for ref, value in (("A", base), ("B", base - 0.05), ("C", base + 0.05), ("D", 85)):
                found.append(Cell(ref, labels, value))
    html = merged_table(panel, found)
    header = re.findall(r"<th[^>]*>([^<]*)</th>", html)
    assert header == ["metric", "version", "value", "CI lower", "CI upper", "n"]
    rows = re.findall(r"<tr>(.*?)</tr>", html)[1:]
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in rows]
    assert cells == [
        ["faithfulness", "v1", "0.800", "0.750", "0.850", "85"],
        ["", "v2", "0.700", "0.650", "0.750", "85"],
        ["mrr", "v1", "0.800", "0.750", "0.850", "85"],
        ["", "v2", "0.700", "0.650", "0.750", "85"],
    ]
