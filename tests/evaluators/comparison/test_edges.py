"""Edge cases: no spread, too few pairs, missing metrics, ties, bad input — typed results
or a ValueError, never NaN."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from evaluators.comparison import (
    Comparison,
    Incomparable,
    MetricComparison,
    compare_paired,
    compare_unpaired,
)


def _no_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_no_nan(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_nan(v) for v in value)
    return True


def test_constant_shift_has_no_spread() -> None:
    a = np.array([[0.2], [0.4], [0.6], [0.7], [0.1]])
    b = a + 0.1  # one difference in intent, not in its last bits
    m = compare_paired(a, b, ["score"], resamples=10_000).metrics[0]
    assert m.diff == pytest.approx(0.1)
    assert m.effect_size is None and m.mde is None
    assert (m.ci_lower, m.ci_upper) == (m.diff, m.diff)
    assert m.p_value == pytest.approx(2 / 2**5)  # exact: only all-plus and all-minus
    assert (m.wins, m.ties, m.losses) == (5, 0, 0)


def test_identical_scores_give_p_one() -> None:
    for n in (8, 50):  # exact enumeration and Monte Carlo
        x = np.random.default_rng(n).random((n, 2))
        for m in compare_paired(x, x.copy(), ["a", "b"], resamples=1_000).metrics:
            assert (m.p_value, m.p_adjusted, m.diff, m.significant) == (1.0, 1.0, 0.0, False)
            assert m.effect_size is None and m.mde is None and m.ties == n
            assert (m.ci_lower, m.ci_upper) == (0.0, 0.0)


def test_too_few_pairs_and_all_missing_are_incomparable() -> None:
    a = np.zeros((4, 3))
    b = np.ones((4, 3))
    valid = np.array([[True, True, False]] + [[True, False, False]] * 3)
    c = compare_paired(a, b, ["ok", "one", "none"], valid=valid, resamples=100)
    assert [m.metric for m in c.metrics] == ["ok"]
    assert c.skipped == (
        Incomparable("one", "fewer than 2 pairs"),
        Incomparable("none", "no pairs with both scores"),
    )
    assert c.get("one") is None and c.get("ok") is c.metrics[0]
    single = compare_paired(np.zeros((1, 1)), np.ones((1, 1)), ["x"], resamples=100)
    assert single.metrics == () and single.skipped == (Incomparable("x", "fewer than 2 pairs"),)


def test_unpaired_missing_and_small_samples_are_skipped() -> None:
    a = {"shared": [0.1, 0.2, 0.4], "only_a": [1.0, 2.0], "empty": [], "one": [1.0, 0.0]}
    b = {"one": [0.5], "shared": [0.3, 0.5], "empty": [0.2, 0.3], "only_b": [0.0, 1.0]}
    c = compare_unpaired(a, b, resamples=200)
    assert [m.metric for m in c.metrics] == ["shared"]
    assert set(c.skipped) == {
        Incomparable("only_a", "only A has this metric"),
        Incomparable("only_b", "only B has this metric"),
        Incomparable("empty", "A has no scores"),
        Incomparable("one", "B has fewer than 2 scores"),
    }


def test_unpaired_constant_samples() -> None:
    same = compare_unpaired({"x": [0.3] * 6}, {"x": [0.3] * 4}, resamples=200).metrics[0]
    assert (same.p_value, same.effect_size, same.mde) == (1.0, None, None)
    apart = compare_unpaired({"x": [0.3] * 4}, {"x": [0.5] * 4}, resamples=200).metrics[0]
    assert apart.test == "exact permutation (constant samples)"
    assert apart.p_value == pytest.approx(2 / math.comb(8, 4))  # the split and its mirror
    assert (apart.ci_lower, apart.ci_upper) == (apart.diff, apart.diff)
    assert apart.effect_size is None and apart.mde is None
    hits = compare_unpaired({"h": [1.0] * 5}, {"h": [1.0] * 7}, resamples=200).metrics[0]
    assert (hits.test, hits.p_value, hits.effect_size) == ("two-proportion z", 1.0, 0.0)
    rounding = compare_unpaired(  # 0.1 + 0.2 != 0.3 in float64: still no spread
        {"x": [0.1 + 0.2, 0.3, 0.3]}, {"x": [0.3, 0.3]}, resamples=200
    ).metrics[0]
    assert rounding.effect_size is None and rounding.p_value == 1.0


def test_tie_tolerance_counts_near_equal_scores_as_ties() -> None:
    a = np.array([[0.50], [0.50], [0.50], [0.50], [0.50]])
    b = np.array([[0.52], [0.49], [0.70], [0.20], [0.50]])
    exact = compare_paired(a, b, ["s"], resamples=100).metrics[0]
    assert (exact.wins, exact.ties, exact.losses) == (2, 1, 2)
    loose = compare_paired(a, b, ["s"], resamples=100, tie_tolerance=0.05).metrics[0]
    assert (loose.wins, loose.ties, loose.losses) == (1, 3, 1)


def test_results_serialise_without_nan() -> None:
    rng = np.random.default_rng(1)
    a = rng.random((30, 3))
    a[:, 2] = 0.5
    b = a.copy()
    b[:, 0] += rng.normal(0, 0.1, 30)
    c = compare_paired(a, b, ["moved", "same", "flat"], resamples=500, correction="bh")
    d = c.to_dict()
    assert _no_nan(d)
    json.dumps(d)
    assert {"correction", "alpha", "confidence", "resamples", "seed", "power"} <= set(d)
    row = d["metrics"][0]
    required = {"metric", "diff", "ci_lower", "ci_upper", "effect_size", "p_value"}
    assert required | {"p_adjusted", "significant", "paired", "n", "mde", "wins"} <= set(row)
    assert isinstance(c, Comparison) and isinstance(c.metrics[0], MetricComparison)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resamples": 0}, "resamples"),
        ({"resamples": 10.0}, "resamples"),
        ({"resamples": True}, "resamples"),
        ({"confidence": 1.0}, "confidence"),
        ({"alpha": 0.0}, "alpha"),
        ({"power": 1.5}, "power"),
        ({"correction": "bonferroni"}, "known: holm, bh, none"),
        ({"seed": -1}, "seed"),
        ({"tie_tolerance": -0.1}, "tie_tolerance"),
        ({"binary": [False, True]}, "declared binary"),
        ({"binary": [True]}, "one flag per metric"),
        ({"valid": np.ones((3, 2))}, "boolean"),
    ],
)
def test_bad_arguments_raise(kwargs: dict[str, Any], message: str) -> None:
    a = np.array([[0.0, 0.1], [1.0, 0.2], [1.0, 0.3]])
    with pytest.raises(ValueError, match=message):
        compare_paired(a, a + 0.0, ["hit", "score"], **kwargs)


def test_bad_arrays_raise() -> None:
    a = np.zeros((3, 2))
    with pytest.raises(ValueError, match="one shape"):
        compare_paired(a, np.zeros((3, 3)), ["x", "y"])
    with pytest.raises(ValueError, match="one shape"):
        compare_paired(a, a, ["x"])
    with pytest.raises(ValueError, match="distinct"):
        compare_paired(a, a, ["x", "x"])
    nan = a.copy()
    nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite where valid"):
        compare_paired(nan, a, ["x", "y"])
    with pytest.raises(ValueError, match="non-finite"):
        compare_unpaired({"x": [1.0, np.inf]}, {"x": [1.0, 2.0]})
    with pytest.raises(ValueError, match="1-d"):
        compare_unpaired({"x": [[1.0, 2.0]]}, {"x": [1.0, 2.0]})


def test_rounding_noise_differences_are_ties() -> None:
    a = np.random.default_rng(2).random((40, 1))
    b = (a + 0.1) - 0.1  # not a's bits everywhere, but no difference in intent
    assert not np.array_equal(a, b)
    m = compare_paired(a, b, ["s"], resamples=1_000).metrics[0]
    assert (m.p_value, m.ties, m.effect_size, m.diff) == (1.0, 40, None, 0.0)


def test_numpy_integers_are_integers() -> None:
    a = np.array([[0.0], [1.0], [1.0]])
    c = compare_paired(a, 1 - a, ["hit"], resamples=np.int64(50), seed=np.uint32(3))
    assert (c.resamples, c.seed) == (50, 3)
    assert type(c.resamples) is int and type(c.seed) is int
