"""The drill-down: score-distribution heatmaps with exemplars, the per-trace side of the
quality numbers.

One heatmap per per-sample metric of every scheduled job, drawn from the histogram
`ragpulse_trace_score` (`exporters/score_histograms.py`): each cell counts the traces
whose score fell in that bucket during the interval, and the exemplars (dots) carry the
`trace_id` of a trace in the bucket, which Grafana links to the tracing datasource
(`exemplarTraceIdDestinations` of the Prometheus datasource). Dataset metrics have no
per-trace score and so no heatmap.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import heatmap, prometheus
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.heatmap import HeatmapColorMode
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from dashboards import metrics_view
from dashboards.metrics_view import describe
from dashboards.panels.common import DS, SEL
from dashboards.panels.layout import Cell, Section, wrap

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


def heatmap_panel(metric: str) -> heatmap.Panel:
    unit = metrics_view.GRAFANA_UNITS.get(describe(metric).unit, "none")
    return (
        heatmap.Panel()
        .title(f"{metric}: per-trace distribution")
        .description(
            f"How many traces scored in each bucket of {metric} per interval (darker: more "
            "traces). The dots are exemplars: hover one and follow its trace_id to the "
            "trace (needs Prometheus' exemplar storage and the datasource's trace link, see "
            f"docs: Score histograms). {metrics_view.panel_text(metric)}"
        )
        .with_target(
            prometheus.Dataquery()
            .ref_id("A")
            .datasource(DS)
            .expr(expr(metric, SEL))
            .format(PromQueryFormat.HEATMAP)
            .legend_format("{{le}}")
            .exemplar(True)
        )
        .hide_from(common_builders.HideSeriesConfig().legend(False).tooltip(False).viz(False))
        .scale_distribution(
            common_builders.ScaleDistributionConfig().type(common.ScaleDistribution.LINEAR)
        )
        .calculate(False)
        .cell_gap(1)
        .color(
            heatmap.HeatmapColorOptions()
            .mode(HeatmapColorMode.SCHEME)
            .scheme("Oranges")
            .steps(64)
            .exponent(0.5)
        )
        .exemplars_color("rgba(255,0,255,0.7)")
        .filter_values(heatmap.FilterValueRange().le(1e-9))
        .show_legend()
        .rows_frame(heatmap.RowsHeatmapOptions().layout(common.HeatmapCellLayout.AUTO))
        .mode(common.TooltipDisplayMode.SINGLE)
        .show_y_histogram()
        .show_color_scale(False)
        .y_axis(
            heatmap.YAxisConfig()
            .axis_placement(common.AxisPlacement.LEFT)
            .unit(unit)
            .reverse(False)
        )
    )


def sections() -> list[Section]:
    """A row per job with per-trace metrics, a heatmap per metric, three a line."""
    return [
        Section(title, wrap(Cell(heatmap_panel(m)) for m in metrics)) for title, metrics in rows()
    ]
