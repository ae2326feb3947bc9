"""A scheduled job's quality row: the panels every metric gets from the registry.

For each metric the job produces (`metrics_view.scheduled`) a time series of the last hour
with its 95% confidence band against the 7-day value, n on the right axis (for a metric
read by quantile, latencies, also its p50/p95/p99 against the 7-day p95); above them a
stat per headline metric (seed 004 §11.1's first, then those with seed bands). Unit,
decimals, colours and the description come from the registry and the seeds' bands, so a
metric added to a job gets its panel, coloured once it declares a direction.
"""

from __future__ import annotations

from collections.abc import Sequence

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import stat, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from dashboards import metrics_view
from dashboards.metrics_view import BANDS, GOAL_METRICS, describe
from dashboards.panels.common import (
    N_AXIS,
    hidden,
    legend,
    line_style,
    metric_chart,
    prop,
    quality,
    query,
    thresholds,
    tooltip,
    unit,
)
from dashboards.panels.layout import Cell, Section, wrap

HEADLINES = 6
"""At most this many stat panels above a row's charts."""


def stat_panel(metric: str) -> stat.Panel:
    """The metric's latest 1h value, its background coloured by the seed's band."""
    grafana_unit, decimals = unit(metric)
    return (
        stat.Panel()
        .title(f"{metric} (1h)")
        .description(f"Latest {metric} over the last hour. {metrics_view.panel_text(metric)}")
        .with_target(query("A", quality("ragpulse_metric_value", metric, "1h"), "1h"))
        .thresholds(thresholds(metric))
        .color_scheme(dashboard_builders.FieldColor().mode(model.FieldColorModeId.THRESHOLDS))
        .unit(grafana_unit)
        .decimals(decimals)
        .reduce_options(
            common_builders.ReduceDataOptions().calcs(["lastNotNull"]).fields("").values(False)
        )
        .color_mode(common.BigValueColorMode.BACKGROUND)
        .graph_mode(common.BigValueGraphMode.NONE)
    )


def band_panel(metric: str) -> timeseries.Panel:
    """The metric's 1h value (with its 95% CI when it has one) against the 7d value."""
    interval = describe(metric).interval
    targets = [
        ("A", "ragpulse_metric_value", "1h", "1h"),
        ("B", "ragpulse_metric_ci_lower", "1h", "1h CI lower"),
        ("C", "ragpulse_metric_ci_upper", "1h", "1h CI upper"),
        ("D", "ragpulse_metric_value", "7d", "7d"),
        ("E", "ragpulse_metric_samples", "1h", "n (1h)"),
    ]
    if not interval:  # a single value without a confidence interval (counts, distances)
        targets = [t for t in targets if t[0] not in ("B", "C")]
    band = " with its 95% confidence band" if interval else ""
    panel = (
        timeseries.Panel()
        .title(f"{metric}: 1h{' with 95% CI' if interval else ''} against 7d")
        .description(
            f"{metric} over the last hour (line){band}, and the 7-day value (dashed) as the "
            f"baseline; n is on the right axis. {metrics_view.panel_text(metric)}"
        )
    )
    for ref, family, window, legend_format in targets:
        expr = quality(family, metric, window)
        if family == "ragpulse_metric_samples":
            expr += " > 0"  # n = 0 (everything skipped) leaves the panel to say why
        panel.with_target(query(ref, expr, legend_format))
    return (
        metric_chart(panel, metric)
        .override_by_name(
            "1h CI upper",
            [
                prop("custom.fillBelowTo", "1h CI lower"),
                prop("custom.lineWidth", 0),
                prop("custom.fillOpacity", 20),
                prop("custom.hideFrom", hidden(legend=True)),
            ],
        )
        .override_by_name(
            "1h CI lower",
            [prop("custom.lineWidth", 0), prop("custom.hideFrom", hidden(legend=True))],
        )
        .override_by_name("7d", [prop("custom.lineStyle", line_style("dash", [10, 10]))])
        .override_by_name("n (1h)", n_axis())
        .legend(legend())
        .tooltip(tooltip())
    )


def n_axis() -> list[model.DynamicConfigValue]:
    """The sample count's overrides: bars on the right axis, whole numbers."""
    return [
        prop("custom.axisPlacement", "right"),
        prop("unit", "short"),
        prop("decimals", 0),
        prop("custom.drawStyle", "bars"),
        prop("custom.fillOpacity", 10),
        prop("custom.axisLabel", N_AXIS),
    ]


def quantiles_panel(metric: str) -> timeseries.Panel:
    """The window quantiles of a metric read by quantile: p50, p95 and p99 of the last hour
    against the 7-day p95 (dashed), n on the right axis."""
    names = metrics_view.quantiles_of(metric)
    shown = ", ".join(n.rpartition("_")[2] for n in names)
    targets = [(name, "1h", f"{name.rpartition('_')[2]} (1h)") for name in names]
    baseline = next((n for n in names if n.endswith("_p95")), names[-1])
    targets.append((baseline, "7d", f"{baseline.rpartition('_')[2]} (7d)"))
    panel = (
        timeseries.Panel()
        .title(f"{metric}: {shown} (1h) against 7d")
        .description(
            f"Percentiles of {metric} over the last hour ({shown}), and the 7-day "
            f"{baseline.rpartition('_')[2]} (dashed) as the baseline; n is on the right axis. "
            "From mergeable DDSketch bins per minute: within 1% of the exact percentiles "
            "at every volume. "
            f"{metrics_view.panel_text(metric)}"
        )
    )
    for i, (name, window, legend_format) in enumerate(targets):
        panel.with_target(
            query(chr(65 + i), quality("ragpulse_metric_value", name, window), legend_format)
        )
    samples = quality("ragpulse_metric_samples", names[0], "1h") + " > 0"
    panel.with_target(query(chr(65 + len(targets)), samples, "n (1h)"))
    return (
        metric_chart(panel, metric)
        .override_by_name(targets[-1][2], [prop("custom.lineStyle", line_style("dash", [10, 10]))])
        .override_by_name("n (1h)", n_axis())
        .legend(legend())
        .tooltip(tooltip())
    )


def headlines(metrics: Sequence[str]) -> list[str]:
    """Seed 004 §11.1's metrics first, then those with seed bands; else the first three."""
    marked = [m for m in metrics if m in GOAL_METRICS]
    marked += [m for m in metrics if m in BANDS and m not in GOAL_METRICS]
    return marked[:HEADLINES] or list(metrics[:3])


def job_section(title: str, metrics: Sequence[str]) -> Section:
    """A job's row: its headline stats in one line, then a chart per metric, three a line,
    and after a metric read by quantile its percentiles' chart."""
    chosen = headlines(metrics)
    width = 24 // len(chosen)
    stats = [Cell(stat_panel(m), w=width, h=4) for m in chosen]
    charts = []
    for m in metrics:
        charts.append(Cell(band_panel(m)))
        if metrics_view.quantiles_of(m):
            charts.append(Cell(quantiles_panel(m)))
    return Section(title, [stats, *wrap(charts)])


def job_rows(
    scheduled: Sequence[tuple[str, str, tuple[str, ...]]], jobs: Sequence[str]
) -> list[tuple[str, Section]]:
    """(job, row) for each of `jobs` that is scheduled, in `scheduled`'s order."""
    return [(job, job_section(title, metrics)) for job, title, metrics in scheduled if job in jobs]
