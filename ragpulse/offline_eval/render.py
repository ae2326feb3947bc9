"""The results of `ragpulse evaluate` for people and programs: the fixed-width table
of the aggregates, the skip notes, and the SPEC §5 JSON document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluators.aggregate import Aggregate
from evaluators.outcome import Score
from evaluators.runner import EvaluationResult
from evaluators.sample import Sample
from ragpulse.offline_eval.dataset import InvalidLine


def fmt(value: float | None) -> str:
    """A value as the tables show it: 4 decimals (4 significant digits from a million);
    "-" when undefined."""
    if value is None:
        return "-"
    return f"{value:.4f}" if abs(value) < 1e6 else f"{value:.4g}"


def render_table(aggregates: dict[str, Aggregate]) -> str:
    """A fixed-width table: metric, value, 95% CI, n, skipped, errors."""
    header = ("metric", "value", "95% CI", "n", "skipped", "errors")
    rows: list[Sequence[str]] = [header]
    for name, agg in aggregates.items():
        ci = (
            f"[{fmt(agg.ci_lower)}, {fmt(agg.ci_upper)}]"
            if agg.ci_lower is not None and agg.ci_upper is not None
            else "-"
        )
        rows.append((name, fmt(agg.value), ci, str(agg.n), str(agg.skipped), str(agg.errors)))
    return layout(rows)


def layout(rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """Rows as fixed-width text: the first `left` columns left-aligned, the others
    right-aligned, a rule under the header row."""
    header = rows[0]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for r in rows:
        cells = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  ".join(cells))
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def skip_notes(aggregates: dict[str, Aggregate]) -> list[str]:
    """One line per metric that skipped or failed samples, with the reasons."""
    notes = []
    for name, agg in aggregates.items():
        parts = [f"{r} ×{c}" for r, c in agg.skip_reasons.items()]
        parts += [f"error {t} ×{c}" for t, c in agg.error_types.items()]
        if parts:
            notes.append(f"{name}: " + "; ".join(parts))
    return notes


def to_json(
    result: EvaluationResult,
    samples: Sequence[Sample],
    invalid: Sequence[InvalidLine] = (),
) -> dict[str, Any]:
    """SPEC §5: {"aggregate": {...}, "samples": [{"trace_id", "question", metric: value}]}
    (+ groups, + `invalid_lines` left out by --skip-invalid: line number, reason, detail).
    The question lets `ragpulse compare` pair two runs' samples question by question."""
    out: dict[str, Any] = {
        "aggregate": {name: agg.to_dict() for name, agg in result.aggregates.items()},
        "samples": [],
    }
    for i, s in enumerate(samples):
        row: dict[str, Any] = {"trace_id": s.trace_id, "question": s.question}
        for name, outcomes in result.per_sample.items():
            o = outcomes[i]
            row[name] = o.value if isinstance(o, Score) else None
        out["samples"].append(row)
    if invalid:
        out["invalid_lines"] = [i.to_dict() for i in invalid]
    if result.group_by:
        out["group_by"] = result.group_by
        out["groups"] = {
            value: {name: agg.to_dict() for name, agg in aggs.items()}
            for value, aggs in result.groups.items()
        }
    return out
