"""The traces under a quality panel: its metric's worst traces over the shown range.

`ragpulse report` can read the store as well as Prometheus: under every panel that shows
one metric with per-trace scores, a table of that range's worst traces (trace id, time,
tenant, score, question, what the judge said) and, when the metric got worse against
its baseline, the slice the change comes from (`ragpulse explain`). The store is read
through a `Drill` function the command builds; this module only decides where and draws.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape

QUESTION_CHARS = 90
REASON_CHARS = 160


@dataclass(frozen=True)
class TraceRow:
    trace_id: str
    timestamp: float
    tenant: str | None
    value: float
    question: str
    reason: str | None = None


@dataclass(frozen=True)
class Drilled:
    """A metric's worst traces over a range, and the headline of its change if worse."""

    metric: str
    rows: Sequence[TraceRow] = field(default_factory=tuple)
    headline: str | None = None


Drill = Callable[[str, float, float, str | None], Drilled | None]
"""(metric, start, end epoch seconds, tenant or None) -> what to show, or None when the
metric has no per-trace scores (dataset metrics, counts)."""

_METRIC = re.compile(r'metric="([^"]+)"')


def panel_metric(queries: Sequence[str]) -> str | None:
    """The one metric a panel's queries select by name (`metric="..."`), else None."""
    names = {m for q in queries for m in _METRIC.findall(q)}
    return names.pop() if len(names) == 1 else None


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def drill_html(drilled: Drilled, anchor: str | None = None) -> str:
    """The table (and headline) drawn under the panel; `anchor` is its id, the target of
    the verdict's "worst traces" links (one table per metric has it)."""
    parts = ['<div class="drill">']
    if drilled.headline:
        parts.append(f'<p class="headline">{escape(drilled.headline)}</p>')
    if not drilled.rows:
        parts.append('<p class="status">no scored traces in this range</p></div>')
        return "".join(parts)
    ident = f' id="{escape(anchor)}"' if anchor else ""
    parts.append(
        f"<details{ident}><summary>worst traces of {escape(drilled.metric)} "
        f"({len(drilled.rows)})</summary><table><thead><tr><th>trace</th><th>time</th>"
        "<th>tenant</th><th>score</th><th>question / judge</th></tr></thead><tbody>"
    )
    for row in drilled.rows:
        when = datetime.fromtimestamp(row.timestamp, UTC).strftime("%m-%d %H:%M")
        said = f"<br><small>{escape(_cut(row.reason, REASON_CHARS))}</small>" if row.reason else ""
        parts.append(
            f"<tr><td><code>{escape(row.trace_id)}</code></td><td>{when}</td>"
            f"<td>{escape(row.tenant or '-')}</td><td>{row.value:.3f}</td>"
            f"<td>{escape(_cut(row.question, QUESTION_CHARS))}{said}</td></tr>"
        )
    parts.append("</tbody></table></details></div>")
    return "".join(parts)
