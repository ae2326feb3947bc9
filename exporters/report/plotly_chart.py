"""Time-series panels drawn by Plotly: lines, CI bands (a series filled down to another,
Grafana's `fillBelowTo`), bars, a right axis and threshold lines, with a hover read-out
of every series at the time under the mouse (values formatted in the panel's unit).

Gaps longer than 1.5 steps break a line (Prometheus returns no point there), as Grafana
draws them. plotly.js itself is embedded once per page (`page.plotly_script`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import plotly.graph_objects as go

from exporters.report.svg import Line

Fmt = Callable[[float], str]
DASHES = {"6 4": "dash", "2 3": "dot"}
TICK_FORMATS: dict[str, dict[str, str]] = {
    "percentunit": {"tickformat": ".0%"},
    "percent": {"ticksuffix": "%"},
    "ms": {"ticksuffix": " ms"},
    "s": {"ticksuffix": " s"},
}


@dataclass(frozen=True)
class Axes:
    """What the axes show: the range, the units' tick formats, fixed y bounds."""

    start: float
    end: float
    step: float
    unit: str | None = None
    right_unit: str | None = None
    y_min: float | None = None
    y_max: float | None = None
    y_title: str = ""
    """The left axis' title: the metric and its unit."""
    right_title: str = ""
    """The right axis' title: its series (the counts: n)."""


BAR_MIN_OPACITY = 0.35
"""Bars (counts) are drawn at least this opaque, so they and their legend swatch show."""
RANGE_PAD = 0.03
"""The y range is widened by this share of it each side (a share at 1.0 is drawn whole)."""
TITLE_FONT = {"size": 10, "color": "#57606a"}
X_TITLE = "time (UTC)"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _with_gaps(
    times: Sequence[float], values: Sequence[Any], step: float
) -> tuple[list[str | None], list[Any]]:
    xs: list[str | None] = []
    ys: list[Any] = []
    for i, (t, v) in enumerate(zip(times, values, strict=True)):
        if i and t - times[i - 1] > 1.5 * step:
            xs.append(None)
            ys.append(None)
        xs.append(_iso(t))
        ys.append(v)
    return xs, ys


def _rgba(color: str, opacity: float) -> str:
    if color.startswith("#") and len(color) == 7:
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        return f"rgba({r},{g},{b},{opacity:.2f})"
    return color


def _band(upper: Line, lower: Line, step: float, axis: str) -> go.Scatter:
    """The area between two series, one closed polygon per run without gaps."""
    low_at = dict(zip(lower.times, lower.values, strict=False))
    shared = [(t, v) for t, v in zip(upper.times, upper.values, strict=False) if t in low_at]
    xs: list[str | None] = []
    ys: list[float | None] = []
    run: list[tuple[float, float]] = []

    def close() -> None:
        if run:
            xs.extend([_iso(t) for t, _ in run] + [_iso(t) for t, _ in reversed(run)] + [None])
            ys.extend([v for _, v in run] + [low_at[t] for t, _ in reversed(run)] + [None])

    for t, v in shared:
        if run and t - run[-1][0] > 1.5 * step:
            close()
            run = []
        run.append((t, v))
    close()
    return go.Scatter(
        x=xs,
        y=ys,
        fill="toself",
        fillcolor=_rgba(upper.color, upper.fill_opacity or 0.2),
        line={"width": 0},
        mode="lines",
        hoverinfo="skip",
        showlegend=False,
        yaxis=axis,
    )


def drawn_color(line: Line) -> str:
    """The colour the series is drawn in: its legend swatch must be the same."""
    if line.bars:
        return _rgba(line.color, max(line.fill_opacity, BAR_MIN_OPACITY))
    return line.color


def threshold_label(value: float, name: str | None, fmt: Fmt) -> str:
    """The level a threshold line starts and its value, e.g. `excellent ≥ 0.900`; a strict
    bound (a step at the double just above a round value, `metrics_view.strictly_above`)
    says `excellent > 0.800`."""
    rounded = round(value, 9)
    bound = f"> {fmt(rounded)}" if rounded != value else f"≥ {fmt(value)}"
    return f"{name} {bound}" if name else bound


def _axes_of(lines: Sequence[Line]) -> tuple[str, str]:
    """(left, right) Plotly axis ids. Plotly draws an overlaying axis's traces on top, so
    with a right axis (counts as bars) the left one (the quality lines) overlays it."""
    return ("y2", "y") if any(ln.right for ln in lines) else ("y", "y2")


def chart_div(
    lines: Sequence[Line],
    axes: Axes,
    fmt: Fmt,
    right_fmt: Fmt,
    thresholds: Sequence[tuple[float | None, str]],
    thresholds_style: str,
    div_id: str,
    levels: Mapping[float, str] | None = None,
) -> str:
    """A `<div>` with the Plotly chart (plotly.js is not in it)."""
    figure = chart_figure(lines, axes, fmt, right_fmt, thresholds, thresholds_style, levels)
    html: str = figure.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        config={"displayModeBar": False, "responsive": True},
    )
    return f'<div class="plotly-chart">{html}</div>'


