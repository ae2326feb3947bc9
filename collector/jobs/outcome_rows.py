"""A window's stored per-trace outcomes read into a short-lived `OutcomeColumns`.

Where few traces are at stake, the row-based statistics are kept: a window of at most
`bucket_windows.SMALL_WINDOW_TRACES` traces is aggregated from its rows (the seeded
bootstrap needs the values), and a job whose longest window holds at most
`bucket_drift.DRIFT_ROWS_MAX` traces runs the per-trace detectors (`drift.drift_points`).
The rows are streamed from the database in chunks; what stays is the columns of those
rows only (~260 bytes a trace), dropped after the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import orjson
from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from collector.jobs.labels import Folding
from collector.jobs.outcomes import LabelFold, OutcomeColumns
from collector.store.models import JobOutcome

_CHUNK = 10_000


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def load_columns(
    session: Session,
    job: str,
    metrics: Sequence[str],
    group_labels: Sequence[str],
    max_length: int,
    start: float,
    end: float,
) -> OutcomeColumns:
    """The job's stored outcomes of `metrics` with start <= ts <= end."""
    columns = OutcomeColumns(metrics, group_labels, max_length)
    query = (
        select(
            JobOutcome.trace_id,
            JobOutcome.trace_updated_at,
            JobOutcome.ts,
            cast(JobOutcome.groups, Text),
            cast(JobOutcome.outcomes, Text),
        )
        .where(
            JobOutcome.job == job,
            JobOutcome.ts >= datetime.fromtimestamp(start, UTC),
            JobOutcome.ts <= datetime.fromtimestamp(end, UTC),
        )
        .execution_options(yield_per=_CHUNK)
    )
    for trace_id, updated, ts, groups, outcomes in session.connection().execute(query):
        columns.put_encoded(
            trace_id,
            _epoch(updated),
            _epoch(ts),
            orjson.loads(groups) if groups else None,
            orjson.loads(outcomes) if outcomes else {},
        )
    return columns


def label_folds(columns: OutcomeColumns, kept: Mapping[str, Folding]) -> dict[str, LabelFold]:
    """The run's `Folding`s (chosen from the bucket sums) in the codes of `columns`."""
    out = {}
    for label, folding in kept.items():
        values = columns.label_values(label)
        keep = np.array([v in folding.kept for v in values], dtype=bool)
        out[label] = LabelFold(folding, keep)
    return out
