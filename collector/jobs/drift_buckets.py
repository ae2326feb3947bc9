"""The drift detectors (`collector.jobs.drift`) computed from per-minute bucket sums.

Same points as `drift.drift_points` (window `drift:<detector>`: S/h, n = scores in the
span; `mde`: the relative change caught within the target delay, n = baseline scores),
same groups, same family-wise thresholds; but a series is read from the rows of a
`BucketFrame` (count, sum, sum of squares, positives, log sums per minute), so the cost
and the memory depend on minutes, not on traces. Time is resolved to the minute: the
window is the minutes from floor((now - longest) / 60) to floor(now / 60), the span
those from floor((now - span) / 60) (exact when both edges are whole minutes).

Steps, one per time bucket of `drift_scores.bucket_minutes(rate)` minutes (about
`BUCKET_TRACES` scores; the bucket still filling waits for a later run):

- binary metrics (values 0 or h: the sums show it, squares x positives = total^2, equal
  only when every positive value is the same): the bucket's (count, positives) is the
  binomial count today's path makes of the same traces, on the same grid, through the
  same `drift_scores.binomial_steps`: the statistic is today's, exactly.
- other metrics: a per-trace rank normal score needs the values, which sums do not keep.
  It existed because a per-trace CUSUM fed single skewed values (a judge score of 0.2
  among 0.9s) pages several times over its budget. A bucket step instead standardises
  the bucket's mean, z_b = (mean_b - mu) / (sigma / sqrt(m_b)), signed so that positive
  is worse: by the central limit theorem a mean over about `BUCKET_TRACES` values is
  close to normal (its skewness is the values' over sqrt(m_b)), and the step z_b -
  k sqrt(m_b) is then the per-trace CUSUM's step summed over the bucket, with the same
  reference value k and the same threshold rule as the binary path. mu and sigma are the
  baseline's mean and standard deviation from its sums (latencies, unit `ms`, on the
  log scale from the log sums); k is half the standardised shift of the detector's
  relative change: relative x |mu| / sigma, or log1p(relative) / sigma on the log scale.
  Buckets with fewer than `MIN_SCORES` values are merged into the next one: a mean of two
  or three skewed values is still far from normal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from collector.jobs.bucket_frame import BUCKET_S, BucketFrame
from collector.jobs.drift import (
    DETECTABLE,
    DRIFT_PREFIX,
    WEEK_S,
    Detector,
    DriftConfig,
    MetricFacts,
    _detectable,
    _round,
    _threshold,
)
from collector.jobs.drift_scores import BUCKET_TRACES, binomial_steps, bucket_minutes
from collector.jobs.outcomes import WindowAggregate
from collector.jobs.windows import Group, Window
from evaluators.aggregate import Aggregate
from evaluators.drift import cusum

MIN_SCORES = 1
"""Continuous metrics: a step's bucket holds at least this many scores."""


@dataclass(frozen=True, slots=True)
class Sums:
    """One series' rows in time order (minute buckets) and the columns a step reads."""

    bucket: np.ndarray
    n: np.ndarray
    total: np.ndarray
    squares: np.ndarray
    positives: np.ndarray
    log_total: np.ndarray
    log_squares: np.ndarray


@dataclass(frozen=True, slots=True)
class Baseline:
    n: int
    binary: bool
    log: bool
    mu: float
    """Mean (binary: the success share; latencies: of the logarithms)."""
    sigma: float


def baseline(rows: Sums, log: bool) -> Baseline | None:
    """The baseline from its sums, or None when it has no spread to measure by."""
    n = int(rows.n.sum())
    if n < 2:
        return None
    total, squares = float(rows.total.sum()), float(rows.squares.sum())
    positives = int(rows.positives.sum())
    if 0 < positives < n and abs(squares * positives - total * total) <= 1e-9 * total * total:
        p0 = positives / n
        return Baseline(n, True, False, p0, math.sqrt(p0 * (1 - p0)))
    if log:
        total, squares = float(rows.log_total.sum()), float(rows.log_squares.sum())
    mu = total / n
    var = (squares - n * mu * mu) / (n - 1)
    if not var > 1e-12 * max(mu * mu, 1e-12):
        return None
    return Baseline(n, False, log, mu, math.sqrt(var))


def shift(base: Baseline, relative: float) -> float:
    """The worse-direction shift of one score, in baseline standard deviations, that a
    relative change `relative` of the metric makes (today's `drift_scores.shift` for
    binary metrics)."""
    if base.binary:
        return relative * base.mu / base.sigma
    if base.log:
        return math.log1p(relative) / base.sigma
    return relative * abs(base.mu) / base.sigma


def steps(
    base: Baseline, rows: Sums, now_ts: float, rate_s: float, k: float, sign: float
) -> tuple[np.ndarray, float]:
    """(CUSUM steps with k subtracted, scores per step) of the span's minute rows."""
    minutes = bucket_minutes(rate_s)
    width = 60.0 * minutes
    bucket = rows.bucket // minutes
    done = bucket < math.floor(now_ts / width)
    if not done.any():
        return np.zeros(0), BUCKET_TRACES
    bucket = bucket[done] - bucket[done].min()
    trials = np.bincount(bucket, weights=rows.n[done]).astype(np.int64)
    if base.binary:
        wins = np.bincount(bucket, weights=rows.positives[done].astype(np.float64))
        return binomial_steps(trials, wins, base.mu, k, sign)
    sums = np.bincount(bucket, weights=(rows.log_total if base.log else rows.total)[done])
    m, s = _merge_small(trials, sums)
    z = sign * (s - m * base.mu) / (base.sigma * np.sqrt(m))
    return z - k * np.sqrt(m), float(m.mean())


