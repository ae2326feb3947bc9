"""A job's bucket sums over a span, in memory, for windows at many past times (back-fill).

A back-fill computes the windows at every step of a span (1,009 steps of 10 minutes over
a week). Each step's windows are differences of running sums: the span's `job_buckets`
rows are read once, sorted by (metric, group, outcome, bucket) and summed cumulatively,
so a window is two look-ups per series plus the rows of its two edge minutes
(`bucket_store.edge_changes`). Memory: one row per minute x metric x group x outcome of the
span, never per trace.

The quantile metrics' bins are not held: a span's bin rows are 28-42x its sums' rows at
100M traces a day (docs/SCALING.md), so each step reads its windows' bins by a query, as
a run does (`bucket_store.window_bins`, with the same edge rows as its sums): a back-fill
gives the quantiles at the cost of that query per step and window.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.buckets.frame import BucketFrame
from collector.jobs.buckets.stats import SCORED, TRACES, Sums, bucket_of
from collector.jobs.buckets.store import SUM_COLUMNS, WindowBins, WindowSums, subtract, window_bins
from collector.jobs.buckets.window_source import Edges, WindowSource
from collector.jobs.windows.labels import OTHER, Folding
from collector.jobs.windows.window import OVERALL, Group, group_for
from collector.store.models import JobBucket

_SPAN = np.int64(1) << np.int64(40)
"""Combined sort key: series index x _SPAN + bucket (buckets are minutes: < 2^31)."""


class BucketHistory:
    """The job's bucket rows with since <= bucket start <= until, with running sums."""

    def __init__(
        self,
        session: Session,
        job: str,
        since: float,
        until: float,
        scored: Sequence[str] | None = None,
    ) -> None:
        """`scored`: read only these metrics' scored sums (what the detectors need), not
        the trace counts and skip and error counts the windows need too."""
        self.job = job
        self.span = (since, until)
        self._edges = Edges(job)
        self._frame: tuple[Any, BucketFrame] | None = None
        index: dict[tuple[str, str, str], int] = {}
        chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for part in _bucket_rows(session, job, bucket_of(since), bucket_of(until), scored):
            codes = np.fromiter(
                (index.setdefault((r[0], r[1], r[2]), len(index)) for r in part),
                dtype=np.int64,
                count=len(part),
            )
            numbers = np.array([row[3:] for row in part], dtype=np.float64)
            chunks.append((codes, numbers[:, 0].astype(np.int64), numbers[:, 1:]))
        series = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, np.int64)
        buckets = np.concatenate([c[1] for c in chunks]) if chunks else np.zeros(0, np.int64)
        rows = np.concatenate([c[2] for c in chunks]) if chunks else np.zeros((0, len(SUM_COLUMNS)))
        self.keys = list(index)
        combined = series * _SPAN + buckets
        order = np.argsort(combined, kind="stable")
        self._combined = combined[order]
        sorted_sums = rows[order]
        self._series = series[order]
        self._bucket = buckets[order]
        self._values = sorted_sums
        zero = np.zeros((1, len(SUM_COLUMNS)))
        self._running = np.vstack([zero, np.cumsum(sorted_sums, axis=0)])

    def _between(self, first: int, last: int | None) -> np.ndarray:
        """Per series, the sums of buckets first..last (None: to the end): (series, cols)."""
        codes = np.arange(len(self.keys), dtype=np.int64)
        lo = np.searchsorted(self._combined, codes * _SPAN + first, side="left")
        top = (codes + 1) * _SPAN - 1 if last is None else codes * _SPAN + last
        hi = np.searchsorted(self._combined, top, side="right")
        return np.asarray(self._running[hi] - self._running[lo])

    def window_sums(self, session: Session, start: float, end: float | None) -> WindowSums:
        """As `bucket_store.window_sums`, from the rows in hand."""
        first = bucket_of(start)
        last = None if end is None else bucket_of(end)
        totals = self._between(first, last)
        out: WindowSums = {}
        for code, key in enumerate(self.keys):
            row = totals[code]
            if row[0] == 0 and not row.any():
                continue
            n, total, squares, positives, log_total, log_squares = row.tolist()
            out[key] = Sums(round(n), total, squares, round(positives), log_total, log_squares)
        return subtract(out, self._edges(session, start, end))

    def preload_ends(self, session: Session, ends: Sequence[float]) -> None:
        """Read the edge minutes after `ends` (the next steps' times) by one query."""
        self._edges.preload(session, ends)

    def window_bins(
        self, session: Session, start: float, end: float, metrics: Sequence[str]
    ) -> WindowBins:
        """As `bucket_store.window_bins` (a query: the bins are not held)."""
        return window_bins(session, self.job, start, end, metrics, self._edges(session, start, end))

    def source(self, session: Session) -> WindowSource:
        """The windows of `session`'s step from the sums in hand."""
        return WindowSource(
            lambda start, end: self.window_sums(session, start, end),
            lambda start, end, metrics: self.window_bins(session, start, end, metrics),
        )

    def frame(self, metrics: Sequence[str], kept: Mapping[str, Folding]) -> BucketFrame:
        """The scored sums of `metrics` per (metric, final group, minute) of the span
        (made once per choice of kept values: a back-fill's steps share it)."""
        key = (
            tuple(metrics),
            tuple(sorted((label, tuple(sorted(f.kept))) for label, f in kept.items())),
        )
        if self._frame is None or self._frame[0] != key:
            self._frame = (key, self._make_frame(metrics, kept))
        return self._frame[1]

    def _make_frame(self, metrics: Sequence[str], kept: Mapping[str, Folding]) -> BucketFrame:
        metric_code = {m: i for i, m in enumerate(metrics)}
        groups: list[Group] = [OVERALL]
        by_key: dict[str, int] = {OVERALL.key: 0}
        series_metric = np.full(len(self.keys), -1, dtype=np.int64)
        series_group = np.zeros(len(self.keys), dtype=np.int64)
        for code, (metric, grp, outcome) in enumerate(self.keys):
            if outcome != SCORED or metric == TRACES or metric not in metric_code:
                continue
            group = OVERALL
            if grp:
                label, _, value = grp.partition("=")
                folding = kept.get(label)
                keep = folding is None or value in folding.kept
                group = group_for(label, value if keep else OTHER)
            if group.key not in by_key:
                by_key[group.key] = len(groups)
                groups.append(group)
            series_metric[code] = metric_code[metric]
            series_group[code] = by_key[group.key]
        rows = series_metric[self._series] >= 0
        bucket = self._bucket[rows]
        low = int(bucket.min()) if bucket.size else 0
        width = int(bucket.max()) - low + 1 if bucket.size else 1
        # one int64 key per (metric, group, minute): np.unique on it, not on rows of three
        combined = (
            series_metric[self._series][rows] * len(groups) + series_group[self._series][rows]
        ) * width + (bucket - low)
        unique, inverse = np.unique(combined, return_inverse=True)
        inverse = inverse.reshape(-1)
        values = self._values[rows]
        merged = np.zeros((unique.shape[0], len(SUM_COLUMNS)))
        for c in range(len(SUM_COLUMNS)):
            merged[:, c] = np.bincount(inverse, weights=values[:, c], minlength=unique.shape[0])
        series, minute = np.divmod(unique, width)
        metric_of, group_of = np.divmod(series, len(groups))
        return BucketFrame(
            metrics=tuple(metrics),
            groups=tuple(groups),
            metric=metric_of.astype(np.int32),
            group=group_of.astype(np.int32),
            bucket=(minute + low).astype(np.int64),
            n=np.rint(merged[:, 0]).astype(np.int64),
            total=merged[:, 1],
            squares=merged[:, 2],
            positives=np.rint(merged[:, 3]).astype(np.int64),
            log_total=merged[:, 4],
            log_squares=merged[:, 5],
        )


