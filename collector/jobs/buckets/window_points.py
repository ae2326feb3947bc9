"""A job's windows at a time, from its bucket sums (`job_buckets`), not from rows in memory.

Per run: one query sums the longest window's traces per label value (which values keep
series of their own: `labels.choose_kept`, as before), then one query per window sums its
buckets per metric, group and outcome (`bucket_store.window_sums`, exact at the window's
edges), and for a job with metrics read by quantile one more sums their bins
(`bucket_bins`: p50/p95/p99 within 1%). The memory of a run depends on windows x metrics
x groups (x bins), not on traces.

Every window, small or large, takes this path: a series' interval depends on its own
values only (`bucket_windows`: Wilson for proportions, Student's t for means at every n),
never on how many traces the rest of the job has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from collector.jobs.buckets import bins as bucket_bins
from collector.jobs.buckets.store import WindowSums
from collector.jobs.buckets.window_source import WindowSource
from collector.jobs.buckets.window_sums import aggregates_from_sums, trace_counts
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding, LabelLimits, choose_kept
from collector.jobs.windows.window import Window
from evaluators.signature import Signature

SumsOf = Callable[[float, float | None], WindowSums]
"""(start, end) -> the job's sums of the traces with start <= ts <= end (None: no end)."""


def foldings(
    sums_of: SumsOf, since: float, labels: Sequence[str], limits: LabelLimits
) -> dict[str, Folding]:
    """Per group label, the values kept over the traces with ts >= `since`."""
    counts = trace_counts(sums_of(since, None))
    out = {}
    for label in labels:
        by_value = counts.get(label, {})
        values = sorted(by_value)
        out[label] = choose_kept(
            label, values, np.array([by_value[v] for v in values], dtype=np.int64),
            limits.policy(label),
        )  # fmt: skip
    return out


def window_points(
    source: WindowSource,
    windows: Sequence[Window],
    metrics: Sequence[str],
    proportions: Mapping[str, bool],
    signatures: Mapping[str, Signature],
    kept: Mapping[str, Folding],
    at: float,
    quantiles: Sequence[str] = (),
) -> list[tuple[Window, WindowAggregate]]:
    """Every metric's aggregate per window and group, the windows ending at `at`, and the
    quantiles of `quantiles` (metrics registered with `quantiles=True`)."""
    points: list[tuple[Window, WindowAggregate]] = []
    for window in windows:
        start = at - window.seconds
        sums = source.sums(start, at)
        items = aggregates_from_sums(sums, metrics, proportions, signatures, kept)
        if quantiles:
            groups = list({item.group.key: item.group for item in items}.values())
            bins = source.bins(start, at, quantiles)
            items += bucket_bins.from_bins(bins, groups, quantiles, signatures, kept)
        points.extend((window, item) for item in items)
    return points
