"""Compare two sets of scored rows: paired on the questions both sides answered when
there are enough of them, else as two independent samples.

A row is (key, {metric: value or None}): the key names the question (a trace id shared
by two runs, a `question_id` tag, or the question's text, normalised by
`pairing.question_key`); None is a score the row does not have. `pairing`:

- "paired": pair the rows whose keys both sides have (the k-th occurrence of a key in A
  with the k-th in B); the rest are left out (counted in `unmatched_a/b`).
- "unpaired": every scored value of each side, as two independent samples.
- "auto" (default): per metric, paired when the pairs that have the metric on both sides
  cover at least `min_paired_share` of the smaller side's scores of it (an offline run of
  two systems on one dataset, shadow or replay traffic), else unpaired (two arms of live
  A/B traffic; a metric scored on a sample of traces, whose pairs are few even where the
  questions repeat).

The correction for multiple comparisons runs once over every metric's p-value, paired
or not (`multiplicity.adjust`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from evaluators.comparison.compare import compare_paired, compare_unpaired
from evaluators.comparison.multiplicity import adjust
from evaluators.comparison.pairing import Paired, pair_rows, question_key
from evaluators.comparison.result import Comparison, MetricComparison

Row = tuple[str | None, Mapping[str, float | None]]
Pairing = Literal["auto", "paired", "unpaired"]
PAIRINGS: tuple[Pairing, ...] = ("auto", "paired", "unpaired")
MIN_PAIRED_SHARE = 0.5


@dataclass(frozen=True)
class RowsComparison:
    comparison: Comparison
    paired: bool
    """Some metric was compared pairwise."""
    rows_a: int
    rows_b: int
    pairs: int
    """Rows paired on a shared key (also when no metric was compared pairwise)."""

    def describe(self) -> str:
        done = self.comparison.metrics
        paired = [c.metric for c in done if c.paired]
        unpaired = [c.metric for c in done if not c.paired]
        parts = []
        if paired:
            left = self.rows_a - self.pairs, self.rows_b - self.pairs
            text = f"paired on {self.pairs} shared questions"
            if any(left):
                text += f" ({left[0]} of A and {left[1]} of B without a partner left out)"
            if unpaired:
                text += f" for {', '.join(paired)}"
            parts.append(text)
        if unpaired or not paired:
            text = f"unpaired: {self.rows_a} rows of A against {self.rows_b} of B"
            if paired:
                text += f" for {', '.join(unpaired)} (too few pairs scored)"
            elif self.pairs:
                text += f" ({self.pairs} shared questions: too few to pair on)"
            parts.append(text)
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.comparison.to_dict(),
            "paired": self.paired,
            "rows_a": self.rows_a,
            "rows_b": self.rows_b,
            "pairs": self.pairs,
            "pairing": self.describe(),
        }


def _keyed(rows: Sequence[Row]) -> list[tuple[str, Mapping[str, float | None]]]:
    return [(question_key(key), scores) for key, scores in rows if key and question_key(key)]


def _column(rows: Sequence[Row], metric: str) -> np.ndarray:
    values = [v for _k, s in rows if (v := s.get(metric)) is not None]
    return np.asarray(values, dtype=np.float64)


def _pairs_suffice(
    paired: Paired, a: Sequence[Row], b: Sequence[Row], metric: str, share: float
) -> bool:
    pairs = int(paired.valid[:, paired.metrics.index(metric)].sum())
    scored = min(_column(a, metric).size, _column(b, metric).size)
    return pairs >= 2 and pairs >= share * scored


def compare_rows(
    a: Sequence[Row],
    b: Sequence[Row],
    metrics: Sequence[str],
    *,
    pairing: Pairing = "auto",
    min_paired_share: float = MIN_PAIRED_SHARE,
    correction: str = "holm",
    **stats: Any,
) -> RowsComparison:
    """Compare `metrics` of B against A; `stats` go to `compare_paired`/`compare_unpaired`
    (resamples, confidence, alpha, power, seed). "paired" with fewer than two shared
    keys raises ValueError."""
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {', '.join(PAIRINGS)}, got {pairing!r}")
    metrics = list(dict.fromkeys(metrics))
    paired = pair_rows(_keyed(a), _keyed(b), metrics)
    pairs = len(paired.keys)
    if pairing == "paired" and pairs < 2:
        raise ValueError(
            f"cannot pair: {pairs} question(s) shared by both sides (at least 2 needed)"
        )
    by_pairs = [
        m
        for m in metrics
        if pairing == "paired"
        or (pairing == "auto" and _pairs_suffice(paired, a, b, m, min_paired_share))
    ]
    alone = [m for m in metrics if m not in by_pairs]
    found: list[Comparison] = []
    if by_pairs:
        cols = [paired.metrics.index(m) for m in by_pairs]
        found.append(
            compare_paired(
                paired.a[:, cols],
                paired.b[:, cols],
                by_pairs,
                valid=paired.valid[:, cols],
                correction="none",
                **stats,
            )
        )
    if alone:
        stats.pop("tie_tolerance", None)
        found.append(
            compare_unpaired(
                {m: _column(a, m) for m in alone},
                {m: _column(b, m) for m in alone},
                correction="none",
                **stats,
            )
        )
    done = {c.metric: c for f in found for c in f.metrics}
    ordered = [done[m] for m in metrics if m in done]
    alpha = found[0].alpha
    adjusted = adjust(np.array([c.p_value for c in ordered], dtype=np.float64), correction)
    final: tuple[MetricComparison, ...] = tuple(
        replace(c, p_adjusted=float(p), significant=bool(p < alpha))
        for c, p in zip(ordered, adjusted, strict=True)
    )
    skipped = tuple(s for f in found for s in f.skipped)
    comparison = replace(found[0], metrics=final, skipped=skipped, correction=correction)
    return RowsComparison(comparison, bool(by_pairs), len(a), len(b), pairs)
