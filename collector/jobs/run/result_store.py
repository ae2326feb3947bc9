"""Writing a run's aggregates to `metric_results`: one row per metric x window x group.

Every run appends its rows; a job's rows older than the retention are deleted in the
same transaction. A row's
`skip_reasons` also counts its errors by type (as "error: <type>"), so that one column
explains every sample without a value. The caller commits. On PostgreSQL the rows go in
by COPY (a back-fill writes ~280 rows a step, a thousand steps).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert
from sqlalchemy.orm import Session

from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.window import Window
from collector.store import copy_text as ct
from collector.store.bulk import copy_new_rows, is_postgresql
from collector.store.models import MetricResult

Points = Sequence[tuple[Window, WindowAggregate]]
_COLUMNS = (
    "job", "metric", "window", "group_key", "group_labels", "value", "n", "skipped", "errors",
    "skip_reasons", "ci_lower", "ci_upper", "window_start", "window_end", "computed_at",
    "signature",
)  # fmt: skip


def _float(value: Any) -> bytes:
    return ct.NULL if value is None else repr(float(value)).encode()


def _int(value: Any) -> bytes:
    return str(int(value)).encode()


_ENCODE: dict[str, Callable[[Any], bytes]] = {
    "group_labels": ct.json,
    "skip_reasons": ct.json,
    "window_start": ct.timestamp,
    "window_end": ct.timestamp,
    "computed_at": ct.timestamp,
    "value": _float,
    "n": _int,
    "skipped": _int,
    "errors": _int,
    "ci_lower": _float,
    "ci_upper": _float,
}


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
    points: Points,
) -> int:
    """Delete `job`'s rows older than `retention`, insert one row per point; the count."""
    return write_steps(session, job, [(now, points)], retention)


def write_steps(
    session: Session,
    job: str,
    steps: Sequence[tuple[datetime, Points]],
    retention: timedelta | None,
    *,
    replace: bool = False,
) -> int:
    """`write_results` of several times at once (a back-fill's steps, oldest first), the
    retention counted from the newest (None: expire nothing); `replace`: first delete the
    job's rows computed at those times (an earlier back-fill's). The rows written."""
    if not steps:
        return 0
    if retention is not None:
        expire_results(session, job, max(at for at, _ in steps), retention)
    if replace:
        session.execute(
            delete(MetricResult).where(
                MetricResult.job == job, MetricResult.computed_at.in_([at for at, _ in steps])
            )
        )
    rows = [result_row(job, window, item, at) for at, points in steps for window, item in points]
    if not rows:
        return 0
    if not (is_postgresql(session) and _copy(session, rows)):
        session.execute(insert(MetricResult), rows)
    return len(rows)


def expire_results(session: Session, job: str, now: datetime, retention: timedelta) -> None:
    """Delete `job`'s rows computed more than `retention` before `now`."""
    session.execute(
        delete(MetricResult).where(
            MetricResult.job == job, MetricResult.computed_at < now - retention
        )
    )


def _copy(session: Session, rows: Sequence[dict[str, Any]]) -> bool:
    """COPY `rows` into `metric_results` (False, nothing written: use INSERT)."""
    if session.get_bind().dialect.driver != "psycopg":
        return False
    encoders = [_ENCODE.get(c, ct.text) for c in _COLUMNS]
    lines = (
        ct.line([encode(row[c]) for c, encode in zip(_COLUMNS, encoders, strict=True)])
        for row in rows
    )
    return copy_new_rows(session, MetricResult.__table__, _COLUMNS, lines)  # type: ignore[arg-type]
