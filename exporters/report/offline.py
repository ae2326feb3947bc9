"""`ragpulse evaluate --output-html`: an offline evaluation as the same kind of static page
as `ragpulse report` — per metric its value with the 95% interval, the distribution of
per-sample values and, with `--group-by`, the groups side by side; values coloured by the
thresholds the shipped dashboards give that metric."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from exporters.report.dashboards import (
    SHIPPED,
    Dashboard,
    DashboardError,
    css_color,
    load_dashboards,
)
from exporters.report.figures import Interval, histogram, interval_chart
from exporters.report.page import PanelHtml, grid_html, page
from exporters.report.svg import PALETTE
from exporters.report.units import format_value

Steps = tuple[tuple[float | None, str], ...]
_METRIC = re.compile(r'metric="([^"]+)"')


def metric_thresholds(dashboards: Sequence[Dashboard]) -> dict[str, Steps]:
    """metric name -> threshold steps of the first panel that queries only that metric and
    colours it (more than a base step)."""
    out: dict[str, Steps] = {}
    for board in dashboards:
        for panel in board.panels:
            names = {m for t in panel.targets for m in _METRIC.findall(t.expr)}
            if len(names) == 1 and len(panel.thresholds) > 1:
                out.setdefault(names.pop(), panel.thresholds)
    return out


def shipped_thresholds(folder: Path = SHIPPED) -> dict[str, Steps]:
    """Thresholds of the dashboards in `folder`; none when it is absent or unreadable (the
    page is then drawn without threshold colours)."""
    try:
        return metric_thresholds(load_dashboards([folder]))
    except DashboardError:
        return {}


def _color(steps: Steps | None, value: float | None, fallback: str) -> str:
    if not steps or value is None:
        return fallback
    color = fallback
    for step, name in steps:
        if step is None or value >= step:
            color = css_color(name)
    return color


def _fmt(value: float | None) -> str:
    return "–" if value is None else format_value(value, "none", 4 if abs(value) < 100 else 1)


def _summary_table(aggregates: Mapping[str, Mapping[str, Any]], thresholds: Any) -> str:
    rows = []
    for name, agg in aggregates.items():
        value = agg.get("value")
        color = _color(thresholds.get(name), value, "transparent")
        ci = (
            f"[{_fmt(agg.get('ci_lower'))}, {_fmt(agg.get('ci_upper'))}]"
            if agg.get("ci_lower") is not None
            else "–"
        )
        rows.append(
            f'<tr><td><span class="swatch" style="background:{color}"></span>{escape(name)}'
            f'</td><td class="num">{_fmt(value)}</td><td class="num">{ci}</td>'
            f'<td class="num">{agg.get("n", 0)}</td><td class="num">{agg.get("skipped", 0)}</td>'
            f'<td class="num">{agg.get("errors", 0)}</td></tr>'
        )
    return (
        '<table class="values"><tr><th>metric</th><th>value</th><th>95% CI</th><th>n</th>'
        f"<th>skipped</th><th>errors</th></tr>{''.join(rows)}</table>"
    )


def _reasons(agg: Mapping[str, Any]) -> str:
    parts = [f"{r} ×{c}" for r, c in (agg.get("skip_reasons") or {}).items()]
    parts += [f"error {t} ×{c}" for t, c in (agg.get("error_types") or {}).items()]
    return f'<p class="meta">{escape("; ".join(parts))}</p>' if parts else ""


def _metric_panel(
    name: str,
    agg: Mapping[str, Any],
    groups: Mapping[str, Mapping[str, Mapping[str, Any]]],
    group_by: str | None,
    per_sample: Sequence[float],
    steps: Steps | None,
    index: int,
) -> PanelHtml:
    fallback = PALETTE[index % len(PALETTE)]
    value = agg.get("value")
    n = f"n={agg.get('n', 0)}"
    if value is None:
        body = '<div class="status">no value: every sample was skipped or failed</div>'
        return PanelHtml(name, body + _reasons(agg), "nodata", 12, n)
    rows = [
        Interval(
            "all", value, agg.get("ci_lower"), agg.get("ci_upper"), _color(steps, value, fallback)
        )
    ]
    for group, by_metric in groups.items():
        g = by_metric.get(name) or {}
        if g.get("value") is not None:
            rows.append(
                Interval(
                    f"{group_by} = {group}" if group_by else group,
                    g["value"],
                    g.get("ci_lower"),
                    g.get("ci_upper"),
                    _color(steps, g["value"], fallback),
                    f"  n={g.get('n', 0)}",
                )
            )
    rows[0] = Interval(
        rows[0].label, rows[0].value, rows[0].low, rows[0].high, rows[0].color, f"  {n}"
    )
    body = interval_chart(rows, _fmt) + histogram(per_sample, "#8ab8ff", _fmt) + _reasons(agg)
    return PanelHtml(
        name, body, "ok", 12, f"{name}: value with its 95% interval, then per-sample values"
    )


def render_evaluation(
    document: Mapping[str, Any],
    *,
    dataset: str,
    thresholds: Mapping[str, Steps] | None = None,
) -> str:
    """The page of one `evaluate` result (the JSON document of `--output`)."""
    thresholds = thresholds or {}
    aggregates: Mapping[str, Mapping[str, Any]] = document.get("aggregate", {})
    groups: Mapping[str, Mapping[str, Mapping[str, Any]]] = document.get("groups", {})
    group_by = document.get("group_by")
    samples: Sequence[Mapping[str, Any]] = document.get("samples", [])
    panels = [PanelHtml("Summary", _summary_table(aggregates, thresholds), "ok", 24, row="Metrics")]
    for i, (name, agg) in enumerate(aggregates.items()):
        values = [
            float(s[name])
            for s in samples
            if isinstance(s.get(name), int | float) and not isinstance(s.get(name), bool)
        ]
        panel = _metric_panel(name, agg, groups, group_by, values, thresholds.get(name), i)
        panels.append(
            PanelHtml(panel.title, panel.body, panel.state, 12, panel.description, "Per metric")
        )
    header = [
        f"Dataset {dataset} · {len(samples)} samples · generated "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
    ]
    if group_by:
        header.append(f"Grouped by {group_by}: {', '.join(map(str, groups)) or 'no groups'}")
    invalid: Sequence[Mapping[str, Any]] = document.get("invalid_lines", [])
    if invalid:  # left out by --skip-invalid
        shown = ", ".join(f"{b['line']} ({b['reason']})" for b in invalid[:10])
        more = f" and {len(invalid) - 10} more" if len(invalid) > 10 else ""
        header.append(f"{len(invalid)} invalid lines left out: {shown}{more}")
    return page("ragpulse evaluation", header, grid_html(panels))


def write_evaluation_report(path: Path, document: Mapping[str, Any], *, dataset: str) -> None:
    """Write the page of `document` to `path`, coloured by the shipped thresholds."""
    html = render_evaluation(document, dataset=dataset, thresholds=shipped_thresholds())
    path.write_text(html, encoding="utf-8")
