"""Per-slice moments of a per-trace metric in a window and its baseline, in one query.

`job_outcomes` rows of the given jobs from the start of the baseline to the end of the
window are grouped by period (baseline / window) and by the value of every slice
dimension (`job_outcomes.slices`, else the group labels of rows stored before slices
were, else "(none)"); the database returns count, sum and sum of squares of the
metric's numeric outcomes per group. The cross-tabulation is small (the product of the
dimensions' distinct values at most, and never more than the rows), so marginals of one
or two dimensions are summed in numpy afterwards (`collector.jobs.explain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import case, func, literal, select
from sqlalchemy.orm import Session

from collector.store.models import JobOutcome
from collector.store.worst import json_number, json_text, number_type

NONE = "(none)"
"""The slice value of traces without that dimension."""


@dataclass(frozen=True)
class CrossTab:
    """Cells of (period, dimension values): counts, sums, sums of squares."""

    dimensions: tuple[str, ...]
    keys: list[tuple[str, ...]]
    in_window: NDArray[np.bool_]
    n: NDArray[np.float64]
    total: NDArray[np.float64]
    squares: NDArray[np.float64]


def cross_tab(
    session: Session,
    *,
    jobs: Sequence[str],
    metric: str,
    baseline_since: datetime,
    since: datetime,
    until: datetime,
    dimensions: Sequence[str],
) -> CrossTab:
    """The metric's moments per period and slice-value combination."""
    value = json_number(session, JobOutcome.outcomes, metric)
    dims = [
        func.coalesce(
            json_text(session, JobOutcome.slices, d),
            json_text(session, JobOutcome.groups, d),
            literal(NONE),
        ).label(f"d{i}")
        for i, d in enumerate(dimensions)
    ]
    period = case((JobOutcome.ts >= since, 1), else_=0).label("period")
    query = (
        select(
            period,
            *dims,
            func.count(),
            func.sum(value),
            func.sum(value * value),
        )
        .where(
            JobOutcome.job.in_(list(jobs)),
            JobOutcome.ts >= baseline_since,
            JobOutcome.ts < until,
            number_type(session, JobOutcome.outcomes, metric) == "number",
        )
        .group_by(period, *dims)
    )
    rows = session.execute(query).all()
    width = len(dimensions)
    return CrossTab(
        dimensions=tuple(dimensions),
        keys=[tuple(str(v) for v in row[1 : 1 + width]) for row in rows],
        in_window=np.array([row[0] == 1 for row in rows], dtype=bool),
        n=np.array([row[1 + width] for row in rows], dtype=np.float64),
        total=np.array([row[2 + width] or 0.0 for row in rows], dtype=np.float64),
        squares=np.array([row[3 + width] or 0.0 for row in rows], dtype=np.float64),
    )
