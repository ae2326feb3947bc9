"""The conversations dashboard's sections: did the users get what they came for?

A dashboard of its own (the overview is near Kubernetes' ConfigMap size limit). First the
sessions job's metrics (the judged ones too) as every job's row draws them (a stat per
headline, a chart per metric of the last hour with its 95% band against the 7-day value);
then the rates per
tenant: a table of each tenant's latest 24h resolution, re-ask and escalation rates and
turns to resolution with their intervals and n, and the resolution rate per tenant over
time. The metrics are `evaluators.conversation_metrics`', stored per closed session.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import prometheus, table, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from dashboards import metrics_view
from dashboards.panels.common import (
    DS,
    hidden,
    legend,
    line_style,
    merged_columns,
    metric_chart,
    prop,
    query,
)
from dashboards.panels.common import tooltip as tooltip_options
from dashboards.panels.layout import Cell, Section
from dashboards.panels.quality import job_section
from evaluators.conversation_metrics import (
    JUDGED_SESSION_METRICS,
    SESSION_ESCALATED,
    SESSION_METRICS,
    SESSION_RE_ASKED,
    SESSION_RESOLVED,
    TURN_METRICS,
    TURNS_TO_RESOLUTION,
)

PER_TENANT = (SESSION_RESOLVED, SESSION_RE_ASKED, SESSION_ESCALATED, TURNS_TO_RESOLUTION)
"""The metrics of the per-tenant table."""
TABLE_WINDOW = "24h"
TENANTS = 'tenant!="",version=""'
"""Every tenant's own series (the overall value has an empty tenant)."""


def metrics_section() -> Section:
    """The sessions job's metrics as a job row: headlines, then a band chart each (the
    judged completeness and frustration last: a sample of sessions, with a judge only)."""
    return job_section(
        "Conversations: resolved, re-asked, escalated, abandoned",
        (*SESSION_METRICS, *TURN_METRICS, *JUDGED_SESSION_METRICS),
    )


def tenant_table() -> table.Panel:
    """Each tenant's latest 24h value, 95% interval and n of the headline rates."""
    selector = f'metric=~"{"|".join(PER_TENANT)}",window="{TABLE_WINDOW}",{TENANTS}'
    columns = (
        ("A", "ragpulse_metric_value", "value"),
        ("B", "ragpulse_metric_ci_lower", "CI lower"),
        ("C", "ragpulse_metric_ci_upper", "CI upper"),
        ("D", "ragpulse_metric_samples", "n"),
    )
    panel = (
        table.Panel()
        .title(f"Per tenant: latest {TABLE_WINDOW} rates, 95% CI and n")
        .description(
            f"Per tenant, the share of sessions resolved (no re-ask, no request for a person, "
            f"no negative feedback), re-asked and escalated, and the mean turns to "
            f"resolution, over the last {TABLE_WINDOW} with their 95% intervals and the "
            "closed sessions behind them (n). `ragpulse sessions --worst` lists the failed "
            "ones."
        )
    )
    for ref, family, _name in columns:
        panel.with_target(
            prometheus.Dataquery()
            .ref_id(ref)
            .datasource(DS)
            .expr(f"{family}{{{selector}}}")
            .legend_format("{{metric}} {{tenant}}")
            .format(PromQueryFormat.TABLE)
            .instant()
        )
    hide = ("Time", "__name__", "window", "version", "job", "instance")
    return (
        merged_columns(panel, columns, ("tenant", "metric"), hide)
        .with_transformation(
            model.DataTransformerConfig(
                id_val="sortBy", options={"sort": [{"field": "tenant"}, {"field": "metric"}]}
            )
        )
        .decimals(3)
        .unit("none")
        .override_by_name("n", [prop("decimals", 0)])
        .show_header(True)
        .cell_height(common.TableCellHeight.SM)
    )


def tenant_chart(metric: str = SESSION_RESOLVED) -> timeseries.Panel:
    """The metric's 24h value per tenant, each between its 95% interval (dashed)."""
    targets = (
        ("A", "ragpulse_metric_value", "{{tenant}}"),
        ("B", "ragpulse_metric_ci_lower", "{{tenant}} CI lower"),
        ("C", "ragpulse_metric_ci_upper", "{{tenant}} CI upper"),
    )
    panel = (
        timeseries.Panel()
        .title(f"{metric} per tenant ({TABLE_WINDOW}, 95% CI)")
        .description(
            f"{metric} over the last {TABLE_WINDOW} for each tenant between its 95% interval "
            "(dashed): a tenant whose interval lies below the others' is served worse. "
            f"{metrics_view.panel_text(metric)}"
        )
    )
    for ref, family, legend_format in targets:
        expr = f'{family}{{metric="{metric}",window="{TABLE_WINDOW}",{TENANTS}}}'
        panel.with_target(query(ref, expr, legend_format))
    return (
        metric_chart(panel, metric)
        .override_by_regexp(
            ".* CI (lower|upper)",
            [
                prop("custom.lineWidth", 1),
                prop("custom.lineStyle", line_style("dash", [4, 4])),
                prop("custom.hideFrom", hidden(legend=True)),
            ],
        )
        .legend(legend())
        .tooltip(tooltip_options())
    )


def tenants_section() -> Section:
    return Section(
        "Conversations per tenant",
        [[Cell(tenant_table(), w=14, h=9), Cell(tenant_chart(), w=10, h=9)]],
    )
