"""Score-distribution heatmaps with exemplars: the per-trace side of the quality numbers.

One heatmap per per-sample metric of every scheduled job, drawn from the histogram
`ragpulse_trace_score` (`exporters/score_histograms.py`): each cell counts the traces
whose score fell in that bucket during the interval, and the exemplars (dots) carry the
`trace_id` of a trace in the bucket, which Grafana links to the tracing datasource
(`exemplarTraceIdDestinations` of the Prometheus datasource). Dataset metrics have no
per-trace score and so no heatmap.
"""

from __future__ import annotations

from typing import Any

from dashboards import metrics_view
from dashboards.metrics_view import describe

FAMILY = "ragpulse_trace_score"
PER_TRACE_KINDS = ("per_sample", "async_per_sample")


def per_trace(metric: str) -> bool:
    """Whether the jobs score `metric` trace by trace (so it has a histogram)."""
    return getattr(describe(metric), "kind", None) in PER_TRACE_KINDS


def rows() -> list[tuple[str, tuple[str, ...]]]:
    """(row title, per-trace metrics) of every scheduled job that has any."""
    out = []
    for _job, title, metrics in metrics_view.scheduled():
        chosen = tuple(m for m in metrics if per_trace(m))
        if chosen:
            out.append((title, chosen))
    return out


def expr(metric: str, selector: str) -> str:
    """Traces per bucket and interval; `le` is the bucket (the heatmap's y axis)."""
    return (
        f'sum by (le) (increase({FAMILY}_bucket{{metric="{metric}",{selector}}}[$__rate_interval]))'
    )


def heatmap(metric: str, selector: str, datasource: dict[str, str]) -> dict[str, Any]:
    spec = describe(metric)
    unit = metrics_view.GRAFANA_UNITS.get(spec.unit, "none")
    return {
        "type": "heatmap",
        "title": f"{metric}: per-trace distribution",
        "description": f"How many traces scored in each bucket of {metric} per interval "
        "(darker: more traces). The dots are exemplars: hover one and follow its trace_id "
        "to the trace (needs Prometheus' exemplar storage and the datasource's trace "
        f"link, see README). {metrics_view.panel_text(metric)}",
        "targets": [
            {
                "refId": "A",
                "datasource": datasource,
                "expr": expr(metric, selector),
                "format": "heatmap",
                "legendFormat": "{{le}}",
                "exemplar": True,
            }
        ],
        "fieldConfig": {
            "defaults": {
                "custom": {
                    "hideFrom": {"legend": False, "tooltip": False, "viz": False},
                    "scaleDistribution": {"type": "linear"},
                }
            },
            "overrides": [],
        },
        "options": {
            "calculate": False,
            "cellGap": 1,
            "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64, "exponent": 0.5},
            "exemplars": {"color": "rgba(255,0,255,0.7)"},
            "filterValues": {"le": 1e-9},
            "legend": {"show": True},
            "rowsFrame": {"layout": "auto"},
            "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": False},
            "yAxis": {"axisPlacement": "left", "unit": unit, "reverse": False},
        },
    }
