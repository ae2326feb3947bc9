"""Drift detectors over a job's per-trace outcomes: one CUSUM per metric, group, detector.

Every run, for each per-sample metric with a direction and each group (overall, kept label
values, `other`; not the `version` groups: `DriftConfig.unwatched_labels`), the traces of
the last `span` are tested against the baseline of the rest of the longest window
(`evaluators.drift`): their scores, standardised by the baseline's mean and spread and
signed so that positive is worse, feed a one-sided CUSUM tuned to a relative shift of
`Detector.relative_shift`. Its threshold `h` is set so the detector pages falsely at most
`false_alarms_per_week` times a week over all its series together (family-wise: each of
the N series gets an in-control run length of N times its weekly volume over that
budget), so a quiet week stays quiet at any traffic volume and the threshold needs no
hand tuning. Latencies (unit `ms`) are judged on the log scale with a median/MAD
baseline: a shift there is a shift of every quantile, not of a mean that one slow
outlier moves.

Nothing is kept between runs: the statistic is recomputed from the outcome columns, so a
restart, a replica or a back-fill at a past time gives the same number. Each series
yields a point per detector watching it, window `drift:<detector>` (value S/h: 1 or more
is an alarm; n = traces in the span), and one point `mde` (the smallest relative change
the paging detector catches within its target delay at this series' volume, on average;
n = baseline traces): what the operator can expect to be paged for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from collector.jobs.drift_scores import Reference, reference, shift, steps
from collector.jobs.outcomes import LabelFold, OutcomeColumns, WindowAggregate
from collector.jobs.versions import VERSION_LABEL
from collector.jobs.windows import Group, Window
from evaluators.aggregate import Aggregate
from evaluators.drift import cusum, detectable_shift, threshold

WEEK_S = 7 * 86400.0
DRIFT_PREFIX = "drift:"
DETECTABLE = "mde"


@dataclass(frozen=True, slots=True)
class Detector:
    """One severity's detector: what it is tuned to and how rarely it may alarm."""

    name: str
    relative_shift: float
    false_alarms_per_week: float
    within_s: float
    """Target delay: the detectable-drop point says what is caught within it."""
    metrics: frozenset[str] | None = None
    """Metric names it watches (None: every per-sample metric with a direction)."""
    series_metrics: int = 1
    """Metrics it watches across all jobs; x groups = its family of series."""
    within_by_metric: Mapping[str, float] = field(default_factory=dict)
    """Per-metric target delays (e.g. judge metrics, sampled at 5%, get longer)."""

    def watches(self, metric: str) -> bool:
        return self.metrics is None or metric in self.metrics


@dataclass(frozen=True, slots=True)
class MetricFacts:
    """What the detector needs to know of a metric."""

    name: str
    direction: str
    unit: str


@dataclass(frozen=True, slots=True)
class DriftConfig:
    detectors: tuple[Detector, ...]
    """The first is the paging one: its budget and target delay make the `mde` points."""
    span_s: float = 86400.0
    min_baseline: int = 30
    """Series with fewer baseline scores get no statistic (n = 0 points)."""
    every_s: float = 0.0
    """A job recomputes its detectors at most this often (0: every run)."""
    unwatched_labels: frozenset[str] = frozenset({VERSION_LABEL})
    """Group labels whose groups get no detector: a version's series starts and ends with
    its rollout (comparing versions is a canary's job), and leaving them out keeps the
    family of series, hence every threshold and the false-alarm budget, as it was."""


@lru_cache(maxsize=4096)
def _threshold(arl: float, k: float) -> float:
    return threshold(arl, k)


@lru_cache(maxsize=4096)
def _detectable(samples: float, arl: float) -> float:
    return detectable_shift(samples, arl)


def _round(x: float) -> float:
    """Two significant digits: nearby run lengths share a cached threshold."""
    return float(f"{x:.2g}")


def in_control_run_length(det: Detector, n_groups: int, per_week: float) -> float:
    """In-control run length (traces) of one series under `det`'s family-wise budget: the
    family is `det.series_metrics` x `n_groups` series, the series sees `per_week` traces."""
    family = det.series_metrics * n_groups
    return _round(family * per_week / det.false_alarms_per_week)


