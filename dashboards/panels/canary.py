"""The versions section's canary panels: the candidate against the baseline per guarded
metric (`collector/jobs/catalog/canary.py`, `ragpulse_canary_*`).

A table of the latest comparison (difference, 95% interval, the smallest difference the
traffic detects, corrected p, the verdict, samples per side) and the difference over time
between its interval and the ± detectable band: a difference inside the band with an
interval across zero is "cannot tell yet", not "equal".
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import prometheus, table, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from dashboards.panels.common import DS, legend, line_style, merged_columns, prop, query, tooltip

COLUMNS = (
    ("A", "ragpulse_canary_diff", "B − A"),
    ("B", "ragpulse_canary_diff_ci_lower", "CI lower"),
    ("C", "ragpulse_canary_diff_ci_upper", "CI upper"),
    ("D", "ragpulse_canary_detectable_diff", "detectable"),
    ("E", 'ragpulse_canary_p_value{adjusted="true"}', "p adjusted"),
    ("F", "ragpulse_canary_worse", "worse"),
    ("G", 'ragpulse_canary_samples{side="baseline"}', "n baseline"),
    ("H", 'ragpulse_canary_samples{side="candidate"}', "n candidate"),
)


def _expr(series: str) -> str:
    """`max by` the comparison's labels, so `side`/`adjusted` do not split the rows."""
    return f"max by (metric, baseline, candidate, window) ({series})"


def latest_table() -> table.Panel:
    panel = (
        table.Panel()
        .title("Canary: candidate − baseline per guarded metric")
        .description(
            "The canary job's latest comparison of the candidate version with the baseline "
            "over the same window: the difference with its 95% interval, the smallest "
            "difference this traffic detects (power canary.power), the p-value corrected "
            "across the guarded metrics, and worse = 1 when the candidate is significantly "
            "worse (RagpulseCanaryWorse). Empty: fewer than two versions with "
            "canary.min_traces scored traces in the window."
        )
    )
    for ref, series, name in COLUMNS:
        panel.with_target(
            prometheus.Dataquery()
            .ref_id(ref)
            .datasource(DS)
            .expr(_expr(series))
            .legend_format(name)
            .format(PromQueryFormat.TABLE)
            .instant()
        )
    worse = model.ThresholdsConfig(
        mode=model.ThresholdsMode.ABSOLUTE,
        steps=[model.Threshold(value=None, color="green"), model.Threshold(value=1, color="red")],
    )
    return (
        merged_columns(panel, COLUMNS, ("metric", "baseline", "candidate", "window"))
        .decimals(4)
        .unit("none")
        .override_by_regexp("^(n baseline|n candidate|worse)$", [prop("decimals", 0)])
        .override_by_name(
            "worse",
            [
                prop("custom.cellOptions", common.TableColoredBackgroundCellOptions()),
                prop("thresholds", worse),
            ],
        )
        .show_header(True)
        .cell_height(common.TableCellHeight.SM)
    )


def over_time() -> timeseries.Panel:
    series = (
        ("A", "ragpulse_canary_diff", "{{metric}} {{candidate}} − {{baseline}}"),
        ("B", "ragpulse_canary_diff_ci_lower", "{{metric}} CI lower"),
        ("C", "ragpulse_canary_diff_ci_upper", "{{metric}} CI upper"),
        ("D", "ragpulse_canary_detectable_diff", "{{metric}} detectable +"),
        ("E", "-ragpulse_canary_detectable_diff", "{{metric}} detectable −"),
    )
    panel = (
        timeseries.Panel()
        .title("Canary difference over time (with 95% CI and the detectable band)")
        .description(
            "Candidate minus baseline of each guarded metric as the canary job recomputes "
            "it, between its 95% interval (dashed); the dotted lines are ± the smallest "
            "difference the traffic detects. An interval across zero inside the band means "
            "the traffic cannot tell the versions apart yet."
        )
    )
    for ref, expr, legend_format in series:
        panel.with_target(query(ref, expr, legend_format))
    return (
        panel.unit("none")
        .line_width(2)
        .override_by_regexp(
            ".* CI (lower|upper)$",
            [prop("custom.lineWidth", 1), prop("custom.lineStyle", line_style("dash", [4, 4]))],
        )
        .override_by_regexp(
            ".* detectable [+−]$",
            [prop("custom.lineWidth", 1), prop("custom.lineStyle", line_style("dot", [1, 4]))],
        )
        .legend(legend())
        .tooltip(tooltip())
    )
