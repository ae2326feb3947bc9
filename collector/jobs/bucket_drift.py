"""The drift detectors at a time: per trace while a job's window is small, else from sums.

A job whose longest window holds at most `DRIFT_ROWS_MAX` traces runs the per-trace
detectors (`drift.drift_points`, rank-based normal scores) over its stored rows, read for
the run (`outcome_rows`: ~260 bytes a trace, dropped after it). Above that the detectors
run from the watched metrics' per-minute bucket sums of the longest window (`BucketHistory`:
minutes x metrics x groups, never traces), folded as the windows are, handed to
`drift_buckets.drift_points_from_frame` as a `BucketFrame`.

Why the bound: the sums' steps are bucket means (corrected for skew), which need a few
scores per step to be near normal; a sparse series (a judged metric at 120 traces/h) took
false pages from them on a steady week where the per-trace detectors stayed quiet
(benchmarks/RESULTS.md, "Drift detectors from bucket sums (issue 31)"). 250,000 traces are
7 days at ~1,500 traces/h: up to there the detectors are exactly the ones benchmarked in
"Alerting (issue 17)", at most ~65 MB for the run; above it every series of a job has
hundreds of scores an hour, where the sums' steps held (0 page series at 1,200/h).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collector.jobs.bucket_history import BucketHistory
from collector.jobs.bucket_stats import SCORED, TRACES, bucket_of
from collector.jobs.drift import DriftConfig, MetricFacts, drift_points
from collector.jobs.drift_buckets import drift_points_from_frame
from collector.jobs.labels import Folding
from collector.jobs.outcome_rows import label_folds, load_columns
from collector.jobs.outcomes import OutcomeColumns, WindowAggregate
from collector.jobs.windows import Window
from collector.store.models import JobBucket

DRIFT_ROWS_MAX = 250_000


def traces_between(session: Session, job: str, start: float, end: float) -> int:
    """The job's traces in the buckets of [start, end] (what picks the detectors' path)."""
    b = JobBucket
    query = select(func.sum(b.n)).where(
        b.job == job,
        b.metric == TRACES,
        b.grp == "",
        b.outcome == SCORED,
        b.bucket >= bucket_of(start),
        b.bucket <= bucket_of(end),
    )
    return int(session.execute(query).scalar() or 0)


class DriftSource:
    """Where a job's detectors read from: its rows or its sums (`history`: a back-fill's
    span in hand, whose rows are read once for every step when they are few)."""

    def __init__(
        self,
        job: str,
        group_labels: Sequence[str],
        max_length: int,
        history: BucketHistory | None = None,
    ) -> None:
        self.job = job
        self.group_labels = group_labels
        self.max_length = max_length
        self.history = history
        self._span_columns: OutcomeColumns | None = None
        self._span_few: bool | None = None

    def points(
        self,
        session: Session,
        facts: Sequence[MetricFacts],
        at: float,
        longest_s: float,
        kept: Mapping[str, Folding],
        config: DriftConfig,
        traces: int | None = None,
    ) -> list[tuple[Window, WindowAggregate]]:
        """The detectors' points of every watched metric and group at `at` (`traces`: the
        job's traces in the longest window when the caller has summed them already)."""
        watched = [f.name for f in facts if f.direction in ("higher", "lower")]
        if not watched or not config.detectors:
            return []
        columns = self._columns(session, watched, at - longest_s, at, traces)
        if columns is not None:
            folds = label_folds(columns, kept)
            return drift_points(columns, facts, at, longest_s, folds, config)
        rows = self.history or BucketHistory(session, self.job, at - longest_s, at, scored=watched)
        frame = rows.frame([f.name for f in facts], kept)
        return drift_points_from_frame(frame, facts, at, longest_s, config)

    def _columns(
        self,
        session: Session,
        watched: list[str],
        start: float,
        end: float,
        traces: int | None = None,
    ) -> OutcomeColumns | None:
        """The rows of the window (a back-fill: of its whole span, once) when few."""
        if self.history is None:
            if traces is None:
                traces = traces_between(session, self.job, start, end)
            if traces > DRIFT_ROWS_MAX:
                return None
            return load_columns(
                session, self.job, watched, self.group_labels, self.max_length, start, end
            )
        if self._span_few is None:  # decided once for the back-fill's span
            since, until = self.history.span
            self._span_few = traces_between(session, self.job, since, until) <= DRIFT_ROWS_MAX
            if self._span_few:
                self._span_columns = load_columns(
                    session, self.job, watched, self.group_labels, self.max_length, since, until
                )
        return self._span_columns
