"""From per-sample outcomes to one reported number: value, n, 95% CI, skips and errors.

- Proportions (metrics registered with `proportion=True`, scores 0/1): the Wilson score
  interval
      centre = (p + z²/2n) / (1 + z²/n),  half = z / (1 + z²/n) · sqrt(p(1-p)/n + z²/4n²)
  with z = 1.959964 (95%).
- Means: a seeded percentile bootstrap (1,000 resamples of the scored values with
  replacement, 2.5th and 97.5th percentiles of the resampled means); the same seed gives
  the same interval.
`n` is the number of scored samples; skipped and failed samples are counted by reason and
error type. With n = 0 the value and interval are None (never NaN).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.registry import DatasetValue
from evaluators.signature import Signature

Z_95 = 1.959963984540054
N_RESAMPLES = 1000
_CHUNK_ELEMENTS = 2_000_000  # resampled indices held at once (16 MB of int64)
_CACHED_ELEMENTS = 500_000  # a bootstrap of up to 500 values: its matrix is cached


@dataclass(frozen=True)
class Aggregate:
    """One metric over a set of samples, with how it was made."""

    metric: str
    value: float | None
    n: int
    ci_lower: float | None = None
    ci_upper: float | None = None
    skipped: int = 0
    errors: int = 0
    skip_reasons: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    error_types: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    signature: Signature = field(default_factory=Signature)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of SPEC §5 plus `skip_reasons`, `error_types`, `signature`."""
        return {
            "value": self.value,
            "n": self.n,
            "ci_lower": self.ci_lower,
            "ci_upper": self.ci_upper,
            "skipped": self.skipped,
            "errors": self.errors,
            "skip_reasons": dict(self.skip_reasons),
            "error_types": dict(self.error_types),
            "signature": str(self.signature),
        }


