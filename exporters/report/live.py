"""`ragpulse report`: every panel of the Grafana dashboards drawn from Prometheus's HTTP API
into one static HTML page — the same PromQL, legends, units and thresholds as the JSON."""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from html import escape
from typing import Any

from exporters.report.dashboards import Dashboard, Panel, css_color, legend, substitute
from exporters.report.drilldown import Drill, drill_html, panel_metric
from exporters.report.empty import EmptyReason, Reasons, counted, resolve
from exporters.report.figures import sparkline
from exporters.report.heatmap import Cells, Exemplar, cells, exemplars_of, heatmap_div
from exporters.report.page import PanelHtml, grid_html, legend_html, page
from exporters.report.plotly_chart import Axes, chart_div, drawn_color
from exporters.report.promapi import (
    PromClient,
    QueryError,
    Series,
    format_duration,
    parse_duration,
)
from exporters.report.svg import PALETTE, Line
from exporters.report.tables import Cell, merged_table, merges
from exporters.report.units import format_value, unit_label
from exporters.report.verdict import Tier, judge_all
from exporters.report.verdict_data import anchor, fetch_all, overview, tiers
from exporters.report.verdict_html import verdict_html

POINTS = 240
STAT_TYPES = ("stat", "gauge", "bargauge")
COUNT_BARS = "#8c959f"
"""Bars without a colour of their own (the counts, n): a neutral grey under the lines."""
TITLE_CHARS = 32
"""An axis title longer than this is cut (the chart is ~200 px tall)."""

Levels = Callable[[str], Mapping[float, str]]
"""A metric -> its threshold levels' names by the value each starts at."""


@dataclass
class ReportSummary:
    panels: int = 0
    with_data: int = 0
    empty: list[tuple[str, EmptyReason]] = field(default_factory=list)
    """(dashboard: panel, why it is empty) of each panel without data."""
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TimeRange:
    start: float
    end: float
    step: float


@dataclass(frozen=True)
class Named:
    name: str
    series: Series
    ref: str = ""
    """The refId of the query that returned the series."""


def time_range(
    client: PromClient, dashboard: Dashboard, now: float, since: float | None
) -> TimeRange:
    """The dashboard's range (or `since` seconds), shortened to when Prometheus has data."""
    if since is None:
        try:
            since = parse_duration(dashboard.time_from.removeprefix("now-"))
        except ValueError:
            since = 6 * 3600.0
    start = now - since
    first = client.first_sample_time(start, now)
    if first is not None and first > start:
        start = min(first, now - 60)
    return TimeRange(start, now, float(max(1, math.ceil((now - start) / POINTS))))


def grafana_variables(
    dashboard: Dashboard, chosen: Mapping[str, str], span: TimeRange, scrape_s: float
) -> dict[str, str]:
    """Template variables (the dashboard defaults, then the user's) and Grafana's built-ins."""
    values = {v.name: v.default for v in dashboard.variables}
    values.update(chosen)
    rng = span.end - span.start
    values.update(
        {
            "__rate_interval": format_duration(max(span.step + scrape_s, 4 * scrape_s)),
            "__interval": format_duration(span.step),
            "__interval_ms": str(int(span.step * 1000)),
            "__range": format_duration(rng),
            "__range_s": str(int(rng)),
            "__range_ms": str(int(rng * 1000)),
        }
    )
    return values


def fetch(
    client: PromClient, panel: Panel, values: Mapping[str, str], span: TimeRange
) -> list[Named]:
    """Each target's series over the range; an instant target's value at the range's end
    only (a series that ended before it, such as a resolved alert's, is not shown)."""
    out = []
    for target in panel.targets:
        expr = substitute(target.expr, values)
        if target.instant:
            found = [
                Series(labels, (span.end,), (value,))
                for labels, value in client.query(expr, span.end)
            ]
        else:
            found = client.query_range(expr, span.start, span.end, span.step)
        for series in found:
            if series.values:
                out.append(Named(legend(target.legend, series.labels), series, target.ref_id))
    return out


