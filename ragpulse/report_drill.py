"""The store side of `ragpulse report`'s drill-down: worst traces and the change's slice."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector.settings import Settings, parse_duration
from exporters.report.drilldown import Drill, Drilled, TraceRow
from ragpulse.metric_jobs import per_trace_targets

logger = logging.getLogger(__name__)

SHOWN = 5


def store_drill(settings: Settings, engine: Engine, *, shown: int = SHOWN) -> Drill:
    """A `Drill` over the configured store (each metric and range is read once)."""
    from collector.jobs.queries.explain import explain
    from collector.store.topics import topic_names
    from collector.store.worst import worst_traces

    targets = per_trace_targets(settings)
    baseline = timedelta(seconds=parse_duration(settings.slices.baseline))

    @lru_cache(maxsize=256)
    def drill(metric: str, start: float, end: float, tenant: str | None) -> Drilled | None:
        if metric not in targets:
            return None
        jobs, direction = targets[metric]
        since, until = datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)
        try:
            with Session(engine) as session:
                found = worst_traces(
                    session,
                    jobs=jobs,
                    metric=metric,
                    since=since,
                    until=until,
                    limit=shown,
                    order="highest" if direction == "lower" else "lowest",
                    where={"tenant": tenant} if tenant else None,
                )
                change = explain(
                    session,
                    jobs=jobs,
                    metric=metric,
                    since=since,
                    until=until,
                    baseline=baseline,
                    dimensions=settings.slices.dimensions,
                    max_values=settings.slices.max_values,
                )
                if change is not None and "topic" in settings.slices.dimensions:
                    change = change.named(topic_names(session))
        except Exception:
            logger.exception("could not read the traces of %s from the store", metric)
            return None
        rows = tuple(
            TraceRow(
                t.trace_id,
                t.timestamp.timestamp(),
                t.tenant,
                float(t.value if t.value is not None else 0.0),
                t.question or "",
                t.reason,
            )
            for t in found
        )
        headline = None
        if change is not None and change.top is not None:
            worse = change.delta < 0 if direction == "higher" else change.delta > 0
            top = change.top
            clear = top.high < 0 if change.delta < 0 else top.low > 0
            if worse and clear:
                headline = change.headline() + " (vs the baseline before this range)"
        return Drilled(metric, rows, headline)

    return drill
