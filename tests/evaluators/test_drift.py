"""The CUSUM and its run-length algebra against a plain loop, Monte Carlo and published values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evaluators.drift import (
    arl0,
    cusum,
    detectable_shift,
    detection_delay,
    estimated_threshold,
    log_run_length,
    threshold,
)


def _loop(z: np.ndarray, k: float) -> np.ndarray:
    s, out = 0.0, []
    for x in z:
        s = max(0.0, s + x - k)
        out.append(s)
    return np.array(out)


def test_vectorised_cusum_equals_the_recursion() -> None:
    rng = np.random.default_rng(4)
    for k in (0.0, 0.25, 1.0):
        z = rng.standard_normal(5000) + rng.choice([0.0, 0.8], 5000)
        np.testing.assert_allclose(cusum(z, k), _loop(z, k), rtol=0, atol=1e-9)
    assert cusum(np.array([]), 0.5).size == 0


@pytest.mark.parametrize(
    ("k", "h", "published"),
    # ARL0 of the standard normal tabular CUSUM, k = 0.5 (Montgomery, Introduction to
    # Statistical Quality Control, the two-sided ARL0 168 for h = 4 and 465 for h = 5):
    # the one-sided run is twice as long. Siegmund's approximation is within 5%.
    [(0.5, 4.0, 2 * 168), (0.5, 5.0, 2 * 465)],
)
def test_arl0_near_published_values(k: float, h: float, published: float) -> None:
    assert arl0(h, k) == pytest.approx(published, rel=0.05)


def test_arl0_matches_monte_carlo() -> None:
    rng = np.random.default_rng(11)
    k, h = 0.25, threshold(400.0, 0.25)
    runs = []
    for _ in range(400):
        s = cusum(rng.standard_normal(6000), k)
        hit = np.flatnonzero(s >= h)
        runs.append(hit[0] + 1 if hit.size else 6000)
    assert np.mean(runs) == pytest.approx(400.0, rel=0.15)


def test_threshold_inverts_arl0() -> None:
    for k in (0.05, 0.2, 0.6):
        for target in (50.0, 1e4, 1e7):
            assert arl0(threshold(target, k), k) == pytest.approx(target, rel=1e-6)
    assert threshold(1.5, 0.5) == 0.0  # any h alarms later than that


def test_delay_and_detectable_shift_agree() -> None:
    arl = 1e6
    shift = detectable_shift(300.0, arl)
    k = shift / 2
    assert detection_delay(shift, k, threshold(arl, k)) == pytest.approx(300.0, rel=1e-3)
    assert detectable_shift(3000.0, arl) < shift  # more samples, smaller drops
    assert math.isinf(detectable_shift(0.0, arl))
    assert math.isinf(detection_delay(0.1, 0.2, 5.0))


def test_detection_delay_matches_monte_carlo() -> None:
    """A shift of 0.5 sd, k = 0.25: the expected delay from the approximation holds."""
    rng = np.random.default_rng(2)
    k, h = 0.25, threshold(1e4, 0.25)
    delays = []
    for _ in range(300):
        s = cusum(stats.norm.rvs(0.5, 1.0, size=4000, random_state=rng), k)
        delays.append(np.flatnonzero(s >= h)[0] + 1)
    assert np.mean(delays) == pytest.approx(detection_delay(0.5, k, h), rel=0.15)


def test_with_no_estimation_error_the_threshold_is_siegmunds() -> None:
    assert estimated_threshold(5000.0, 0.3, 0.0) == threshold(5000.0, 0.3)
    assert estimated_threshold(5000.0, 0.3, 1e-9) == pytest.approx(threshold(5000.0, 0.3))


def test_the_run_length_of_either_drift_sign_is_continuous_through_zero() -> None:
    near = [math.exp(log_run_length(3.0, d)) for d in (-1e-6, 0.0, 1e-6)]
    assert near == pytest.approx([(3.0 + 1.166) ** 2] * 3, rel=1e-4)
    assert math.exp(log_run_length(3.0, 0.5)) == pytest.approx(arl0(3.0, 0.5))
    assert math.exp(log_run_length(3.0, -0.5)) < (3.0 + 1.166) ** 2 < arl0(3.0, 0.5)


def test_estimated_baselines_alarm_at_the_budgeted_average_rate() -> None:
    """Monte Carlo: 4,000 series, each with its baseline mean estimated from 40 values (so
    every series' steps are off by its own N(0, 1/40) bias), run 3,000 steps of a CUSUM
    with k = 0.25 restarted after each alarm. Siegmund's threshold for a 500-step run
    length alarms far more often than once in 500 steps; `estimated_threshold`'s holds the
    average rate to it within the simulation's and the approximation's error."""
    rng = np.random.default_rng(7)
    series, length, k, target, n_base = 4000, 3000, 0.25, 500.0, 40
    bias = rng.normal(0.0, 1.0 / math.sqrt(n_base), series)

    def rate(h: float) -> float:
        s = np.zeros(series)
        alarms = 0
        for _ in range(length):
            s = np.maximum(0.0, s + rng.normal(bias, 1.0) - k)
            fired = s >= h
            alarms += int(fired.sum())
            s[fired] = 0.0
        return alarms / (series * length)

    naive = rate(threshold(target, k))
    calibrated = rate(estimated_threshold(target, k, 1.0 / math.sqrt(n_base)))
    assert naive > 1.8 / target
    assert 0.75 / target < calibrated < 1.3 / target


def test_an_estimated_spread_is_held_to_the_budget_too() -> None:
    """As above with the steps also scaled by sigma / sigma-hat of a 40-value normal
    baseline (log sigma-hat has sd sqrt(2 / 4n)): the threshold for both errors holds the
    average rate within the simulation's error, the bias alone does not."""
    rng = np.random.default_rng(8)
    series, length, k, target, n_base = 4000, 3000, 0.25, 500.0, 40
    base = rng.normal(0.0, 1.0, (series, n_base))
    mu, sd = base.mean(axis=1), base.std(axis=1, ddof=1)

    def rate(h: float) -> float:
        s = np.zeros(series)
        alarms = 0
        for _ in range(length):
            s = np.maximum(0.0, s + (rng.normal(0.0, 1.0, series) - mu) / sd - k)
            fired = s >= h
            alarms += int(fired.sum())
            s[fired] = 0.0
        return alarms / (series * length)

    bias = 1.0 / math.sqrt(n_base)
    bias_only = rate(estimated_threshold(target, k, bias))
    both = rate(estimated_threshold(target, k, bias, math.sqrt(2.0 / (4.0 * n_base))))
    assert bias_only > 1.1 / target  # 1.15x on this draw; both errors: 1.06x
    assert 0.75 / target < both < 1.3 / target