def _reduce(values: Sequence[float], calc: str) -> float:
    if calc in ("mean", "avg"):
        return sum(values) / len(values)
    reducers: dict[str, Any] = {"max": max, "min": min, "sum": sum}
    if calc in reducers:
        return float(reducers[calc](values))
    if calc == "first" or calc == "firstNotNull":
        return values[0]
    return values[-1]  # last, lastNotNull (gaps are already dropped)


def text_on(background: str) -> str:
    """Black or white, whichever reads better on a `#rrggbb` background."""
    if not (background.startswith("#") and len(background) == 7):
        return "#ffffff"
    r, g, b = (int(background[i : i + 2], 16) for i in (1, 3, 5))
    return "#1f2328" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def current(named: Sequence[Named]) -> list[Named]:
    """The series still reported at the end of the range: a stat shows the present, not a
    series that went stale (e.g. an exporter restarted on another port)."""
    latest = max(item.series.times[-1] for item in named)
    if len(named) < 2:
        return list(named)
    times = sorted({t for item in named for t in item.series.times})
    step = min((b - a for a, b in itertools.pairwise(times)), default=1.0)
    return [item for item in named if item.series.times[-1] >= latest - 2 * step]


def stat_body(panel: Panel, named: Sequence[Named]) -> str:
    calcs = (panel.options.get("reduceOptions") or {}).get("calcs") or ["lastNotNull"]
    mode = str(panel.options.get("colorMode", "value"))
    graph = str(panel.options.get("graphMode", "area")) != "none"
    blocks = []
    for i, item in enumerate(current(named)):
        value = _reduce(item.series.values, str(calcs[0]))
        color = panel.threshold_color(value) or PALETTE[i % len(PALETTE)]
        text = format_value(value, panel.unit, panel.decimals)
        style = f"background:{color};color:{text_on(color)}" if mode == "background" else ""
        value_style = f' style="color:{color}"' if mode == "value" else ""
        spark_color = text_on(color) if style else color
        spark = sparkline(item.series.values, spark_color) if graph else ""
        blocks.append(
            f'<div class="stat{" bg" if style else ""}" style="{style}" data-value="{value!r}" '
            f'data-color="{escape(color)}"><div class="value"{value_style}>{escape(text)}</div>'
            f'<div class="name">{escape(item.name)}</div>{spark}</div>'
        )
    return f'<div class="stats">{"".join(blocks)}</div>'


def table_body(panel: Panel, named: Sequence[Named]) -> str:
    if merges(panel):
        cells = [Cell(n.ref, n.series.labels, n.series.values[-1]) for n in named]
        return merged_table(panel, cells)
    rows = []
    for item in named:
        value = item.series.values[-1]
        color = panel.threshold_color(value) or "transparent"
        rows.append(
            f'<tr><td><span class="swatch" style="background:{color}"></span>'
            f'{escape(item.name)}</td><td class="num">'
            f"{escape(format_value(value, panel.unit, panel.decimals))}</td></tr>"
        )
    return f'<table class="values"><tr><th>series</th><th>last</th></tr>{"".join(rows)}</table>'


