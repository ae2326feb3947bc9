"""Emerging topics on planted synthetic counts: a new intent at 3% of a day's traffic is
reported, steady traffic is not, and the p-values are Fisher's exact test's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import fisher_exact

from evaluators.topics.emerging import EmergingOptions, emerging_topics, rise_p_values

TOPICS = 20


def _shares(rng: np.random.Generator) -> np.ndarray:
    return rng.dirichlet(np.full(TOPICS, 2.0))


def _day_and_week(
    rng: np.random.Generator, shares: np.ndarray, per_day: int
) -> tuple[np.ndarray, np.ndarray]:
    return rng.multinomial(per_day, shares), rng.multinomial(7 * per_day, shares)


@pytest.mark.parametrize("per_day", [1000, 2400, 24000])
def test_a_new_intent_at_3_percent_of_a_day_is_emerging(per_day: int) -> None:
    rng = np.random.default_rng(per_day)
    shares = _shares(rng)
    recent, baseline = _day_and_week(rng, shares * 0.97, per_day)
    new_intent = rng.binomial(per_day, 0.03)
    # the re-clustering gives the new topic a few baseline traces that were near it
    recent = np.append(recent[:TOPICS], new_intent)
    baseline = np.append(baseline, 3)
    topics = list(range(TOPICS + 1))
    found = emerging_topics(
        topics,
        recent.tolist(),
        baseline.tolist(),
        recent_total=int(recent.sum()),
        baseline_total=int(baseline.sum()),
    )
    flagged = [e.topic for e in found if e.emerging]
    assert flagged == [TOPICS]
    adjusted = found[TOPICS].p_adjusted
    assert adjusted is not None and adjusted < 1e-6


def test_steady_traffic_stays_quiet_over_many_days() -> None:
    rng = np.random.default_rng(7)
    flagged = 0
    days = 300
    for _ in range(days):
        shares = _shares(rng)
        recent, baseline = _day_and_week(rng, shares, 2400)
        found = emerging_topics(
            list(range(TOPICS)),
            recent.tolist(),
            baseline.tolist(),
            recent_total=int(recent.sum()),
            baseline_total=int(baseline.sum()),
        )
        flagged += sum(e.emerging for e in found)
    assert flagged <= 1, flagged  # 300 days x 20 topics: not one ticket a year on average


def test_a_large_rise_by_chance_at_small_counts_is_not_emerging() -> None:
    """6 of 100 recent traces against 30 of 1,400 before: the share rose 2.8-fold and by
    3.9 points, a surge by the effect alone, yet Fisher's p (BH over the topics) is not
    below 1% with min_traces 5: a test that skipped the p-value would flag it."""
    recent = [6, 94]
    baseline = [30, 1370]
    opts = EmergingOptions(min_traces=5)
    found = emerging_topics(
        [0, 1], recent, baseline, recent_total=100, baseline_total=1400, options=opts
    )
    assert found[0].recent_share is not None and found[0].baseline_share is not None
    assert found[0].recent_share >= 2 * found[0].baseline_share
    assert found[0].p_adjusted is not None and found[0].p_adjusted > 0.01
    assert not found[0].emerging
    # the same rise at ten times the traffic is no longer chance
    ten = emerging_topics(
        [0, 1],
        [60, 940],
        [300, 13700],
        recent_total=1000,
        baseline_total=14000,
        options=opts,
    )
    assert ten[0].emerging


def test_p_values_are_fishers_exact_one_sided() -> None:
    tables = [(6, 100, 30, 1400), (30, 1000, 3, 7000), (0, 50, 5, 300), (12, 200, 12, 200)]
    for a, n_r, b, n_b in tables:
        expected = fisher_exact([[a, n_r - a], [b, n_b - b]], alternative="greater").pvalue
        got = rise_p_values(np.array([a]), np.array([b]), n_r, n_b)[0]
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_a_significant_rise_below_the_minimum_effect_is_not_emerging() -> None:
    # 10.6% against 10.0% at a million traces a day: beyond chance, too small to act on
    found = emerging_topics(
        [0, 1],
        [106_000, 894_000],
        [700_000, 6_300_000],
        recent_total=1_000_000,
        baseline_total=7_000_000,
    )
    assert found[0].p_adjusted is not None and found[0].p_adjusted < 1e-6
    assert not found[0].emerging


def test_a_new_topic_needs_the_effect_and_enough_traces() -> None:
    topics = [0, 1, 2]
    # topic 1: new but as big as before (a split of an old topic): not emerging;
    # topic 2: new, 25 traces from nothing: emerging without the test's strength
    found = emerging_topics(
        topics,
        [500, 100, 25],
        [3500, 700, 0],
        recent_total=1000,
        baseline_total=7000,
        new=[False, True, True],
    )
    assert [e.emerging for e in found] == [False, False, True]
    few = emerging_topics(
        topics, [500, 100, 5], [3500, 700, 0], recent_total=1000, baseline_total=7000,
        new=[False, True, True],
    )  # fmt: skip
    assert not few[2].emerging


def test_no_baseline_means_nothing_is_emerging() -> None:
    found = emerging_topics([0, 1], [80, 20], [0, 0], recent_total=100, baseline_total=0)
    assert not any(e.emerging for e in found)
    assert found[0].baseline_share is None and found[0].p_value is None


def test_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="one count per topic"):
        emerging_topics([0, 1], [1], [1, 1], recent_total=5, baseline_total=5)
    with pytest.raises(ValueError, match="at least the sum"):
        emerging_topics([0], [10], [1], recent_total=5, baseline_total=5)
    with pytest.raises(ValueError, match="alpha"):
        EmergingOptions(alpha=0.0)
