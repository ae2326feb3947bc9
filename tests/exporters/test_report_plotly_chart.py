"""Time-series figures (`exporters.report.plotly_chart`): gaps break lines, a CI band is
a filled polygon on its series' axis, counts on the right axis sit under the lines."""

from __future__ import annotations

from exporters.report.plotly_chart import Axes, chart_figure
from exporters.report.svg import Line

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
