"""Heatmap cells from cumulative bucket series, and exemplars from Prometheus's answer
(`exporters.report.heatmap`)."""

from __future__ import annotations

from exporters.report.heatmap import Exemplar, cells, exemplars_of, heatmap_div
from exporters.report.promapi import Series


def _bucket(le: str, values: tuple[float, ...]) -> Series:
    return Series({"le": le}, (10.0, 20.0, 30.0)[: len(values)], values)


def test_cells_are_each_buckets_own_count_lowest_first() -> None:
    series = [
        _bucket("+Inf", (5.0, 8.0, 2.0)),
        _bucket("0.5", (3.0, 4.0, 2.0)),
        _bucket("0.0", (1.0, 0.0, 2.0)),
        _bucket("1.0", (5.0, 8.0, 2.0)),
    ]
    grid = cells(series)
    assert grid is not None
    assert grid.times == (10.0, 20.0, 30.0)
    # +Inf holds nothing above 1.0 here: left out
    assert grid.rows == ("≤ 0", "0–0.5", "0.5–1")
    assert grid.counts == ((1.0, 0.0, 2.0), (2.0, 4.0, 0.0), (2.0, 4.0, 0.0))


def test_a_non_empty_top_bucket_stays_and_missing_points_count_zero() -> None:
    series = [_bucket("1", (1.0, 1.0)), Series({"le": "+Inf"}, (10.0, 20.0, 30.0), (1, 3, 4))]
    grid = cells(series)
    assert grid is not None and grid.rows == ("≤ 1", "> 1")
    assert grid.counts == ((1.0, 1.0, 0.0), (0.0, 2.0, 4.0))
    assert cells([Series({"metric": "x"}, (1.0,), (1.0,))]) is None


def test_exemplars_need_a_trace_id_and_a_number() -> None:
    answer = [
        {
            "seriesLabels": {"le": "0.5"},
            "exemplars": [
                {"labels": {"trace_id": "t-2"}, "value": "0.4", "timestamp": 20.5},
                {"labels": {"trace_id": "t-1"}, "value": "0.1", "timestamp": 10},
                {"labels": {}, "value": "0.3", "timestamp": 11},
                {"labels": {"trace_id": "t-3"}, "value": "oops", "timestamp": 12},
            ],
        }
    ]
    assert exemplars_of(answer) == [Exemplar("t-1", 10.0, 0.1), Exemplar("t-2", 20.5, 0.4)]


def test_the_div_holds_a_plotly_heatmap_and_the_exemplar_trace_ids() -> None:
    grid = cells([_bucket("0.5", (1.0, 2.0, 3.0)), _bucket("1", (2.0, 2.0, 3.0))])
    assert grid is not None
    html = heatmap_div(grid, [Exemplar("trace-abc", 20.0, 0.9)], "hm-1")
    assert 'id="hm-1"' in html and '"type":"heatmap"' in html and "trace-abc" in html
