"""Time-series figures (`exporters.report.plotly_chart`): gaps break lines, a CI band is
a filled polygon on its series' axis, counts on the right axis sit under the lines."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from exporters.report.dashboards import load_dashboard
from exporters.report.live import Named, TimeRange, axis_title, chart_body
from exporters.report.plotly_chart import Axes, chart_figure, threshold_label
from exporters.report.promapi import Series
from exporters.report.svg import Line
from ragpulse.commands.report import threshold_levels

TIMES = (0.0, 10.0, 20.0, 60.0, 70.0)


def _line(name: str, values: tuple[float, ...], **kw: object) -> Line:
    return Line(name=name, times=TIMES, values=values, color="#7eb26d", **kw)  # type: ignore[arg-type]


def _figure(*lines: Line) -> dict:  # type: ignore[type-arg]
    return dict(
        chart_figure(
            lines,
            Axes(0.0, 70.0, 10.0, "percentunit", "short"),
            fmt=lambda v: f"{v * 100:.0f}%",
            right_fmt=lambda v: f"{v:.0f}",
            thresholds=[(None, "red"), (0.5, "green")],
            thresholds_style="dashed",
        ).to_plotly_json()
    )


def test_a_gap_breaks_the_line_and_hover_shows_the_units_format() -> None:
    fig = _figure(_line("1h", (0.5, 0.6, 0.7, 0.8, 0.9)))
    (trace,) = fig["data"]
    assert list(trace["y"]) == [0.5, 0.6, 0.7, None, 0.8, 0.9]  # 20 -> 60 is 4 steps
    assert list(trace["customdata"]) == ["50%", "60%", "70%", None, "80%", "90%"]
    assert trace["meta"] == "1h" and fig["layout"]["yaxis"]["tickformat"] == ".0%"
    assert [s["y0"] for s in fig["layout"]["shapes"]] == [0.5]  # the dashed threshold


def test_a_band_fills_between_its_edges_and_counts_sit_under_the_lines() -> None:
    lower = _line("CI lower", (0.4,) * 5, width=0)
    upper = _line("CI upper", (0.6,) * 5, width=0, fill_below_to="CI lower", fill_opacity=0.2)
    counts = _line("n", (5.0, 6.0, 7.0, 8.0, 9.0), right=True, bars=True)
    fig = _figure(_line("1h", (0.5,) * 5), lower, upper, counts)
    band = fig["data"][0]
    assert band["fill"] == "toself" and "meta" not in band
    # two polygons (before and after the gap), each upper edge then lower edge reversed
    assert list(band["y"]) == [0.6, 0.6, 0.6, 0.4, 0.4, 0.4, None, 0.6, 0.6, 0.4, 0.4, None]
    by_name = {t.get("meta"): t for t in fig["data"][1:]}
    assert by_name["n"]["type"] == "bar" and by_name["n"]["yaxis"] == "y"
    assert by_name["1h"]["yaxis"] == "y2" and band["yaxis"] == "y2"
    assert fig["layout"]["yaxis2"]["overlaying"] == "y"  # the lines' axis is drawn on top
    assert fig["layout"]["yaxis"]["side"] == "right"


OVERVIEW = (
    Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards" / "overview.json"
)


def _plotly(html: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The traces and layout of the `Plotly.newPlot(id, data, layout, config)` in `html`."""
    decoder = json.JSONDecoder()
    rest = html.split("Plotly.newPlot(", 1)[1]
    rest = rest[rest.index(",") + 1 :].lstrip()
    data, end = decoder.raw_decode(rest)
    layout, _ = decoder.raw_decode(rest[end:].lstrip(", \n"))
    return data, layout