def _line(panel: Panel, index: int, item: Named, colors: Mapping[str, str]) -> Line:
    props = {**panel.custom, **panel.series_props(item.name)}
    fixed = (props.get("color") or {}) if isinstance(props.get("color"), dict) else {}
    owner = next((n for n in colors if item.name.startswith(n + " ")), None)
    hidden = props.get("hideFrom") or {}
    # a CI band, or a bound kept out of the legend, takes the colour of the line it belongs to
    band = (
        props.get("fillBelowTo") is not None
        or props.get("lineWidth") == 0
        or bool(hidden.get("legend"))
    )
    if fixed.get("fixedColor"):
        color = css_color(str(fixed["fixedColor"]))
    elif owner is not None and band:
        color = colors[owner]
    elif props.get("drawStyle") == "bars":
        color = COUNT_BARS
    else:
        color = PALETTE[index % len(PALETTE)]
    style = props.get("lineStyle") or {}
    dash = {"dash": "6 4", "dot": "2 3"}.get(str(style.get("fill"))) if style else None
    opacity = props.get("fillOpacity")
    return Line(
        name=item.name,
        times=item.series.times,
        values=item.series.values,
        color=color,
        width=float(props.get("lineWidth", 1.5)),
        dash=dash,
        right=props.get("axisPlacement") == "right",
        bars=props.get("drawStyle") == "bars",
        fill_below_to=props.get("fillBelowTo"),
        fill_opacity=float(opacity) / 100 if isinstance(opacity, int | float) else 0.0,
        in_legend=not bool(hidden.get("legend")),
        key=",".join(f"{k}={v}" for k, v in sorted(item.series.labels.items()) if k != "__name__"),
    )


def axis_title(name: str, unit: str | None) -> str:
    name = name if len(name) <= TITLE_CHARS else name[: TITLE_CHARS - 1].rstrip() + "…"
    label = unit_label(unit)
    return f"{name} ({label})" if label and name else name or label


def chart_body(
    panel: Panel,
    named: Sequence[Named],
    span: TimeRange,
    div_id: str,
    levels: Levels | None = None,
) -> str:
    """A Plotly time-series chart, and under it the legend (name: last value, in the colour
    the series is drawn); clicking a legend entry hides its series. The axes are titled
    as the JSON says (Grafana's `axisLabel`), else the left one with the panel's metric
    (else its title) and unit, the right one with its series (n); threshold lines with
    the level they start (`levels`)."""
    colors: dict[str, str] = {}
    lines = []
    for item in named:
        line = _line(panel, len(colors), item, colors)
        # one name, one colour: the same series from a restarted exporter (a new
        # `instance`) continues its line instead of becoming a second, differently coloured one
        line.color = colors.setdefault(item.name, line.color)
        lines.append(line)
    right = next((panel.series_props(ln.name) for ln in lines if ln.right), {})
    right_unit = right.get("unit", panel.unit)
    right_decimals = right.get("decimals", panel.decimals)
    metric = panel_metric([t.expr for t in panel.targets])
    right_names = ", ".join(dict.fromkeys(ln.name for ln in lines if ln.right and ln.in_legend))
    axes = Axes(
        span.start,
        span.end,
        span.step,
        panel.unit,
        right_unit,
        panel.min,
        panel.max,
        y_title=str(panel.custom.get("axisLabel") or "")
        or axis_title(metric or panel.title.split(":")[0], panel.unit),
        right_title=str(right.get("axisLabel") or "") or axis_title(right_names, right_unit),
    )
    chart = chart_div(
        lines,
        axes,
        fmt=lambda v: format_value(v, panel.unit, panel.decimals),
        right_fmt=lambda v: format_value(v, right_unit, right_decimals),
        thresholds=[(v, css_color(c)) for v, c in panel.thresholds],
        thresholds_style=panel.thresholds_style,
        div_id=div_id,
        levels=levels(metric) if levels is not None and metric is not None else None,
    )
    latest: dict[str, Line] = {}
    for ln in lines:
        if ln.in_legend and (ln.name not in latest or ln.times[-1] > latest[ln.name].times[-1]):
            latest[ln.name] = ln
    entries = []
    for name, ln in latest.items():
        props = panel.series_props(name)
        last = format_value(
            ln.values[-1], props.get("unit", panel.unit), props.get("decimals", panel.decimals)
        )
        entries.append((name, drawn_color(ln), f"{name}: {last}"))
    return chart + legend_html(entries)


def _div_id(kind: str, panel: Panel, queries: Sequence[str]) -> str:
    key = hashlib.sha1("\n".join((panel.title, *queries)).encode()).hexdigest()[:12]
    return f"{kind}-{key}"


