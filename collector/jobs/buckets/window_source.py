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

from collector.jobs.buckets.contributions import Changes
from collector.jobs.buckets.store import (
    Edge,
    WindowBins,
    WindowSums,
    after_end,
    after_ends,
    before_start,
    window_bins,
    window_sums,
)


class Edges:
    """A window's `edge_changes`, from each side's rows read once: a window's sums and bins
    subtract the same edge rows, and the windows of one time share their end minute. Kept
    for the session asked with last (the rows it sees)."""

    def __init__(self, job: str) -> None:
        self.job = job
        self._session = 0
        self._starts: dict[float, Changes] = {}
        self._ends: dict[float, Changes] = {}

    def _for(self, session: Session) -> None:
        if id(session) != self._session or len(self._starts) + len(self._ends) > _KEPT:
            self._session, self._starts, self._ends = id(session), {}, {}

    def preload(self, session: Session, ends: Sequence[float]) -> None:
        """Read the end minutes of `ends` by one query (a back-fill's next steps)."""
        self._for(session)
        self._ends.update(after_ends(session, self.job, ends))

    def __call__(self, session: Session, start: float, end: float | None) -> Edge:
        self._for(session)
        head = self._starts.get(start)
        if head is None:
            head = self._starts[start] = before_start(session, self.job, start)
        if end is None:
            return (head,)
        tail = self._ends.get(end)
        if tail is None:
            tail = self._ends[end] = after_end(session, self.job, end)
        return head, tail


_KEPT = 64
"""Edge minutes kept at most (a back-fill preloads a batch of steps' ends)."""


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
