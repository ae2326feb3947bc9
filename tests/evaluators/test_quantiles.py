"""Quantiles from DDSketch bins: DDSketch's own answer, within its relative accuracy of the
exact (numpy `method="lower"`) quantiles, and mergeable by adding counts."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from ddsketch import DDSketch

from evaluators.quantiles import (
    QUANTILES,
    RELATIVE_ACCURACY,
    bin_of,
    exact_quantiles,
    quantile_names,
    quantiles_from_bins,
    value_of,
)
from evaluators.registry import describe

QS = (0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0)


def _bins(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counted = Counter(bin_of(float(v)) for v in values)
    keys = [k for k in counted if k is not None]
    return np.array(keys, dtype=np.int64), np.array([counted[k] for k in keys], dtype=np.int64)


def _values(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = np.exp(rng.normal(np.log(900.0), 1.2, n))
    values[rng.random(n) < 0.05] = 0.0  # a cached answer: the zero bin
    return values


@pytest.mark.parametrize(("seed", "n"), [(1, 1), (2, 2), (3, 17), (4, 1000), (5, 20_001)])
def test_the_bins_give_ddsketchs_quantiles_within_its_accuracy_of_the_exact_ones(
    seed: int, n: int
) -> None:
    values = _values(seed, n)
    if seed == 3:
        values = values - 1000.0  # negatives too: DDSketch's negative store
    sketch = DDSketch(RELATIVE_ACCURACY)
    for v in values:
        sketch.add(float(v))
    got = quantiles_from_bins(*_bins(values), QS)
    exact = exact_quantiles(values, QS)
    for q, mine, want in zip(QS, got, exact, strict=True):
        assert mine == pytest.approx(sketch.get_quantile_value(q), rel=1e-12, abs=0.0), q
        assert want is not None and mine is not None
        assert abs(mine - want) <= RELATIVE_ACCURACY * abs(want) * (1 + 1e-12), (q, mine, want)
        assert want == float(np.sort(values)[int(np.floor(q * (n - 1)))])  # the rank convention


def test_bins_merge_by_adding_counts_and_keep_the_values_order() -> None:
    a, b = _values(6, 500), _values(7, 300)
    merged: Counter[int] = Counter()
    for part in (a, b):
        keys, counts = _bins(part)
        merged.update(dict(zip(keys.tolist(), counts.tolist(), strict=True)))
    keys = np.array(list(merged), dtype=np.int64)
    counts = np.array([merged[k] for k in merged], dtype=np.int64)
    both = np.concatenate([a, b])
    assert quantiles_from_bins(keys, counts) == quantiles_from_bins(*_bins(both))
    ordered = sorted([-5.0, -1e-9, 0.0, 1e-300, 0.5, 1.0, 2.0, 1e9, float("inf")])
    indices = [bin_of(v) for v in ordered]
    assert indices == sorted(i for i in indices if i is not None)
    assert bin_of(float("nan")) is None and bin_of(0.0) == 0 and value_of(0) == 0.0
    for v in (1e-6, 0.37, 1.0, 850.0, 12_345.0, 1e12, -3.5):
        index = bin_of(v)
        assert index is not None
        assert abs(value_of(index) - v) <= RELATIVE_ACCURACY * abs(v)


def test_no_values_no_quantiles_and_the_names_are_registered() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert quantiles_from_bins(empty, empty) == [None, None, None]
    assert exact_quantiles(np.array([np.nan])) == [None, None, None]
    assert quantile_names("latency_ms") == ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99")
    assert QUANTILES == (0.5, 0.95, 0.99)
    for name in quantile_names("latency_ms"):
        spec = describe(name)
        assert (spec.direction, spec.unit, spec.interval) == ("lower", "ms", False)
