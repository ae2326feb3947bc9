"""Do the p-values keep their promise on realistic data? Seeded datasets of a hit-rate
metric (`benchmarks.comparison`, whose figures RESULTS.md records):

Data model. Each question i has a latent difficulty z_i ~ N(0, 1); a system S hits it
with probability expit(μ_S + 3.5·z_i), the two systems' outcomes independent given z_i.
μ_A makes A's expected hit rate exactly 0.6; μ_B is μ_A ("identical systems") or makes
B's exactly 0.7 ("+0.1"). The shared difficulty is what makes paired data paired: with
σ = 3.5 logits identical systems agree on ~80% of questions (some questions are found
by any version, some by none, the rest flip), A and B on ~79%.

- Paired: both systems answer the same 200 questions (one z_i per question); the
  sign-flip test must declare identical systems different in at most 5% of datasets
  (+ Monte-Carlo noise of 200 datasets: ≤ 8%) and find +0.1 in at least 80%.
- Unpaired (for the record): A and B answer two independent sets of 200 questions; the
  two-proportion z test must hold its level too, and has less power than the paired test
  (it cannot cancel question difficulty).

200 datasets, 2,000 resamples per comparison, dataset seeds SeedSequence(20).spawn(200).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from benchmarks.comparison import (
    BASE_RATE,
    DIFFERENCE,
    DIFFICULTY_SD,
    HitRateModel,
    calibration_rates,
    hit_rate_pair,
)


def test_the_data_model_has_the_stated_rates() -> None:
    model = HitRateModel.of(BASE_RATE, DIFFERENCE, DIFFICULTY_SD)
    z = np.random.default_rng(0).standard_normal(400_000)
    assert special.expit(model.mu_a + model.sigma * z).mean() == pytest.approx(0.6, abs=0.002)
    assert special.expit(model.mu_b + model.sigma * z).mean() == pytest.approx(0.7, abs=0.002)
    a, b = hit_rate_pair(model, 100_000, False, True, np.random.default_rng(1))
    assert (a == b).mean() == pytest.approx(0.80, abs=0.01)  # identical systems agree
    a, b = hit_rate_pair(model, 100_000, True, True, np.random.default_rng(2))
    assert b.mean() - a.mean() == pytest.approx(0.1, abs=0.01)


def test_false_positive_rate_and_power_on_200_datasets() -> None:
    rates = calibration_rates(datasets=200, n=200, resamples=2_000)
    print(f"\ncalibration: {rates}")
    assert rates["paired_fpr"] <= 0.08
    assert rates["paired_power"] >= 0.80
    assert rates["unpaired_fpr"] <= 0.08
    assert rates["unpaired_power"] < rates["paired_power"]
