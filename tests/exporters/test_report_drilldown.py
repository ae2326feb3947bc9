"""The report's drill-down pieces: which panels get a table, and what it shows."""

from __future__ import annotations

from exporters.report.drilldown import Drilled, TraceRow, drill_html, panel_metric


def test_a_panel_of_one_named_metric_gets_the_table() -> None:
    assert panel_metric(['ragpulse_metric_value{metric="mrr",window="1h"}']) == "mrr"
    assert (
        panel_metric(
            ['ragpulse_metric_value{metric="mrr"}', 'ragpulse_metric_ci_lower{metric="mrr"}']
        )
        == "mrr"
    )
    assert panel_metric(['x{metric="mrr"}', 'x{metric="ndcg@10"}']) is None
    assert panel_metric(['ragpulse_metric_value{metric=~"hit_rate@.*"}']) is None


def test_the_table_escapes_and_cuts_what_traces_carry() -> None:
    html = drill_html(
        Drilled(
            "faithfulness",
            (
                TraceRow("t<1>", 0.0, "acme", 0.125, "Как <b>вернуть</b> " + "x" * 200, "why"),
                TraceRow("t2", 60.0, None, 0.5, "q"),
            ),
            "faithfulness fell 0.2 (0.9 -> 0.7); 80% of the drop is tenant acme",
        )
    )
    assert "t&lt;1&gt;" in html and "&lt;b&gt;вернуть" in html and "<b>" not in html
    assert "0.125" in html and "…" in html and "<small>why</small>" in html
    assert "80% of the drop is tenant acme" in html and "worst traces of faithfulness (2)" in html
    assert "no scored traces" in drill_html(Drilled("mrr"))
