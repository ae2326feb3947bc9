"""Normal scores of the drift steps against scipy's own rank and binomial functions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from collector.jobs.drift_scores import normal_scores, reference, shift, steps


def test_normal_scores_are_scipy_mid_ranks() -> None:
    rng = np.random.default_rng(1)
    ref = np.sort(np.round(rng.beta(6, 2, 500), 2))  # ties, as in real scores
    x = np.round(rng.beta(6, 2, 50), 2)
    # mid-rank of x among ref: rankdata's "average" rank of x inserted into ref, less x's
    # own half place
    expected = []
    for value in x:
        ranks = stats.rankdata(np.append(ref, value), method="average")
        u = (ranks[-1] - 0.5) / (ref.size + 1)
        expected.append(stats.norm.ppf(u))
    np.testing.assert_allclose(normal_scores(ref, x), expected, rtol=1e-12)


def test_scores_of_steady_data_are_standard_normal() -> None:
    rng = np.random.default_rng(2)
    base = reference(rng.beta(6.8, 1.2, 20_000), "score")
    assert base is not None and not base.binary
    z, per_step = steps(base, rng.beta(6.8, 1.2, 20_000), np.arange(20_000.0), 1e9, 1.0, 0.0, -1.0)
    assert per_step == 1.0
    assert abs(z.mean()) < 0.03 and z.std() == pytest.approx(1.0, abs=0.03)
    assert abs(stats.skew(z)) < 0.1  # the raw scores' skew is -1.2


def test_binary_buckets_use_the_mid_p_of_scipys_binomial() -> None:
    rng = np.random.default_rng(3)
    values = (rng.random(4000) < 0.75).astype(float)
    base = reference(values, "ratio")
    assert base is not None and base.binary and base.mu == pytest.approx(values.mean())
    ts = np.arange(4000) * 180.0  # one trace every 3 minutes: 20 traces an hour
    x = (rng.random(4000) < 0.75).astype(float)
    z, per_step = steps(base, x, ts, ts[-1] + 1, 1 / 180.0, 0.0, -1.0)
    width = 3600.0
    buckets = np.floor(ts / width)
    done = buckets < math.floor((ts[-1] + 1) / width)
    first = buckets[done] == buckets[done].min()
    m, s = int(first.sum()), int(x[done][first].sum())
    mid = stats.binom.cdf(s - 1, m, base.mu) + 0.5 * stats.binom.pmf(s, m, base.mu)
    assert z[0] == pytest.approx(-stats.norm.ppf(mid))
    assert per_step == pytest.approx(20.0, abs=1.0)
    assert abs(z.mean()) < 0.15 and 0.8 < z.std() < 1.1


def test_shift_grows_with_the_relative_change_and_follows_the_direction() -> None:
    rng = np.random.default_rng(4)
    base = reference(rng.lognormal(5.0, 0.5, 5000), "ms")
    assert base is not None and base.log
    small, large = shift(base, 0.1, 1.0), shift(base, 0.2, 1.0)
    assert 0 < small < large
    assert small == pytest.approx(math.log1p(0.1) / 0.5, rel=0.1)  # log-normal: exact
    binary = reference(np.array([0.0, 1.0] * 50 + [1.0] * 100), "ratio")
    assert binary is not None
    assert shift(binary, 0.2, -1.0) == pytest.approx(0.2 * 0.75 / math.sqrt(0.75 * 0.25))
    assert reference(np.ones(50), "ratio") is None  # no spread, no statistic