def test_the_legend_is_drawn_colours_axes_are_titled_and_thresholds_labelled() -> None:
    """The issue's chart: the `n (1h)` bars had a red swatch over faint bars, no axis had a
    title and the threshold lines had no label."""
    panel = next(
        p
        for p in load_dashboard(OVERVIEW).panels
        if p.title == "faithfulness: 1h with 95% CI against 7d"
    )
    series = {
        "A": ("1h", 0.82),
        "B": ("1h CI lower", 0.78),
        "C": ("1h CI upper", 0.86),
        "D": ("7d", 0.8),
        "E": ("n (1h)", 40.0),
    }
    named = [
        Named(name, Series({}, TIMES, (value,) * len(TIMES)), ref)
        for ref, (name, value) in series.items()
    ]
    html = chart_body(panel, named, TimeRange(0.0, 70.0, 10.0), "chart-t", threshold_levels)
    traces, layout = _plotly(html)
    drawn = {
        t["meta"]: t["marker"]["color"] if t["type"] == "bar" else t["line"]["color"]
        for t in traces
        if t.get("meta")
    }
    legend = dict(re.findall(r'data-series="([^"]+)"><i style="background:([^"]+)"', html))
    assert set(legend) == {"1h", "7d", "n (1h)"}
    assert legend == {name: drawn[name] for name in legend}
    assert legend["n (1h)"].startswith("rgba(140,149,159,")  # grey counts, not a palette red
    # axes: the metric on the lines' axis, n on the counts' axis, time along x
    assert layout["yaxis2"]["title"]["text"] == "faithfulness"
    assert layout["yaxis"]["title"]["text"] == "n (traces)"  # the JSON's axisLabel
    assert layout["xaxis"]["title"]["text"] == "time (UTC)"
    # every threshold line carries the level it starts and its value
    levels = threshold_levels("faithfulness")
    lines = [s["y0"] for s in layout["shapes"]]
    texts = [a["text"] for a in layout["annotations"]]
    assert lines == [0.3, 0.5, 0.7, 0.9]
    assert texts == [f"{levels[v]} ≥ {v:.3f}" for v in lines]
    assert texts[-1] == "excellent ≥ 0.900"


def test_axis_titles_name_the_unit() -> None:
    assert axis_title("latency_ms_p95", "ms") == "latency_ms_p95 (ms)"
    assert axis_title("hit_rate@1", "percentunit") == "hit_rate@1 (%)"
    assert axis_title("n (1h)", "short") == "n (1h)"
    assert axis_title("x" * 40, None).endswith("…") and len(axis_title("x" * 40, None)) == 32


def test_a_strict_bound_says_greater_than() -> None:
    fmt = "{:.3f}".format
    assert threshold_label(math.nextafter(0.8, math.inf), "excellent", fmt) == "excellent > 0.800"
    assert threshold_label(0.9, "excellent", fmt) == "excellent ≥ 0.900"


def test_a_threshold_without_a_level_name_still_says_its_value() -> None:
    fig = _figure(_line("1h", (0.5, 0.6, 0.7, 0.8, 0.9)))
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["≥ 50%"]


def test_a_restarted_exporters_series_continues_in_one_colour_and_legend_entry() -> None:
    """After a restart on another port, Prometheus holds the same series twice (a new
    `instance`): drawn as one line's colour, with one legend entry of the newer value."""
    panel = next(
        p
        for p in load_dashboard(OVERVIEW).panels
        if p.title == "faithfulness: 1h with 95% CI against 7d"
    )
    before = Series({"instance": "a:9464"}, (0.0, 10.0), (0.8, 0.81))
    after = Series({"instance": "a:42601"}, (40.0, 50.0, 60.0), (0.7, 0.71, 0.72))
    named = [Named("1h", before, "A"), Named("1h", after, "A"), Named("7d", before, "D")]
    html = chart_body(panel, named, TimeRange(0.0, 70.0, 10.0), "chart-r", threshold_levels)
    traces, _ = _plotly(html)
    colours = {t["line"]["color"] for t in traces if t.get("meta") == "1h"}
    assert len(colours) == 1
    legend = re.findall(r'data-series="([^"]+)"><i style="background:([^"]+)"></i>([^<]*)', html)
    assert [(name, text) for name, _, text in legend] == [("1h", "1h: 0.720"), ("7d", "7d: 0.810")]
    assert legend[0][1] in colours and legend[1][1] not in colours


def test_a_line_at_the_top_of_its_range_is_drawn_whole() -> None:
    """Plotly's autorange put a share at 1.0 on the plot's edge, its line cut in half."""
    fig = _figure(_line("1h", (0.9, 1.0, 1.0, 1.0, 1.0)))
    low, high = fig["layout"]["yaxis"]["range"]
    assert high > 1.0 and low < 0.5  # room above the line, the 0.5 threshold still drawn
