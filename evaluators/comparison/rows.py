"""Compare two sets of scored rows: paired on the questions both sides answered when
there are enough of them, else as two independent samples.

A row is (key, {metric: value or None}): the key names the question (a trace id shared
by two runs, a `question_id` tag, or the question's text, normalised by
`pairing.question_key`); None is a score the row does not have. `pairing`:

- "paired": pair the rows whose keys both sides have (the k-th occurrence of a key in A
  with the k-th in B); the rest are left out (counted in `unmatched_a/b`).
- "unpaired": every scored value of each side, as two independent samples.
- "auto" (default): paired when the pairs cover at least `min_paired_share` of the
  smaller side (an offline run of two systems on one dataset, shadow or replay traffic),
  else unpaired (two arms of live A/B traffic, whose questions rarely repeat).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from evaluators.comparison.compare import compare_paired, compare_unpaired
from evaluators.comparison.pairing import pair_rows, question_key
from evaluators.comparison.result import Comparison

Row = tuple[str | None, Mapping[str, float | None]]
Pairing = Literal["auto", "paired", "unpaired"]
PAIRINGS: tuple[Pairing, ...] = ("auto", "paired", "unpaired")
MIN_PAIRED_SHARE = 0.5


@dataclass(frozen=True)
class RowsComparison:
    comparison: Comparison
    paired: bool
    rows_a: int
    rows_b: int
    pairs: int
    """Rows paired on a shared key (also when the test ran unpaired: what auto saw)."""

    def describe(self) -> str:
        if self.paired:
            left = self.rows_a - self.pairs, self.rows_b - self.pairs
            out = f"paired on {self.pairs} shared questions"
            if any(left):
                out += f" ({left[0]} of A and {left[1]} of B without a partner left out)"
            return out
        return (
            f"unpaired: {self.rows_a} rows of A against {self.rows_b} of B "
            f"({self.pairs} shared questions: too few to pair on)"
            if self.pairs
            else f"unpaired: {self.rows_a} rows of A against {self.rows_b} of B"
        )

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


def compare_rows(
    a: Sequence[Row],
    b: Sequence[Row],
    metrics: Sequence[str],
    *,
    pairing: Pairing = "auto",
    min_paired_share: float = MIN_PAIRED_SHARE,
    **stats: Any,
) -> RowsComparison:
    """Compare `metrics` of B against A; `stats` go to `compare_paired`/`compare_unpaired`
    (resamples, confidence, alpha, correction, power, seed). "paired" with fewer than two
    shared keys raises ValueError."""
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {', '.join(PAIRINGS)}, got {pairing!r}")
    paired = pair_rows(_keyed(a), _keyed(b), metrics)
    pairs = len(paired.keys)
    smaller = min(len(a), len(b))
    use_pairs = pairing == "paired" or (
        pairing == "auto" and pairs >= 2 and pairs >= min_paired_share * smaller
    )
    if use_pairs:
        if pairs < 2:
            raise ValueError(
                f"cannot pair: {pairs} question(s) shared by both sides (at least 2 needed)"
            )
        found = compare_paired(
            paired.a, paired.b, list(paired.metrics), valid=paired.valid, **stats
        )
        return RowsComparison(found, True, len(a), len(b), pairs)
    stats.pop("tie_tolerance", None)
    found = compare_unpaired(
        {m: _column(a, m) for m in metrics}, {m: _column(b, m) for m in metrics}, **stats
    )
    return RowsComparison(found, False, len(a), len(b), pairs)
