"""Window quantiles from mergeable DDSketch bins: `<metric>_p50`, `_p95`, `_p99`.

A value goes to a bin of DDSketch's logarithmic mapping (`ddsketch.LogarithmicMapping`,
relative accuracy α = `RELATIVE_ACCURACY` = 0.01):

    γ = (1 + α) / (1 − α),   key(x) = ⌈log_γ x⌉,   value(k) = 2γ^k / (1 + γ)

so every x of bin k (γ^(k−1) < x ≤ γ^k) lies within α·x of value(k). A bin is a count,
so the bins of two sets of values merge by adding counts, and a value that changes moves
by −1 in its old bin and +1 in its new one. Stored bins are signed integers in the
values' order (`bin_of`): x > 0 -> OFFSET + key(x); x = 0 (|x| below the smallest value
the mapping tells from 0) -> 0; x < 0 -> −(OFFSET + key(−x)).

The q-quantile of n values (numpy's `method="lower"`, DDSketch's rank convention):

    rank = q·(n − 1),   Q_q = x_(⌊rank⌋)        (x_(0) ≤ … ≤ x_(n−1), 0-based)

From bins b_1 < … < b_m with counts c_i: the first bin whose running count c_1 + … + c_i
exceeds rank holds x_(⌊rank⌋), and its value is the estimate, so
|Q̂_q − Q_q| ≤ α·|Q_q| (exact when Q_q = 0). `exact_quantiles` is the same definition over
the values themselves. NaN has no rank: it gets no bin and is left out of both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from ddsketch.mapping import LogarithmicMapping

RELATIVE_ACCURACY = 0.01
"""α: a quantile from the bins is within 1% of the exact one (of the same values)."""
QUANTILES = (0.5, 0.95, 0.99)
"""The quantiles a window reports for a metric registered with `quantiles=True`."""
OFFSET = 1 << 20
"""Shifts the mapping's keys (|key| < 36,000 at α = 0.01) above 0, the zero bin."""

MAPPING = LogarithmicMapping(RELATIVE_ACCURACY)


def quantile_name(family: str, q: float) -> str:
    """The reported name of a metric's q-quantile: `latency_ms_p95` for 0.95."""
    return f"{family}_p{q * 100:g}"


def quantile_names(family: str) -> tuple[str, ...]:
    """The names of every reported quantile of `family`, in `QUANTILES` order."""
    return tuple(quantile_name(family, q) for q in QUANTILES)


def bin_of(x: float) -> int | None:
    """The signed bin of x (None for NaN; ±inf count in the last bin the mapping has)."""
    if math.isnan(x):
        return None
    magnitude = min(abs(x), MAPPING.max_possible)
    if magnitude <= MAPPING.min_possible:
        return 0
    index = OFFSET + MAPPING.key(magnitude)
    return index if x > 0 else -index


def value_of(index: int) -> float:
    """The value that stands for every x of a signed bin (within α of each)."""
    if index == 0:
        return 0.0
    value = float(MAPPING.value(abs(index) - OFFSET))
    return value if index > 0 else -value


def quantiles_from_bins(
    bins: np.ndarray, counts: np.ndarray, qs: Sequence[float] = QUANTILES
) -> list[float | None]:
    """Q̂_q for each q from signed bins and their counts (any order; None: no values)."""
    order = np.argsort(bins, kind="stable")
    running = np.cumsum(np.asarray(counts, dtype=np.int64)[order])
    n = int(running[-1]) if running.size else 0
    if n <= 0:
        return [None for _ in qs]
    chosen = np.searchsorted(running, [q * (n - 1) for q in qs], side="right")
    return [value_of(int(bins[order[i]])) for i in chosen.tolist()]


def exact_quantiles(values: np.ndarray, qs: Sequence[float] = QUANTILES) -> list[float | None]:
    """Q_q for each q of the values themselves (NaN left out; None: no values)."""
    finite = values[~np.isnan(values)]
    if finite.size == 0:
        return [None for _ in qs]
    return [float(v) for v in np.quantile(finite, list(qs), method="lower")]
