"""Unpaired comparisons against scipy: Welch's t (`ttest_ind(equal_var=False)`), the
two-proportion z test (`chi2_contingency(correction=False)`), the two-sample percentile
bootstrap (`scipy.stats.bootstrap`), and Hedges' g and Cohen's h against their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evaluators.comparison import compare_unpaired
from evaluators.comparison.two_sample import cohens_h, hedges_g, two_proportion_z, welch


@pytest.mark.parametrize("seed", range(6))
def test_welch_equals_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.normal(0.5, 0.2, 20 + 7 * seed)
    b = rng.normal(0.55, 0.05 + 0.1 * seed, 45 - 3 * seed)
    p, test = welch(a, b)
    assert test == "welch t"
    assert p == pytest.approx(stats.ttest_ind(b, a, equal_var=False).pvalue, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_two_proportion_z_equals_chi2_without_correction(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = (rng.random(60 + 10 * seed) < 0.4).astype(float)
    b = (rng.random(80) < 0.4 + 0.05 * seed).astype(float)
    table = [[a.sum(), a.size - a.sum()], [b.sum(), b.size - b.sum()]]
    expected = stats.chi2_contingency(table, correction=False).pvalue
    assert two_proportion_z(a, b) == pytest.approx(expected, rel=1e-9)


def test_hedges_g_and_cohens_h_follow_their_formulas() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.0, 1.0, 12), rng.normal(0.8, 1.5, 9)
    df = a.size + b.size - 2
    pooled = math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / df)
    exact_j = math.gamma(df / 2) / (math.sqrt(df / 2) * math.gamma((df - 1) / 2))
    g = hedges_g(a, b)
    assert g == pytest.approx(exact_j * (b.mean() - a.mean()) / pooled, rel=1e-12)
    assert g == pytest.approx((1 - 3 / (4 * df - 1)) * (b.mean() - a.mean()) / pooled, rel=1e-3)
    assert cohens_h(0.25, 0.5) == pytest.approx(
        2 * math.asin(math.sqrt(0.5)) - 2 * math.asin(math.sqrt(0.25)), rel=1e-15
    )
    assert cohens_h(0.0, 1.0) == pytest.approx(math.pi)


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    result: np.ndarray = np.mean(y, axis=axis) - np.mean(x, axis=axis)
    return result


@pytest.mark.parametrize("seed", range(3))
def test_compare_unpaired_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = {
        "faithfulness": rng.beta(5, 2, 70),
        "hit_rate@5": (rng.random(120) < 0.6).astype(float),
    }
    b = {
        "faithfulness": rng.beta(6, 2, 55),
        "hit_rate@5": (rng.random(90) < 0.7).astype(float),
    }
    c = compare_unpaired(a, b, resamples=10_000, seed=seed, alpha=0.05, power=0.8)
    f, h = c.metrics
    assert (f.metric, f.test, f.effect_size_kind, f.binary) == (
        "faithfulness",
        "welch t",
        "hedges_g",
        False,
    )
    assert (h.test, h.effect_size_kind, h.binary) == ("two-proportion z", "cohens_h", True)
    for m in c.metrics:
        x, y = a[m.metric], b[m.metric]
        assert (m.n_a, m.n_b, m.n, m.paired) == (x.size, y.size, x.size + y.size, False)
        assert m.diff == pytest.approx(y.mean() - x.mean(), abs=1e-15)
        assert m.wins is m.ties is m.losses is None
        se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
        assert m.mde == pytest.approx(z * se, rel=1e-12)
        ref = stats.bootstrap(
            (x, y),
            _mean_diff,
            vectorized=True,
            n_resamples=10_000,
            method="percentile",
            rng=np.random.default_rng(seed),
        ).confidence_interval
        width = ref.high - ref.low
        assert m.ci_lower == pytest.approx(ref.low, abs=0.05 * width)
        assert m.ci_upper == pytest.approx(ref.high, abs=0.05 * width)
    assert f.p_value == pytest.approx(
        stats.ttest_ind(b["faithfulness"], a["faithfulness"], equal_var=False).pvalue, rel=1e-9
    )
    assert h.effect_size == pytest.approx(cohens_h(a["hit_rate@5"].mean(), b["hit_rate@5"].mean()))


def test_binary_can_be_declared_per_metric() -> None:
    rng = np.random.default_rng(4)
    a = {"hit": (rng.random(50) < 0.5).astype(float), "score": rng.random(50)}
    b = {"hit": (rng.random(50) < 0.6).astype(float), "score": rng.random(50)}
    as_mean = compare_unpaired(a, b, binary={"hit": False}, resamples=500).get("hit")
    assert as_mean is not None and as_mean.test == "welch t"
    by_order = compare_unpaired(a, b, binary=[False, False], resamples=500).get("hit")
    assert by_order is not None and by_order.effect_size_kind == "hedges_g"
    with pytest.raises(ValueError, match="declared binary"):
        compare_unpaired(a, b, binary={"score": True}, resamples=500)
    with pytest.raises(ValueError, match="one flag per metric"):
        compare_unpaired(a, b, binary=[True], resamples=500)
