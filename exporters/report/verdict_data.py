"""What the verdict is computed from, read from the overview dashboard's JSON and from
Prometheus: the tiers (the overview's metric rows), each metric's overall 1h and 7d
values with the 1h CI and drift score, since when it has been worse, the top slices
(`ragpulse_change_attribution{rank="1"}`) and the alerts firing at the report's time
(`firing.py`), with those resolved in its range."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evaluators.registry import describe
from exporters.report.dashboards import Dashboard, Panel, css_color
from exporters.report.drilldown import panel_metric
from exporters.report.firing import alerts_at
from exporters.report.promapi import PromClient, QueryError
from exporters.report.verdict import FiringAlert, Reading, Tier, TopSlice, worse_since

OVERALL = 'tenant="",version=""'
BAD_COLOURS = frozenset(css_color(c) for c in ("red", "dark-red", "semi-dark-red"))
"""Threshold colours of the seed bands that need attention (`dashboards/metrics_view.py`)."""

_METRIC = re.compile(r'metric="([^"]+)"')


def anchor(title: str) -> str:
    """The id a row heading gets on the page (`page.grid_html`)."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _value_stats(panels: Sequence[Panel]) -> dict[str, Panel]:
    """metric -> the row's stat panel of its 1h value (its thresholds are the seed bands)."""
    out = {}
    for panel in panels:
        queries = [t.expr for t in panel.targets]
        metric = panel_metric(queries)
        if panel.type == "stat" and metric and any("ragpulse_metric_value" in q for q in queries):
            out[metric] = panel
    return out


def tiers(dashboard: Dashboard) -> tuple[list[Tier], dict[str, Panel]]:
    """The dashboard's tiers: rows with a stat panel of a metric's value; each holds the
    metrics its panels select that no earlier row claimed (the Versions row repeats
    them). Also the stat panel of each metric, for its bands."""
    rows: dict[str, list[Panel]] = {}
    for panel in dashboard.panels:
        rows.setdefault(panel.row, []).append(panel)
    found: list[Tier] = []
    stats: dict[str, Panel] = {}
    claimed: set[str] = set()
    for title, panels in rows.items():
        row_stats = _value_stats(panels)
        if not row_stats:
            continue
        metrics = []
        for panel in panels:
            for metric in _METRIC.findall(" ".join(t.expr for t in panel.targets)):
                if metric not in claimed:
                    claimed.add(metric)
                    metrics.append(metric)
        reason = next((p.no_value for p in panels if p.no_value), None)
        found.append(Tier(title, tuple(metrics), reason, anchor(title)))
        stats.update(row_stats)
    return found, stats


OVERVIEW_UID = "ragpulse-overview"


def overview(dashboards: Sequence[Dashboard]) -> Dashboard | None:
    """The shipped overview when given, else the first dashboard with tiers (the
    conversations board has stat rows too, and sorts before the overview by name)."""
    with_tiers = [d for d in dashboards if tiers(d)[0]]
    return next((d for d in with_tiers if d.uid == OVERVIEW_UID), None) or next(
        iter(with_tiers), None
    )


def _direction(metric: str) -> str:
    try:
        return str(describe(metric).direction)
    except (KeyError, ValueError):
        return "none"


def _by_metric(
    client: PromClient, expr: str, at: float, key: str = "metric"
) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for labels, value in client.query(expr, at):
        out.setdefault(labels.get(key, ""), []).append((labels, value))
    return out


def readings(
    client: PromClient, metrics: Sequence[str], stats: dict[str, Panel], now: float, start: float
) -> dict[str, Reading]:
    """Each metric's overall reading at `now`; `start` bounds the "worse since" search."""
    pattern = "|".join(re.escape(m) for m in metrics)
    sel = f'metric=~"{pattern}",{OVERALL}'
    values = _by_metric(client, f'ragpulse_metric_value{{{sel},window=~"1h|7d"}}', now)
    lows = _by_metric(client, f'ragpulse_metric_ci_lower{{{sel},window="1h"}}', now)
    highs = _by_metric(client, f'ragpulse_metric_ci_upper{{{sel},window="1h"}}', now)
    drift = _by_metric(client, f"max by (metric) (ragpulse_drift_score{{{sel}}})", now)
    step = max(1.0, (now - start) / 240)
    history: dict[tuple[str, str], dict[float, float]] = {}
    for series in client.query_range(
        f'ragpulse_metric_value{{{sel},window=~"1h|7d"}}', start, now, step
    ):
        key = (series.labels.get("metric", ""), series.labels.get("window", ""))
        history[key] = dict(zip(series.times, series.values, strict=True))
    out = {}
    for metric in metrics:
        by_window = {labels.get("window"): v for labels, v in values.get(metric, [])}
        hour = by_window.get("1h")
        if hour is None and by_window.get("7d") is None:
            continue
        direction = _direction(metric)
        stat = stats.get(metric)
        color = stat.threshold_color(hour) if stat is not None and hour is not None else None
        out[metric] = Reading(
            metric=metric,
            direction=direction,
            hour=hour,
            hour_low=next((v for _, v in lows.get(metric, [])), None),
            hour_high=next((v for _, v in highs.get(metric, [])), None),
            week=by_window.get("7d"),
            drift=max((v for _, v in drift.get(metric, [])), default=None),
            bad_band=color in BAD_COLOURS,
            worse_since=worse_since(
                history.get((metric, "1h"), {}), history.get((metric, "7d"), {}), direction
            ),
        )
    return out


def top_slices(client: PromClient, now: float) -> list[TopSlice]:
    found = client.query('ragpulse_change_attribution{rank="1"}', now)
    return sorted(
        (TopSlice(labels.get("metric", ""), labels.get("slice", ""), v) for labels, v in found),
        key=lambda s: s.metric,
    )


def fetch_all(
    client: PromClient, tier_list: Sequence[Tier], stats: dict[str, Panel], now: float, start: float
) -> tuple[dict[str, Reading], list[FiringAlert], list[TopSlice]]:
    """Everything the verdict needs; a rejected query leaves its part empty (the verdict
    then says less, the page is still written)."""
    metrics = [m for t in tier_list for m in t.metrics]
    try:
        found = readings(client, metrics, stats, now, start) if metrics else {}
    except QueryError:
        found = {}
    try:
        alerts = alerts_at(client, now, start)
    except QueryError:
        alerts = []
    try:
        slices = top_slices(client, now)
    except QueryError:
        slices = []
    return found, alerts, slices