def chart_figure(
    lines: Sequence[Line],
    axes: Axes,
    fmt: Fmt,
    right_fmt: Fmt,
    thresholds: Sequence[tuple[float | None, str]],
    thresholds_style: str,
    levels: Mapping[float, str] | None = None,
) -> go.Figure:
    """The figure; each series' trace has its name as `meta` (the page's legend toggles
    traces by it), bands have none. A threshold line is labelled with the level it starts
    (`levels`: threshold -> name) and its value; the axes are titled."""
    figure = go.Figure()
    left, right = _axes_of(lines)
    by_key = {(ln.name, ln.key): ln for ln in lines}
    by_name = {ln.name: ln for ln in lines}
    for ln in lines:
        target = by_key.get((ln.fill_below_to or "", ln.key)) or by_name.get(ln.fill_below_to or "")
        if target is not None and ln.values and target.values:
            figure.add_trace(_band(ln, target, axes.step, right if ln.right else left))
    for ln in lines:
        show = right_fmt if ln.right else fmt
        xs, ys = _with_gaps(ln.times, ln.values, axes.step)
        text = [None if v is None else show(v) for v in ys]
        common: dict[str, Any] = {
            "x": xs,
            "y": ys,
            "customdata": text,
            "meta": ln.name,
            "name": ln.name,
            "showlegend": False,
            "yaxis": right if ln.right else left,
            "hovertemplate": "%{customdata}",
        }
        if ln.bars:
            figure.add_trace(
                go.Bar(marker={"color": drawn_color(ln), "line": {"width": 0}}, **common)
            )
        else:
            single = len(ln.values) == 1
            figure.add_trace(
                go.Scatter(
                    mode="markers" if single else "lines",
                    line={"color": ln.color, "width": ln.width, "dash": DASHES.get(ln.dash or "")},
                    marker={"color": ln.color, "size": 4},
                    **common,
                )
            )
    if thresholds_style != "off":
        for value, color in thresholds:
            if value is not None and ("line" in thresholds_style or "dash" in thresholds_style):
                figure.add_hline(
                    y=value,
                    yref="y2" if left == "y2" else "y",
                    line={
                        "color": color,
                        "width": 1.2,
                        "dash": "dash" if "dash" in thresholds_style else "solid",
                    },
                    annotation_text=threshold_label(value, (levels or {}).get(value), fmt),
                    annotation_position="top left",
                    annotation_font={"size": 9, "color": "#57606a"},
                    annotation_yshift=-2,
                )
    yaxis: dict[str, Any] = {
        "zeroline": False,
        "title": {"text": axes.y_title, "font": TITLE_FONT, "standoff": 4},
        **TICK_FORMATS.get(axes.unit or "", {}),
    }
    # the range Plotly would pick (the lines and the threshold lines drawn), with a little
    # room: its autorange puts a line at the extreme on the plot's edge, half cut off
    drawn = [v for ln in lines if not ln.right for v in ln.values]
    if thresholds_style != "off":
        drawn += [v for v, _ in thresholds if v is not None]
    if drawn or axes.y_min is not None or axes.y_max is not None:
        low = axes.y_min if axes.y_min is not None else min(drawn, default=0.0)
        high = axes.y_max if axes.y_max is not None else max(drawn, default=1.0)
        pad = (high - low) * RANGE_PAD if high > low else max(abs(high) * RANGE_PAD, 1e-9)
        yaxis["range"] = [low - pad, high + pad]
    if left == "y2":
        # its own round ticks, not ones synced to the counts' axis
        yaxis.update({"overlaying": "y", "side": "left", "tickmode": "auto"})
    layout: dict[str, Any] = {
        "height": 220,
        "margin": {"l": 64, "r": 64 if any(ln.right for ln in lines) else 10, "t": 6, "b": 42},
        "hovermode": "x unified",
        "xaxis": {
            "type": "date",
            "range": [_iso(axes.start), _iso(axes.end)],
            "hoverformat": "%Y-%m-%d %H:%M:%S UTC",
            "title": {"text": X_TITLE, "font": TITLE_FONT, "standoff": 2},
        },
        "yaxis2" if left == "y2" else "yaxis": yaxis,
        "plot_bgcolor": "#ffffff",
        "showlegend": False,
        "barmode": "overlay",
        "bargap": 0,  # counts per step read as one area, not a hatching of thin bars
    }
    if left == "y2":
        layout["yaxis"] = {
            "side": "right",
            "showgrid": False,
            "zeroline": False,
            "title": {"text": axes.right_title, "font": TITLE_FONT, "standoff": 4},
            **TICK_FORMATS.get(axes.right_unit or "", {}),
        }
    figure.update_layout(**layout)
    return figure
