"""Small server-side SVG figures of the reports: sparklines (stat panels), interval
("forest") plots and histograms (the offline evaluation page)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from exporters.report.svg import Fmt, extent, nice_ticks


def sparkline(values: Sequence[float], color: str, width: int = 160, height: int = 28) -> str:
    if len(values) < 2:
        return ""
    lo, hi = extent(values)
    n = len(values) - 1
    points = " ".join(
        f"{i / n * width:.1f},{(1 - (v - lo) / (hi - lo)) * height:.1f}"
        for i, v in enumerate(values)
    )
    return (
        f'<svg class="spark" viewBox="0 0 {width} {height}" width="100%" height="{height}" '
        f'preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">'
        f'<polyline points="{points}" stroke="{color}" fill="none" stroke-width="1.5"/></svg>'
    )


@dataclass(frozen=True)
class Interval:
    label: str
    value: float
    low: float | None
    high: float | None
    color: str
    note: str = ""


def interval_chart(rows: Sequence[Interval], fmt: Fmt, width: int = 480) -> str:
    """One row per estimate: a dot at the value and a bar over its confidence interval."""
    row_h, margin_l, margin_r = 22, 120, 112
    height = row_h * len(rows) + 22
    numbers = [v for r in rows for v in (r.value, r.low, r.high) if v is not None]
    lo, hi = extent(numbers)
    plot_w = width - margin_l - margin_r

    def x(v: float) -> float:
        return margin_l + (v - lo) / (hi - lo) * plot_w

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg" role="img">'
    ]
    for tick in nice_ticks(lo, hi):
        out.append(
            f'<line class="grid" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="4" '
            f'y2="{height - 18}"/><text class="axis" x="{x(tick):.1f}" y="{height - 5}" '
            f'text-anchor="middle">{escape(fmt(tick))}</text>'
        )
    for i, r in enumerate(rows):
        cy = 4 + row_h * i + row_h / 2
        out.append(
            f'<text class="axis" x="{margin_l - 6}" y="{cy + 3:.1f}" text-anchor="end">'
            f"{escape(r.label[:22])}</text>"
        )
        if r.low is not None and r.high is not None:
            out.append(
                f'<line x1="{x(r.low):.1f}" x2="{x(r.high):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" '
                f'stroke="{r.color}" stroke-width="4" stroke-opacity="0.45"/>'
            )
        out.append(
            f'<circle class="estimate" cx="{x(r.value):.1f}" cy="{cy:.1f}" r="4.5" '
            f'fill="{r.color}"/><text class="axis" x="{width - margin_r + 6}" '
            f'y="{cy + 3:.1f}">{escape(fmt(r.value))}{escape(r.note)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def histogram(values: Sequence[float], color: str, fmt: Fmt, width: int = 480) -> str:
    """Distribution of per-sample values in up to 20 bins."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    bins = 1 if math.isclose(lo, hi) else min(20, max(5, int(math.sqrt(len(values)))))
    counts = [0] * bins
    for v in values:
        index = 0 if bins == 1 else min(bins - 1, int((v - lo) / (hi - lo) * bins))
        counts[index] += 1
    height, margin_b = 70, 16
    top = max(counts)
    bar_w = (width - 20) / bins
    out = [
        f'<svg class="chart hist" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg" role="img">'
    ]
    for i, c in enumerate(counts):
        h = c / top * (height - margin_b - 4)
        out.append(
            f'<rect x="{10 + i * bar_w:.1f}" y="{height - margin_b - h:.1f}" '
            f'width="{bar_w * 0.9:.1f}" height="{h:.1f}" fill="{color}" fill-opacity="0.7">'
            f"<title>{c}</title></rect>"
        )
    out.append(
        f'<text class="axis" x="{width / 2}" y="{height - 3}" text-anchor="middle">'
        f"{len(values)} per-sample values</text>"
        f'<text class="axis" x="10" y="{height - 3}">{escape(fmt(lo))}</text>'
        f'<text class="axis" x="{width - 10}" y="{height - 3}" text-anchor="end">'
        f"{escape(fmt(hi))}</text></svg>"
    )
    return "".join(out)
