"""The drift detectors' statistic, from per-minute bucket sums: one engine for every series.

Every series (metric x group) is read from the rows of a `BucketFrame` (count, sum, sum of
squares, positives, log sums per minute), so the cost and the memory depend on minutes,
not on traces, and the statistic depends on the series' own scores only, never on how busy
the rest of the job is (stored rows are turned into the same sums by `drift_points`, for
tests and benchmarks: there is no second statistic). Time is resolved to the minute: the
window is the minutes from floor((now - longest) / 60) to floor(now / 60), the span those
from floor((now - span) / 60).

Steps, one per time bucket of `drift_scores.bucket_minutes(rate, traces)` minutes (about
`BUCKET_TRACES` scores for binary metrics, `CONTINUOUS_TRACES` for the others; the bucket
still filling waits for a later run), each the per-trace increments summed over the bucket
(`drift_scores.trace_steps`), so the walk per trace is the same at night and at noon:

- binary metrics (values 0 or h: the sums show it, squares x positives = total^2, equal
  only when every positive value is the same): the bucket's (count, positives) is a
  binomial count, scored by its mid-p (`drift_scores.binomial_scores`);
- other metrics: the bucket's mean standardised, x_b = (mean_b - mu) / (sigma / sqrt(m_b)),
  signed so that positive is worse. mu and sigma are the baseline's mean and standard
  deviation from its sums (latencies, unit `ms`, on the log scale from the log sums); k is
  half the standardised shift of the detector's relative change: relative x |mu| / sigma,
  or log1p(relative) / sigma on the log scale. A mean of a few judge scores (Beta, mean
  0.85, skewness -1.2) is still skewed, its tail towards "worse" heavier than the normal
  one, and a CUSUM held to one false page in months lives in that tail; so x_b is first
  normalised for the skewness a mean of m_b values has, g / sqrt(m_b), with the
  Wilson-Hilferty cube-root transform (`normalised`); g, the skewness of one value, comes
  from the baseline's minute sums as well: a minute's centred sum has third moment
  n_b kappa_3, so sum_b (total_b - n_b mu)^3 / n estimates kappa_3 without a new column.

The overall series mixes the groups, and the mix moves with the day and the week (a
weekend's tenants are not a weekday's): scored against one baseline mean, a mix move reads
as a change, and on the alerting benchmark's steady week at 120,000 traces/h it paged. So
the overall series is scored as a risk-adjusted CUSUM: each bucket against the mean its
own mix expects, from the baseline means of the groups of one label (`partition`: the label
whose groups differ the most), with the variance within them.

The threshold holds the family-wise budget on average over the baseline's own estimation
error (`evaluators.drift.estimated_threshold`): a series with a baseline of a few dozen
scores gets a higher threshold than one with thousands, instead of paging several times
its share whenever its baseline happens to sit on the good side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from collector.jobs.buckets.frame import BUCKET_S, BucketFrame
from collector.jobs.drift.detector import (
    DETECTABLE,
    DRIFT_PREFIX,
    WEEK_S,
    Detector,
    DriftConfig,
    MetricFacts,
    _detectable,
    _estimated_threshold,
    _round,
    in_control_run_length,
)
from collector.jobs.drift.scores import BUCKET_TRACES, binomial_scores, bucket_minutes, trace_steps
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.window import OVERALL, Group, Window
from evaluators.aggregate import Aggregate
from evaluators.drift import cusum

TUNINGS = (0.5, 1.0, 2.0)
"""A detector's CUSUMs, tuned to these multiples of its relative change: one CUSUM is
near-optimal only for the drop it is tuned to (a 15% one waits long for a 10% drop and
is slow on a 40% one), three with a third of the budget each cost ln 3 in the threshold."""
CONTINUOUS_TRACES = 3
"""Continuous metrics: scores a step's bucket holds on average. Normalised for their
skewness, means of 3 judge-like scores already have a normal tail and moment generating
function (what the CUSUM's run length depends on); larger buckets only delay the alarm,
which must wait for the bucket to end (20 per bucket made a 40% faithfulness drop of a
30% tenant take 1.25 h to page at 1,200 traces/h, against 0.25 h per trace)."""
MAX_SKEW = 4.0
"""Bound on the estimated skewness of one value (a few outliers in a baseline)."""


@dataclass(frozen=True, slots=True)
class SeriesRows:
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
    skew: float = 0.0
    """Skewness of one value (continuous metrics), from the minute sums' third moment."""


def baseline(rows: SeriesRows, log: bool) -> Baseline | None:
    """The baseline from its sums, or None when it has no spread to measure by."""
    sums = rows.log_total if log else rows.total
    return baseline_of(
        (
            int(rows.n.sum()),
            float(rows.total.sum()),
            float(rows.squares.sum()),
            int(rows.positives.sum()),
            float(sums.sum()),
            float((rows.log_squares if log else rows.squares).sum()),
        ),
        log,
        lambda mu: float(np.sum((sums - rows.n * mu) ** 3)),
    )


def baseline_of(
    totals: tuple[int, float, float, int, float, float],
    log: bool,
    third: Callable[[float], float],
) -> Baseline | None:
    """The baseline from its totals (n, sum, sum of squares, positives, and the sum and
    sum of squares on the metric's scale: of logarithms when `log`) and `third(mu)`, the
    sum over its minutes of (minute sum - minute count x mu)^3."""
    n, total, squares, positives, scaled, scaled_squares = totals
    if n < 2:
        return None
    if 0 < positives < n and abs(squares * positives - total * total) <= 1e-9 * total * total:
        p0 = positives / n
        return Baseline(n, True, False, p0, math.sqrt(p0 * (1 - p0)))
    mu = scaled / n
    var = (scaled_squares - n * mu * mu) / (n - 1)
    if not var > 1e-12 * max(mu * mu, 1e-12):
        return None
    sigma = math.sqrt(var)
    # E[(sum_b - n_b mu)^3] = n_b kappa_3 for a minute of n_b values
    skew = min(max(third(mu) / n / sigma**3, -MAX_SKEW), MAX_SKEW)
    return Baseline(n, False, log, mu, sigma, skew)


def scale_error(base: Baseline) -> float:
    """The standard error of log(sigma-hat) of a continuous baseline of n values,
    sqrt((kurtosis - 1) / 4n). The sums keep no fourth moment, so the kurtosis is the
    gamma distribution's of the same skewness, 3 + 1.5 g^2 (a judge score's g = -1.2 gives
    5.2: a sigma from 36 scores is then off by 18% as often as not by less)."""
    kurtosis = 3.0 + 1.5 * base.skew * base.skew
    return math.sqrt((kurtosis - 1.0) / (4.0 * base.n))


def shift(base: Baseline, relative: float) -> float:
    """The worse-direction shift of one score, in baseline standard deviations, that a
    relative change `relative` of the metric makes (today's `drift_scores.shift` for
    binary metrics)."""
    if base.binary:
        return relative * base.mu / base.sigma
    if base.log:
        return math.log1p(relative) / base.sigma
    return relative * abs(base.mu) / base.sigma


@dataclass(frozen=True, slots=True)
class Stratum:
    """One part of a partition of the overall series (a label's groups): its baseline mean
    and variance per score (on the metric's scale) and its recent minute rows."""

    mu: float
    var: float
    rows: SeriesRows


def step_scores(
    base: Baseline,
    rows: SeriesRows,
    now_ts: float,
    rate_s: float,
    sign: float,
    strata: Sequence[Stratum] = (),
) -> tuple[np.ndarray, np.ndarray, float]:
    """The span's minute rows as CUSUM steps before the reference value k: (scores,
    sqrt(scores per step), scores per step); a detector's steps are scores - k x sqrt,
    so a series' detectors share them. With `strata` (the overall series), a bucket is
    scored against what its own mix of strata expects: the sum of each stratum's traces in
    it times that stratum's baseline mean, traces without the label at the overall mean (a
    risk-adjusted CUSUM),
    so a weekend whose tenants' shares differ is not read as a change."""
    traces = BUCKET_TRACES if base.binary else CONTINUOUS_TRACES
    minutes = bucket_minutes(rate_s, traces)
    width = 60.0 * minutes
    bucket = rows.bucket // minutes
    limit = math.floor(now_ts / width)
    done = bucket < limit
    if not done.any():
        return np.zeros(0), np.zeros(0), traces
    first = int(bucket[done].min())
    bucket = bucket[done] - first
    trials = np.bincount(bucket, weights=rows.n[done]).astype(np.int64)
    mean, var = _expected(base, trials, strata, minutes, first, limit)
    if base.binary:
        wins = np.bincount(bucket, weights=rows.positives[done].astype(np.float64))
        return binomial_scores(trials, wins, mean, sign)
    sums = np.bincount(bucket, weights=(rows.log_total if base.log else rows.total)[done])
    filled = trials > 0
    m, s = trials[filled].astype(np.float64), sums[filled]
    root = np.sqrt(m)
    if isinstance(mean, np.ndarray):
        x = sign * (s - m * mean[filled]) / np.sqrt(m * var[filled])
    else:
        x = sign * (s - m * base.mu) / (base.sigma * root)
    z = normalised(x, sign * base.skew / root)
    return z, root, float(m.mean())


def _expected(
    base: Baseline,
    trials: np.ndarray,
    strata: Sequence[Stratum],
    minutes: int,
    first: int,
    limit: int,
) -> tuple[float | np.ndarray, np.ndarray]:
    """Per bucket, the mean and the variance of one score its mix of strata expects (the
    series' own baseline without strata)."""
    if not strata:
        return base.mu, np.zeros(0)
    size = trials.size
    total = np.zeros(size)
    spread = np.zeros(size)
    covered = np.zeros(size)
    for stratum in strata:
        b = stratum.rows.bucket // minutes
        keep = (b >= first) & (b < limit)
        n = np.bincount(b[keep] - first, weights=stratum.rows.n[keep], minlength=size)[:size]
        total += n * stratum.mu
        spread += n * stratum.var
        covered += n
    rest = np.maximum(trials - covered, 0.0)
    total += rest * base.mu
    spread += rest * base.sigma**2
    filled = np.maximum(trials, 1)
    return total / filled, spread / filled


def normalised(x: np.ndarray, skew: np.ndarray) -> np.ndarray:
    """Standardised means `x` of skewness `skew` made close to N(0, 1): the Wilson-Hilferty
    cube-root transform, z = (6/g)((1 + g x / 2)^(1/3) - 1) + g/6 (exact to second order
    for a gamma variable, z ~ x - g (x^2 - 1) / 6 for a small g), the cube root's argument
    held above 0.1 so that z stays finite and non-decreasing, and |g| at most 1 (a mean of
    a few values of a very skewed metric) so that the held side still reaches 3 sd."""
    g = np.clip(np.where(np.abs(skew) < 1e-6, 1e-6, skew), -1.0, 1.0)
    u = np.maximum(1.0 + g * x / 2.0, 0.1)
    z = (6.0 / g) * (np.cbrt(u) - 1.0) + g / 6.0
    return np.asarray(np.where(np.abs(skew) < 1e-6, x, z), dtype=np.float64)


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
    index = frame.index
    spans = index.spans(first, split, last)
    n_groups = len(frame.groups)
    present = set((index.keys[spans.stop > spans.first] % max(n_groups, 1)).tolist())
    groups = [
        (code, group)
        for code, group in enumerate(frame.groups)
        if (code in present or group == OVERALL)
        and config.unwatched_labels.isdisjoint(group.labels)
    ]
    if OVERALL not in frame.groups:
        groups.insert(0, (-1, OVERALL))  # as `groups_in`: the overall series, even empty
    position = {int(key): i for i, key in enumerate(index.keys.tolist())}
    lo, mid, hi = spans.first, spans.split, spans.stop
    totals = [index.sums(name, lo, mid).tolist() for name in _TOTALS]
    columns = {name: index.column(name) for name in SeriesRows.__slots__}
    out: list[tuple[Window, WindowAggregate]] = []
    for facts in metrics:
        if facts.direction not in ("higher", "lower") or not config.detectors:
            continue
        code = frame.metrics.index(facts.name) if facts.name in frame.metrics else -1
        sign = -1.0 if facts.direction == "higher" else 1.0
        log = facts.unit == "ms"
        made: list[tuple[Group, Baseline | None, SeriesRows]] = []
        for group_code, group in groups:
            key = code * n_groups + group_code if min(code, group_code) >= 0 else -1
            i = position.get(key)
            base: Baseline | None = None
            recent = slice(0, 0)
            if i is not None:
                a, b, c = int(lo[i]), int(mid[i]), int(hi[i])
                n, total, squares, positives, log_total, log_squares = (t[i] for t in totals)
                scaled = (log_total, log_squares) if log else (total, squares)
                base = baseline_of(
                    (round(n), total, squares, round(positives), *scaled),
                    log,
                    lambda mu, a=a, b=b, log=log: index.third(a, b, mu, log),  # type: ignore[misc]
                )
                recent = slice(b, c)
            rows = SeriesRows(*(columns[name][recent] for name in SeriesRows.__slots__))
            made.append((group, base, rows))
        for group, base, rows in made:
            strata = partition(made) if group == OVERALL else ()
            series = _Series(
                facts, group, base, rows, now_ts, sign, len(groups), base_span,
                config.min_baseline, strata,
            )  # fmt: skip
            for det in config.detectors:
                if det.watches(facts.name):
                    out.append(series.drift(det, config.span_s))
            out.append(series.detectable(config.detectors[0]))
    return out


def partition(
    made: Sequence[tuple[Group, Baseline | None, SeriesRows]],
) -> tuple[Stratum, ...]:
    """The strata the overall series is scored by: the groups of the one label whose
    baseline means differ the most (between-groups sum of squares; `other` included), each
    with a baseline; none when no label's groups differ."""
    by_label: dict[str, list[tuple[Baseline, SeriesRows]]] = {}
    for group, base, rows in made:
        if base is None or len(group.labels) != 1:
            continue
        (label,) = group.labels
        by_label.setdefault(label, []).append((base, rows))
    best: tuple[float, str] | None = None
    for label, parts in by_label.items():
        if len(parts) < 2:
            continue
        n = sum(b.n for b, _ in parts)
        mu = sum(b.n * b.mu for b, _ in parts) / n
        between = sum(b.n * (b.mu - mu) ** 2 for b, _ in parts)
        if between > 0 and (best is None or between > best[0]):
            best = (between, label)
    if best is None:
        return ()
    return tuple(Stratum(b.mu, b.sigma**2, rows) for b, rows in by_label[best[1]])


_TOTALS = ("n", "total", "squares", "positives", "log_total", "log_squares")


@dataclass(frozen=True, slots=True)
class _Series:
    facts: MetricFacts
    group: Group
    base: Baseline | None
    recent: SeriesRows
    now_ts: float
    sign: float
    n_groups: int
    base_span: float
    min_baseline: int
    strata: tuple[Stratum, ...] = ()

    memo: dict[str, tuple[np.ndarray, np.ndarray, float]] = field(default_factory=dict)

    def scores(self, base: Baseline) -> tuple[np.ndarray, np.ndarray, float]:
        """`step_scores` of the series, computed once for all its detectors."""
        if "scores" not in self.memo:
            rate = self.per_week / WEEK_S
            self.memo["scores"] = step_scores(
                base, self.recent, self.now_ts, rate, self.sign, self.strata
            )
        return self.memo["scores"]

    def usable(self) -> Baseline | None:
        base = self.base
        return None if base is None or base.n < self.min_baseline else base

    @property
    def per_week(self) -> float:
        return 0.0 if self.base is None else self.base.n / self.base_span * WEEK_S

    def arl(self, det: Detector) -> float:
        return in_control_run_length(det, self.n_groups, self.per_week)

    def drift(self, det: Detector, span_s: float) -> tuple[Window, WindowAggregate]:
        """S/h of the detector: the largest of its CUSUMs tuned to half, once and twice its
        relative change (`TUNINGS`), each held to a third of its false-page budget, so a
        drop twice the tuned size is caught nearly as fast as by a detector tuned to it."""
        window = Window(DRIFT_PREFIX + det.name, span_s)
        base = self.usable()
        if base is None or not shift(base, det.relative_shift) > 0:
            return window, WindowAggregate(self.group, Aggregate(self.facts.name, None, 0))
        scores, root, per_step = self.scores(base)
        arl = _round(max(self.arl(det) * len(TUNINGS) / per_step, 2.0))
        bias = _round(math.sqrt(per_step / base.n))
        spread = 0.0 if base.binary else _round(scale_error(base))
        best: float | None = None
        for tuning in TUNINGS:
            k = shift(base, det.relative_shift * tuning) / 2.0
            h = _estimated_threshold(arl, _round(k * math.sqrt(per_step)), bias, spread)
            if h == math.inf:  # this baseline is too uncertain to hold the budget at any h
                continue
            z = trace_steps(scores, root, per_step, k)
            score = float(cusum(z, 0.0)[-1]) / h if z.size and h > 0 else 0.0
            best = score if best is None else max(best, score)
        if best is None:
            return window, WindowAggregate(self.group, Aggregate(self.facts.name, None, 0))
        n = int(self.recent.n.sum())
        return window, WindowAggregate(self.group, Aggregate(self.facts.name, best, n))

    def detectable(self, det: Detector) -> tuple[Window, WindowAggregate]:
        within = det.within_by_metric.get(self.facts.name, det.within_s)
        window = Window(DETECTABLE, within)
        base = self.usable()
        if base is None:
            return window, WindowAggregate(self.group, Aggregate(self.facts.name, None, 0))
        traces = self.per_week * within / WEEK_S
        needed = _detectable(_round(traces), _round(self.arl(det) * len(TUNINGS)))
        unit = shift(base, det.relative_shift) / det.relative_shift
        relative = needed / unit if math.isfinite(needed) and unit > 0 else None
        return window, WindowAggregate(self.group, Aggregate(self.facts.name, relative, base.n))
