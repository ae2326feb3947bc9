"""Paired statistics of B against A over shared questions, all metrics at once.

Input: per-question differences d_ij = b_ij − a_ij (question i, metric j) and a validity
mask v_ij (both sides scored); d is 0 where v is False. n_j = Σ_i v_ij.

- Mean difference  d̄_j = Σ_i d_ij / n_j,  sd_j = sqrt(Σ_i v_ij (d_ij − d̄_j)² / (n_j − 1)).
- Cohen's d_z = d̄_j / sd_j (None where sd_j = 0); SE_j = sd_j / sqrt(n_j).
- p-value: two-sided paired randomisation test of d̄_j. Under H0 (A and B exchangeable
  within a question) every sign pattern s ∈ {−1, 1}ⁿ is equally likely; T(s) = Σ_i s_i d_ij
  (invalid questions contribute 0, so n_j is fixed and the sum orders like the mean).
      exact (2ⁿ ≤ resamples): p = #{s : |T(s)| ≥ |T_obs|} / 2ⁿ
      Monte Carlo:            p = (1 + #{r : |T(s_r)| ≥ |T_obs|}) / (1 + resamples)
  The observed pattern counts once, so p > 0; with every d = 0, p = 1. This is
  `scipy.stats.permutation_test((a, b), mean-difference, permutation_type='samples')`:
  exactly equal when both enumerate (scipy does at resamples ≥ 2ⁿ), within Monte-Carlo
  error otherwise (scipy doubles the smaller one-sided p, the same for this symmetric null).
  |T| values closer than 10⁻⁴ · sqrt(Σ_i d_ij²) (10⁻⁹ in the exact float64 path), the null
  distribution's standard deviation, count as ties: float32 sums of the same value may
  differ in their last bits (measured ~10⁻⁶ of it at n = 100,000).
- Interval: paired percentile bootstrap of d̄_j. Questions are resampled with replacement,
  the same draw for every metric (a question's row moves as a whole); a metric's
  resampled mean is over the valid questions drawn, Σ w_i v_ij d_ij / Σ w_i v_ij, and a
  resample that drew none of them is left out. Values are centred on d̄_j first (exact
  for the mean; it keeps float32 precise).
- Wins, ties, losses: #{d_ij > t}, #{|d_ij| ≤ t}, #{d_ij < −t} over the valid questions,
  t = tie_tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evaluators.comparison.resampling import (
    all_sign_flip_sums,
    bootstrap_sums,
    sign_flip_sums,
)

FLOAT32_TIE = 1e-4
FLOAT64_TIE = 1e-9


@dataclass(frozen=True)
class SignFlip:
    """Two-sided sign-flip p-values per metric and whether they were enumerated exactly."""

    p_values: NDArray[np.float64]
    exact: bool


def moments(
    d: NDArray[np.float64], valid: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Per metric: mean d̄_j, sd_j (ddof 1; 0 where n_j < 2) and n_j."""
    n = valid.sum(axis=0).astype(np.int64)
    safe = np.maximum(n, 1)
    mean = np.where(valid, d, 0.0).sum(axis=0) / safe
    spread = np.where(valid, d - mean, 0.0)
    var = (spread * spread).sum(axis=0) / np.maximum(n - 1, 1)
    sd = np.where(n > 1, np.sqrt(var), 0.0)
    return mean, sd, n


def sign_flip_p_values(
    d: NDArray[np.float64], resamples: int, seed: np.random.SeedSequence
) -> SignFlip:
    """Two-sided paired randomisation p-value of each column's mean (d zero where
    invalid); exact enumeration when 2ⁿ ≤ resamples."""
    n = d.shape[0]
    scale = np.sqrt((d * d).sum(axis=0))
    if n <= 30 and (1 << n) <= resamples:
        observed = np.abs(d.sum(axis=0))
        null = np.abs(all_sign_flip_sums(d))
        hits = (null >= observed - FLOAT64_TIE * scale).sum(axis=0)
        return SignFlip(hits / float(1 << n), exact=True)
    d32 = d.astype(np.float32)
    observed = np.abs(d32.sum(axis=0, dtype=np.float64))
    null = np.abs(sign_flip_sums(d32, resamples, seed))
    hits = (null >= observed - FLOAT32_TIE * scale).sum(axis=0)
    return SignFlip((1.0 + hits) / (1.0 + resamples), exact=False)


def bootstrap_mean_intervals(
    d: NDArray[np.float64],
    valid: NDArray[np.bool_],
    resamples: int,
    confidence: float,
    seed: np.random.SeedSequence,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Percentile bootstrap interval of each column's mean over its valid rows, rows
    resampled together. A column needs at least one valid row."""
    mean, _, n = moments(d, valid)
    if np.any(n < 1):
        raise ValueError("every column needs at least one valid row")
    centred = np.where(valid, d - mean, 0.0)
    partial = np.flatnonzero(~valid.all(axis=0))
    columns = np.concatenate([centred, valid[:, partial].astype(np.float64)], axis=1)
    sums = bootstrap_sums(columns.astype(np.float32), resamples, seed)
    m = d.shape[1]
    tail = (1.0 - confidence) / 2.0 * 100.0
    lower = np.empty(m)
    upper = np.empty(m)
    full = np.setdiff1d(np.arange(m), partial)
    if full.size:
        lo, hi = np.percentile(sums[:, full] / d.shape[0], [tail, 100.0 - tail], axis=0)
        lower[full], upper[full] = lo, hi
    for pos, j in enumerate(partial):
        counts = sums[:, m + pos]
        drawn = counts > 0.5  # counts are exact small integers in float32
        shifts = sums[drawn, j] / counts[drawn]
        lo, hi = np.percentile(shifts, [tail, 100.0 - tail]) if shifts.size else (0.0, 0.0)
        lower[j], upper[j] = lo, hi
    return mean + lower, mean + upper


def win_tie_loss(d: NDArray[np.float64], tolerance: float) -> tuple[int, int, int]:
    """Counts of d > t, |d| ≤ t and d < −t among one metric's valid differences."""
    wins = int((d > tolerance).sum())
    losses = int((d < -tolerance).sum())
    return wins, int(d.size) - wins - losses, losses
