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
from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from collector.jobs.labels import Folding
from collector.jobs.outcome_codec import read_groups, read_outcomes
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
    read_into(columns, session, job, start, end)
    return columns


def read_into(
    columns: OutcomeColumns,
    session: Session,
    job: str,
    start: float,
    end: float,
    *,
    after: bool = False,
) -> None:
    """Put the job's stored outcomes with start <= ts <= end (`after`: start < ts) into
    `columns`."""
    o = JobOutcome
    lower = datetime.fromtimestamp(start, UTC)
    query = (
        select(o.trace_id, o.trace_updated_at, o.ts, cast(o.groups, Text), cast(o.outcomes, Text))
        .where(
            o.job == job,
            o.ts > lower if after else o.ts >= lower,
            o.ts <= datetime.fromtimestamp(end, UTC),
        )
        .execution_options(yield_per=_CHUNK)
    )
    for trace_id, updated, ts, groups, outcomes in session.connection().execute(query):
        columns.put_encoded(
            trace_id,
            _epoch(updated),
            _epoch(ts),
            read_groups(groups),
            read_outcomes(outcomes),
        )


class RollingRows:
    """The stored rows of windows of one length that move forward in time (a back-fill's
    steps), each read once: a window's columns keep the previous step's rows and add the
    ones since, dropping those that fell out. Only for stored outcomes that do not change
    meanwhile (a back-fill scores before its steps). Memory: the rows of one window per
    length, which are few (`bucket_windows.SMALL_WINDOW_TRACES`)."""

    def __init__(
        self, job: str, metrics: Sequence[str], group_labels: Sequence[str], max_length: int
    ) -> None:
        self.job = job
        self.metrics = tuple(metrics)
        self.group_labels = tuple(group_labels)
        self.max_length = max_length
        self._held: dict[float, tuple[float, float, OutcomeColumns]] = {}

    def columns(self, session: Session, start: float, end: float) -> OutcomeColumns:
        """Columns holding every stored row with start <= ts <= end (and maybe others
        outside: select by ts)."""
        held = self._held.get(end - start)
        if held is None or start < held[0] or end < held[1]:
            columns = load_columns(
                session, self.job, self.metrics, self.group_labels, self.max_length, start, end
            )
        else:
            columns = held[2]
            read_into(columns, session, self.job, held[1], end, after=True)
            columns.prune(start)
        self._held[end - start] = (start, end, columns)
        return columns


def label_folds(columns: OutcomeColumns, kept: Mapping[str, Folding]) -> dict[str, LabelFold]:
    """The run's `Folding`s (chosen from the bucket sums) in the codes of `columns`."""
    out = {}
    for label, folding in kept.items():
        values = columns.label_values(label)
        keep = np.array([v in folding.kept for v in values], dtype=bool)
        out[label] = LabelFold(folding, keep)
    return out
