"""Unpaired statistics of B against A: two independent samples of one metric.

Sample means x̄_a, x̄_b, variances s²_a, s²_b (ddof 1), sizes n_a, n_b ≥ 2;
SE = sqrt(s²_a/n_a + s²_b/n_b).

- Welch's t (continuous):  t = (x̄_b − x̄_a) / SE,
      ν = SE⁴ / ((s²_a/n_a)²/(n_a − 1) + (s²_b/n_b)²/(n_b − 1)),  p = 2 · P(T_ν > |t|),
  as `scipy.stats.ttest_ind(b, a, equal_var=False)`. Where both samples are constant
  (SE = 0) t does not exist: equal values (within rounding, `spread`) give p = 1; different
  values are the most
  extreme split of the pooled values, p = m / C(n_a + n_b, n_a) (m = 2 when n_a = n_b, the
  mirror split being as extreme, else 1) — the exact two-sample permutation p-value.
- Two-proportion z (0/1 shares p_a, p_b): pooled p̂ = (Σa + Σb) / (n_a + n_b),
      z = (p_b − p_a) / sqrt(p̂(1 − p̂)(1/n_a + 1/n_b)),  p = 2 · (1 − Φ(|z|)),
  equal to Pearson's χ² test of the 2×2 table without continuity correction
  (`scipy.stats.chi2_contingency(table, correction=False)`); p̂ ∈ {0, 1} gives p = 1.
- Hedges' g = J · (x̄_b − x̄_a) / s_p,  s_p² = ((n_a − 1)s²_a + (n_b − 1)s²_b) / (n_a + n_b − 2),
  J = Γ(ν/2) / (sqrt(ν/2) Γ((ν − 1)/2)) with ν = n_a + n_b − 2 (the exact small-sample
  correction, ≈ 1 − 3/(4ν − 1)); None where s_p = 0.
- Cohen's h = 2·asin(sqrt(p_b)) − 2·asin(sqrt(p_a)).
- Interval: two-sample percentile bootstrap of x̄_b − x̄_a, A and B resampled
  independently with replacement. Metrics whose samples on one side have the same size
  share that side's resample draws (one matrix product for all of them): each metric's
  interval is still its own exact two-sample bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import special

from evaluators.comparison.resampling import bootstrap_sums
from evaluators.comparison.spread import NOISE


def variance(x: NDArray[np.float64]) -> float:
    """Sample variance, ddof 1 (at least two values)."""
    centred = x - x.mean()
    return float(centred @ centred) / (x.size - 1)


def welch(a: NDArray[np.float64], b: NDArray[np.float64]) -> tuple[float, str]:
    """Two-sided p of Welch's t for mean(b) − mean(a), and the test's name."""
    na, nb = a.size, b.size
    qa, qb = variance(a) / na, variance(b) / nb
    se2 = qa + qb
    diff = float(b.mean() - a.mean())
    if se2 == 0.0:
        if abs(diff) <= NOISE * max(float(np.abs(a).max()), float(np.abs(b).max())):
            return 1.0, "welch t (no spread)"
        mirrors = 2 if na == nb else 1
        return min(1.0, mirrors / math.comb(na + nb, na)), "exact permutation (constant samples)"
    df = se2 * se2 / (qa * qa / (na - 1) + qb * qb / (nb - 1))
    t = diff / math.sqrt(se2)
    return float(2.0 * special.stdtr(df, -abs(t))), "welch t"


def two_proportion_z(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Two-sided p of the pooled two-proportion z test (0/1 samples)."""
    na, nb = a.size, b.size
    pooled = (a.sum() + b.sum()) / (na + nb)
    se2 = pooled * (1.0 - pooled) * (1.0 / na + 1.0 / nb)
    if se2 <= 0.0:
        return 1.0
    z = float(b.mean() - a.mean()) / math.sqrt(se2)
    return float(special.erfc(abs(z) / math.sqrt(2.0)))


def hedges_g(a: NDArray[np.float64], b: NDArray[np.float64]) -> float | None:
    """Bias-corrected standardised mean difference (B − A); None without spread."""
    na, nb = a.size, b.size
    df = na + nb - 2
    pooled = ((na - 1) * variance(a) + (nb - 1) * variance(b)) / df
    if pooled <= 0.0:
        return None
    j = math.exp(special.gammaln(df / 2.0) - special.gammaln((df - 1) / 2.0)) / math.sqrt(df / 2)
    return j * float(b.mean() - a.mean()) / math.sqrt(pooled)


def cohens_h(p_a: float, p_b: float) -> float:
    """Difference of arcsine-transformed proportions, B − A."""
    return 2.0 * math.asin(math.sqrt(p_b)) - 2.0 * math.asin(math.sqrt(p_a))


def standard_error(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """sqrt(s²_a/n_a + s²_b/n_b)."""
    return math.sqrt(variance(a) / a.size + variance(b) / b.size)


def bootstrap_diff_intervals(
    a: Sequence[NDArray[np.float64]],
    b: Sequence[NDArray[np.float64]],
    resamples: int,
    confidence: float,
    seed: np.random.SeedSequence,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Percentile bootstrap interval of mean(b_j) − mean(a_j) for each metric j."""
    if len(a) != len(b):
        raise ValueError("a and b must list the same metrics")
    side_a, side_b = seed.spawn(2)
    shifts = _resampled_mean_shifts(b, resamples, side_b) - _resampled_mean_shifts(
        a, resamples, side_a
    )
    diff = np.array([float(y.mean() - x.mean()) for x, y in zip(a, b, strict=True)])
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(shifts, [tail, 100.0 - tail], axis=0)
    return diff + lo, diff + hi


def _resampled_mean_shifts(
    samples: Sequence[NDArray[np.float64]], resamples: int, seed: np.random.SeedSequence
) -> NDArray[np.float64]:
    """(resamples × metrics) resampled mean − sample mean, one draw per sample size."""
    out = np.empty((resamples, len(samples)))
    sizes = sorted({x.size for x in samples})
    for size, child in zip(sizes, seed.spawn(len(sizes)), strict=True):
        members = [j for j, x in enumerate(samples) if x.size == size]
        centred = np.column_stack([samples[j] - samples[j].mean() for j in members])
        out[:, members] = bootstrap_sums(centred.astype(np.float32), resamples, child) / size
    return out
