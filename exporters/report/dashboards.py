"""Read Grafana dashboard JSON into what a static report needs: panels, queries, legends,
units, thresholds and series overrides — data-driven, so a panel added to the JSON shows
up in the report without code changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The dashboards shipped in the source tree (dashboards/build.py writes them).
SHIPPED = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"


class DashboardError(ValueError):
    """A dashboard path or file that cannot be used; the message is one line."""


# Grafana's named colours (the ones its palette offers) -> CSS.
COLORS = {
    "red": "#f2495c",
    "dark-red": "#c4162a",
    "semi-dark-red": "#e02f44",
    "light-red": "#ff7383",
    "orange": "#ff9830",
    "dark-orange": "#fa6400",
    "yellow": "#fade2a",
    "dark-yellow": "#e0b400",
    "semi-dark-yellow": "#f2cc0c",
    "green": "#73bf69",
    "dark-green": "#37872d",
    "semi-dark-green": "#56a64b",
    "light-green": "#96d98d",
    "blue": "#5794f2",
    "dark-blue": "#1f60c4",
    "semi-dark-blue": "#3274d9",
    "light-blue": "#8ab8ff",
    "purple": "#b877d9",
    "dark-purple": "#8f3bb8",
    "text": "#333333",
    "transparent": "transparent",
}


def css_color(name: str) -> str:
    """A Grafana colour name (or a CSS colour, kept) as CSS."""
    return COLORS.get(name, name)


@dataclass(frozen=True)
class Target:
    ref_id: str
    expr: str
    legend: str
    instant: bool = False
    """Grafana's "Instant" query: one value at the range's end (a table of what holds now,
    such as the firing alerts), not the series over the range."""


@dataclass(frozen=True)
class Panel:
    """One visible panel; `row` is the title of the row it sits under."""

    type: str
    title: str
    description: str
    targets: tuple[Target, ...]
    width: int
    row: str
    unit: str | None
    decimals: int | None
    min: float | None
    max: float | None
    thresholds: tuple[tuple[float | None, str], ...]
    thresholds_style: str
    overrides: Mapping[str, Mapping[str, Any]]
    options: Mapping[str, Any]
    custom: Mapping[str, Any] = field(default_factory=dict)
    pattern_overrides: tuple[tuple[re.Pattern[str], Mapping[str, Any]], ...] = ()
    """`byRegexp` overrides: (pattern, properties), matched against a series' name."""
    no_value: str | None = None
    """Grafana's `noValue`: what the panel says when it has no data (why it can be empty)."""
    transformations: tuple[Mapping[str, Any], ...] = ()
    """Grafana's data transformations (`merge`, `organize`, ...) in order."""

    def threshold_color(self, value: float) -> str | None:
        """The colour of the last step whose value is <= `value` (Grafana's rule)."""
        color = None
        for step, name in self.thresholds:
            if step is None or value >= step:
                color = css_color(name)
        return color

    def series_props(self, name: str) -> Mapping[str, Any]:
        """Override properties of a series by its display name (`byRegexp` matchers, then
        `byName` ones, which win)."""
        props: dict[str, Any] = {}
        for pattern, matched in self.pattern_overrides:
            if pattern.search(name):
                props.update(matched)
        props.update(self.overrides.get(name, {}))
        return props


@dataclass(frozen=True)
class Variable:
    name: str
    default: str


@dataclass(frozen=True)
class Dashboard:
    path: Path
    uid: str
    title: str
    description: str
    time_from: str
    panels: tuple[Panel, ...]
    variables: tuple[Variable, ...] = field(default_factory=tuple)


def dashboard_files(paths: Iterable[Path]) -> list[Path]:
    """JSON files named by `paths` (files, or folders holding *.json), in order."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise DashboardError(f"no dashboard JSON files in {path}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise DashboardError(f"dashboard path not found: {path}")
    return files


def load_dashboards(paths: Iterable[Path]) -> list[Dashboard]:
    return [load_dashboard(p) for p in dashboard_files(paths)]


def load_dashboard(path: Path) -> Dashboard:
    try:
        board = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DashboardError(f"cannot read dashboard {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DashboardError(f"{path} is not JSON: line {exc.lineno}: {exc.msg}") from None
    return parse_dashboard(board, path)


def parse_dashboard(board: Any, path: Path) -> Dashboard:
    """A dashboard's parsed JSON (`path`: where it is, or would be, stored)."""
    if not isinstance(board, dict) or not isinstance(board.get("panels"), list):
        raise DashboardError(f"{path} is not a Grafana dashboard (no panels list)")
    return Dashboard(
        path=path,
        uid=str(board.get("uid", path.stem)),
        title=str(board.get("title", path.stem)),
        description=str(board.get("description", "")),
        time_from=str(board.get("time", {}).get("from", "now-6h")),
        panels=tuple(_panels(board["panels"])),
        variables=tuple(_variables(board)),
    )


