"""A judge metric's mean corrected by human labels, with an honest interval (issue #19, 3).

Prediction-powered inference (Angelopoulos et al., 2023, "Prediction-powered inference",
Science 382): the judge scores all N traces, humans label n of them (n ≪ N usually);
f_i is the judge's value, y_i the human's.

    θ̂   = (1/N) Σ_{i≤N} f_i  +  (1/n) Σ_{i≤n} (y_i − f_i)          (mean + rectifier)
    σ̂²  = Var(f)/N + Var(y − f)/n                                   (sample variances, ddof 1)
    95% CI = θ̂ ± z_{0.975} · σ̂,   z from scipy.stats.norm

The rectifier removes the judge's bias on average, so θ̂ is unbiased for the human mean
whatever the judge's error; the interval is the normal one of the two independent means
(the labelled traces are also among the N; their covariance term is O(1/N) and ignored).
A good judge makes Var(y − f) small and the interval narrower than that of the n labels
alone; a bad one at worst widens it — it is never wrong in expectation.

Why PPI and not Rogan–Gladen (p = (p̂ + spec − 1) / (sens + spec − 1)): PPI serves
binary, ordinal and continuous metrics alike with one formula; Rogan–Gladen only
proportions. Rogan–Gladen divides by Youden's J = sens + spec − 1, estimated from the
same few labels: with J near 0 the estimate and its delta-method interval blow up (and
leave [0, 1]), and with J ≤ 0 it is undefined. PPI has no division and its variance is
a plain sum.

Fewer than two labelled or scored traces leave the variance undefined: `Undefined`,
never NaN. With `bounds` (the scale's range) the interval is clipped into it, which
cannot lower its coverage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from evaluators.agreement import Undefined

MIN_LABELLED = 2


@dataclass(frozen=True)
class Corrected:
    """The PPI estimate of a judge metric's mean on the human scale."""

    value: float
    ci_lower: float
    ci_upper: float
    n_labelled: int
    n_scored: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_lower": self.ci_lower,
            "ci_upper": self.ci_upper,
            "n_labelled": self.n_labelled,
        }


@dataclass(frozen=True)
class PpiArrays:
    """Vectorised PPI over the rows of 2-d inputs (one estimate per row)."""

    value: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray


def ppi_mean_rows(
    judge_all: np.ndarray,
    judge_labelled: np.ndarray,
    human: np.ndarray,
    confidence: float = 0.95,
) -> PpiArrays:
    """θ̂ and its normal interval along the last axis (callers check sizes ≥ 2)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    rectifier = human - judge_labelled
    n_all = judge_all.shape[-1]
    n_lab = rectifier.shape[-1]
    value = judge_all.mean(axis=-1) + rectifier.mean(axis=-1)
    se = np.sqrt(judge_all.var(axis=-1, ddof=1) / n_all + rectifier.var(axis=-1, ddof=1) / n_lab)
    half = float(norm.ppf(0.5 + confidence / 2.0)) * se
    return PpiArrays(value, value - half, value + half)


def _vector(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} values must be finite numbers")
    return arr


def ppi_mean(
    judge_all: Sequence[float] | np.ndarray,
    judge_labelled: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    *,
    bounds: tuple[float, float] | None = None,
    confidence: float = 0.95,
) -> Corrected | Undefined:
    """PPI mean of the judge's scores over all scored traces, rectified by the labelled ones.

    `judge_all`: the judge's value on every scored trace (labelled ones included);
    `judge_labelled` and `human`: the judge's and the human's value on the labelled traces.
    """
    f = _vector(judge_all, "judge_all")
    f_lab = _vector(judge_labelled, "judge_labelled")
    y = _vector(human, "human")
    if f_lab.shape != y.shape:
        raise ValueError("judge_labelled and human must have one length")
    if y.size < MIN_LABELLED:
        return Undefined(f"fewer than {MIN_LABELLED} labelled traces")
    if f.size < MIN_LABELLED:
        return Undefined(f"fewer than {MIN_LABELLED} scored traces")
    r = ppi_mean_rows(f, f_lab, y, confidence)
    value, lo, hi = float(r.value), float(r.ci_lower), float(r.ci_upper)
    if bounds is not None:
        low, high = bounds
        value, lo, hi = (min(max(x, low), high) for x in (value, lo, hi))
    return Corrected(value, lo, hi, int(y.size), int(f.size))
