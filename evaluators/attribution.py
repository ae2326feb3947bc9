"""Which slices a metric's change comes from: a shift-share decomposition with intervals.

Given per-slice sufficient statistics (count n, sum, sum of squares) of a per-trace
metric in a window W and a baseline B, with shares w_s = n_s / N and means m_s:

    M_W - M_B = sum_s c_s,   c_s = w_s^W m_s^W - w_s^B m_s^B - (w_s^W - w_s^B) M_B

    c_s = w_s^W (m_s^W - m_s^B)            "share x delta": the slice got worse
        + (w_s^W - w_s^B) (m_s^B - M_B)    "mix": the slice's share of traffic moved

The contributions add up to the overall change exactly. A slice absent from the baseline
(a new retriever version) is compared with the baseline's overall mean (its m_s^B := M_B,
w_s^B = 0); one absent from the window contributes its mix term only.

Intervals treat the shares as fixed: Var(c_s) = (w_s^W)^2 s_W^2 / n_W + (w_s^B)^2 s_B^2 / n_B
(sample variances, ddof 1), a normal 95% interval. Each slice's own change is tested
with Welch's t (unequal variances, Welch–Satterthwaite degrees of freedom), as
`scipy.stats.ttest_ind(equal_var=False)` does on the raw values. All vectorised over slices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

Z95 = float(stats.norm.ppf(0.975))


@dataclass(frozen=True)
class Moments:
    """Per-slice count, sum and sum of squares of the values (aligned arrays)."""

    n: NDArray[np.float64]
    total: NDArray[np.float64]
    squares: NDArray[np.float64]

    @classmethod
    def of(cls, n: object, total: object, squares: object) -> Moments:
        arrays = [np.asarray(a, dtype=np.float64) for a in (n, total, squares)]
        if not arrays[0].shape == arrays[1].shape == arrays[2].shape:
            raise ValueError("n, total and squares must have the same shape")
        if np.any(arrays[0] < 0):
            raise ValueError("counts must not be negative")
        return cls(*arrays)

    def means(self) -> NDArray[np.float64]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.total / np.where(self.n > 0, self.n, 1), 0.0)

    def variances(self) -> NDArray[np.float64]:
        """Sample variances (ddof 1); 0 where a slice has fewer than 2 values."""
        n = self.n
        safe = np.where(n > 1, n, 2)
        var = (self.squares - self.total**2 / np.where(n > 0, n, 1)) / (safe - 1)
        return np.where(n > 1, np.maximum(var, 0.0), 0.0)


@dataclass(frozen=True)
class Attribution:
    """The decomposition of `delta` = window mean - baseline mean over the slices."""

    window_mean: float
    baseline_mean: float
    delta: float
    share_window: NDArray[np.float64]
    share_baseline: NDArray[np.float64]
    mean_window: NDArray[np.float64]
    mean_baseline: NDArray[np.float64]
    performance: NDArray[np.float64]
    """share x delta: w^W (m^W - m^B)."""
    mix: NDArray[np.float64]
    """(w^W - w^B)(m^B - M_B)."""
    contribution: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    t: NDArray[np.float64]
    """Welch's t of the slice's own change (meaningful where `tested`)."""
    p_value: NDArray[np.float64]
    tested: NDArray[np.bool_]
    """Whether the test is defined: both sides have 2 values or more and some spread."""

    @property
    def fraction(self) -> NDArray[np.float64]:
        """Each slice's contribution as a share of the overall change (0 if none)."""
        if self.delta == 0:
            return np.zeros_like(self.contribution)
        return self.contribution / self.delta


def welch(
    mean_a: NDArray[np.float64],
    var_a: NDArray[np.float64],
    n_a: NDArray[np.float64],
    mean_b: NDArray[np.float64],
    var_b: NDArray[np.float64],
    n_b: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Welch's t and two-sided p of mean_a - mean_b, element-wise, and where they are
    defined (elsewhere t and p are 0 and 1, and meaningless)."""
    ok = (n_a > 1) & (n_b > 1)
    na, nb = np.where(ok, n_a, 2), np.where(ok, n_b, 2)
    qa, qb = var_a / na, var_b / nb
    se2 = qa + qb
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (mean_a - mean_b) / np.sqrt(se2)
        df = se2**2 / (qa**2 / (na - 1) + qb**2 / (nb - 1))
        p = 2 * stats.t.sf(np.abs(t), df)
    defined = ok & (se2 > 0)
    return np.where(defined, t, 0.0), np.where(defined, p, 1.0), defined


def attribute(window: Moments, baseline: Moments) -> Attribution:
    """Decompose the change of the mean from `baseline` to `window` over the slices."""
    if window.n.shape != baseline.n.shape:
        raise ValueError("window and baseline must list the same slices")
    n_w, n_b = window.n.sum(), baseline.n.sum()
    if n_w == 0 or n_b == 0:
        raise ValueError("the window and the baseline each need at least one value")
    big_w, big_b = window.total.sum() / n_w, baseline.total.sum() / n_b
    w_w, w_b = window.n / n_w, baseline.n / n_b
    m_w = window.means()
    m_b = np.where(baseline.n > 0, baseline.means(), big_b)
    performance = w_w * (m_w - m_b)
    mix = (w_w - w_b) * (m_b - big_b)
    contribution = performance + mix
    v_w, v_b = window.variances(), baseline.variances()
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(
            np.where(window.n > 0, w_w**2 * v_w / np.where(window.n > 0, window.n, 1), 0.0)
            + np.where(baseline.n > 0, w_b**2 * v_b / np.where(baseline.n > 0, baseline.n, 1), 0.0)
        )
    t, p, tested = welch(m_w, v_w, window.n, baseline.means(), v_b, baseline.n)
    return Attribution(
        window_mean=float(big_w),
        baseline_mean=float(big_b),
        delta=float(big_w - big_b),
        share_window=w_w,
        share_baseline=w_b,
        mean_window=m_w,
        mean_baseline=m_b,
        performance=performance,
        mix=mix,
        contribution=contribution,
        low=contribution - Z95 * se,
        high=contribution + Z95 * se,
        t=t,
        p_value=p,
        tested=tested,
    )
