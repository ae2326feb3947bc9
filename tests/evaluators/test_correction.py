"""PPI-corrected means: coverage of a known truth with biased judges, by hand, edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from evaluators.aggregate import Z_95
from evaluators.agreement import Undefined
from evaluators.correction import Corrected, ppi_mean, ppi_mean_rows

REPS = 200
N_SCORED = 2000
N_LABELLED = 150


def _coverage(lo: np.ndarray, hi: np.ndarray, truth: float) -> float:
    return float(np.mean((lo <= truth) & (truth <= hi)))


def _raw_normal_ci(judge: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = judge.mean(axis=1)
    half = Z_95 * judge.std(axis=1, ddof=1) / np.sqrt(judge.shape[1])
    return mean - half, mean + half


def test_continuous_biased_judge_coverage() -> None:
    """judge = truth + 0.15 + noise: PPI covers E[y] = 0.4, the raw mean never does."""
    rng = np.random.default_rng(20261125)
    a, b = 2.0, 3.0
    truth = a / (a + b)
    y = rng.beta(a, b, size=(REPS, N_SCORED))
    judge = y + 0.15 + rng.normal(0.0, 0.1, size=y.shape)
    r = ppi_mean_rows(judge, judge[:, :N_LABELLED], y[:, :N_LABELLED])
    assert _coverage(r.ci_lower, r.ci_upper, truth) >= 0.90
    raw_lo, raw_hi = _raw_normal_ci(judge)
    assert _coverage(raw_lo, raw_hi, truth) <= 0.05
    # The judge helps: narrower than the labels' own normal interval.
    labels_only = 2 * Z_95 * y[:, :N_LABELLED].std(axis=1, ddof=1) / np.sqrt(N_LABELLED)
    assert float(np.median(r.ci_upper - r.ci_lower)) < float(np.median(labels_only))


def test_binary_judge_with_sensitivity_and_specificity_coverage() -> None:
    """A verdict judge with sensitivity 0.85 and specificity 0.7 on a 30% base rate."""
    rng = np.random.default_rng(19)
    truth = 0.3
    y = (rng.random((REPS, N_SCORED)) < truth).astype(float)
    u = rng.random(y.shape)
    judge = np.where(y == 1, u < 0.85, u < 0.3).astype(float)  # raw mean ≈ 0.465
    r = ppi_mean_rows(judge, judge[:, :N_LABELLED], y[:, :N_LABELLED])
    assert _coverage(r.ci_lower, r.ci_upper, truth) >= 0.90
    raw_lo, raw_hi = _raw_normal_ci(judge)
    assert _coverage(raw_lo, raw_hi, truth) <= 0.05


def test_single_estimate_by_hand() -> None:
    judge_all = np.array([0.9, 0.8, 0.7, 0.6, 1.0, 0.5])
    judge_lab = judge_all[:3]
    human = np.array([0.7, 0.8, 0.4])
    result = ppi_mean(judge_all, judge_lab, human)
    assert isinstance(result, Corrected)
    rect = human - judge_lab  # -0.2, 0, -0.3
    expected = judge_all.mean() + rect.mean()  # 0.75 - 1/6
    assert result.value == pytest.approx(0.75 - 1 / 6)
    se = np.sqrt(np.var(judge_all, ddof=1) / 6 + np.var(rect, ddof=1) / 3)
    assert result.ci_lower == pytest.approx(expected - norm.ppf(0.975) * se)
    assert result.ci_upper == pytest.approx(expected + norm.ppf(0.975) * se)
    assert (result.n_labelled, result.n_scored) == (3, 6)
    assert result.to_dict() == {
        "value": result.value,
        "ci_lower": result.ci_lower,
        "ci_upper": result.ci_upper,
        "n_labelled": 3,
    }
    clipped = ppi_mean(judge_all, judge_lab, human, bounds=(0.0, 0.6))
    assert isinstance(clipped, Corrected)
    assert clipped.ci_upper == 0.6 and clipped.value == pytest.approx(0.75 - 1 / 6)


def test_too_few_labels_is_undefined_and_bad_input_an_error() -> None:
    assert isinstance(ppi_mean([1.0, 0.0, 1.0], [1.0], [0.0]), Undefined)
    assert isinstance(ppi_mean([1.0], [1.0, 0.0], [0.0, 1.0]), Undefined)
    with pytest.raises(ValueError, match="one length"):
        ppi_mean([1.0, 0.0], [1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        ppi_mean([np.nan, 0.0], [1.0, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="confidence"):
        ppi_mean([1.0, 0.0], [1.0, 0.0], [1.0, 0.0], confidence=1.5)
