"""What every section's panels share, on grafana-foundation-sdk's builders: the Prometheus
datasource variable, the quality series' selectors, a query, the legend and tooltip every
time series shows, a metric's unit and threshold colours (from `metrics_view`), and the
plain multi-query time series most operations panels are.

The SDK fills an option it models with its own default when a panel sets none; where that
default is not Grafana's (the legend hidden, the tooltip sorted), the helpers here set
Grafana's explicitly, so a panel looks as it did before it was built with the SDK.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import prometheus, table, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from dashboards import metrics_view
from dashboards.metrics_view import describe

DS = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
"""Every panel and query reads the datasource the `datasource` variable chose."""
SEL = 'tenant=~"$tenant"'
"""The score histograms' selector (labelled by the first group label only)."""
QSEL = f'{SEL},version="",topic=""'
"""The quality series' selector: the overall value or a tenant's, never a version's or a
topic's (results are grouped one label at a time, so those have tenant="" too; the versions
and topics rows draw them)."""
RATE = "$__rate_interval"


def quality(family: str, metric: str, window: str) -> str:
    """A quality family's series of one metric and window, overall or the tenant's."""
    return f'{family}{{metric="{metric}",window="{window}",{QSEL}}}'


def query(ref: str, expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().ref_id(ref).datasource(DS).expr(expr).legend_format(legend)


def legend() -> common_builders.VizLegendOptions:
    """A list under the chart (the SDK's default would hide it: `showLegend` false)."""
    return (
        common_builders.VizLegendOptions()
        .display_mode(common.LegendDisplayMode.LIST)
        .placement(common.LegendPlacement.BOTTOM)
        .show_legend(True)
    )


def tooltip() -> common_builders.VizTooltipOptions:
    """Every series at the hovered time, in query order (the SDK's default sorts)."""
    return (
        common_builders.VizTooltipOptions()
        .mode(common.TooltipDisplayMode.MULTI)
        .sort(common.SortOrder.NONE)
    )


def prop(name: str, value: Any) -> model.DynamicConfigValue:
    """One property of a field override (`custom.lineWidth`, `unit`, ...)."""
    return model.DynamicConfigValue(id_val=name, value=value)


def hidden(legend: bool) -> common.HideSeriesConfig:
    """A series kept off the legend (a CI bound) but in the tooltip and the chart."""
    return common.HideSeriesConfig(legend=legend, tooltip=False, viz=False)


def line_style(fill: Literal["dash", "dot"], dash: list[float]) -> common.LineStyle:
    """A dashed or dotted line: `dash` is the lengths of stroke and gap, in pixels."""
    return common.LineStyle(fill=fill, dash=dash)


def unit(metric: str) -> tuple[str, int]:
    """Grafana's unit and the decimals of a registered metric."""
    registered = describe(metric).unit
    decimals = {"count": 0, "ms": 1, "bleu": 1}.get(registered, 3)
    return metrics_view.GRAFANA_UNITS.get(registered, "none"), decimals


def thresholds(metric: str) -> dashboard_builders.ThresholdsConfig:
    """The metric's seed bands as Grafana steps (one neutral step when it has none)."""
    steps = [
        model.Threshold(value=start, color=colour) for start, colour in metrics_view.steps(metric)
    ]
    return dashboard_builders.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(steps)


def thresholds_style(metric: str) -> common_builders.GraphThresholdsStyleConfig:
    """Dashed lines at the band bounds of a metric that has seed bands."""
    banded = metric in metrics_view.BANDS
    mode = common.GraphThresholdsStyleMode.DASHED if banded else common.GraphThresholdsStyleMode.OFF
    return common_builders.GraphThresholdsStyleConfig().mode(mode)


AXIS_UNITS = {"ms": "ms"}
"""A registered unit's word on an axis title (shares and scores go without)."""
N_AXIS = "n (traces)"
"""The title of the sample counts' axis."""


def axis_label(metric: str) -> str:
    """The title of a metric's value axis: the metric, and its unit when it has one."""
    word = AXIS_UNITS.get(describe(metric).unit)
    return f"{metric} ({word})" if word else metric


def metric_chart(panel: timeseries.Panel, metric: str) -> timeseries.Panel:
    """A metric's chart styled from the registry: its bands as thresholds (dashed when it
    has seed bands), its unit and decimals, lines of width 2, the value axis titled."""
    grafana_unit, decimals = unit(metric)
    return (
        panel.thresholds(thresholds(metric))
        .thresholds_style(thresholds_style(metric))
        .line_width(2)
        .unit(grafana_unit)
        .decimals(decimals)
        .axis_label(axis_label(metric))
    )


def lines(
    title: str, description: str, targets: Sequence[tuple[str, str]], unit: str = "short"
) -> timeseries.Panel:
    """A time series of (PromQL, legend) queries, refIds A, B, ... in order."""
    panel = timeseries.Panel().title(title).description(description).unit(unit)
    for i, (expr, legend_format) in enumerate(targets):
        panel.with_target(query(chr(65 + i), expr, legend_format))
    return panel.legend(legend()).tooltip(tooltip())


def merged_columns(
    panel: table.Panel,
    columns: Sequence[tuple[str, Any, str]],
    keys: Sequence[str],
    hide: Iterable[str] = ("Time",),
) -> table.Panel:
    """`panel` (a table of instant queries) with its queries merged into one row per label
    set: the `keys` labels first, then a column per query (refId, _, column name), the
    `hide` fields left out."""
    organize = {
        "excludeByName": dict.fromkeys(hide, True),
        "renameByName": {f"Value #{ref}": name for ref, _, name in columns},
        "indexByName": {
            **{key: i for i, key in enumerate(keys)},
            **{f"Value #{ref}": len(keys) + i for i, (ref, _, _) in enumerate(columns)},
        },
    }
    return panel.with_transformation(
        model.DataTransformerConfig(id_val="merge", options={})
    ).with_transformation(model.DataTransformerConfig(id_val="organize", options=organize))
