"""Per-trace score histograms with exemplars: from a low-score bucket to the trace itself.

`ScoreHistograms` is an `OutcomeObserver` (the jobs tell it every trace's outcomes once
they are committed) and a custom collector yielding one family,
`ragpulse_trace_score{metric,<group label>}`: a cumulative histogram since the process
started of each per-trace score, per metric, overall (the group label empty, as in the
quality series) and per value of one group label (the first configured, `tenant` by
default). Every bucket carries an OpenMetrics exemplar
`{trace_id="..."}` of the last trace observed in it (its score, and the time the job
stored the outcome, so it lines up with the bucket increase it explains), which Grafana's
exemplar view links to the trace in Tempo/Jaeger. Exemplars exist only in OpenMetrics
(`/metrics` with `Accept: application/openmetrics-text`); the text format drops them.

Bucket edges follow the metric's unit (`evaluators.registry`): 0/1 verdicts, shares and
0..1 scores in tenths from 0 (the `le="0.0"` bucket holds the exact misses, so a failed
hit or a zero faithfulness has an exemplar of its own); cosine scores on the same edges
(rare values below 0 land in `le="0.0"`); BLEU (0..100) in tens; distances (0..2) in
fifths. Milliseconds are unbounded: log-spaced edges (1-2.5-5 steps from 50 ms to 60 s)
cover what a RAG stage takes, so a slow trace gets an exemplar too. Counts (and metrics
the registry does not know) are left out: they are dataset sizes, not per-trace scores.

Skipped and failed outcomes are not observations (they have no score; the aggregates
count them). Label values come from trace tags, so they are bounded like the quality
series' (`collector.jobs.windows.labels`): cleaned, an allow-list when the operator set one, else
the first `max_values` distinct values keep series of their own and later ones fold into
`other`. The jobs choose their kept values by frequency over a window and may change
their choice every run; cumulative counters cannot move between series, so here the
choice is first come, for the process's life (set an allow-list to choose). With M
metrics, V kept values and B buckets the family has at most M x (V + 2) x (B + 2) series
(`other` and overall included; B + 2: the +Inf bucket, `_sum` and `_count`).

Thread-safe: jobs observe from scheduler threads while scrapes collect from HTTP threads;
one lock guards the counts, and `collect` formats a copy taken under it.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.samples import Exemplar

from collector.jobs.recording.observers import Evaluated
from collector.jobs.windows.labels import OTHER, LabelLimits, clean_value
from evaluators.outcome import Score

FAMILY = "ragpulse_trace_score"
DOC = (
    "Per-trace values of each quality metric since the process started, by metric and "
    "group; every bucket's exemplar names the last trace observed in it (trace_id)."
)

_TENTHS = tuple(round(i / 10, 1) for i in range(11))
UNIT_EDGES: dict[str, tuple[float, ...]] = {
    "ratio": _TENTHS,
    "score": _TENTHS,
    "cosine": _TENTHS,
    "bleu": tuple(float(10 * i) for i in range(11)),
    "distance": tuple(round(i / 5, 1) for i in range(11)),
    "ms": (50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 25000.0, 60000.0),
}
"""The finite bucket edges (upper bounds, `le`) of each unit; +Inf is always added."""

EXEMPLAR_RUNES = 128
"""OpenMetrics caps an exemplar's label names and values at 128 characters together: a
longer trace id gets no exemplar (a cut one would point at no trace)."""
_MAX_TRACE_ID = EXEMPLAR_RUNES - len("trace_id")


def unit_edges(metric: str) -> tuple[float, ...] | None:
    """The bucket edges of `metric` by its registered unit, None when it has none here."""
    from evaluators.registry import describe

    try:
        unit = describe(metric).unit
    except ValueError:  # UnknownMetricError: a metric only some job knows
        return None
    return UNIT_EDGES.get(unit)


_Mark = tuple[str, float, float]
"""An exemplar as observed: trace id, value, timestamp (an `Exemplar` only when scraped)."""


@dataclass(slots=True)
class _Series:
    """One histogram: per-bucket (not cumulative) counts, the sum, each bucket's exemplar."""

    counts: list[int]
    marks: list[_Mark | None]
    total: float = 0.0


@dataclass(slots=True)
class _Metric:
    """One metric's bucket edges and its histograms by group value."""

    edges: tuple[float, ...]
    series: dict[str, _Series] = field(default_factory=dict)

    def of(self, group: str) -> _Series:
        found = self.series.get(group)
        if found is None:
            n = len(self.edges) + 1
            found = self.series[group] = _Series([0] * n, [None] * n)
        return found


