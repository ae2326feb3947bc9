"""Paired comparisons against scipy: the sign-flip p-values against
`scipy.stats.permutation_test(permutation_type='samples')` (Monte Carlo within its noise,
exactly where both enumerate every sign pattern), the intervals against
`scipy.stats.bootstrap(paired=True, method='percentile')`, and the effect size, MDE and
win/tie/loss counts against their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evaluators.comparison import compare_paired

RESAMPLES = 10_000


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    result: np.ndarray = np.mean(y - x, axis=axis)
    return result


def _scipy_p(a: np.ndarray, b: np.ndarray, resamples: int = RESAMPLES) -> float:
    res = stats.permutation_test(
        (a, b),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        rng=np.random.default_rng(123),
    )
    return float(res.pvalue)


def _datasets(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three metrics with a small true effect: continuous, 0/1 and graded in thirds."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n)
    a = np.column_stack(
        [
            quality + rng.normal(0, 1, n),
            rng.random(n) < 0.5 + 0.2 * np.tanh(quality),
            np.clip(np.round(1.5 + quality + rng.normal(0, 0.7, n)), 0, 3) / 3,
        ]
    ).astype(float)
    b = np.column_stack(
        [
            quality + rng.normal(0.3, 1, n),
            rng.random(n) < 0.58 + 0.2 * np.tanh(quality),
            np.clip(np.round(1.7 + quality + rng.normal(0, 0.7, n)), 0, 3) / 3,
        ]
    ).astype(float)
    return a, b


@pytest.mark.parametrize(("n", "seed"), [(40, 0), (90, 1), (150, 2)])
def test_monte_carlo_p_values_match_scipy(n: int, seed: int) -> None:
    a, b = _datasets(n, seed)
    ours = compare_paired(a, b, ["score", "hit", "grade"], resamples=RESAMPLES, seed=seed)
    for j, m in enumerate(ours.metrics):
        assert m.test == "paired sign-flip permutation"
        assert m.p_value == pytest.approx(_scipy_p(a[:, j], b[:, j]), abs=0.02), m.metric


@pytest.mark.parametrize(("n", "seed"), [(6, 3), (10, 4), (13, 5)])
def test_exact_p_values_equal_scipy(n: int, seed: int) -> None:
    # 2^n <= 10,000 resamples: both enumerate all 2^n sign patterns
    a, b = _datasets(n, seed)
    ours = compare_paired(a, b, ["score", "hit", "grade"], resamples=RESAMPLES)
    for j, m in enumerate(ours.metrics):
        assert m.test == "paired sign-flip permutation (exact)"
        assert m.p_value == pytest.approx(_scipy_p(a[:, j], b[:, j]), abs=1e-12), m.metric


def test_missing_scores_leave_the_exact_test_of_the_valid_pairs() -> None:
    a, b = _datasets(12, 6)
    valid = np.ones(a.shape, dtype=bool)
    valid[[1, 4, 7], 0] = False
    a[1, 0] = b[4, 0] = np.nan  # ignored where not valid
    ours = compare_paired(a, b, ["score", "hit", "grade"], valid=valid, resamples=RESAMPLES)
    m = ours.metrics[0]
    keep = valid[:, 0]
    assert m.n == 9
    assert m.p_value == pytest.approx(_scipy_p(a[keep, 0], b[keep, 0]), abs=1e-12)
    assert m.mean_a == pytest.approx(a[keep, 0].mean())
    assert m.diff == pytest.approx((b[keep, 0] - a[keep, 0]).mean())


@pytest.mark.parametrize(("n", "seed"), [(30, 7), (200, 8)])
def test_bootstrap_intervals_match_scipy(n: int, seed: int) -> None:
    a, b = _datasets(n, seed)
    ours = compare_paired(a, b, ["score", "hit", "grade"], resamples=RESAMPLES, seed=seed)
    for j, m in enumerate(ours.metrics):
        ref = stats.bootstrap(
            (a[:, j], b[:, j]),
            _mean_diff,
            paired=True,
            vectorized=True,
            n_resamples=RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(seed),
        ).confidence_interval
        width = ref.high - ref.low
        assert m.ci_lower == pytest.approx(ref.low, abs=0.05 * width), m.metric
        assert m.ci_upper == pytest.approx(ref.high, abs=0.05 * width), m.metric


def test_confidence_sets_the_interval_level() -> None:
    a, b = _datasets(100, 9)
    ci90 = compare_paired(a, b, ["s", "h", "g"], confidence=0.9, resamples=4_000).metrics[0]
    ci99 = compare_paired(a, b, ["s", "h", "g"], confidence=0.99, resamples=4_000).metrics[0]
    assert ci99.ci_lower < ci90.ci_lower < ci90.diff < ci90.ci_upper < ci99.ci_upper


def test_effect_size_mde_and_counts_follow_their_formulas() -> None:
    a, b = _datasets(120, 10)
    c = compare_paired(a, b, ["score", "hit", "grade"], resamples=2_000, alpha=0.1, power=0.9)
    for j, m in enumerate(c.metrics):
        d = b[:, j] - a[:, j]
        sd = d.std(ddof=1)
        assert m.effect_size_kind == "cohens_dz"
        assert m.effect_size == pytest.approx(d.mean() / sd, rel=1e-12)
        z = stats.norm.ppf(1 - 0.1 / 2) + stats.norm.ppf(0.9)
        assert m.mde == pytest.approx(z * sd / math.sqrt(d.size), rel=1e-12)
        assert (m.wins, m.ties, m.losses) == (
            int((d > 0).sum()),
            int((d == 0).sum()),
            int((d < 0).sum()),
        )
        assert (m.n, m.n_a, m.n_b) == (120, 120, 120)
        assert m.mean_b - m.mean_a == pytest.approx(m.diff, abs=1e-12)
    assert [m.binary for m in c.metrics] == [False, True, False]


def test_same_seed_same_numbers() -> None:
    a, b = _datasets(300, 11)
    first = compare_paired(a, b, ["s", "h", "g"], resamples=3_000, seed=5)
    again = compare_paired(a, b, ["s", "h", "g"], resamples=3_000, seed=5)
    other = compare_paired(a, b, ["s", "h", "g"], resamples=3_000, seed=6)
    assert first == again
    assert first.metrics[0].ci_lower != other.metrics[0].ci_lower
