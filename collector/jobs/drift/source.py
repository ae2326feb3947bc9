"""The drift detectors of a job at a time, from the per-minute sums of its longest window.

The watched metrics' per-minute bucket sums of the longest window (`BucketHistory`:
minutes x metrics x groups, never traces), folded as the windows are, go to
`drift_buckets.drift_points_from_frame` as a `BucketFrame`. A back-fill hands its whole
span's history in (read once for every step). One path at every volume: the statistic of
a series depends on its own scores, not on how many traces the rest of the job has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.orm import Session

from collector.jobs.buckets.history import BucketHistory
from collector.jobs.drift.detector import DriftConfig, MetricFacts
from collector.jobs.drift.sums import drift_points_from_frame
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding
from collector.jobs.windows.window import Window


def drift_points_at(
    session: Session,
    job: str,
    facts: Sequence[MetricFacts],
    at: float,
    longest_s: float,
    kept: Mapping[str, Folding],
    config: DriftConfig,
    history: BucketHistory | None = None,
) -> list[tuple[Window, WindowAggregate]]:
    """The detectors' points of every watched metric and group of `job` at `at`
    (`history`: a back-fill's span, already read)."""
    watched = [f.name for f in facts if f.direction in ("higher", "lower")]
    if not watched or not config.detectors:
        return []
    rows = history or BucketHistory(session, job, at - longest_s, at, scored=watched)
    frame = rows.frame([f.name for f in facts], kept)
    return drift_points_from_frame(frame, facts, at, longest_s, config)
