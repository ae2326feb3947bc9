"""A job's windows at a time, from its bucket sums (`job_buckets`), not from rows in memory.

Per run: one query sums the longest window's traces per label value (which values keep
series of their own: `labels.choose_kept`, as before), then one query per window sums its
buckets per metric, group and outcome (`bucket_store.window_sums`, exact at the window's
edges). The memory of a run depends on windows x metrics x groups, not on traces.

A window of at most `SMALL_WINDOW_TRACES` traces is aggregated from its stored rows
instead (read into a short-lived `OutcomeColumns`): the row-based aggregation with its
seeded bootstrap for small samples, exactly as before, at a bounded cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from collector.jobs.bucket_stats import SCORED, TRACES
from collector.jobs.bucket_store import WindowSums, window_sums
from collector.jobs.bucket_windows import SMALL_WINDOW_TRACES, aggregates_from_sums, trace_counts
from collector.jobs.labels import Folding, LabelLimits, choose_kept
from collector.jobs.outcome_rows import label_folds, load_columns
from collector.jobs.outcomes import WindowAggregate
from collector.jobs.windows import Window
from evaluators.signature import Signature


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


SumsOf = Callable[[float, float | None], WindowSums]
"""(start, end) -> the job's sums of the traces with start <= ts <= end (None: no end)."""


def sums_from_db(session: Session, job: str) -> SumsOf:
    """Each window's sums by a query (`bucket_store.window_sums`)."""
    return lambda start, end: window_sums(session, job, start, end)


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
    session: Session,
    job: str,
    start: float,
    end: float,
    metrics: Sequence[str],
    group_labels: Sequence[str],
    max_length: int,
    proportions: Mapping[str, bool],
    signatures: Mapping[str, Signature],
    kept: Mapping[str, Folding],
) -> list[WindowAggregate]:
    columns = load_columns(session, job, metrics, group_labels, max_length, start, end)
    return columns.aggregate(start, end, proportions, signatures, folds=label_folds(columns, kept))


def window_points(
    session: Session,
    job: str,
    sums_of: SumsOf,
    windows: Sequence[Window],
    metrics: Sequence[str],
    group_labels: Sequence[str],
    max_length: int,
    proportions: Mapping[str, bool],
    signatures: Mapping[str, Signature],
    kept: Mapping[str, Folding],
    at: float,
) -> list[tuple[Window, WindowAggregate]]:
    """Every metric's aggregate per window and group, the windows ending at `at`."""
    points: list[tuple[Window, WindowAggregate]] = []
    for window in windows:
        start = at - window.seconds
        sums = sums_of(start, at)
        overall = sums.get((TRACES, "", SCORED))
        if overall is None or overall.n <= SMALL_WINDOW_TRACES:
            items = _from_rows(
                session, job, start, at, metrics, group_labels, max_length,
                proportions, signatures, kept,
            )  # fmt: skip
        else:
            items = aggregates_from_sums(sums, metrics, proportions, signatures, kept)
        points.extend((window, item) for item in items)
    return points