def heatmap_body(
    client: PromClient, panel: Panel, queries: Sequence[str], grid: Cells, span: TimeRange
) -> str:
    """The Plotly heatmap of a bucket panel, with the exemplars of its queries (none when
    Prometheus keeps no exemplars or rejects the query)."""
    found: list[Exemplar] = []
    for expr in queries:
        try:
            found.extend(exemplars_of(client.exemplars(expr, span.start, span.end)))
        except QueryError:
            continue
    return heatmap_div(grid, found, _div_id("heatmap", panel, queries))


def history_note(reason: str, span: TimeRange) -> str:
    """A "needs history" reason with how much the range holds: the range starts at
    Prometheus's first sample when that is later than the dashboard's own start."""
    if not reason.startswith("Needs history"):
        return reason
    return f"{reason} (this Prometheus has {_duration(span.end - span.start)})"


def render_panel(
    client: PromClient,
    panel: Panel,
    values: Mapping[str, str],
    span: TimeRange,
    drill: Drill | None = None,
    worst: dict[str, str] | None = None,
    reasons: Reasons | None = None,
    levels: Levels | None = None,
) -> PanelHtml:
    """One panel; the first worst-traces table of each metric gets an id, recorded in
    `worst` (metric -> id) for the verdict's links. An empty panel says why: `reasons`
    (from the facts) or its own `noValue`."""
    queries = tuple(substitute(t.expr, values) for t in panel.targets)
    why = resolve(tuple(t.expr for t in panel.targets), panel.no_value, reasons)
    why_text = history_note(why.text, span)

    def done(body: str, state: str) -> PanelHtml:
        metric = (
            panel_metric(queries) if drill is not None and panel.type not in STAT_TYPES else None
        )
        if drill is not None and metric is not None:
            # a point at t is the window $w before t: the traces of [start - $w, end]
            try:
                window = parse_duration(values.get("w") or "1h")
            except ValueError:
                window = 3600.0
            start = span.start - window
            drilled = drill(metric, start, span.end, values.get("tenant") or None)
            if drilled is not None:
                ident = None
                if worst is not None and drilled.rows and metric not in worst:
                    ident = worst[metric] = "worst-" + anchor(metric)
                body += drill_html(drilled, ident)
        return PanelHtml(
            panel.title,
            body,
            state,
            panel.width,
            panel.description,
            panel.row,
            queries,
            why_text if state == "nodata" and why.text else None,
            why.short if state == "nodata" else "",
        )

    if panel.type == "text":
        content = str(panel.options.get("content", ""))
        return done(f'<pre class="text">{escape(content)}</pre>', "ok" if content else "nodata")
    if not panel.targets:
        return done('<div class="status">no queries</div>', "nodata")
    try:
        named = fetch(client, panel, values, span)
    except QueryError as exc:
        return done(f'<div class="status">query failed: {escape(str(exc))}</div>', "error")
    if not named:
        return done(f'<div class="status nodata">{escape(why_text)}</div>', "nodata")
    if panel.type == "heatmap":
        grid = cells([item.series for item in named])
        if grid is not None:
            return done(heatmap_body(client, panel, queries, grid, span), "ok")
    if panel.type in STAT_TYPES:
        return done(stat_body(panel, named), "ok")
    if panel.type == "table":
        return done(table_body(panel, named), "ok")
    return done(chart_body(panel, named, span, _div_id("chart", panel, queries), levels), "ok")


