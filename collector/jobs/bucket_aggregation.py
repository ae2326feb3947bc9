"""A job's windows at a time, from its bucket sums (`job_buckets`), not from rows in memory.

Per run: one query sums the longest window's traces per label value (which values keep
series of their own: `labels.choose_kept`, as before), then one query per window sums its
buckets per metric, group and outcome (`bucket_store.window_sums`, exact at the window's
edges), and for a job with metrics read by quantile one more sums their bins
(`bucket_bins`: p50/p95/p99 within 1%). The memory of a run depends on windows x metrics
x groups (x bins), not on traces.

A window of at most `SMALL_WINDOW_TRACES` traces is aggregated from its stored rows
instead (read into a short-lived `OutcomeColumns`): the row-based aggregation with its
seeded bootstrap for small samples, exactly as before, and exact quantiles, at a bounded
cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from sqlalchemy.orm import Session

from collector.jobs import bucket_bins
from collector.jobs.bucket_stats import SCORED, TRACES
from collector.jobs.bucket_store import WindowSums
from collector.jobs.bucket_windows import SMALL_WINDOW_TRACES, aggregates_from_sums, trace_counts
from collector.jobs.labels import Folding, LabelLimits, choose_kept
from collector.jobs.outcome_rows import label_folds, load_columns
from collector.jobs.outcomes import OutcomeColumns, WindowAggregate
from collector.jobs.window_source import WindowSource
from collector.jobs.windows import Window
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


def _from_rows(
    columns: OutcomeColumns,
    start: float,
    end: float,
    proportions: Mapping[str, bool],
    signatures: Mapping[str, Signature],
    kept: Mapping[str, Folding],
    quantiles: Sequence[str],
) -> list[WindowAggregate]:
    folds = label_folds(columns, kept)
    items = columns.aggregate(start, end, proportions, signatures, folds=folds)
    if quantiles:
        items += bucket_bins.from_rows(columns, start, end, quantiles, signatures, folds)
    return items


def window_points(
    session: Session,
    job: str,
    source: WindowSource,
    windows: Sequence[Window],
    metrics: Sequence[str],
    group_labels: Sequence[str],
    max_length: int,
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
        overall = sums.get((TRACES, "", SCORED))
        if overall is None or overall.n <= SMALL_WINDOW_TRACES:
            columns = (
                load_columns(session, job, metrics, group_labels, max_length, start, at)
                if source.rows is None
                else source.rows(start, at)
            )
            items = _from_rows(columns, start, at, proportions, signatures, kept, quantiles)
        else:
            items = aggregates_from_sums(sums, metrics, proportions, signatures, kept)
            if quantiles:
                groups = list({item.group.key: item.group for item in items}.values())
                bins = source.bins(start, at, quantiles)
                items += bucket_bins.from_bins(bins, groups, quantiles, signatures, kept)
        points.extend((window, item) for item in items)
    return points
