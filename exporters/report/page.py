"""The HTML shell of a report: one self-contained page (inline CSS, small SVG figures,
plotly.js when there are Plotly charts, and a little JavaScript; nothing loaded from the
network)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

CSS = """
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #f6f8fa; }
.drill { margin-top: 6px; font-size: 12px; }
.drill .headline { margin: 4px 0; font-weight: 600; color: #b42318; }
.drill table { border-collapse: collapse; width: 100%; }
.drill td, .drill th { border-top: 1px solid var(--line); padding: 2px 4px; text-align: left;
  vertical-align: top; }
.drill small { color: var(--muted); }
* { box-sizing: border-box; }
body { margin: 0; padding: 16px 20px 40px; font: 13px/1.4 system-ui, -apple-system,
  "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
header h1 { font-size: 20px; margin: 0 0 4px; }
header p, .meta { color: var(--muted); margin: 2px 0; }
h2.dashboard { font-size: 17px; margin: 26px 0 2px; }
h3.row { font-size: 14px; margin: 14px 0 6px; padding-bottom: 3px;
  border-bottom: 1px solid var(--line); }
details.fold { margin: 8px 0 0; font-size: 12px; color: var(--muted); }
details.fold > summary { padding: 3px 0; }
details.fold > summary b { color: var(--fg); }
details.fold[open] > .grid { margin-top: 6px; }
.verdict { background: #fff; border: 1px solid var(--line); border-left-width: 6px;
  border-radius: 6px; padding: 8px 12px; margin: 10px 0 4px; }
.verdict h2 { font-size: 18px; margin: 0 0 2px; }
.verdict[data-level="paging"] { border-left-color: #cf222e; }
.verdict[data-level="watch"] { border-left-color: #d4a72c; }
.verdict[data-level="fine"] { border-left-color: #2da44e; }
table.tiers { border-collapse: collapse; width: 100%; margin-top: 6px; font-size: 12px; }
table.tiers th { text-align: left; color: var(--muted); font-weight: 600; padding: 2px 6px;
  border-bottom: 1px solid var(--line); }
table.tiers td { padding: 4px 6px; border-bottom: 1px solid #eaeef2; vertical-align: top; }
table.tiers td.name { font-weight: 600; width: 17%; }
table.tiers td.changed { width: 34%; }
table.tiers td.alerts { width: 26%; }
table.tiers a { color: #0969da; text-decoration: none; }
.badge { display: inline-block; min-width: 56px; text-align: center; border-radius: 10px;
  padding: 1px 8px; font-weight: 600; color: #fff; background: #8c959f; white-space: nowrap; }
tr[data-level="paging"] .badge { background: #cf222e; }
tr[data-level="watch"] .badge { background: #bf8700; }
tr[data-level="fine"] .badge { background: #2da44e; }
tr[data-level="no data"] td { color: var(--muted); }
.verdict .why, .verdict .none { color: var(--muted); }
.alert { margin-bottom: 4px; }
.alert .sev { text-transform: uppercase; font-size: 10px; font-weight: 700; color: #bf8700; }
.alert[data-severity="critical"] .sev { color: #cf222e; }
.alert .runbook { color: var(--muted); font-size: 11px; cursor: pointer; overflow: hidden;
  display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; }
.alert .runbook.full { display: block; }
.other-alerts, .resolved-alerts { margin-top: 6px; font-size: 12px; }
.alert[data-state="resolved"] { opacity: 0.7; }
.alert[data-state="resolved"] .sev { color: var(--muted); }
.grid { display: grid; grid-template-columns: repeat(24, minmax(0, 1fr)); gap: 10px; }
.panel { position: relative; background: #fff; border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 10px; min-width: 0; }
.panel h4 { font-size: 13px; margin: 0 0 4px; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
.panel[data-state="nodata"] { border-style: dashed; }
.panel[data-state="error"] { border-color: #cf222e; }
.panel .status { color: var(--muted); font-style: italic; padding: 24px 0; text-align: center; }
.panel[data-state="error"] .status { color: #cf222e; font-style: normal; }
svg.chart { display: block; font-size: 10px; }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .frame { fill: none; stroke: #d0d7de; }
svg .axis { fill: var(--muted); font-size: 10px; }
svg .series { fill: none; stroke-linejoin: round; }
svg .threshold { stroke-width: 1.2; }
.legend { display: flex; flex-wrap: wrap; gap: 2px 12px; margin-top: 4px; font-size: 11px; }
.legend span { cursor: pointer; white-space: nowrap; }
.legend span.off { opacity: 0.35; }
.legend i { display: inline-block; width: 10px; height: 3px; margin-right: 4px;
  vertical-align: middle; }
.stats { display: flex; gap: 6px; flex-wrap: wrap; }
.stat { flex: 1 1 120px; border-radius: 4px; padding: 6px 8px; min-width: 0; }
.stat .value { font-size: 26px; font-weight: 600; line-height: 1.2; }
.stat .name { font-size: 11px; opacity: 0.85; overflow: hidden; text-overflow: ellipsis; }
.stat.bg { color: #fff; }
table.values { border-collapse: collapse; width: 100%; font-size: 12px; }
table.values th, table.values td { text-align: left; padding: 3px 6px;
  border-bottom: 1px solid #eaeef2; }
table.values td.num, table.values th.num { text-align: right;
  font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: 9px; height: 9px; border-radius: 50%;
  margin-right: 4px; }
pre.text { white-space: pre-wrap; margin: 0; font: inherit; }
details { margin-top: 4px; font-size: 11px; color: var(--muted); }
details summary { cursor: pointer; }
pre.query { white-space: pre-wrap; word-break: break-all; margin: 2px 0; font-size: 10px; }
@media (max-width: 900px) { .panel { grid-column: 1 / -1 !important; } }
"""

# Legend clicks hide a series of the Plotly chart; links open the folded sections they
# point into; when the page is laid out, the root element records how many panels drew
# data (a headless browser test reads it).
SCRIPT = """
(function () {
  document.querySelectorAll('.legend span[data-series]').forEach(function (item) {
    item.addEventListener('click', function () {
      var panel = item.closest('.panel');
      var name = item.getAttribute('data-series');
      var off = item.classList.toggle('off');
      var plot = panel.querySelector('.plotly-chart .js-plotly-plot');
      if (plot && window.Plotly) {
        var hit = [];
        plot.data.forEach(function (trace, i) { if (trace.meta === name) { hit.push(i); } });
        if (hit.length) { Plotly.restyle(plot, {visible: off ? false : true}, hit); }
      }
    });
  });
  document.querySelectorAll('.alert .runbook').forEach(function (text) {
    text.addEventListener('click', function () { text.classList.toggle('full'); });
  });
  // a link to a table in a closed <details> (or a folded row) opens it first
  function reveal(id) {
    var target = document.getElementById(id);
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === 'DETAILS') { node.open = true; }
    }
  }
  document.querySelectorAll('a[href^="#"]').forEach(function (a) {
    a.addEventListener('click', function () { reveal(a.getAttribute('href').slice(1)); });
  });
  if (location.hash) { reveal(location.hash.slice(1)); }
  var panels = document.querySelectorAll('.panel');
  var withData = 0;
  panels.forEach(function (p) {
    var drawn = p.querySelector(
      'svg .series, svg circle, svg rect, .stat, table.values, pre.text, .plotly-heatmap, '
      + '.plotly-chart');
    if (p.getAttribute('data-state') === 'ok' && drawn) { withData += 1; }
  });
  var root = document.documentElement;
  root.setAttribute('data-panels', String(panels.length));
  root.setAttribute('data-panels-with-data', String(withData));
  root.setAttribute('data-report', 'rendered');
})();
"""


@dataclass(frozen=True)
class PanelHtml:
    """A rendered panel: `state` is ok, nodata or error; `width` in Grafana's 24 columns."""

    title: str
    body: str
    state: str
    width: int = 8
    description: str = ""
    row: str = ""
    queries: tuple[str, ...] = ()
    empty_reason: str | None = None
    """Why a panel without data has none, for a folded row's summary."""
    empty_short: str = ""
    """That reason in a few words, for the report's count of empty panels by reason."""


def legend_html(entries: Sequence[tuple[str, str, str]]) -> str:
    """Legend of (series name, colour, text shown)."""
    if not entries:
        return ""
    items = "".join(
        f'<span data-series="{escape(name)}"><i style="background:{color}"></i>'
        f"{escape(text)}</span>"
        for name, color, text in entries
    )
    return f'<div class="legend">{items}</div>'


def panel_html(panel: PanelHtml) -> str:
    width = max(1, min(24, panel.width))
    queries = "".join(f'<pre class="query">{escape(q)}</pre>' for q in panel.queries)
    details = f"<details><summary>PromQL</summary>{queries}</details>" if queries else ""
    return (
        f'<section class="panel" data-state="{panel.state}" style="grid-column: span {width}" '
        f'title="{escape(panel.description)}"><h4>{escape(panel.title)}</h4>{panel.body}'
        f"{details}</section>"
    )


def _row_html(title: str, panels: Sequence[PanelHtml], ident: str) -> str:
    """A row's heading and its panels; a row where no panel has data is folded, its
    summary saying why (the panels' own reasons, once each)."""
    grid = '<div class="grid">' + "".join(panel_html(p) for p in panels) + "</div>"
    heading = f'<h3 class="row">{escape(title)}</h3>' if title else ""
    if panels and all(p.state == "nodata" for p in panels):
        reasons = list(dict.fromkeys(p.empty_reason for p in panels if p.empty_reason))
        why = "; ".join(reasons) or "no data"
        name = escape(title or "panels")
        return (
            f'<details class="fold" id="{escape(ident)}"><summary><b>{name}</b> — '
            f"nothing to show: {escape(why)}</summary>{grid}</details>"
        )
    if title:
        heading = f'<h3 class="row" id="{escape(ident)}">{escape(title)}</h3>'
    return heading + grid


def grid_html(panels: Sequence[PanelHtml], id_prefix: str = "") -> str:
    """Panels in 24-column grids, one per row title; `id_prefix` keeps the rows' ids
    unique when several dashboards share row titles."""
    groups: list[tuple[str, list[PanelHtml]]] = []
    for panel in panels:
        if not groups or groups[-1][0] != panel.row:
            groups.append((panel.row, []))
        groups[-1][1].append(panel)
    parts = []
    for title, members in groups:
        ident = id_prefix + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        parts.append(_row_html(title, members, ident))
    return "".join(parts)


def plotly_script() -> str:
    """plotly.js, embedded once (~4.8 MB) so a page with Plotly figures loads nothing."""
    from plotly.offline import get_plotlyjs

    return f'<script id="plotly-js">{get_plotlyjs()}</script>'


def page(title: str, header_lines: Sequence[str], body: str) -> str:
    """The page; plotly.js is embedded only when the body holds a Plotly figure."""
    lines = "".join(f"<p>{escape(line)}</p>" for line in header_lines)
    plotted = 'class="plotly-heatmap"' in body or 'class="plotly-chart"' in body
    library = plotly_script() if plotted else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style>{library}</head>"
        f"<body><header><h1>{escape(title)}</h1>{lines}</header>{body}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