def drift_points(
    columns: OutcomeColumns,
    metrics: Sequence[MetricFacts],
    now_ts: float,
    longest_s: float,
    folds: Mapping[str, LabelFold] | None,
    config: DriftConfig,
) -> list[tuple[Window, WindowAggregate]]:
    """The detectors' points for every watched metric and group at `now_ts`."""
    recent_from = now_ts - config.span_s
    base_span = longest_s - config.span_s
    if base_span <= 0:
        return []
    ts, alive = columns.timestamps()
    selected = alive & (ts >= now_ts - longest_s) & (ts <= now_ts)
    # Each group's rows once, in time order, split at the span: every metric then reads
    # only its group's rows (a run over a million rows costs a gather per metric and group).
    groups = []
    for group, mask in columns.groups_in(selected, folds):
        if not config.unwatched_labels.isdisjoint(group.labels):
            continue
        rows = np.flatnonzero(mask)
        rows = rows[np.argsort(ts[rows], kind="stable")]
        groups.append((group, rows, ts[rows], ts[rows] >= recent_from))
    out: list[tuple[Window, WindowAggregate]] = []
    for facts in metrics:
        if facts.direction not in ("higher", "lower") or not config.detectors:
            continue
        values, scored = columns.scores(facts.name)
        sign = -1.0 if facts.direction == "higher" else 1.0
        for group, rows, row_ts, in_span in groups:
            got, hold = values[rows], scored[rows]
            base = reference(got[hold & ~in_span], facts.unit)
            recent_mask = hold & in_span
            recent = got[recent_mask]
            recent_ts = row_ts[recent_mask]
            series = _Series(
                facts,
                group,
                base,
                recent,
                recent_ts,
                now_ts,
                sign,
                len(groups),
                base_span,
                config.min_baseline,
            )
            for det in config.detectors:
                if det.watches(facts.name):
                    out.append(series.drift(det, config.span_s))
            out.append(series.detectable(config.detectors[0]))
    return out


@dataclass(frozen=True, slots=True)
class _Series:
    facts: MetricFacts
    group: Group
    base: Reference | None
    recent: np.ndarray
    recent_ts: np.ndarray
    now_ts: float
    sign: float
    """+1 when higher values are worse."""
    n_groups: int
    base_span: float
    min_baseline: int

    @property
    def per_week(self) -> float:
        return 0.0 if self.base is None else self.base.n / self.base_span * WEEK_S

    def arl(self, det: Detector) -> float:
        """In-control run length (traces) of this series under `det`'s budget."""
        return in_control_run_length(det, self.n_groups, self.per_week)

    def drift(self, det: Detector, span_s: float) -> tuple[Window, WindowAggregate]:
        window = Window(DRIFT_PREFIX + det.name, span_s)
        base = self.base
        if base is None or base.n < self.min_baseline:
            return window, WindowAggregate(self.group, Aggregate(self.facts.name, None, 0))
        k = shift(base, det.relative_shift, self.sign) / 2.0
        z, per_step = steps(
            base, self.recent, self.recent_ts, self.now_ts, self.per_week / WEEK_S, k, self.sign
        )
        h = _threshold(max(self.arl(det) / per_step, 2.0), _round(k * math.sqrt(per_step)))
        score = float(cusum(z, 0.0)[-1]) / h if z.size and h > 0 else 0.0
        return window, WindowAggregate(
            self.group, Aggregate(self.facts.name, score, int(self.recent.size))
        )

    def detectable(self, det: Detector) -> tuple[Window, WindowAggregate]:
        """The relative change caught within the target delay: the detectable shift in
        steps' units, turned back into a relative change through `shift` (linear in it)."""
        within = det.within_by_metric.get(self.facts.name, det.within_s)
        window = Window(DETECTABLE, within)
        base = self.base
        if base is None or base.n < self.min_baseline:
            return window, WindowAggregate(self.group, Aggregate(self.facts.name, None, 0))
        traces = self.per_week * within / WEEK_S
        needed = _detectable(_round(traces), self.arl(det))
        unit = shift(base, det.relative_shift, self.sign) / det.relative_shift
        relative = needed / unit if math.isfinite(needed) and unit > 0 else None
        return window, WindowAggregate(self.group, Aggregate(self.facts.name, relative, base.n))
