"""The worst traces of an `external:<name>` series: read from the traces' own evaluations.

External scores are not job outcomes: they sit in `traces.evaluations` under the name the
application gave them (`collector.jobs.catalog.external`). The window's traces that carry
evaluations (the `traces.timestamp` index narrows the window) are read and their names
cleaned as the series' are, so `ragpulse traces --metric external:helpfulness` finds the
traces behind that series; the explanation the application sent is the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.catalog.external import metric_name
from collector.jobs.windows.slices import slice_values
from collector.jobs.windows.versions import DEFAULT_SOURCES
from collector.store.models import Trace
from collector.store.worst import Order, TraceScore

MAX_NAME_LENGTH = 64


def worst_external(
    session: Session,
    *,
    metric: str,
    since: datetime,
    until: datetime,
    limit: int = 20,
    order: Order = "lowest",
    where: Mapping[str, str] | None = None,
    errors: bool = False,
    max_name_length: int = MAX_NAME_LENGTH,
    version_sources: Sequence[str] = DEFAULT_SOURCES,
) -> list[TraceScore]:
    """Like `collector.store.worst.worst_traces`, for an `external:<name>` metric."""
    query = select(
        Trace.trace_id, Trace.timestamp, Trace.tags, Trace.model, Trace.question, Trace.evaluations
    ).where(Trace.timestamp >= since, Trace.timestamp < until, Trace.evaluations.is_not(None))
    found: list[TraceScore] = []
    for trace_id, ts, tags, model, question, evaluations in session.execute(query):
        result = _result(evaluations, metric, max_name_length)
        if result is None:
            continue
        slices = slice_values(
            tags,
            model=model,
            question=question,
            dimensions=tuple(where or ()) or ("tenant",),
            version_sources=version_sources,
        )
        if any(slices.get(k) != v for k, v in (where or {}).items()):
            continue
        score, error = result.get("score"), result.get("error_type")
        value = (
            float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
        )
        is_score = value is not None
        if errors != (not is_score and error is not None):
            continue
        found.append(
            TraceScore(
                trace_id=trace_id,
                metric=metric,
                timestamp=ts,
                value=None if errors else value,
                groups={"tenant": (tags or {}).get("tenant")} if (tags or {}).get("tenant") else {},
                slices=slices,
                question=question,
                reason=result.get("explanation") or result.get("label"),
                error=str(error) if errors else None,
            )
        )
    if errors:
        found.sort(key=lambda t: t.timestamp, reverse=True)
    else:
        found.sort(key=lambda t: (t.value if order == "lowest" else -(t.value or 0.0), t.timestamp))
    return found[:limit]


def _result(evaluations: Any, metric: str, max_length: int) -> Mapping[str, Any] | None:
    if not isinstance(evaluations, Mapping):
        return None
    for raw, result in evaluations.items():
        if metric_name(raw, max_length) == metric and isinstance(result, Mapping):
            return result
    return None
