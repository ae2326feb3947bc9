"""A `BucketFrame`'s series in time order with running sums: any span's baseline in O(1).

The detectors read, for every (metric, group) series, the sums of its baseline minutes
and the rows of its recent ones (`drift_buckets`). A back-fill asks for them at a
thousand times over the same frame, so they are prepared once per frame: the rows sorted
by (series, minute) with one int64 key each, so that one `searchsorted` per bound finds
every series' rows of a span, and running sums of each column, so that a span's sums are
two look-ups. The skewness of a continuous metric's baseline, sum_b (s_b - n_b mu)^3 for
the baseline's own mean mu, is summed over the span's rows as before (a view of them: no
copy). What the index adds to the frame: 56 bytes a row (6 running sums, 1 key), 28 MB
for a job's 7-day frame of 504k minute rows (docs/SCALING.md).
"""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

_COLUMNS = ("n", "total", "squares", "positives", "log_total", "log_squares")


def _running(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each series' running sums from 0, a zero before each: for series k (rows
    starts[k]..), the sum of its rows [a, b) is out[b + k] - out[a + k]. Summed per
    series, so a difference is as exact as the series' own sums (a running sum over all
    series would carry the others' magnitude)."""
    padded = np.insert(values.astype(np.float64), starts, 0.0)
    bounds = np.append(starts + np.arange(starts.size), padded.size)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        np.cumsum(padded[lo:hi], out=padded[lo:hi])
    return padded


class Frame(Protocol):
    """What the index reads of a `bucket_frame.BucketFrame` (named here, not imported:
    the frame makes its index)."""

    @property
    def groups(self) -> Sized: ...
    @property
    def metric(self) -> np.ndarray: ...
    @property
    def group(self) -> np.ndarray: ...
    @property
    def bucket(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Spans:
    """Per series (in `SeriesIndex.keys` order) the row bounds of one time's spans:
    baseline rows [first, split), recent rows [split, stop)."""

    first: np.ndarray
    split: np.ndarray
    stop: np.ndarray


class SeriesIndex:
    """The frame's rows sorted by (series, minute), their keys and running sums."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        n_groups = max(len(frame.groups), 1)
        series = frame.metric.astype(np.int64) * n_groups + frame.group
        self._sorted: dict[str, np.ndarray] = {}
        order = np.lexsort((frame.bucket, series))
        self.order = None if bool(np.all(order[1:] > order[:-1])) else order
        series = self._take(series)
        bucket = self._take(frame.bucket)
        self.width = int(bucket.max()) - int(bucket.min()) + 2 if bucket.size else 2
        self.low = int(bucket.min()) if bucket.size else 0
        self.combined = series * self.width + (bucket - self.low)
        self.starts = np.flatnonzero(np.diff(series, prepend=-1))
        self.keys = series[self.starts]
        """The series present in the frame, ascending (metric code x groups + group)."""

    def _take(self, values: np.ndarray) -> np.ndarray:
        return values if self.order is None else values[self.order]

    def column(self, name: str) -> np.ndarray:
        """A frame column in series order: the frame's own array when it is sorted (as
        `BucketHistory` makes them), else a sorted copy, made once."""
        found = self._sorted.get(name)
        if found is None:
            found = self._sorted[name] = self._take(getattr(self.frame, name))
        return found

    def spans(self, first: int, split: int, last: int) -> Spans:
        """Row bounds per series of the minutes first..split-1 and split..last."""
        base = self.keys * self.width - self.low

        def at(minute: int, side: str) -> np.ndarray:
            target = base + min(max(minute, self.low - 1), self.low + self.width - 1)
            return np.searchsorted(self.combined, target, side=side)  # type: ignore[call-overload, no-any-return]

        return Spans(at(first, "left"), at(split, "left"), at(last, "right"))

    @cached_property
    def running(self) -> dict[str, np.ndarray]:
        """Running sums of every sum column, in series order."""
        return {name: _running(self.column(name), self.starts) for name in _COLUMNS}

    def sums(self, name: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Per series (all of `keys`), the sum of column `name` over its rows [lo, hi)."""
        running = self.running[name]
        k = np.arange(self.keys.size)
        return running[hi + k] - running[lo + k]  # type: ignore[no-any-return]

    def third(self, lo: int, hi: int, mu: float, log: bool) -> float:
        """sum over rows [lo, hi) of (s - n mu)^3, s the minute's sum (of logarithms:
        `log`)."""
        centred = self.column("log_total" if log else "total")[lo:hi] - self.column("n")[lo:hi] * mu
        return float(np.sum(centred * centred * centred))  # ** 3 calls pow(): 6x slower