def _panels(items: Sequence[Any], row: str = "") -> Iterable[Panel]:
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "row":
            row = str(item.get("title", ""))
            # A collapsed row keeps its panels inside it.
            yield from _panels(item.get("panels") or [], row)
            continue
        yield _panel(item, row)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _panel(item: Mapping[str, Any], row: str) -> Panel:
    config = item.get("fieldConfig") or {}
    defaults = config.get("defaults") or {}
    custom = defaults.get("custom") or {}
    steps = (defaults.get("thresholds") or {}).get("steps") or []
    overrides: dict[str, dict[str, Any]] = {}
    patterns: list[tuple[re.Pattern[str], Mapping[str, Any]]] = []
    for override in config.get("overrides") or []:
        matcher = override.get("matcher") or {}
        # `custom.lineWidth` and the panel-wide `custom` block share one namespace.
        found = {
            str(prop.get("id")).removeprefix("custom."): prop.get("value")
            for prop in override.get("properties") or []
        }
        if matcher.get("id") == "byName":
            overrides.setdefault(str(matcher.get("options")), {}).update(found)
        elif matcher.get("id") == "byRegexp":
            try:
                patterns.append((re.compile(str(matcher.get("options"))), found))
            except re.error:
                continue  # Grafana ignores a matcher it cannot compile too
    targets = tuple(
        Target(
            ref_id=str(t.get("refId", chr(65 + i))),
            expr=str(t["expr"]),
            legend=str(t.get("legendFormat") or ""),
            instant=bool(t.get("instant")) and not t.get("range"),
        )
        for i, t in enumerate(item.get("targets") or [])
        if isinstance(t, dict) and t.get("expr") and not t.get("hide")
    )
    grid = item.get("gridPos") or {}
    return Panel(
        type=str(item.get("type", "timeseries")),
        title=str(item.get("title", "")),
        description=str(item.get("description", "")),
        targets=targets,
        width=int(grid.get("w", 8)),
        row=row,
        no_value=str(defaults["noValue"]) if defaults.get("noValue") else None,
        unit=defaults.get("unit"),
        decimals=defaults.get("decimals"),
        min=_number(defaults.get("min")),
        max=_number(defaults.get("max")),
        thresholds=tuple(
            (_number(s.get("value")), str(s.get("color", "green")))
            for s in steps
            if isinstance(s, dict)
        ),
        thresholds_style=str((custom.get("thresholdsStyle") or {}).get("mode", "off")),
        overrides=overrides,
        options=item.get("options") or {},
        custom=custom,
        pattern_overrides=tuple(patterns),
        transformations=tuple(t for t in item.get("transformations") or [] if isinstance(t, dict)),
    )


def _variables(board: Mapping[str, Any]) -> Iterable[Variable]:
    for var in (board.get("templating") or {}).get("list") or []:
        if not isinstance(var, dict) or var.get("type") == "datasource":
            continue
        current = (var.get("current") or {}).get("value")
        if isinstance(current, list):
            current = current[0] if current else ""
        if current in (None, "$__all", "All"):
            default = str(var.get("allValue") if var.get("allValue") is not None else ".*")
        else:
            default = str(current)
        yield Variable(str(var.get("name")), default)


_VARIABLE = re.compile(r"\$\{(\w+)(?::[\w]+)?\}|\[\[(\w+)\]\]|\$(\w+)")


def substitute(expr: str, values: Mapping[str, str]) -> str:
    """Replace `$name`, `${name}`, `${name:fmt}` and `[[name]]` by their values; unknown
    names stay (Prometheus then reports the query as invalid)."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(3)
        return values.get(name, match.group(0))

    return _VARIABLE.sub(replace, expr)


_LABEL = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")


def legend(fmt: str, metric: Mapping[str, str]) -> str:
    """Grafana's legendFormat: `{{label}}` replaced by the series' label value; an empty
    format (or `__auto`) shows the series as `name{labels}`."""
    if fmt and fmt != "__auto":
        return _LABEL.sub(lambda m: metric.get(m.group(1), ""), fmt).strip()
    name = metric.get("__name__", "")
    labels = ", ".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{labels}}}" if labels else (name or "value")
