"""Corrections across the metrics of one comparison: BH is scipy's `false_discovery_control`
and reproduces a worked example, Holm reproduces a worked example, both are monotone and
capped."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from evaluators.comparison import compare_paired
from evaluators.comparison.multiplicity import adjust, benjamini_hochberg, holm


@pytest.mark.parametrize("seed", range(5))
def test_bh_equals_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.random(15) ** 3, [0.04, 0.04, 1.0]])  # small ones, ties, a 1
    rng.shuffle(p)
    np.testing.assert_array_equal(adjust(p, "bh"), false_discovery_control(p, method="bh"))


def test_bh_on_a_worked_example() -> None:
    # p = (0.01, 0.04, 0.03, 0.005), m = 4. Sorted: 0.005, 0.01, 0.03, 0.04 times m / k =
    # (4, 2, 4/3, 1): 0.02, 0.02, 0.04, 0.04; running minimum from the largest: unchanged.
    p = np.array([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02], rtol=1e-12)
    # a larger p lowers nothing, a smaller later one lowers the earlier: (0.5, 0.2) ->
    # sorted 0.2 x 2 = 0.4, 0.5 x 1 = 0.5
    np.testing.assert_allclose(benjamini_hochberg(np.array([0.5, 0.2])), [0.5, 0.4])
    np.testing.assert_allclose(benjamini_hochberg(np.array([0.9, 0.8])), [0.9, 0.9])


def test_holm_on_a_worked_example() -> None:
    # Four hypotheses at alpha = 0.05 (Holm 1979 style, as on Wikipedia's Holm–Bonferroni
    # page): p = (0.01, 0.04, 0.03, 0.005). Sorted: 0.005 (H4), 0.01 (H1), 0.03 (H3), 0.04 (H2)
    # times (4, 3, 2, 1): 0.02, 0.03, 0.06, 0.04; running maximum: 0.02, 0.03, 0.06, 0.06.
    # So H4 and H1 are rejected (0.02, 0.03 < 0.05), H3 and H2 are not (0.06).
    p = np.array([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    # Capped at 1: (0.6, 0.7) -> 2 x 0.6 = 1.2 -> 1, then max(1, 0.7) = 1
    np.testing.assert_allclose(holm(np.array([0.6, 0.7])), [1.0, 1.0])


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_adjusted_values_are_monotone_capped_and_not_below_p(method: str) -> None:
    p = np.random.default_rng(7).random(40) ** 2
    adjusted = adjust(p, method)
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0)
    assert np.all(adjusted <= 1.0) and np.all(adjusted >= p)


def test_single_p_value_is_unchanged_and_bad_input_is_refused() -> None:
    assert adjust(np.array([0.03]), "holm")[0] == 0.03
    assert adjust(np.array([0.03]), "bh")[0] == 0.03
    with pytest.raises(ValueError, match="known: holm, bh, none"):
        adjust(np.array([0.1]), "bonferroni")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        adjust(np.array([0.1, 1.5]), "holm")


@pytest.mark.parametrize("correction", ["holm", "bh", "none"])
def test_compare_corrects_across_its_metrics(correction: str) -> None:
    rng = np.random.default_rng(8)
    a = rng.normal(size=(80, 4))
    b = a + rng.normal([0.0, 0.1, 0.3, 0.5], 1.0, size=(80, 4))
    c = compare_paired(a, b, ["w", "x", "y", "z"], resamples=2_000, correction=correction)
    p = np.array([m.p_value for m in c.metrics])
    np.testing.assert_allclose([m.p_adjusted for m in c.metrics], adjust(p, correction))
    assert [m.significant for m in c.metrics] == [m.p_adjusted < 0.05 for m in c.metrics]
    assert c.correction == correction
