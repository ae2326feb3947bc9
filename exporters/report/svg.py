"""Server-side SVG charts for the static report: time series with bands, bars, a right
axis and threshold lines, sparklines, and interval ("forest") plots. No JavaScript needed
to see them, nothing fetched from the network."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

PALETTE = (
    "#7eb26d",
    "#eab839",
    "#6ed0e0",
    "#ef843c",
    "#e24d42",
    "#1f78c1",
    "#ba43a9",
    "#705da0",
    "#508642",
    "#cca300",
)

Fmt = Callable[[float], str]


@dataclass
class Line:
    """One drawn series; `fill_below_to` names the series its area fills down to."""

    name: str
    times: Sequence[float]
    values: Sequence[float]
    color: str
    width: float = 1.5
    dash: str | None = None
    right: bool = False
    bars: bool = False
    fill_below_to: str | None = None
    fill_opacity: float = 0.0
    in_legend: bool = True
    key: str = ""  # the series' labels without its name: pairs a band's two edges


def nice_ticks(low: float, high: float, count: int = 4) -> list[float]:
    """About `count` round values covering [low, high]."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def extent(values: Sequence[float], extra: Sequence[float] = ()) -> tuple[float, float]:
    data = [*values, *extra]
    if not data:
        return 0.0, 1.0
    low, high = min(data), max(data)
    if math.isclose(low, high):
        if low == 0:
            return 0.0, 1.0
        pad = abs(low) * 0.1
        low, high = low - pad, high + pad
    else:
        pad = (high - low) * 0.08
        low, high = low - pad, high + pad
    if min(data) >= 0 > low:  # non-negative data: the axis starts at zero, not below
        low = 0.0
    return low, high


def _time_label(t: float, span: float) -> str:
    moment = datetime.fromtimestamp(t, UTC)
    if span > 2 * 86400:
        return moment.strftime("%m-%d %H:%M")
    return moment.strftime("%H:%M:%S" if span < 900 else "%H:%M")


def _segments(times: Sequence[float], step: float) -> list[list[int]]:
    """Indexes of runs of points without a gap wider than 1.5 steps."""
    runs: list[list[int]] = []
    for i, t in enumerate(times):
        if runs and t - times[runs[-1][-1]] <= step * 1.5:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def time_chart(
    lines: Sequence[Line],
    *,
    start: float,
    end: float,
    step: float,
    fmt: Fmt,
    right_fmt: Fmt | None = None,
    thresholds: Sequence[tuple[float | None, str]] = (),
    thresholds_style: str = "off",
    y_min: float | None = None,
    y_max: float | None = None,
    width: int = 480,
    height: int = 180,
) -> str:
    left = [ln for ln in lines if not ln.right]
    right = [ln for ln in lines if ln.right]
    steps = [v for v, _ in thresholds if v is not None] if thresholds_style != "off" else []
    lo, hi = extent([v for ln in left for v in ln.values], steps)
    lo = y_min if y_min is not None else lo
    hi = y_max if y_max is not None else hi
    right_values = [v for ln in right for v in ln.values]
    r_lo, r_hi = extent(right_values)
    if right_values and min(right_values) >= 0:  # counts: from zero up
        r_lo, r_hi = 0.0, max(r_hi, 1.0)
    left_labels = [fmt(t) for t in nice_ticks(lo, hi)]
    right_labels = [right_fmt(t) for t in nice_ticks(r_lo, r_hi, 3)] if right and right_fmt else []
    margin_l = int(10 + 5.6 * max((len(s) for s in left_labels), default=4))
    margin_r = int(8 + 5.6 * max((len(s) for s in right_labels), default=0)) if right else 10
    margin_t, margin_b = 8, 20
    plot_w, plot_h = width - margin_l - margin_r, height - margin_t - margin_b
    span = max(end - start, 1e-9)

    def x(t: float) -> float:
        return margin_l + (t - start) / span * plot_w

    def y(v: float, axis_right: bool = False) -> float:
        a, b = (r_lo, r_hi) if axis_right else (lo, hi)
        return margin_t + (1 - (v - a) / (b - a)) * plot_h

    plot = f"{margin_l},{plot_w},{width},{start:.3f},{end:.3f},{margin_t},{plot_h}"
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" data-plot="{plot}" '
        f'preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg" role="img">'
    ]
    for tick in nice_ticks(lo, hi):
        ty = y(tick)
        out.append(
            f'<line class="grid" x1="{margin_l}" x2="{margin_l + plot_w}" y1="{ty:.1f}" '
            f'y2="{ty:.1f}"/><text class="axis" x="{margin_l - 4}" y="{ty + 3:.1f}" '
            f'text-anchor="end">{escape(fmt(tick))}</text>'
        )
    if right and right_fmt is not None:
        for tick in nice_ticks(r_lo, r_hi, 3):
            out.append(
                f'<text class="axis" x="{margin_l + plot_w + 4}" y="{y(tick, True) + 3:.1f}">'
                f"{escape(right_fmt(tick))}</text>"
            )
    for i in range(5):
        t = start + span * i / 4
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        out.append(
            f'<text class="axis" x="{x(t):.1f}" y="{height - 5}" text-anchor="{anchor}">'
            f"{_time_label(t, span)}</text>"
        )
    out.extend(_threshold_marks(thresholds, thresholds_style, lo, hi, y, margin_l, plot_w))
    for ln in lines:  # bars under the bands and lines
        if ln.bars:
            out.append(_bars(ln, x, y, step, span, plot_w))
    by_name = {(ln.name, ln.key): ln for ln in lines}
    by_name_only = {ln.name: ln for ln in lines}
    for ln in lines:
        name = ln.fill_below_to or ""
        target = by_name.get((name, ln.key)) or by_name_only.get(name)
        if target is not None and ln.values and target.values:
            out.append(_band(ln, target, x, y, step))
    for ln in lines:
        if not ln.bars and ln.width > 0:
            out.append(_polyline(ln, x, y, step))
    out.append(
        f'<rect class="frame" x="{margin_l}" y="{margin_t}" width="{plot_w}" height="{plot_h}"/>'
    )
    out.append("</svg>")
    out.append(_hover_points(lines, fmt, right_fmt or fmt))
    return "".join(out)