def render_report(
    client: PromClient,
    dashboards: Sequence[Dashboard],
    *,
    now: float,
    since: float | None = None,
    chosen: Mapping[str, str] | None = None,
    drill: Drill | None = None,
    reasons: Reasons | None = None,
    levels: Levels | None = None,
    appendix: str = "",
) -> tuple[str, ReportSummary]:
    """The whole page and what it holds (panels with data, empty ones and why, failed
    ones): the verdict first, then the overview dashboard, then the others, then
    `appendix` (HTML from the store: the topics and knowledge gaps)."""
    scrape_s = client.scrape_interval()
    summary = ReportSummary()
    sections = []
    shown_vars: dict[str, str] = {}
    worst: dict[str, str] = {}
    main_board = overview(dashboards)
    ordered = sorted(dashboards, key=lambda d: d is not main_board)
    for dashboard in ordered:
        span = time_range(client, dashboard, now, since)
        values = grafana_variables(dashboard, chosen or {}, span, scrape_s)
        shown_vars.update({v.name: values[v.name] or "All" for v in dashboard.variables})
        panels = [
            render_panel(client, p, values, span, drill, worst, reasons, levels)
            for p in dashboard.panels
        ]
        for p in panels:
            summary.panels += 1
            where = f"{dashboard.title}: {p.title}"
            if p.state == "ok":
                summary.with_data += 1
            elif p.state == "error":
                summary.errors.append(where)
            else:
                summary.empty.append((where, EmptyReason(p.empty_short, p.empty_reason or "")))
        when = " – ".join(
            datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
            for t in (span.start, span.end)
        )
        prefix = "" if dashboard is main_board else f"{anchor(dashboard.uid)}-"
        sections.append(
            f'<h2 class="dashboard" id="{escape(dashboard.uid)}">{escape(dashboard.title)}</h2>'
            f'<p class="meta">{escape(dashboard.description)} · {when} · step '
            f"{span.step:g}s · {escape(dashboard.path.name)}</p>" + grid_html(panels, prefix)
        )
    first = ""
    if main_board is not None:
        first = _verdict_section(client, main_board, worst, now, since, reasons)
    header = [
        f"Prometheus {client.url} · generated "
        f"{datetime.fromtimestamp(now, UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"{summary.with_data} of {summary.panels} panels with data"
        + (
            f"; {len(summary.empty)} empty: {counted(why.short for _, why in summary.empty)}"
            if summary.empty
            else ""
        ),
    ]
    if shown_vars:
        header.append("Variables: " + ", ".join(f"{k} = {v}" for k, v in shown_vars.items()))
    body = first + "".join(sections) + appendix
    return page("ragpulse quality report", header, body), summary


def _tier_reason(tier: Tier, board: Dashboard, reasons: Reasons) -> Tier:
    panel = next((p for p in board.panels if p.row == tier.title and p.no_value), None)
    if panel is None:
        return tier
    why = resolve(tuple(t.expr for t in panel.targets), panel.no_value, reasons)
    return replace(tier, empty_reason=why.text)


YOUNG_S = 3600.0
"""Below this much history the drift detectors have not started (they need 1h of results)."""


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def _verdict_section(
    client: PromClient,
    board: Dashboard,
    worst: Mapping[str, str],
    now: float,
    since: float | None,
    reasons: Reasons | None = None,
) -> str:
    """The first screen, from the overview's tiers and what Prometheus holds now; an empty
    tier says why as its first empty-able panel does."""
    span = time_range(client, board, now, since)
    tier_list, stats = tiers(board)
    if reasons is not None:
        tier_list = [_tier_reason(t, board, reasons) for t in tier_list]
    found, alerts, slices = fetch_all(client, tier_list, stats, now, span.start)
    held = now - span.start
    basis = (
        f"From Prometheus at {datetime.fromtimestamp(now, UTC).strftime('%H:%M UTC')} over "
        f"the last {_duration(held)}: a critical alert pages; a warning alert, a drift "
        "detector at its threshold, a 1h 95% CI wholly worse than the 7-day value or a 1h "
        "value in a band that needs attention is to watch."
    )
    if held < YOUNG_S:
        basis += (
            f" Young history: the drift detectors need 1h of results, Prometheus has "
            f"{_duration(held)}; until then the 1h and 7d values hold the same traces, so "
            "only alerts and bands can say more than fine."
        )
    return verdict_html(judge_all(tier_list, found, alerts, slices), stats, worst, now, basis)
