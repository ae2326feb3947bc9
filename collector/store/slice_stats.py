"""Per-slice moments of a per-trace metric in a window and its baseline, in two queries.

`job_outcomes` rows of the given jobs in the window, and in the baseline before it, are
grouped by the value of every slice dimension (`job_outcomes.slices`, else the group
labels of rows stored before slices were, else "(none)"); the database returns count,
sum and sum of squares of the metric's numeric outcomes per group. The cross-tabulation
is small (the product of the dimensions' distinct values at most, never more than the
rows), so marginals of one or two dimensions are summed in numpy afterwards
(`collector.jobs.queries.explain`). A very large baseline is sampled on PostgreSQL (see
`BASELINE_CAP`); the window never is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, literal, select, tablesample, text
from sqlalchemy.orm import Session

from collector.store.models import JobOutcome
from collector.store.worst import json_number, json_text, number_type

OUTCOMES = JobOutcome.__table__
BASELINE_CAP = 250_000
"""Above this many baseline rows (the planner's estimate), PostgreSQL reads a repeatable
sample of the table's pages holding about this many (TABLESAMPLE SYSTEM): a baseline's
mean is as good from 250,000 values, and 7 days at 60,000 traces an hour would otherwise
be a 9-million-row scan."""
SEED = 20261125

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
    baseline_cap: int = BASELINE_CAP,
) -> CrossTab:
    """The metric's moments per period and slice-value combination."""
    window = _moments(session, OUTCOMES, jobs, metric, since, until, dimensions)
    source: Any = OUTCOMES
    if session.get_bind().dialect.name == "postgresql":
        rows = _estimated_rows(session, jobs, baseline_since, since)
        if rows > baseline_cap:
            percent = max(0.01, 100.0 * baseline_cap / rows)
            source = tablesample(OUTCOMES, func.system(percent), seed=literal(SEED))
    baseline = _moments(session, source, jobs, metric, baseline_since, since, dimensions)
    width = len(dimensions)
    both = [(True, r) for r in window] + [(False, r) for r in baseline]
    return CrossTab(
        dimensions=tuple(dimensions),
        keys=[tuple(str(v) for v in row[:width]) for _, row in both],
        in_window=np.array([w for w, _ in both], dtype=bool),
        n=np.array([row[width] for _, row in both], dtype=np.float64),
        total=np.array([row[width + 1] or 0.0 for _, row in both], dtype=np.float64),
        squares=np.array([row[width + 2] or 0.0 for _, row in both], dtype=np.float64),
    )


def _moments(
    session: Session,
    source: Any,
    jobs: Sequence[str],
    metric: str,
    start: datetime,
    end: datetime,
    dimensions: Sequence[str],
) -> list[Any]:
    """(dimension values..., count, sum, sum of squares) per combination in [start, end)."""
    c = source.c
    value = json_number(session, c.outcomes, metric)
    dims = [
        func.coalesce(
            json_text(session, c.slices, d), json_text(session, c.groups, d), literal(NONE)
        ).label(f"d{i}")
        for i, d in enumerate(dimensions)
    ]
    query = (
        select(*dims, func.count(), func.sum(value), func.sum(value * value))
        .where(
            c.job.in_(list(jobs)),
            c.ts >= start,
            c.ts < end,
            number_type(session, c.outcomes, metric) == "number",
        )
        .group_by(*dims)
    )
    return list(session.execute(query).all())


def _estimated_rows(session: Session, jobs: Sequence[str], start: datetime, end: datetime) -> float:
    """The planner's estimate of the rows in [start, end) (no scan: EXPLAIN only)."""
    query = select(OUTCOMES.c.id).where(
        OUTCOMES.c.job.in_(list(jobs)), OUTCOMES.c.ts >= start, OUTCOMES.c.ts < end
    )
    compiled = query.compile(session.get_bind(), compile_kwargs={"literal_binds": True})
    plan = session.execute(text(f"EXPLAIN (FORMAT JSON) {compiled}")).scalar_one()
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])