_CHUNK = 50_000
_SQL = (
    "SELECT metric, grp, outcome, bucket, n, total, squares, positives, log_total, "
    "log_squares FROM job_buckets WHERE job = %s AND bucket >= %s AND bucket <= %s"
)


def _bucket_rows(
    session: Session, job: str, first: int, last: int, scored: Sequence[str] | None
) -> Iterator[Sequence[Sequence[Any]]]:
    """The job's bucket rows of minutes first..last as (metric, grp, outcome, bucket,
    *sums) tuples, a chunk at a time. PostgreSQL (psycopg): a server-side cursor of the
    driver, in binary, which reads them in half the time of SQLAlchemy's result rows (a
    back-fill's span holds a million)."""
    bind = session.get_bind()
    if bind.dialect.name == "postgresql" and bind.dialect.driver == "psycopg":
        sql, params = _SQL, [job, first, last]
        if scored is not None:
            sql += " AND outcome = %s AND metric = ANY(%s)"
            params += [SCORED, list(scored)]
        raw: Any = session.connection().connection.driver_connection
        with raw.cursor("ragpulse_bucket_history", binary=True) as cur:
            cur.execute(sql, params)
            while part := cur.fetchmany(_CHUNK):
                yield part
        return
    b = JobBucket
    query = select(b.metric, b.grp, b.outcome, b.bucket, *(getattr(b, c) for c in SUM_COLUMNS))
    query = query.where(b.job == job, b.bucket >= first, b.bucket <= last)
    if scored is not None:
        query = query.where(b.outcome == SCORED, b.metric.in_(list(scored)))
    yield from session.connection().execute(query.execution_options(yield_per=_CHUNK)).partitions()


def since_of(times: Sequence[datetime], longest_s: float) -> float:
    """Where a back-fill over `times` (oldest first) needs sums from."""
    first = times[0] if times[0].tzinfo else times[0].replace(tzinfo=UTC)
    return first.timestamp() - longest_s