class _Bound:
    """One label's bound: the allow-list, else the first `max_values` values seen."""

    def __init__(self, label: str, limits: LabelLimits) -> None:
        self.policy = limits.policy(label)
        self.max_length = limits.max_length
        self.kept: set[str] = set()
        self.folded = 0
        """Observations whose value went to `other` (the value was past the bound)."""

    def fold(self, raw: str | None) -> str:
        value = clean_value(raw, self.max_length) if raw is not None else None
        if not value:
            return ""
        if value == OTHER or value in self.kept:
            return value
        allow = self.policy.allow
        if (allow is None and len(self.kept) < self.policy.max_values) or (
            allow is not None and value in allow
        ):
            self.kept.add(value)
            return value
        self.folded += 1
        return OTHER


class ScoreHistograms(Collector):
    """Observer of the jobs' per-trace outcomes and collector of their histograms.

    `label` is the group label the histograms are split by (None: by metric only);
    `edges` maps a metric to its bucket edges (default: by its unit, `unit_edges`);
    `clock` gives the exemplars' timestamps (epoch seconds).
    """

    def __init__(
        self,
        label: str | None = "tenant",
        limits: LabelLimits | None = None,
        *,
        edges: dict[str, tuple[float, ...]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.label = label
        self._bound = _Bound(label, limits or LabelLimits()) if label else None
        self._given = edges
        self._metrics: dict[str, _Metric | None] = {}
        self._clock = clock or time.time
        self._lock = threading.Lock()
        self.observed = 0
        """Scores counted since start."""

    @property
    def label_names(self) -> list[str]:
        return ["metric", self.label] if self.label else ["metric"]

    @property
    def folded(self) -> int:
        """Observations whose label value was folded into `other`."""
        return self._bound.folded if self._bound is not None else 0

    def _metric(self, metric: str) -> _Metric | None:
        """The metric's histograms (None: a metric without buckets, left out)."""
        if metric not in self._metrics:
            edges = unit_edges(metric) if self._given is None else self._given.get(metric)
            self._metrics[metric] = _Metric(edges) if edges is not None else None
        return self._metrics[metric]

    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        """Count every finite score of `evaluated` in its bucket, overall and in its group;
        the bucket's exemplar becomes that trace (skips, failures and non-finite values
        are not observations)."""
        now = float(self._clock())
        bisect_left, isfinite, metrics = bisect.bisect_left, math.isfinite, self._metrics
        with self._lock:
            for item in evaluated:
                group = ""
                if self._bound is not None and self.label is not None:
                    group = self._bound.fold(item.groups.get(self.label))
                trace_id = item.trace_id
                exemplar = 0 < len(trace_id) <= _MAX_TRACE_ID
                for metric, outcome in item.outcomes.items():
                    if not isinstance(outcome, Score) or not isfinite(outcome.value):
                        continue
                    table = metrics[metric] if metric in metrics else self._metric(metric)
                    if table is None:
                        continue
                    value = outcome.value
                    i = bisect_left(table.edges, value)
                    mark = (trace_id, value, now) if exemplar else None
                    for series in (table.of(""), table.of(group)) if group else (table.of(""),):
                        series.counts[i] += 1
                        series.total += value
                        if mark is not None:
                            series.marks[i] = mark
                    self.observed += 1

    def describe(self) -> Iterator[HistogramMetricFamily]:
        yield HistogramMetricFamily(FAMILY, DOC, labels=self.label_names)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        with self._lock:
            copies = [
                (metric, table.edges, group, list(h.counts), h.total, list(h.marks))
                for metric, table in sorted(self._metrics.items())
                if table is not None
                for group, h in sorted(table.series.items())
            ]
        family = HistogramMetricFamily(FAMILY, DOC, labels=self.label_names)
        for metric, edges, group, counts, total, marks in copies:
            bounds = [repr(float(e)) for e in edges] + ["+Inf"]
            buckets: list[tuple[str, float] | tuple[str, float, Exemplar]] = []
            cumulative = 0
            for bound, count, mark in zip(bounds, counts, marks, strict=True):
                cumulative += count
                if mark is None:
                    buckets.append((bound, float(cumulative)))
                else:
                    exemplar = Exemplar({"trace_id": mark[0]}, mark[1], mark[2])
                    buckets.append((bound, float(cumulative), exemplar))
            labels = [metric, group] if self.label else [metric]
            # OpenMetrics: a histogram's sum is a counter and may not be negative.
            family.add_metric(labels, buckets, total if total >= 0 else None)
        yield family
