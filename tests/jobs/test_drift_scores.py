"""The binary drift steps against scipy's own binomial functions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from collector.jobs.drift.scores import binomial_scores, bucket_minutes


def test_binary_buckets_use_the_mid_p_of_scipys_binomial() -> None:
    rng = np.random.default_rng(3)
    trials = rng.integers(0, 30, 400)
    wins = rng.binomial(trials, 0.75)
    z, root, per_step = binomial_scores(trials, wins.astype(float), 0.75, -1.0)
    filled = trials > 0
    m, s = trials[filled], wins[filled]
    mid = stats.binom.cdf(s - 1, m, 0.75) + 0.5 * stats.binom.pmf(s, m, 0.75)
    np.testing.assert_allclose(z, -stats.norm.ppf(mid), rtol=1e-9)
    np.testing.assert_allclose(root, np.sqrt(m))
    assert per_step == pytest.approx(m.mean())
    assert abs(z.mean()) < 0.15 and 0.8 < z.std() < 1.1  # steady: close to N(0, 1)


@pytest.mark.parametrize(
    ("per_hour", "minutes"), [(6.0, 200), (55.0, 22), (1200.0, 1), (120_000.0, 1)]
)
def test_a_bucket_holds_about_twenty_traces_in_whole_minutes(per_hour: float, minutes: int) -> None:
    assert bucket_minutes(per_hour / 3600.0) == minutes
