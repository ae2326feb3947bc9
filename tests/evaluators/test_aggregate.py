"""Aggregation: Wilson intervals against Newcombe's published table, a deterministic
seeded bootstrap, and skip/error accounting without NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluators.aggregate import (
    aggregate_dataset,
    aggregate_outcomes,
    bootstrap_ci,
    wilson_interval,
)
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.registry import DatasetValue
from evaluators.signature import Signature

# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
# method 3 (Wilson score, no continuity correction).
NEWCOMBE = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("x", "n", "lo", "hi"), NEWCOMBE)
def test_wilson_matches_newcombe(x: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(x, n)
    assert got[0] == pytest.approx(lo, abs=5e-5)
    assert got[1] == pytest.approx(hi, abs=5e-5)


def test_wilson_bounds_and_errors() -> None:
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 10)[0] == pytest.approx(0.0)
    with pytest.raises(ValueError):
        wilson_interval(0, 0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_bootstrap_is_deterministic_per_seed_and_brackets_the_mean() -> None:
    values = np.random.default_rng(0).normal(0.6, 0.2, size=400)
    a = bootstrap_ci(values, seed=7)
    assert a == bootstrap_ci(values, seed=7)
    assert a != bootstrap_ci(values, seed=8)
    assert a[0] < values.mean() < a[1]
    # roughly ±1.96 standard errors
    se = values.std(ddof=1) / math.sqrt(values.size)
    assert a[1] - a[0] == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert bootstrap_ci([0.3], seed=0) == (0.3, 0.3)


def test_bootstrap_memory_is_chunked_for_large_inputs() -> None:
    values = np.linspace(0, 1, 50_000)
    lo, hi = bootstrap_ci(values, seed=1)
    assert lo < 0.5 < hi


def test_aggregate_counts_skips_and_errors_and_uses_wilson_for_proportions() -> None:
    outcomes: list[Outcome] = [
        Score(1.0),
        Score(0.0),
        Score(1.0),
        Skipped("no reference"),
        Skipped("no reference"),
        Failed("Timeout", "x"),
    ]
    agg = aggregate_outcomes("hit_rate@5", outcomes, proportion=True, signature=Signature())
    assert agg.value == pytest.approx(2 / 3) and agg.n == 3
    assert (agg.ci_lower, agg.ci_upper) == wilson_interval(2, 3)
    assert agg.skipped == 2 and dict(agg.skip_reasons) == {"no reference": 2}
    assert agg.errors == 1 and dict(agg.error_types) == {"Timeout": 1}
    mean = aggregate_outcomes("x", outcomes, proportion=False, seed=3)
    assert (mean.ci_lower, mean.ci_upper) == bootstrap_ci([1.0, 0.0, 1.0], seed=3)


def test_nothing_scored_gives_none_not_nan() -> None:
    agg = aggregate_outcomes("x", [Skipped("no answer")], proportion=False)
    assert agg.value is None and agg.ci_lower is None and agg.n == 0
    d = agg.to_dict()
    assert d["value"] is None and d["skipped"] == 1 and d["signature"] == "ragpulse:0.1.0"


def test_dataset_results() -> None:
    ok = aggregate_dataset(
        "silhouette", DatasetValue(0.4, 10, 0.3, 0.5, {"no ground truth": 2}), 12
    )
    assert (ok.value, ok.n, ok.skipped) == (0.4, 10, 2)
    skip = aggregate_dataset("silhouette", Skipped("fewer than 2 clusters"), 12)
    assert skip.value is None and skip.skipped == 12
    fail = aggregate_dataset("silhouette", Failed("MemoryError"), 12)
    assert fail.errors == 12 and dict(fail.error_types) == {"MemoryError": 12}