def wilson_interval(successes: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for `successes` out of `n` trials (n >= 1)."""
    if n < 1:
        raise ValueError("the Wilson interval needs at least one trial")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in 0..{n}, got {successes}")
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@functools.lru_cache(maxsize=8192)
def t_quantile_95(df: int) -> float:
    """Student's t 0.975 quantile with `df` degrees of freedom (cached: a few df recur)."""
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


def t_interval(n: int, total: float, squares: float) -> tuple[float, float]:
    """Student t 95% interval of a mean from its count, sum and sum of squares:
    mean ± t_{0.975, n-1} · s / sqrt(n) (n >= 1; one value: the value itself). A spread
    below the rounding of the sums (equal values, added in any order) counts as none."""
    if n < 1:
        raise ValueError("a mean needs at least one value")
    mean = total / n
    if n < 2:
        return mean, mean
    spread = squares - n * mean * mean
    variance = spread / (n - 1) if spread > 1e-12 * squares else 0.0
    half = t_quantile_95(n - 1) * math.sqrt(variance) / math.sqrt(n)
    return mean - half, mean + half


def bootstrap_indices(n: int, seed: int, n_resamples: int = N_RESAMPLES) -> Iterator[np.ndarray]:
    """Resampled index matrices (rows = resamples), in chunks that bound the memory.

    A matrix of at most `_CACHED_ELEMENTS` indices (a few hundred values) comes from a
    small cache: the same (n, seed) recurs for every metric of a group and at every step
    of a back-fill, and drawing it is most of a small bootstrap's cost."""
    if n * n_resamples <= _CACHED_ELEMENTS:
        yield _small_indices(n, seed, n_resamples)
        return
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _CHUNK_ELEMENTS // max(n, 1))
    done = 0
    while done < n_resamples:
        rows = min(per_chunk, n_resamples - done)
        yield rng.integers(0, n, size=(rows, n))
        done += rows


@functools.lru_cache(maxsize=4)
def _small_indices(n: int, seed: int, n_resamples: int) -> np.ndarray:
    """The whole index matrix of a small bootstrap, read-only (4 MB at most; kept as the
    platform's index type: numpy converts any other at every gather, which doubles its
    cost)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    idx.flags.writeable = False
    return idx


def bootstrap_statistic(
    n: int,
    statistic: Callable[[np.ndarray], np.ndarray],
    seed: int,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap of `statistic(index_matrix) -> one value per row`.

    Rows where the statistic is undefined may be returned as non-finite values; they are
    left out. None when no resample gives a value.
    """
    if n < 1:
        return None
    stats = np.concatenate([statistic(idx) for idx in bootstrap_indices(n, seed, n_resamples)])
    stats = stats[np.isfinite(stats)]
    if stats.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(stats, [tail, 100.0 - tail])
    return float(lo), float(hi)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    seed: int,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Seeded percentile bootstrap interval of the mean of `values` (at least one)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("the bootstrap needs at least one value")
    if arr.size == 1 or bool(np.all(arr == arr[0])):
        return float(arr[0]), float(arr[0])
    result = bootstrap_statistic(
        arr.size, lambda idx: np.take(arr, idx).mean(axis=1), seed, n_resamples, confidence
    )
    mean = float(arr.mean())
    return result if result is not None else (mean, mean)


def aggregate_outcomes(
    metric: str,
    outcomes: Sequence[Outcome],
    *,
    proportion: bool,
    seed: int = 0,
    signature: Signature | None = None,
) -> Aggregate:
    """Mean (or proportion) of the scored outcomes with its 95% CI and skip/error counts."""
    return aggregate_scores(
        metric,
        np.fromiter((o.value for o in outcomes if isinstance(o, Score)), dtype=np.float64),
        proportion=proportion,
        seed=seed,
        signature=signature,
        skip_reasons=Counter(o.reason for o in outcomes if isinstance(o, Skipped)),
        error_types=Counter(o.error_type for o in outcomes if isinstance(o, Failed)),
    )


def aggregate_scores(
    metric: str,
    scores: np.ndarray,
    *,
    proportion: bool,
    seed: int = 0,
    signature: Signature | None = None,
    skip_reasons: Mapping[str, int] | None = None,
    error_types: Mapping[str, int] | None = None,
    bootstrap_max_n: int | None = None,
) -> Aggregate:
    """Value, n and 95% CI of already scored values: Wilson for proportions, the seeded
    bootstrap for means — or, above `bootstrap_max_n` values, the normal approximation
    (the scheduled jobs' choice: cheap, and indistinguishable at that size)."""
    skip_reasons = skip_reasons or {}
    error_types = error_types or {}
    n = int(scores.size)
    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    if n:
        value = float(scores.mean())
        if proportion:
            lo, hi = wilson_interval(float(np.clip(scores, 0.0, 1.0).sum()), n)
        elif bootstrap_max_n is None or n <= bootstrap_max_n:
            lo, hi = bootstrap_ci(scores, seed)
        else:
            half = Z_95 * float(scores.std(ddof=1)) / math.sqrt(n)
            lo, hi = value - half, value + half
    return Aggregate(
        metric=metric,
        value=value,
        n=n,
        ci_lower=lo,
        ci_upper=hi,
        skipped=sum(skip_reasons.values()),
        errors=sum(error_types.values()),
        skip_reasons=MappingProxyType(dict(skip_reasons)),
        error_types=MappingProxyType(dict(error_types)),
        signature=signature or Signature(),
    )


def aggregate_dataset(
    metric: str,
    result: DatasetValue | Outcome,
    total: int,
    *,
    signature: Signature | None = None,
) -> Aggregate:
    """Wrap a dataset metric's result; a Skipped/Failed whole-set result counts every sample."""
    sig = signature or Signature()
    if isinstance(result, DatasetValue):
        reasons = dict(result.skip_reasons)
        return Aggregate(
            metric=metric,
            value=float(result.value),
            n=result.n,
            ci_lower=result.ci_lower,
            ci_upper=result.ci_upper,
            skipped=sum(reasons.values()),
            skip_reasons=MappingProxyType(reasons),
            signature=sig,
        )
    if isinstance(result, Skipped):
        return Aggregate(
            metric=metric,
            value=None,
            n=0,
            skipped=total,
            skip_reasons=MappingProxyType({result.reason: total}),
            signature=sig,
        )
    if isinstance(result, Failed):
        return Aggregate(
            metric=metric,
            value=None,
            n=0,
            errors=total,
            error_types=MappingProxyType({result.error_type: total}),
            signature=sig,
        )
    # A dataset metric that returned a bare Score: a value without an interval.
    return Aggregate(metric=metric, value=float(result.value), n=total, signature=sig)
