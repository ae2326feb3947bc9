"""Our LLM judge's own quality (seed 004, §8), over its recorded judgments.

Inputs are parallel arrays, one entry per judgment: the input key (what was judged, e.g.
metric + input hash), the score (None when there is none), the status ("ok" or an
error status) and the latency in ms. The scheduler maps rows of the `judgments` table to
these arrays.

- judge_consistency = (1/|Q|) Σ_{q∈Q} 1[max_r s_r(q) - min_r s_r(q) <= δ], over the inputs
  Q judged successfully at least twice (for two judgments: |s₁(q) - s₂(q)| <= δ);
  δ = 0.5 (`consistency_delta`). Wilson interval over |Q|.
- judge_error_rate = share of judgments whose status is not "ok" (Wilson interval).
- judge_latency_ms_avg = mean latency of the judgments that report one (bootstrap CI).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evaluators.aggregate import bootstrap_ci, wilson_interval
from evaluators.outcome import Skipped
from evaluators.registry import DatasetValue, JobMetric, declare

OK = "ok"
DEFAULT_DELTA = 0.5
_EPS = 1e-12  # 0.8 - 0.3 is 0.5000000000000001 in floating point


def judge_consistency(
    keys: Sequence[str],
    scores: Sequence[float | None],
    statuses: Sequence[str],
    delta: float = DEFAULT_DELTA,
) -> DatasetValue | Skipped:
    """Share of repeatedly judged inputs whose successful scores all lie within `delta`."""
    if not len(keys) == len(scores) == len(statuses):
        raise ValueError("keys, scores and statuses must have the same length")
    lows: dict[str, float] = {}
    highs: dict[str, float] = {}
    counts: dict[str, int] = {}
    for key, score, status in zip(keys, scores, statuses, strict=True):
        if status != OK or score is None:
            continue
        value = float(score)
        lows[key] = min(lows.get(key, value), value)
        highs[key] = max(highs.get(key, value), value)
        counts[key] = counts.get(key, 0) + 1
    repeated = [k for k, c in counts.items() if c >= 2]
    if not repeated:
        return Skipped("no input was judged successfully twice")
    consistent = sum(1 for k in repeated if highs[k] - lows[k] <= delta + _EPS)
    lo, hi = wilson_interval(consistent, len(repeated))
    singles = len(counts) - len(repeated)
    reasons = {"judged once": singles} if singles else {}
    return DatasetValue(consistent / len(repeated), len(repeated), lo, hi, reasons)


def judge_error_rate(statuses: Sequence[str]) -> DatasetValue | Skipped:
    """Share of judgments that did not succeed."""
    if not statuses:
        return Skipped("no judgments")
    errors = sum(1 for s in statuses if s != OK)
    lo, hi = wilson_interval(errors, len(statuses))
    return DatasetValue(errors / len(statuses), len(statuses), lo, hi)


def judge_latency_ms_avg(
    latencies: Sequence[float | None], seed: int = 0
) -> DatasetValue | Skipped:
    """Mean latency (ms) of the judgments that report one."""
    values = np.array([float(v) for v in latencies if v is not None], dtype=np.float64)
    missing = len(latencies) - values.size
    if not values.size:
        return Skipped("no judgment reports a latency")
    lo, hi = bootstrap_ci(values, seed)
    reasons = {"no latency": missing} if missing else {}
    return DatasetValue(float(values.mean()), int(values.size), lo, hi, reasons)


# Computed by the judge_consistency job from the `judgments` table, not from samples.
declare(
    JobMetric(
        "judge_consistency",
        "Share of inputs judged twice or more whose scores agree within delta (seed 004 §8).",
        direction="higher",
        unit="ratio",
    )
)
declare(
    JobMetric(
        "judge_error_rate",
        "Share of our LLM judge's calls that failed.",
        direction="lower",
        unit="ratio",
    )
)
declare(
    JobMetric(
        "judge_latency_ms_avg",
        "Mean latency of our LLM judge's calls (ms).",
        direction="lower",
        unit="ms",
    )
)
