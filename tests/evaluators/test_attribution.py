"""The shift-share attribution: exact decomposition, and Welch's test as scipy computes it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evaluators.attribution import Moments, attribute, welch


def _moments(groups: list[np.ndarray]) -> Moments:
    return Moments.of(
        [len(g) for g in groups], [g.sum() for g in groups], [(g**2).sum() for g in groups]
    )


def _data(seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    base = [rng.binomial(1, p, n).astype(float) for p, n in ((0.6, 900), (0.5, 500), (0.7, 300))]
    win = [rng.binomial(1, p, n).astype(float) for p, n in ((0.4, 80), (0.5, 40), (0.7, 10))]
    return win, base


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_contributions_add_up_to_the_change(seed: int) -> None:
    win, base = _data(seed)
    result = attribute(_moments(win), _moments(base))
    overall = np.concatenate(win).mean() - np.concatenate(base).mean()
    assert result.delta == pytest.approx(overall, abs=1e-12)
    assert result.contribution.sum() == pytest.approx(overall, abs=1e-12)
    assert result.fraction.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(result.performance + result.mix, result.contribution)


def test_welch_matches_scipy_ttest_ind() -> None:
    win, base = _data(7)
    result = attribute(_moments(win), _moments(base))
    for j, (a, b) in enumerate(zip(win, base, strict=True)):
        ref = stats.ttest_ind(a, b, equal_var=False)
        assert result.t[j] == pytest.approx(ref.statistic, rel=1e-9)
        assert result.p_value[j] == pytest.approx(ref.pvalue, rel=1e-9)


def test_welch_on_continuous_scores_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.beta(5, 2, 37), rng.beta(4, 2, 210)
    m = _moments([a, b])
    t, p, tested = welch(
        m.means()[:1], m.variances()[:1], m.n[:1], m.means()[1:], m.variances()[1:], m.n[1:]
    )
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert tested[0]
    assert t[0] == pytest.approx(ref.statistic, rel=1e-9)
    assert p[0] == pytest.approx(ref.pvalue, rel=1e-9)
    assert np.allclose(m.variances(), [np.var(a, ddof=1), np.var(b, ddof=1)])


def test_interval_is_the_normal_interval_of_the_contribution() -> None:
    win, base = _data(11)
    result = attribute(_moments(win), _moments(base))
    n_w, n_b = sum(len(g) for g in win), sum(len(g) for g in base)
    for j, (a, b) in enumerate(zip(win, base, strict=True)):
        se = np.sqrt(
            (len(a) / n_w) ** 2 * np.var(a, ddof=1) / len(a)
            + (len(b) / n_b) ** 2 * np.var(b, ddof=1) / len(b)
        )
        z = stats.norm.ppf(0.975)
        assert result.low[j] == pytest.approx(result.contribution[j] - z * se, abs=1e-12)
        assert result.high[j] == pytest.approx(result.contribution[j] + z * se, abs=1e-12)


def test_a_slice_new_in_the_window_is_compared_with_the_baseline_mean() -> None:
    base = [np.array([1.0, 1.0, 0.0, 1.0]), np.array([], dtype=float)]
    win = [np.array([1.0, 1.0]), np.array([0.0, 0.0])]
    result = attribute(_moments(win), _moments(base))
    assert result.delta == pytest.approx(0.5 - 0.75)
    assert result.contribution[1] == pytest.approx(0.5 * (0.0 - 0.75))
    assert result.contribution.sum() == pytest.approx(result.delta)
    assert not result.tested[1]  # no baseline values: no test


def test_empty_sides_and_mismatched_slices_are_errors() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        attribute(Moments.of([0], [0], [0]), Moments.of([2], [1], [1]))
    with pytest.raises(ValueError, match="same slices"):
        attribute(Moments.of([1, 1], [1, 1], [1, 1]), Moments.of([2], [1], [1]))
    with pytest.raises(ValueError, match="same shape"):
        Moments.of([1, 2], [1], [1])
