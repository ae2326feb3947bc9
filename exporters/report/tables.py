"""Table panels with Grafana's `merge` transformation: one row per label set (e.g. metric
and version), one column per query (value, CI lower, CI upper, n), as Grafana shows
them — not one flat row per series. Rows are grouped by their first label: it is printed
once per group. Column names, hidden labels and order come from the `organize`
transformation; each column's decimals and unit from the panel's overrides (so a count
`n` prints `85`, not `85.000`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from exporters.report.dashboards import Panel
from exporters.report.units import format_value

HIDDEN = frozenset({"__name__", "job", "instance", "Time"})


@dataclass(frozen=True)
class Cell:
    """One query's value for one label set; `ref` is the query's refId."""

    ref: str
    labels: Mapping[str, str]
    value: float


def _options(panel: Panel, kind: str) -> Mapping[str, Any]:
    for step in panel.transformations:
        if step.get("id") == kind:
            options = step.get("options") or {}
            return options if isinstance(options, dict) else {}
    return {}


def merges(panel: Panel) -> bool:
    return any(step.get("id") == "merge" for step in panel.transformations)


def merged_table(panel: Panel, found: Sequence[Cell]) -> str:
    """The merged table's HTML (`table.values`, one `tr` per label set)."""
    organize = _options(panel, "organize")
    excluded = {k for k, v in (organize.get("excludeByName") or {}).items() if v} | HIDDEN
    rename: Mapping[str, str] = organize.get("renameByName") or {}
    index: Mapping[str, int] = organize.get("indexByName") or {}
    refs = [t.ref_id for t in panel.targets]
    labels = sorted(
        {k for c in found for k in c.labels if k not in excluded},
        key=lambda k: (index.get(k, len(index)), k),
    )
    columns = sorted(refs, key=lambda r: index.get(f"Value #{r}", len(index)))
    rows: dict[tuple[str, ...], dict[str, float]] = {}
    for cell in found:
        key = tuple(cell.labels.get(k, "") for k in labels)
        rows.setdefault(key, {})[cell.ref] = cell.value
    names = {r: str(rename.get(f"Value #{r}", r)) for r in refs}
    head = "".join(f"<th>{escape(k)}</th>" for k in labels) + "".join(
        f'<th class="num">{escape(names[r])}</th>' for r in columns
    )
    body = []
    previous: tuple[str, ...] | None = None
    for key in sorted(rows):
        shown = [
            "" if previous is not None and i == 0 and previous[0] == part else part
            for i, part in enumerate(key)
        ]
        previous = key
        cells = "".join(f"<td>{escape(part)}</td>" for part in shown)
        for ref in columns:
            value = rows[key].get(ref)
            props = panel.series_props(names[ref])
            text = (
                "–"
                if value is None
                else format_value(
                    value, props.get("unit", panel.unit), props.get("decimals", panel.decimals)
                )
            )
            cells += f'<td class="num">{escape(text)}</td>'
        body.append(f"<tr>{cells}</tr>")
    return f'<table class="values merged"><tr>{head}</tr>{"".join(body)}</table>'
