"""The topics dashboard: what users ask about, and each topic's quality (issue 41).

The `topics` job gives every trace a topic; the exporter serves the kept topics' traffic
(`ragpulse_topic_traces`, `_share`, `_share_change`, `_emerging`, each `{topic}`) and their
names (`ragpulse_topic_info{topic, label}`, 1), and `topic` is a group label of the jobs'
results, so `ragpulse_metric_value{topic="3"}` is topic 3's value (one label at a time: its
tenant and version are empty, so this row does not follow the tenant variable). Every
query joins the name in (`* on(topic) group_left(label) ragpulse_topic_info`, one per
topic however many processes export it): a table shows
"3 | card, lost, block / карту, заблокировать", not a bare id. The row draws the topics'
traffic and share with its change against the baseline and the emerging flag, each
topic's share over time, and a table of each tier's headline metric per topic: the last
hour's value with its 95% interval, the 7-day value, the change between them and n.
"""

from __future__ import annotations

from collections.abc import Sequence

from grafana_foundation_sdk.builders import prometheus, table, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from dashboards import metrics_view
from dashboards.panels.common import DS, lines, merged_columns, prop
from dashboards.panels.layout import Cell, Section
from dashboards.panels.quality import headlines
from evaluators.registry import JOB_METRICS

INFO = "ragpulse_topic_info"
TOPIC = 'topic!="",tenant="",version=""'
"""A topic's series: grouped by topic alone (the overall and tenant series have topic="")."""


INFO_BY_TOPIC = f"max by (topic, label) ({INFO})"
"""One name per topic whichever process exports it (replicas export the same)."""


def named(expr: str, by: str = "topic, label") -> str:
    """`expr` (series with a `topic` label) with the topic's name as `label`, one series
    per `by` (a topic with no info series, not exported as kept, is left out)."""
    return f"max by ({by}) (({expr}) * on(topic) group_left(label) {INFO_BY_TOPIC})"


def tier_metrics() -> tuple[str, ...]:
    """Each scheduled job's headline metric that the jobs compute per group (the judge's
    own quality metrics exist only overall), in the overview's row order."""
    out: list[str] = []
    for _job, _title, metrics in metrics_view.scheduled():
        grouped = [m for m in metrics if m not in JOB_METRICS]
        if grouped:
            out.append(headlines(grouped)[0])
    return tuple(out)


def _table(
    title: str, description: str, columns: Sequence[tuple[str, str, str]], keys: Sequence[str]
) -> table.Panel:
    """A merged table: one row per label set of `keys`, a column per (refId, PromQL,
    column name) instant query."""
    panel = table.Panel().title(title).description(description)
    for ref, expr, name in columns:
        panel.with_target(
            prometheus.Dataquery()
            .ref_id(ref)
            .datasource(DS)
            .expr(expr)
            .legend_format(name)
            .format(PromQueryFormat.TABLE)
            .instant()
        )
    sort = {"sort": [{"field": keys[0]}]}
    return (
        merged_columns(panel, columns, keys)
        .with_transformation(model.DataTransformerConfig(id_val="sortBy", options=sort))
        .show_header(True)
        .cell_height(common.TableCellHeight.SM)
    )


def traffic_table() -> table.Panel:
    """Each kept topic's traces, share, share change and emerging flag."""
    columns = (
        ("A", named("ragpulse_topic_traces"), "traces"),
        ("B", named("ragpulse_topic_share"), "share"),
        ("C", named("ragpulse_topic_share_change"), "share change"),
        ("D", named("ragpulse_topic_emerging"), "emerging"),
    )
    return (
        _table(
            "Topics: traffic, share and emerging (topics.emerging_window)",
            "What users ask about: each kept topic (the topics.series largest and every "
            "emerging one; the rest is `other`) with its traces and share of the traces of "
            "the last topics.emerging_window (24h), the change of that share against the "
            "baseline before it, and emerging = 1 when the share rose beyond chance (a "
            "ticket, RagpulseTopicEmerging). `ragpulse topics` lists them with examples; "
            "`ragpulse topics gaps` ranks what the knowledge base fails to answer.",
            columns,
            ("topic", "label"),
        )
        .decimals(0)
        .override_by_name("share", [prop("unit", "percentunit"), prop("decimals", 1)])
        .override_by_name("share change", [prop("unit", "percentunit"), prop("decimals", 1)])
    )


def share_over_time() -> timeseries.Panel:
    """Each kept topic's share of the traffic over time."""
    return lines(
        "Topics: share of the traffic",
        "Each kept topic's share of the traces of the last topics.emerging_window, over "
        "time: a topic that grows is a new need (or a new failure) of the users.",
        [(named("ragpulse_topic_share"), "{{topic}} {{label}}")],
        unit="percentunit",
    ).decimals(1)


def quality_table(metrics: Sequence[str] | None = None) -> table.Panel:
    """Each tier's headline metric per topic: 1h value, 95% CI, 7d value, change, n."""
    chosen = tier_metrics() if metrics is None else tuple(metrics)
    match = f'metric=~"{"|".join(chosen)}"'

    def series(family: str, window: str) -> str:
        return f'{family}{{{match},window="{window}",{TOPIC}}}'

    value, baseline = series("ragpulse_metric_value", "1h"), series("ragpulse_metric_value", "7d")
    change = f"{value} - ignoring(window) {baseline}"
    by = "topic, label, metric"
    columns = (
        ("A", named(value, by), "1h"),
        ("B", named(series("ragpulse_metric_ci_lower", "1h"), by), "CI lower"),
        ("C", named(series("ragpulse_metric_ci_upper", "1h"), by), "CI upper"),
        ("D", named(baseline, by), "7d"),
        ("E", named(change, by), "change vs 7d"),
        ("F", named(series("ragpulse_metric_samples", "1h"), by), "n (1h)"),
    )
    return (
        _table(
            "Topics: each tier's headline metric, 1h with 95% CI against 7d",
            f"Per topic, {', '.join(chosen)} (each tier's headline metric): the value over "
            "the last hour with its 95% interval, the 7-day value, the change (1h minus "
            "7d) and the traces behind the hour. A topic whose interval lies below its 7-day "
            "value got worse; `ragpulse explain --dimensions topic` says how much of a "
            "metric's drop it explains.",
            columns,
            ("topic", "label", "metric"),
        )
        .decimals(3)
        .unit("none")
        .override_by_name("n (1h)", [prop("decimals", 0)])
    )


def section() -> Section:
    """The traffic table and the share chart side by side, the quality table below."""
    return Section(
        "Topics: what users ask about, and each topic's quality",
        [
            [Cell(traffic_table(), w=12, h=9), Cell(share_over_time(), w=12, h=9)],
            [Cell(quality_table(), w=24, h=10)],
        ],
    )
