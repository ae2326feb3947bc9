"""Heatmap panels (Grafana `heatmap`, format `heatmap`) as real heatmaps: per-trace score
buckets × time, drawn by Plotly, with the histogram's trace-id exemplars on top.

A heatmap query returns one series per cumulative bucket (`le`); a cell is a bucket's
own count, its cumulative count minus the one below. Exemplars (Prometheus
`/api/v1/query_exemplars`, kept with `--enable-feature=exemplar-storage`) are drawn as
markers at their time and score, their trace id shown on hover, like Grafana's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import plotly.graph_objects as go

from exporters.report.plotly_chart import TITLE_FONT, X_TITLE
from exporters.report.promapi import Series


@dataclass(frozen=True)
class Exemplar:
    trace_id: str
    time: float
    value: float


@dataclass(frozen=True)
class Cells:
    """Per-bucket counts: `counts[row][column]` for `rows` (bucket names, lowest first)
    and `times` (epoch s)."""

    times: tuple[float, ...]
    rows: tuple[str, ...]
    uppers: tuple[float, ...]
    counts: tuple[tuple[float, ...], ...]


def _le(labels: dict[str, str]) -> float | None:
    """A bucket's upper bound, or None for a series that is no bucket (no or a bad `le`)."""
    try:
        bound = float(labels["le"])
    except (KeyError, ValueError):
        return None
    return None if math.isnan(bound) else bound


def _name(low: float | None, high: float) -> str:
    if math.isinf(high):
        return f"> {low:g}" if low is not None else "all"
    return f"≤ {high:g}" if low is None else f"{low:g}–{high:g}"


def cells(series: Sequence[Series]) -> Cells | None:
    """The heatmap's cells from cumulative bucket series (None without usable buckets);
    an always-empty top bucket (`+Inf` of a 0–1 score) is left out."""
    bounded = [(_le(s.labels), s) for s in series]
    buckets = sorted(((le, s) for le, s in bounded if le is not None), key=lambda item: item[0])
    if not buckets:
        return None
    times = tuple(sorted({t for _, s in buckets for t in s.times}))
    cumulative = [dict(zip(s.times, s.values, strict=True)) for _, s in buckets]
    counts = []
    for i, points in enumerate(cumulative):
        below = cumulative[i - 1] if i else {}
        counts.append(tuple(max(0.0, points.get(t, 0.0) - below.get(t, 0.0)) for t in times))
    uppers = [le for le, _ in buckets]
    names = [_name(uppers[i - 1] if i else None, le) for i, le in enumerate(uppers)]
    if len(counts) > 1 and math.isinf(uppers[-1]) and not any(counts[-1]):
        counts, uppers, names = counts[:-1], uppers[:-1], names[:-1]
    return Cells(times, tuple(names), tuple(uppers), tuple(counts))


def _row_of(value: float, uppers: Sequence[float]) -> int:
    return next((i for i, upper in enumerate(uppers) if value <= upper), len(uppers) - 1)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def heatmap_div(grid: Cells, exemplars: Sequence[Exemplar], div_id: str) -> str:
    """A `<div>` with the Plotly heatmap (plotly.js itself is embedded once per page)."""
    x = [_iso(t) for t in grid.times]
    top = max((c for row in grid.counts for c in row), default=0.0)
    figure = go.Figure(
        go.Heatmap(
            x=x,
            y=list(grid.rows),
            # an empty cell is blank, as Grafana hides counts <= 1e-9 (`filterValues`)
            z=[[c if c > 1e-9 else None for c in row] for row in grid.counts],
            zmin=0,
            zmax=max(1.0, top),
            colorscale="Oranges",
            colorbar={"title": {"text": "traces"}, "thickness": 10},
            # increase() extrapolates: a cell's count need not be whole
            hovertemplate="%{x} UTC<br>score %{y}: %{z:.3~g} traces<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    if exemplars:
        figure.add_trace(
            go.Scatter(
                x=[_iso(e.time) for e in exemplars],
                y=[grid.rows[_row_of(e.value, grid.uppers)] for e in exemplars],
                mode="markers",
                marker={"color": "rgba(255,0,255,0.7)", "size": 7, "symbol": "diamond"},
                customdata=[[e.trace_id, e.value] for e in exemplars],
                hovertemplate="trace %{customdata[0]}<br>score %{customdata[1]:.3g}"
                "<br>%{x} UTC<extra>exemplar</extra>",
                name="exemplars (trace ids)",
                showlegend=False,
            )
        )
    figure.update_layout(
        height=220,
        margin={"l": 60, "r": 10, "t": 6, "b": 42},
        yaxis={"type": "category", "title": {"text": "score", "font": TITLE_FONT}},
        xaxis={"type": "date", "title": {"text": X_TITLE, "font": TITLE_FONT, "standoff": 2}},
        plot_bgcolor="#ffffff",
    )
    html: str = figure.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        config={"displayModeBar": False, "responsive": True},
    )
    note = (
        ""
        if top > 1e-9
        else '<p class="status">no trace scored in this range: every cell is empty</p>'
    )
    return (
        f'<div class="plotly-heatmap" data-cells="{json.dumps(len(grid.rows))}">{html}{note}</div>'
    )


def exemplars_of(found: Sequence[dict[str, object]]) -> list[Exemplar]:
    """Exemplars with a `trace_id` from a `/api/v1/query_exemplars` answer."""
    out = []
    for group in found:
        items = group.get("exemplars") if isinstance(group, dict) else None
        for item in items if isinstance(items, list) else []:
            labels = item.get("labels") or {}
            trace = labels.get("trace_id")
            try:
                value, time = float(item["value"]), float(item["timestamp"])
            except (KeyError, TypeError, ValueError):
                continue
            if trace and math.isfinite(value):
                out.append(Exemplar(str(trace), time, value))
    return sorted(out, key=lambda e: e.time)