def _hover_points(lines: Sequence[Line], fmt: Fmt, right_fmt: Fmt) -> str:
    """The formatted values at every time, for the page's hover read-out."""
    times = sorted({t for ln in lines for t in ln.times})
    series = []
    for ln in lines:
        at = dict(zip(ln.times, ln.values, strict=False))
        show = right_fmt if ln.right else fmt
        series.append(
            {
                "n": ln.name,
                "c": ln.color,
                "v": [show(at[t]) if t in at else None for t in times],
            }
        )
    data = json.dumps({"t": times, "s": series}, ensure_ascii=False, separators=(",", ":"))
    safe = data.replace("</", "<\\/")  # JSON inside <script>: no closing tag
    return f'<script type="application/json" class="points">{safe}</script>'


def _threshold_marks(
    thresholds: Sequence[tuple[float | None, str]],
    style: str,
    lo: float,
    hi: float,
    y: Callable[[float], float],
    x0: float,
    w: float,
) -> list[str]:
    if style == "off":
        return []
    marks = []
    bounds = [v for v, _ in thresholds[1:]] + [hi]
    for (value, color), upper in zip(thresholds, bounds, strict=False):
        bottom = lo if value is None else max(lo, value)
        top = min(hi, upper if upper is not None else hi)
        if "area" in style and top > bottom:
            marks.append(
                f'<rect x="{x0}" y="{y(top):.1f}" width="{w}" height="{y(bottom) - y(top):.1f}" '
                f'fill="{color}" fill-opacity="0.12"/>'
            )
        if value is not None and lo <= value <= hi and ("line" in style or "dash" in style):
            dash = ' stroke-dasharray="6 4"' if "dash" in style else ""
            marks.append(
                f'<line class="threshold" x1="{x0}" x2="{x0 + w}" y1="{y(value):.1f}" '
                f'y2="{y(value):.1f}" stroke="{color}"{dash}/>'
            )
    return marks


def _polyline(ln: Line, x: Callable[[float], float], y: Callable[..., float], step: float) -> str:
    parts = []
    for run in _segments(ln.times, step):
        points = " ".join(f"{x(ln.times[i]):.1f},{y(ln.values[i], ln.right):.1f}" for i in run)
        if len(run) == 1:
            i = run[0]
            parts.append(
                f'<circle cx="{x(ln.times[i]):.1f}" cy="{y(ln.values[i], ln.right):.1f}" '
                f'r="2" fill="{ln.color}"/>'
            )
        else:
            dash = f' stroke-dasharray="{ln.dash}"' if ln.dash else ""
            parts.append(
                f'<polyline class="series" points="{points}" stroke="{ln.color}" '
                f'stroke-width="{ln.width}"{dash}/>'
            )
    return f'<g data-series="{escape(ln.name)}">{"".join(parts)}</g>'


def _band(
    upper: Line, lower: Line, x: Callable[[float], float], y: Callable[..., float], step: float
) -> str:
    low_at = dict(zip(lower.times, lower.values, strict=False))
    shared = [(t, v) for t, v in zip(upper.times, upper.values, strict=False) if t in low_at]
    polygons = []
    for run in _segments([t for t, _ in shared], step):
        top = [f"{x(shared[i][0]):.1f},{y(shared[i][1], upper.right):.1f}" for i in run]
        bottom = [
            f"{x(shared[i][0]):.1f},{y(low_at[shared[i][0]], lower.right):.1f}"
            for i in reversed(run)
        ]
        polygons.append(
            f'<polygon points="{" ".join(top + bottom)}" fill="{upper.color}" '
            f'fill-opacity="{upper.fill_opacity or 0.2:.2f}" stroke="none"/>'
        )
    return "".join(polygons)


def _bars(
    ln: Line,
    x: Callable[[float], float],
    y: Callable[..., float],
    step: float,
    span: float,
    plot_w: float,
) -> str:
    bar_w = max(1.0, min(12.0, step / span * plot_w * 0.8))
    base = y(0.0, ln.right)
    rects = []
    for t, v in zip(ln.times, ln.values, strict=False):
        top = y(v, ln.right)
        rects.append(
            f'<rect x="{x(t) - bar_w / 2:.1f}" y="{min(top, base):.1f}" width="{bar_w:.1f}" '
            f'height="{abs(base - top):.1f}"/>'
        )
    opacity = ln.fill_opacity or 0.3
    return (
        f'<g data-series="{escape(ln.name)}" fill="{ln.color}" fill-opacity="{opacity:.2f}">'
        + "".join(rects)
        + "</g>"
    )
