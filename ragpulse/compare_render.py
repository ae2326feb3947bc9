"""What `ragpulse compare` prints: the table, the JSON document, and the release gate.

"Worse" follows each metric's direction in the registry (higher or lower is better); a
metric with no direction (a count) is never worse. The gate (`--fail-on`) fails when B is
significantly worse, after the correction, on a named metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluators.comparison.result import MetricComparison
from evaluators.comparison.rows import RowsComparison

CORRECTIONS = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
EFFECT = {"cohens_dz": "d_z", "hedges_g": "g", "cohens_h": "h"}


def direction(metric: str) -> str:
    """ "higher", "lower" or "none" (unknown names, e.g. external:<name>: higher)."""
    from evaluators.errors import UnknownMetricError
    from evaluators.registry import describe

    try:
        return describe(metric).direction or "none"
    except UnknownMetricError:
        return "higher"


def verdict(c: MetricComparison) -> str:
    """ "worse", "better" or "" (not significant, or no direction)."""
    way = direction(c.metric)
    if not c.significant or way == "none" or c.diff == 0:
        return ""
    better = c.diff > 0 if way == "higher" else c.diff < 0
    return "better" if better else "worse"


@dataclass(frozen=True)
class Sides:
    a: str
    b: str
    """What A and B are: a run file, or a version and its window."""
    history: str | None = None
    """The store's history when the window asked is longer ("4 min of history: ...")."""


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 0.001 else "<0.001"


def render_table(found: RowsComparison, sides: Sides) -> str:
    cmp = found.comparison
    lines = [
        f"A = {sides.a}",
        f"B = {sides.b}",
        *([sides.history] if sides.history else []),
        f"{found.describe()}; {CORRECTIONS.get(cmp.correction, cmp.correction)} correction "
        f"across {len(cmp.metrics)} metrics, alpha {cmp.alpha:g}, {cmp.resamples} resamples",
        "",
    ]
    header = ["metric", "A", "B", "B - A [95% CI]", "effect", "p", "p adj", "detectable", "n"]
    paired = any(c.wins is not None for c in cmp.metrics)
    if paired:
        header.append("win/tie/loss")
    header.append("")
    rows = [header]
    for c in cmp.metrics:
        effect = (
            "-"
            if c.effect_size is None
            else f"{EFFECT.get(c.effect_size_kind, c.effect_size_kind)} {c.effect_size:+.2f}"
        )
        row = [
            c.metric,
            _fmt(c.mean_a),
            _fmt(c.mean_b),
            f"{c.diff:+.4f} [{c.ci_lower:+.4f}, {c.ci_upper:+.4f}]",
            effect,
            _p(c.p_value),
            _p(c.p_adjusted) + (" *" if c.significant else ""),
            "-" if c.mde is None else f"±{c.mde:.3g}",
            str(c.n),
        ]
        if paired:
            row.append("-" if c.wins is None else f"{c.wins}/{c.ties}/{c.losses}")
        row.append(verdict(c))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        lines.append(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w)
                for i, (v, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
    for s in cmp.skipped:
        lines.append(f"{s.metric}: not compared ({s.reason})")
    lines.append(
        "* significant after the correction. detectable: the smallest difference these "
        f"samples detect with power {cmp.power:g}; a smaller one may be there unseen."
    )
    return "\n".join(lines)


def document(found: RowsComparison, sides: Sides, failed: Sequence[str]) -> dict[str, Any]:
    out = found.to_dict()
    for row in out.get("metrics", []):
        c = found.comparison.get(row["metric"])
        if c is not None:
            row["direction"] = direction(c.metric)
            row["verdict"] = verdict(c) or None
    out["a"], out["b"] = sides.a, sides.b
    if sides.history:
        out["history"] = sides.history
    out["failed_on"] = list(failed)
    return out


def gate(found: RowsComparison, fail_on: Sequence[str]) -> list[str]:
    """The metrics of `fail_on` ("all": every compared one) on which B is significantly
    worse."""
    names = {c.metric for c in found.comparison.metrics} if "all" in fail_on else set(fail_on)
    return [
        c.metric for c in found.comparison.metrics if c.metric in names and verdict(c) == "worse"
    ]