def _merge_small(trials: np.ndarray, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-empty buckets, each with fewer than `MIN_SCORES` scores merged into the next
    (a short last one into the one before)."""
    filled = trials > 0
    m, s = trials[filled].astype(np.float64), sums[filled]
    if MIN_SCORES <= 1 or m.size == 0:
        return m, s
    out_m: list[float] = []
    out_s: list[float] = []
    held_m, held_s = 0.0, 0.0
    for count, total in zip(m.tolist(), s.tolist(), strict=True):
        held_m, held_s = held_m + count, held_s + total
        if held_m >= MIN_SCORES:
            out_m.append(held_m)
            out_s.append(held_s)
            held_m, held_s = 0.0, 0.0
    if held_m:
        if out_m:
            out_m[-1] += held_m
            out_s[-1] += held_s
        else:
            out_m, out_s = [held_m], [held_s]
    return np.array(out_m), np.array(out_s)


def drift_points_from_frame(
    frame: BucketFrame,
    metrics: Sequence[MetricFacts],
    now_ts: float,
    longest_s: float,
    config: DriftConfig,
) -> list[tuple[Window, WindowAggregate]]:
    """The detectors' points for every watched metric and group at `now_ts`."""
    base_span = longest_s - config.span_s
    if base_span <= 0:
        return []
    first = math.floor((now_ts - longest_s) / BUCKET_S)
    split = math.floor((now_ts - config.span_s) / BUCKET_S)
    last = math.floor(now_ts / BUCKET_S)
    inside = np.flatnonzero((frame.bucket >= first) & (frame.bucket <= last))
    present = set(np.unique(frame.group[inside]).tolist())
    groups = [
        (code, group)
        for code, group in enumerate(frame.groups)
        if code in present and config.unwatched_labels.isdisjoint(group.labels)
    ]
    order = inside[np.lexsort((frame.bucket[inside], frame.group[inside], frame.metric[inside]))]
    keys = frame.metric[order].astype(np.int64) * len(frame.groups) + frame.group[order]
    starts = np.flatnonzero(np.diff(keys, prepend=-1))
    ends = np.append(starts[1:], keys.size)
    by_key = {int(keys[a]): order[a:b] for a, b in zip(starts, ends, strict=True)}
    out: list[tuple[Window, WindowAggregate]] = []
    for facts in metrics:
        if facts.direction not in ("higher", "lower") or not config.detectors:
            continue
        code = frame.metrics.index(facts.name) if facts.name in frame.metrics else -1
        sign = -1.0 if facts.direction == "higher" else 1.0
        log = facts.unit == "ms"
        for group_code, group in groups:
            rows = by_key.get(code * len(frame.groups) + group_code, np.zeros(0, np.int64))
            recent = rows[frame.bucket[rows] >= split]
            base = baseline(_sums(frame, rows[frame.bucket[rows] < split]), log)
            series = _Series(
                facts, group, base, _sums(frame, recent), now_ts, sign, len(groups),
                base_span, config.min_baseline,
            )  # fmt: skip
            for det in config.detectors:
                if det.watches(facts.name):
                    out.append(series.drift(det, config.span_s))
            out.append(series.detectable(config.detectors[0]))
    return out


def _sums(frame: BucketFrame, rows: np.ndarray) -> Sums:
    return Sums(
        frame.bucket[rows],
        frame.n[rows],
        frame.total[rows],
        frame.squares[rows],
        frame.positives[rows],
        frame.log_total[rows],
        frame.log_squares[rows],
    )


@dataclass(frozen=True, slots=True)
class _Series:
    facts: MetricFacts
    group: Group
    base: Baseline | None
    recent: Sums
    now_ts: float
    sign: float
    n_groups: int
    base_span: float
    min_baseline: int

    def usable(self) -> Baseline | None:
        base = self.base
        return None if base is None or base.n < self.min_baseline else base

    @property
    def per_week(self) -> float:
        return 0.0 if self.base is None else self.base.n / self.base_span * WEEK_S

    def arl(self, det: Detector) -> float:
        family = det.series_metrics * self.n_groups
        return _round(family * self.per_week / det.false_alarms_per_week)

    def drift(self, det: Detector, span_s: float) -> tuple[Window, WindowAggregate]:
        window = Window(DRIFT_PREFIX + det.name, span_s)
        base = self.usable()
        k = 0.0 if base is None else shift(base, det.relative_shift) / 2.0
        if base is None or not k > 0:
            return window, WindowAggregate(self.group, Aggregate(self.facts.name, None, 0))
        z, per_step = steps(base, self.recent, self.now_ts, self.per_week / WEEK_S, k, self.sign)
        h = _threshold(max(self.arl(det) / per_step, 2.0), _round(k * math.sqrt(per_step)))
        score = float(cusum(z, 0.0)[-1]) / h if z.size and h > 0 else 0.0
        n = int(self.recent.n.sum())
        return window, WindowAggregate(self.group, Aggregate(self.facts.name, score, n))

    def detectable(self, det: Detector) -> tuple[Window, WindowAggregate]:
        within = det.within_by_metric.get(self.facts.name, det.within_s)
        window = Window(DETECTABLE, within)
        base = self.usable()
        if base is None:
            return window, WindowAggregate(self.group, Aggregate(self.facts.name, None, 0))
        traces = self.per_week * within / WEEK_S
        needed = _detectable(_round(traces), self.arl(det))
        unit = shift(base, det.relative_shift) / det.relative_shift
        relative = needed / unit if math.isfinite(needed) and unit > 0 else None
        return window, WindowAggregate(self.group, Aggregate(self.facts.name, relative, base.n))
