"""From a series' values to CUSUM steps that are standard normal while nothing changes.

Siegmund's run length (`evaluators.drift`), and so the false-page budget, holds for normal
steps. Quality scores are not normal: a miss at a 75% hit rate, a judge score of 0.2 where
most are 0.9 are long tails towards "worse", and fed as they are, the CUSUM pages several
times more often than its budget (measured by benchmarks/alerting.py). So the values are
first mapped to normal scores against the series' own baseline:

- binary metrics (two values: hit rates, recall@k, precision@k): the scores of a time
  bucket of about `batch` traces are a binomial count; its mid-p value under the baseline
  share becomes z = Phi^-1(mid-p) (Lancaster's mid-p keeps a discrete count's normal score
  close to N(0, 1) in the tail); buckets (whole minutes) sit on a fixed grid of the
  epoch, so every run cuts the same buckets, and the one still filling waits for a later
  run;
- every other metric: each value's mid-rank in a sample of the baseline (at most
  `MAX_REF` values) gives z = Phi^-1(rank / (n + 1)), divided by the baseline's own
  normal scores' spread (ties, as in MRR's few values, shrink it).

The reference value k of a relative change r is computed the same way: the mean normal
score of the baseline moved by r (scaled by 1 - r, or 1 + r when lower is better; on the
log scale for latencies), so k is in the units of the steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

MAX_REF = 20_000
BUCKET_TRACES = 20
"""Binary metrics: traces a bucket holds on average (a count of 20 has a usable mid-p)."""


@dataclass(frozen=True, slots=True)
class Reference:
    """One series' baseline as the steps need it."""

    n: int
    log: bool
    binary: bool
    mu: float
    """Mean value (log scale for latencies; binary: the success share)."""
    sigma: float
    ref: np.ndarray
    """Sorted sample of the baseline (transformed), for normal scores."""
    z_sd: float
    success: float = 1.0
    """Binary: the value of a success (1, or 1/k for precision@k)."""


def _transform(values: np.ndarray, log: bool) -> np.ndarray:
    return np.log(np.maximum(values, 1e-3)) if log else values


def normal_scores(ref: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Phi^-1 of each value's mid-rank among the sorted `ref` (0 < u < 1 always)."""
    below = np.searchsorted(ref, x, side="left")
    upto = np.searchsorted(ref, x, side="right")
    u = (below + upto + 1.0) / (2.0 * (ref.size + 1.0))
    return np.asarray(stats.norm.ppf(u), dtype=np.float64)


def reference(values: np.ndarray, unit: str) -> Reference | None:
    """The baseline of a series, or None when it has no spread to measure by."""
    if values.size < 2:
        return None
    distinct = np.unique(values[: min(values.size, 5000)])
    if distinct.size <= 2 and np.unique(values).size == 2:
        low, high = np.unique(values)
        p0 = float(np.mean(values == high))
        return Reference(
            values.size, False, True, p0, math.sqrt(p0 * (1 - p0)), np.zeros(0), 1.0,
            success=float(high), ) if low == 0 else None  # fmt: skip
    log = unit == "ms"
    x = _transform(values, log)
    stride = max(1, x.size // MAX_REF)
    ref = np.sort(x[::stride])
    z = normal_scores(ref, ref)
    z_sd = float(z.std())
    sigma = float(x.std(ddof=1))
    if z_sd <= 0 or sigma <= 0:
        return None
    return Reference(values.size, log, False, float(x.mean()), sigma, ref, z_sd)


def shift(base: Reference, relative: float, sign: float) -> float:
    """The worse-direction mean shift of a step per trace (binary: per trial, in sd) that a
    relative change `relative` of the metric makes."""
    if base.binary:
        return relative * base.mu / base.sigma
    moved = base.ref + math.log1p(relative) * sign if base.log else base.ref * (1 + sign * relative)
    return float(abs(normal_scores(base.ref, moved).mean())) / base.z_sd


def steps(
    base: Reference, x: np.ndarray, ts: np.ndarray, now_ts: float, rate_s: float,
    k: float, sign: float,
) -> tuple[np.ndarray, float]:  # fmt: skip
    """(CUSUM steps with the reference value k subtracted, traces per step): per trace,
    or per bucket for binary metrics. `sign` is +1 when higher values are worse."""
    if not base.binary:
        z = sign * normal_scores(base.ref, _transform(x, base.log)) / base.z_sd
        return z - k, 1.0
    width = 60.0 * bucket_minutes(rate_s)
    bucket = np.floor(ts / width).astype(np.int64)
    done = bucket < math.floor(now_ts / width)
    if not done.any():
        return np.zeros(0), BUCKET_TRACES
    bucket = bucket[done] - bucket[done].min()
    trials = np.bincount(bucket)
    wins = np.bincount(bucket, weights=(x[done] >= base.success / 2).astype(float))
    return binomial_steps(trials, wins, base.mu, k, sign)


def bucket_minutes(rate_s: float, traces: int = BUCKET_TRACES) -> int:
    """Minutes a step's bucket spans at `rate_s` traces a second: about `traces` traces,
    at least one minute, two significant digits (nearby rates cut the same buckets).
    Whole minutes, so the buckets are unions of the per-minute sums the bucketed
    detectors read (`collector.jobs.drift_buckets`) on the same epoch grid."""
    minutes = max(1, math.ceil(traces / rate_s / 60.0))
    return int(float(f"{minutes:.2g}"))


def binomial_steps(
    trials: np.ndarray, wins: np.ndarray, mu: float, k: float, sign: float
) -> tuple[np.ndarray, float]:
    """Steps of time buckets holding `trials` binary values (int counts; empty buckets are
    left out) of which `wins` are successes, against the baseline share `mu`: mid-p normal
    scores signed so positive is worse, less k per sqrt(trial); and the trials per step."""
    z, root, per_step = binomial_scores(trials, wins, mu, sign)
    return z - k * root, per_step


def binomial_scores(
    trials: np.ndarray, wins: np.ndarray, mu: float, sign: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """`binomial_steps` before k: (scores, sqrt(trials), trials per step), for detectors
    that differ only in k to share."""
    filled = trials > 0
    m, s = trials[filled], wins[filled]
    mid = stats.binom.cdf(s - 1, m, mu) + 0.5 * stats.binom.pmf(s, m, mu)
    # special.ndtri is what stats.norm.ppf computes, without its per-call argument checks
    z = sign * special.ndtri(np.clip(mid, 1e-12, 1 - 1e-12))
    return z, np.sqrt(m), float(m.mean())
