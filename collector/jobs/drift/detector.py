"""What a drift detector is: its tuning, its family-wise false-page budget, its points.

A detector (one per severity) is a one-sided CUSUM per metric and group (overall, kept
label values, `other`; not the `version` groups: `DriftConfig.unwatched_labels`) that tests
the last `span` against the baseline of the rest of the longest window (`evaluators.drift`),
tuned to a relative change `Detector.relative_shift` (in fact three, tuned to half, once
and twice it, sharing the budget: `drift.sums.TUNINGS`). Its threshold is set so the detector
pages falsely at most `false_alarms_per_week` times a week over all its series together
(family-wise: each of the N series gets an in-control run length of N times its weekly
volume over that budget), so a quiet week stays quiet at any traffic volume and the
threshold needs no hand tuning. The statistic itself, from per-minute sums, is
`collector.jobs.drift.sums`.

Each series yields a point per detector watching it, window `drift:<detector>` (value S/h:
1 or more is an alarm; n = scores in the span), and one point `mde` (the smallest relative
change the paging detector catches within its target delay at this series' volume, on
average; n = baseline scores): what the operator can expect to be paged for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from collector.jobs.windows.versions import VERSION_LABEL
from evaluators.drift import detectable_shift, estimated_threshold

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
def _estimated_threshold(arl: float, k: float, bias_sd: float, scale_sd: float = 0.0) -> float:
    return estimated_threshold(arl, k, bias_sd, scale_sd)


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
