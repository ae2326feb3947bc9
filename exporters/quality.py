"""The latest quality results, kept in memory so a scrape never touches the database.

Jobs publish their aggregates here after every run (the cache is their
`collector.jobs.run.publish.ResultsSink`); on start-up the cache is filled from the newest
`metric_results` row of every (metric, window, group), and an exporter that runs apart
from the scheduler (`--role exporter`) reloads what was written since, on a timer
(`exporters/refresh.py`). Keys are `(metric, window, group_key)`; `group_key` is "" for the
overall group.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collector.jobs.run.publish import QualityPoint
from collector.store.models import MetricResult


class ResultsCache:
    """Thread-safe snapshot of the newest point per key; readers get an immutable copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._points: dict[tuple[str, str, str], QualityPoint] = {}
        self._version = 0
        self._loaded_id = 0  # metric_results rows up to this id are in the cache

    def update(self, points: Iterable[QualityPoint]) -> None:
        """Replace the points with the same keys, unless the cached one was computed later
        (rows back-filled for past times, `ragpulse jobs backfill`); others stay."""
        with self._lock:
            fresh = dict(self._points)
            for point in points:
                old = fresh.get(point.key)
                if (
                    old is not None
                    and old.computed_at is not None
                    and point.computed_at is not None
                    and point.computed_at < old.computed_at
                ):
                    continue
                fresh[point.key] = point
            self._points = fresh
            self._version += 1

    def replace_job(self, job: str, points: Iterable[QualityPoint]) -> None:
        """Make `points` the whole output of `job` (groups that vanished are dropped)."""
        with self._lock:
            fresh = {k: p for k, p in self._points.items() if p.job != job}
            for point in points:
                fresh[point.key] = point
            self._points = fresh
            self._version += 1

    def snapshot(self) -> list[QualityPoint]:
        with self._lock:
            points = self._points
        return list(points.values())

    def __len__(self) -> int:
        return len(self._points)

    @property
    def version(self) -> int:
        """Changes whenever the points change (the exporter re-renders only then)."""
        return self._version

    def load_latest(self, session: Session) -> int:
        """Put the newest row of every (metric, window, group) written since the previous
        load into the cache (at first, of all rows); returns how many points changed."""
        newest = (
            select(
                MetricResult.metric,
                MetricResult.window,
                MetricResult.group_key,
                func.max(MetricResult.id).label("id"),
            )
            .where(MetricResult.id > self._loaded_id)
            .group_by(MetricResult.metric, MetricResult.window, MetricResult.group_key)
            .subquery()
        )
        rows = list(
            session.scalars(select(MetricResult).join(newest, MetricResult.id == newest.c.id))
        )
        if rows:
            self.update(QualityPoint.from_row(row) for row in rows)
            self._loaded_id = max(self._loaded_id, max(row.id for row in rows))
        return len(rows)
