"""Per-minute sufficient statistics of a job's scores: the in-memory form of the bucket table.

Issue 31 replaces the per-trace outcome columns by sums per (metric, group, minute): the
number of scored values, their sum and sum of squares, how many are positive, and the sum
and sum of squares of their logarithms (`ln(max(x, 1e-3))`, the latencies' scale, kept
for every metric so a reader needs not know the units). Everything a window or a drift
detector needs of a series is a sum over its rows, so the memory of a reader depends on
windows x metrics x groups x minutes, not on traces.

`BucketFrame` is that table held as numpy columns, one row per (metric, group, bucket)
that holds at least one score; the database reader builds it from the stored rows, and
`frame_of` from values in hand (`benchmarks.outcome_columns` for tests and benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from collector.jobs.buckets.frame_series import SeriesIndex
from collector.jobs.buckets.stats import BUCKET_S, LOG_FLOOR
from collector.jobs.windows.window import Group

__all__ = ["BUCKET_S", "LOG_FLOOR", "BucketFrame", "frame_of", "log_values", "series"]


@dataclass(frozen=True)
class BucketFrame:
    """Rows of per-minute sums; `metric` and `group` are codes into the tuples."""

    metrics: tuple[str, ...]
    groups: tuple[Group, ...]
    """Group code -> group, the overall group first."""
    metric: np.ndarray
    group: np.ndarray
    bucket: np.ndarray
    """floor(ts / BUCKET_S) of the scores a row sums."""
    n: np.ndarray
    total: np.ndarray
    squares: np.ndarray
    positives: np.ndarray
    """How many of the values are > 0 (binary metrics: the successes)."""
    log_total: np.ndarray
    log_squares: np.ndarray

    @cached_property
    def index(self) -> SeriesIndex:
        """The rows by series and minute with running sums (`drift_series`), made once:
        a reader stepping through time (a back-fill's detectors) looks its spans up in it
        instead of selecting rows at every step."""
        return SeriesIndex(self)


def log_values(values: np.ndarray) -> np.ndarray:
    """The log scale the `log_*` sums are on."""
    return np.asarray(np.log(np.maximum(values, LOG_FLOOR)), dtype=np.float64)


def frame_of(
    metrics: tuple[str, ...],
    groups: tuple[Group, ...],
    parts: list[tuple[int, int, np.ndarray, np.ndarray]],
) -> BucketFrame:
    """The frame of (metric code, group code, minutes, values) parts, each summed per
    minute."""
    cols: dict[str, list[np.ndarray]] = {name: [] for name in _FIELDS}
    for metric_code, group_code, minutes, values in parts:
        found, inverse = np.unique(minutes, return_inverse=True)
        logs = log_values(values)
        size = found.size
        cols["metric"].append(np.full(size, metric_code, dtype=np.int32))
        cols["group"].append(np.full(size, group_code, dtype=np.int32))
        cols["bucket"].append(found.astype(np.int64))
        cols["n"].append(np.bincount(inverse, minlength=size).astype(np.int64))
        cols["total"].append(np.bincount(inverse, values, size))
        cols["squares"].append(np.bincount(inverse, values * values, size))
        positive = (values > 0).astype(np.float64)
        cols["positives"].append(np.bincount(inverse, positive, size).astype(np.int64))
        cols["log_total"].append(np.bincount(inverse, logs, size))
        cols["log_squares"].append(np.bincount(inverse, logs * logs, size))
    arrays = {
        name: np.concatenate(parts_of) if parts_of else np.zeros(0, dtype=_FIELDS[name])
        for name, parts_of in cols.items()
    }
    return BucketFrame(metrics, groups, **arrays)


_FIELDS: dict[str, type] = {
    "metric": np.int32,
    "group": np.int32,
    "bucket": np.int64,
    "n": np.int64,
    "total": np.float64,
    "squares": np.float64,
    "positives": np.int64,
    "log_total": np.float64,
    "log_squares": np.float64,
}


def series(frame: BucketFrame, metric: str, group: Group) -> np.ndarray:
    """Row indices of one metric and group, sorted by bucket (empty when either is not
    in the frame)."""
    if metric not in frame.metrics or group not in frame.groups:
        return np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(
        (frame.metric == frame.metrics.index(metric)) & (frame.group == frame.groups.index(group))
    )
    return rows[np.argsort(frame.bucket[rows], kind="stable")]
