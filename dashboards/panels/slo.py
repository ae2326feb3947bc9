"""The SLO dashboard's sections, one per quality SLO (`dashboards/slo_rules.py` series):
the error budget left over the SLO's window, the burn rate over the alerts' long windows
against their thresholds (its description: how to list the SLO's worst traces), the events
good and bad.
Every query is per tenant (`$slo_tenant`): an SLO's events always carry one."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import stat
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from collector.settings import SloSpec, parse_duration
from dashboards.panels.common import RATE, lines, query
from dashboards.panels.layout import Cell, Section

TENANT = 'tenant=~"$slo_tenant"'
TENANT_QUERY = "label_values(ragpulse_slo_events_total, tenant)"


def budget(spec: SloSpec) -> stat.Panel:
    """Budget left: green above half, yellow above 0, red when spent."""
    steps = [
        model.Threshold(value=None, color="red"),
        model.Threshold(value=0, color="yellow"),
        model.Threshold(value=0.5, color="green"),
    ]
    return (
        stat.Panel()
        .title(f"{spec.name}: error budget left ({spec.window})")
        .description(
            f"1 - the bad share of {spec.metric} events over {spec.window} / the budget "
            f"({1 - spec.target:.4g}, target {spec.target:.4g}); below 0: overspent."
        )
        .with_target(
            query(
                "A",
                f'ragpulse_slo:error_budget_remaining{{slo="{spec.name}",{TENANT}}}',
                "{{tenant}}",
            )
        )
        .thresholds(
            dashboard_builders.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(steps)
        )
        .color_scheme(dashboard_builders.FieldColor().mode(model.FieldColorModeId.THRESHOLDS))
        .color_mode(common.BigValueColorMode.BACKGROUND)
        .graph_mode(common.BigValueGraphMode.AREA)
        .unit("percentunit")
        .decimals(1)
    )


def burn(spec: SloSpec) -> Cell:
    windows = sorted({a.long_window for a in spec.alerts}, key=parse_duration)
    thresholds = ", ".join(
        f"{a.factor:g}x over {a.long_window} ({a.severity})" for a in spec.alerts
    )
    panel = lines(
        f"{spec.name}: burn rate",
        "The error ratio over each alert's long window divided by the budget: 1 spends the "
        f"budget exactly in {spec.window}. The alerts: {thresholds}, once the ratio's lower "
        f"99% bound is past the threshold. The traces spending the budget: `ragpulse traces "
        f"--metric {spec.metric} --since 1h --tenant T` (failed evaluations: `--errors`).",
        [
            (f'ragpulse_slo:burn_rate:rate{w}{{slo="{spec.name}",{TENANT}}}', f"{w} {{{{tenant}}}}")
            for w in windows
        ],
    )
    return Cell(panel, w=9)


def events(spec: SloSpec) -> Cell:
    panel = lines(
        f"{spec.name}: events",
        f"Traces whose {spec.metric} was classified, per second, good and bad "
        "(ragpulse_slo_events_total).",
        [
            (
                f'sum by (tenant, outcome) (rate(ragpulse_slo_events_total{{slo="{spec.name}",'
                f"{TENANT}}}[{RATE}]))",
                "{{tenant}} {{outcome}}",
            )
        ],
        "reqps",
    )
    return Cell(panel, w=9)


def section(spec: SloSpec) -> Section:
    return Section(
        f"SLO {spec.name}",
        [[Cell(budget(spec), w=6), burn(spec), events(spec)]],
    )
