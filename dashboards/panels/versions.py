"""The overview's versions section: the guarded quality metrics per version, with intervals.

Results are grouped by `version` like by `tenant` (`collector/jobs/windows/versions.py`): one
label at a time, so a version's series has `tenant=""` and the overall and tenant series
have `version=""`. The row draws a table of each version's latest 24h value, interval and
n, the canary's comparison of two versions (`canary`), and, for each metric an alert
guards (the paged ones and the threshold alerts', `guarded`), the 1h value of every
version chosen in the `version` variable with its 95% interval. No alert reads version
series: comparing versions is a canary's job, and a version's series starts and ends with
its rollout.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import prometheus, table, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from collector.settings import PAGE_METRICS
from dashboards import metrics_view, quality_rules
from dashboards.metrics_view import describe
from dashboards.panels import canary
from dashboards.panels.common import (
    DS,
    hidden,
    legend,
    line_style,
    merged_columns,
    metric_chart,
    prop,
    query,
    tooltip,
)
from dashboards.panels.layout import Cell, Section, wrap
from evaluators.registry import JOB_METRICS

VARIABLE = "version"
SELECTOR = f'{VARIABLE}=~"${VARIABLE}"'
"""Every version chosen (All: `.+`, every series that has a version)."""
CI = r".* CI (lower|upper)$"
"""The interval bounds' display names (`<version> CI lower`), matched by regex."""
TABLE_WINDOW = "24h"
LINE_WINDOW = "1h"


def guarded() -> tuple[str, ...]:
    """Metrics an alert guards, in the overview's row order, that the jobs compute per
    group (the judge's own quality metrics, `JOB_METRICS`, exist only overall)."""
    alerted = set(PAGE_METRICS) | {a.metric for a in quality_rules.THRESHOLD_ALERTS}
    return tuple(
        m
        for _, _, metrics in metrics_view.scheduled()
        for m in metrics
        if m in alerted and m not in JOB_METRICS
    )


def variable() -> dashboard_builders.QueryVariable:
    """The versions to draw: every version that has series unless some are chosen."""
    found = f'label_values(ragpulse_metric_value{{{VARIABLE}!=""}}, {VARIABLE})'
    return (
        dashboard_builders.QueryVariable(VARIABLE)
        .label("Version")
        .datasource(DS)
        .query({"query": found, "refId": VARIABLE})
        .include_all(True)
        .all_value(".+")
        .multi(True)
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .current(model.VariableOption(text=["All"], value=["$__all"]))
        .description(
            "Versions drawn on the versions row (All: every version with series). The "
            "other rows show the overall or a tenant's value."
        )
    )


def _expr(family: str, metrics: str, window: str) -> str:
    return f'{family}{{{metrics},window="{window}",{SELECTOR}}}'


def over_time(metric: str) -> timeseries.Panel:
    """The metric's 1h value per version, each with its 95% interval as dashed bounds."""
    selector = f'metric="{metric}"'
    targets = [("A", "ragpulse_metric_value", "{{version}}")]
    interval = describe(metric).interval
    if interval:
        targets += [
            ("B", "ragpulse_metric_ci_lower", "{{version}} CI lower"),
            ("C", "ragpulse_metric_ci_upper", "{{version}} CI upper"),
        ]
    bounds = " between its 95% interval (dashed)" if interval else ""
    panel = (
        timeseries.Panel()
        .title(f"{metric} per version (1h{', 95% CI' if interval else ''})")
        .description(
            f"{metric} over the last hour for each chosen version{bounds}. Overlapping "
            f"intervals: the versions are not told apart yet. {metrics_view.panel_text(metric)}"
        )
    )
    for ref, family, legend_format in targets:
        panel.with_target(query(ref, _expr(family, selector, LINE_WINDOW), legend_format))
    return (
        metric_chart(panel, metric)
        .override_by_regexp(
            CI,
            [
                prop("custom.lineWidth", 1),
                prop("custom.lineStyle", line_style("dash", [4, 4])),
                prop("custom.hideFrom", hidden(legend=True)),
            ],
        )
        .legend(legend())
        .tooltip(tooltip())
    )


def latest_table() -> table.Panel:
    """Each guarded metric's latest 24h value per version, with its interval and n."""
    selector = f'metric=~"{"|".join(guarded())}"'
    columns = (
        ("A", "ragpulse_metric_value", "value"),
        ("B", "ragpulse_metric_ci_lower", "CI lower"),
        ("C", "ragpulse_metric_ci_upper", "CI upper"),
        ("D", "ragpulse_metric_samples", "n"),
    )
    panel = (
        table.Panel()
        .title(f"Versions: latest {TABLE_WINDOW} value, 95% CI and n")
        .description(
            f"Per guarded metric and version, the value over the last {TABLE_WINDOW} with "
            "its 95% interval and the samples behind it. Versions past "
            "versions.max_values share the row `other`."
        )
    )
    for ref, family, name in columns:
        panel.with_target(
            prometheus.Dataquery()
            .ref_id(ref)
            .datasource(DS)
            .expr(_expr(family, selector, TABLE_WINDOW))
            .legend_format(f"{{{{metric}}}} {{{{version}}}} {name}")
            .format(PromQueryFormat.TABLE)
            .instant()
        )
    hide = ("Time", "__name__", "window", "tenant", "job", "instance")
    return (
        merged_columns(panel, columns, ("metric", "version"), hide)
        .with_transformation(
            model.DataTransformerConfig(id_val="sortBy", options={"sort": [{"field": "metric"}]})
        )
        .decimals(3)
        .unit("none")
        .override_by_name("n", [prop("decimals", 0)])
        .show_header(True)
        .cell_height(common.TableCellHeight.SM)
    )


def section() -> Section:
    """The table, the canary's two panels, then a chart per guarded metric."""
    return Section(
        "Versions: the guarded metrics per version",
        [
            [Cell(latest_table(), w=24)],
            [Cell(canary.latest_table(), w=12), Cell(canary.over_time(), w=12)],
            *wrap(Cell(over_time(m)) for m in guarded()),
        ],
    )
