"""What the report's figures share: the series palette, a drawn series (`Line`, which
`plotly_chart` draws) and the tick and extent helpers of the small server-side SVG
figures (`figures.py`: stat sparklines, the offline page's interval plots and
histograms). The time-series charts themselves are Plotly's (`plotly_chart.py`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
