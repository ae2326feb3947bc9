"""Where a run's windows come from: each window's bucket sums and bins, exact at its edges.

A window's sums (`bucket_store.window_sums`) and its quantile metrics' bins
(`bucket_store.window_bins`) both subtract the contributions of the stored outcomes in
its two edge minutes that fall outside it; `Edges` reads those rows once for both. A run
reads them by a query per window (`from_db`); a back-fill from the sums it holds
(`bucket_history.BucketHistory.source`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from collector.jobs.bucket_stats import Delta
from collector.jobs.bucket_store import (
    WindowBins,
    WindowSums,
    edge_delta,
    window_bins,
    window_sums,
)


class Edges:
    """`edge_delta` of the window asked for last, kept: a window's sums and bins subtract
    the same edge rows, read once."""

    def __init__(self, job: str) -> None:
        self.job = job
        self._last: tuple[tuple[int, float, float | None], Delta] | None = None

    def __call__(self, session: Session, start: float, end: float | None) -> Delta:
        key = (id(session), start, end)
        if self._last is None or self._last[0] != key:
            self._last = (key, edge_delta(session, self.job, start, end))
        return self._last[1]


@dataclass(frozen=True)
class WindowSource:
    """Where a run's windows come from: the bucket sums of (start, end), and the bins of
    (start, end, metrics); a query per window, or a back-fill's rows in hand."""

    sums: Callable[[float, float | None], WindowSums]
    bins: Callable[[float, float, Sequence[str]], WindowBins]


def from_db(session: Session, job: str) -> WindowSource:
    """Each window's sums and bins by a query, its edge rows read once."""
    edges = Edges(job)
    return WindowSource(
        lambda start, end: window_sums(session, job, start, end, edges(session, start, end)),
        lambda start, end, metrics: window_bins(
            session, job, start, end, metrics, edges(session, start, end)
        ),
    )
