"""From a series' bucket sums to CUSUM steps that are standard normal while nothing changes.

Siegmund's run length (`evaluators.drift`), and so the false-page budget, holds for normal
steps of a fixed size. Quality scores are neither: a miss at a 75% hit rate is a long tail
towards "worse", and traffic has a daily cycle. So:

- a step is a time bucket (whole minutes on a fixed grid of the epoch, so every run cuts
  the same buckets, and the one still filling waits for a later run), sized to hold about
  `BUCKET_TRACES` binary scores on average;
- binary metrics (two values: hit rates, recall@k, precision@k): the bucket's scores are a
  binomial count; its mid-p value under the baseline share becomes z = Phi^-1(mid-p)
  (Lancaster's mid-p keeps a discrete count's normal score close to N(0, 1) in the tail);
- every bucket, binary or not, then steps by its per-trace CUSUM increments summed over
  its traces (`trace_steps`), so a night bucket with a third of the mean traces drifts down
  a third as much as the mean bucket, as the threshold assumes per trace.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

BUCKET_TRACES = 20
"""Binary metrics: traces a bucket holds on average (a count of 20 has a usable mid-p)."""


def bucket_minutes(rate_s: float, traces: int = BUCKET_TRACES) -> int:
    """Minutes a step's bucket spans at `rate_s` traces a second: about `traces` traces,
    at least one minute, two significant digits (nearby rates cut the same buckets).
    Whole minutes, so the buckets are unions of the per-minute sums."""
    minutes = max(1, math.ceil(traces / rate_s / 60.0))
    return int(float(f"{minutes:.2g}"))


def binomial_scores(
    trials: np.ndarray, wins: np.ndarray, mu: float | np.ndarray, sign: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Time buckets holding `trials` binary values (int counts; empty buckets are left out)
    of which `wins` are successes, against the baseline share `mu` (or one per bucket):
    (mid-p normal scores signed so positive is worse, sqrt(trials), trials per step)."""
    filled = trials > 0
    m, s = trials[filled], wins[filled]
    if isinstance(mu, np.ndarray):
        mu = mu[filled]
    mid = stats.binom.cdf(s - 1, m, mu) + 0.5 * stats.binom.pmf(s, m, mu)
    # special.ndtri is what stats.norm.ppf computes, without its per-call argument checks
    z = sign * special.ndtri(np.clip(mid, 1e-12, 1 - 1e-12))
    return z, np.sqrt(m), float(m.mean())


def trace_steps(scores: np.ndarray, root: np.ndarray, per_step: float, k: float) -> np.ndarray:
    """CUSUM steps in units of the mean bucket: a bucket of m traces whose score z is
    standard normal in control steps by (z sqrt(m) - k m) / sqrt(mean m), the per-trace
    increments z_i - k summed over its traces. A step of z - k sqrt(m) would drift down less
    per unit of variance in the buckets that hold fewer traces than the mean (nights,
    weekends) than the threshold, set for the mean bucket, assumes, and those slack hours
    took most of the false pages (benchmarks/RESULTS.md, "Alerts at every volume")."""
    if scores.size == 0:
        return scores
    return np.asarray((scores * root - k * root * root) / math.sqrt(per_step), dtype=np.float64)
