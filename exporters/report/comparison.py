"""`ragpulse compare --output-html`: a comparison as a static page — the difference B - A
of every metric with its 95% interval on one forest plot (red where B is significantly
worse, green where better), and the table of the terminal output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from exporters.report.figures import Interval, interval_chart
from exporters.report.page import PanelHtml, grid_html, page

COLORS = {"worse": "#f2495c", "better": "#73bf69", None: "#8ab8ff"}


def _fmt(value: float) -> str:
    return f"{value:+.4g}"


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return escape(str(value))


COLUMNS = (
    ("metric", "metric"),
    ("mean_a", "A"),
    ("mean_b", "B"),
    ("diff", "B − A"),
    ("ci_lower", "CI low"),
    ("ci_upper", "CI high"),
    ("effect_size", "effect"),
    ("p_value", "p"),
    ("p_adjusted", "p adjusted"),
    ("significant", "significant"),
    ("mde", "detectable"),
    ("n", "n"),
    ("verdict", "verdict"),
)


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{escape(title)}</th>" for _k, title in COLUMNS)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="{"" if key == "metric" else "num"}">{_cell(row.get(key))}</td>'
            for key, _t in COLUMNS
        )
        body.append(f'<tr data-verdict="{escape(str(row.get("verdict") or ""))}">{cells}</tr>')
    return f'<table class="values"><tr>{head}</tr>{"".join(body)}</table>'


def render_comparison(doc: Mapping[str, Any]) -> str:
    """The page of one comparison (the JSON document of `ragpulse compare --json`)."""
    rows: Sequence[Mapping[str, Any]] = doc.get("metrics", [])
    intervals = [
        Interval(
            str(r["metric"]),
            float(r["diff"]),
            r.get("ci_lower"),
            r.get("ci_upper"),
            COLORS.get(r.get("verdict"), COLORS[None]),
            "  *" if r.get("significant") else "",
        )
        for r in rows
    ]
    panels = [
        PanelHtml(
            "B − A with 95% intervals",
            interval_chart(intervals, _fmt)
            if intervals
            else '<div class="status">no metric compared</div>',
            "ok" if intervals else "nodata",
            24,
            "Each metric's difference; * significant after the correction.",
            row="Comparison",
        ),
        PanelHtml("Table", _table(rows), "ok" if rows else "nodata", 24, row="Comparison"),
    ]
    skipped: Sequence[Mapping[str, Any]] = doc.get("skipped", [])
    header = [
        f"A = {doc.get('a', '?')}",
        f"B = {doc.get('b', '?')}",
        f"{doc.get('pairing', '')}; correction {doc.get('correction', '?')} at alpha "
        f"{doc.get('alpha', '?')}; {doc.get('resamples', '?')} resamples, "
        f"seed {doc.get('seed', '?')}",
        f"generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
    ]
    if skipped:
        header.append(
            "not compared: " + "; ".join(f"{s.get('metric')} ({s.get('reason')})" for s in skipped)
        )
    if doc.get("failed_on"):
        header.append("release gate failed on " + ", ".join(map(str, doc["failed_on"])))
    return page("ragpulse comparison", header, grid_html(panels))


def write_comparison_report(path: Path, doc: Mapping[str, Any]) -> None:
    path.write_text(render_comparison(doc), encoding="utf-8")
