"""Writing a run's aggregates to `metric_results`: one row per metric x window x group.

Every run appends its rows; a job's rows older than the retention are deleted in the
same transaction. A row's
`skip_reasons` also counts its errors by type (as "error: <type>"), so that one column
explains every sample without a value. The caller commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert
from sqlalchemy.orm import Session

from collector.jobs.outcomes import WindowAggregate
from collector.jobs.windows import Window
from collector.store.models import MetricResult


def result_row(job: str, window: Window, item: WindowAggregate, now: datetime) -> dict[str, Any]:
    """The `metric_results` row of one aggregate of `job`, computed at `now`."""
    agg = item.aggregate
    reasons = dict(agg.skip_reasons)
    for error_type, count in agg.error_types.items():
        reasons[f"error: {error_type}"] = count
    return {
        "job": job,
        "metric": agg.metric,
        "window": window.name,
        "group_key": item.group.key,
        "group_labels": dict(item.group.labels) or None,
        "value": agg.value,
        "n": agg.n,
        "skipped": agg.skipped,
        "errors": agg.errors,
        "skip_reasons": reasons or None,
        "ci_lower": agg.ci_lower,
        "ci_upper": agg.ci_upper,
        "window_start": window.start(now),
        "window_end": now,
        "computed_at": now,
        "signature": str(agg.signature),
    }


def write_results(
    session: Session,
    job: str,
    now: datetime,
    retention: timedelta,
    points: Sequence[tuple[Window, WindowAggregate]],
) -> int:
    """Delete `job`'s rows older than `retention`, insert one row per point; the count."""
    session.execute(
        delete(MetricResult).where(
            MetricResult.job == job, MetricResult.computed_at < now - retention
        )
    )
    rows = [result_row(job, window, item, now) for window, item in points]
    if rows:
        session.execute(insert(MetricResult), rows)
    return len(rows)
