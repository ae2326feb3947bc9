"""The overview's first row: a verdict at a glance — what is paging, what is a ticket,
which series drift, the firing alerts, and where the change is (the top slice of each
metric that is worse than its 7-day baseline, from `ragpulse explain`'s shift-share)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import prometheus, stat, table
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from collector.settings.severity import CRITICAL, WARNING
from dashboards.panels.common import DS, QSEL, query
from dashboards.panels.layout import Cell, Section

FIRING = 'ALERTS{alertstate="firing",alertname=~"Ragpulse.*"'


def _count(title: str, description: str, expr: str, colour: str) -> stat.Panel:
    """A count that is green at 0 and `colour` from 1."""
    steps = [model.Threshold(value=None, color="green"), model.Threshold(value=1, color=colour)]
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .with_target(query("A", expr, title))
        .thresholds(
            dashboard_builders.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(steps)
        )
        .color_scheme(dashboard_builders.FieldColor().mode(model.FieldColorModeId.THRESHOLDS))
        .color_mode(common.BigValueColorMode.BACKGROUND)
        .graph_mode(common.BigValueGraphMode.NONE)
        .unit("short")
        .decimals(0)
    )


def _table(title: str, description: str, expr: str, keep: list[str], unit: str) -> table.Panel:
    """An instant query as a table of `keep` label columns and its value."""
    hide = {"Time": True, "__name__": True, "job": True, "instance": True}
    organize = {
        "excludeByName": hide,
        "indexByName": {name: i for i, name in enumerate([*keep, "Value"])},
    }
    return (
        table.Panel()
        .title(title)
        .description(description)
        .with_target(
            prometheus.Dataquery()
            .ref_id("A")
            .datasource(DS)
            .expr(expr)
            .format(PromQueryFormat.TABLE)
            .instant()
        )
        .with_transformation(model.DataTransformerConfig(id_val="organize", options=organize))
        .unit(unit)
        .show_header(True)
        .cell_height(common.TableCellHeight.SM)
    )


def section() -> Section:
    counts = [
        _count(
            "Paging",
            f"Ragpulse alerts of severity {CRITICAL} firing now, each a page (a quality drop "
            "caught by the fast detector, an SLO's fast burn, a canary worse than its "
            "baseline, ingest stopped).",
            f'count({FIRING},severity="{CRITICAL}"}}) or vector(0)',
            "red",
        ),
        _count(
            "Tickets",
            f"Ragpulse alerts of severity {WARNING} firing now, each a ticket (slow drift, "
            "an SLO's slow burn, thresholds, judge health).",
            f'count({FIRING},severity="{WARNING}"}}) or vector(0)',
            "orange",
        ),
        _count(
            "Drifting series",
            "Quality series whose ticket detector is at or past its alarm threshold (the "
            "drift statistic over the last 24h against the 7 days before, 1 = alarm).",
            "count(max by (metric, tenant) "
            f'(ragpulse_drift_score{{detector="ticket",{QSEL}}}) >= 1) or vector(0)',
            "orange",
        ),
    ]
    tables = [
        _table(
            "Firing alerts",
            "Every ragpulse alert firing now, with the metric and tenant it is about; its "
            "runbook text is in Prometheus/Alertmanager (and on top of `ragpulse report`).",
            FIRING + "}",
            ["alertname", "severity", "metric", "tenant"],
            "none",
        ),
        _table(
            "Where the change is (top slice)",
            "For each metric worse than its 7-day baseline now, the slice (tenant, version, "
            "...) carrying the largest share of the change (shift-share; over 100% when the "
            "other slices moved the other way). `ragpulse explain --metric M` tells the rest.",
            'ragpulse_change_attribution{rank="1"}',
            ["metric", "slice"],
            "percentunit",
        ),
    ]
    return Section(
        "Status: what is paging, what drifts, where",
        [[Cell(p, w=8, h=4) for p in counts], [Cell(p, w=12, h=6) for p in tables]],
    )
