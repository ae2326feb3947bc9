"""The drift detectors at a time, from the per-minute bucket sums of the longest window.

Reads the scored values' sums of every metric and group per minute bucket (rows: minutes
x metrics x groups of the longest window, never traces), folds label values that keep no
series of their own into `other` (as the windows do), and hands them to the detectors
(`drift_buckets.drift_points_from_frame`) as a `BucketFrame`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.bucket_frame import BucketFrame
from collector.jobs.bucket_stats import SCORED, TRACES, bucket_of
from collector.jobs.drift import DriftConfig, MetricFacts
from collector.jobs.drift_buckets import drift_points_from_frame
from collector.jobs.labels import OTHER, Folding
from collector.jobs.outcomes import WindowAggregate
from collector.jobs.windows import OVERALL, Group, Window, group_for
from collector.store.models import JobBucket

_SUMS = ("n", "total", "squares", "positives", "log_total", "log_squares")


def read_frame(
    session: Session,
    job: str,
    metrics: Sequence[str],
    since: float,
    until: float,
    kept: Mapping[str, Folding],
) -> BucketFrame:
    """The scored sums of `metrics` per (metric, final group, minute) with since <= ts <=
    until, at minute resolution (the edge minutes whole: the detectors cut time into
    buckets of whole minutes anyway)."""
    b = JobBucket
    query = select(b.metric, b.grp, b.bucket, *(getattr(b, c) for c in _SUMS)).where(
        b.job == job,
        b.outcome == SCORED,
        b.metric != TRACES,
        b.metric.in_(list(metrics)),
        b.bucket >= bucket_of(since),
        b.bucket <= bucket_of(until),
    )
    metric_code = {m: i for i, m in enumerate(metrics)}
    groups: list[Group] = [OVERALL]
    group_code: dict[str, int] = {OVERALL.key: 0}
    by_grp: dict[str, int] = {"": 0}
    keys: list[tuple[int, int, int]] = []
    sums: list[tuple[float, ...]] = []
    for metric, grp, bucket, *values in session.execute(query):
        code = by_grp.get(grp)
        if code is None:
            label, _, value = grp.partition("=")
            folding = kept.get(label)
            group = group_for(label, value if folding is None or value in folding.kept else OTHER)
            code = group_code.get(group.key)
            if code is None:
                code = group_code[group.key] = len(groups)
                groups.append(group)
            by_grp[grp] = code
        keys.append((metric_code[metric], code, int(bucket)))
        sums.append(tuple(float(v or 0) for v in values))
    key_arr = np.array(keys, dtype=np.int64).reshape(-1, 3)
    sum_arr = np.array(sums, dtype=np.float64).reshape(-1, len(_SUMS))
    # folded values share a (metric, group, minute): add their rows up
    unique, inverse = np.unique(key_arr, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    merged = np.zeros((unique.shape[0], len(_SUMS)))
    for c in range(len(_SUMS)):
        merged[:, c] = np.bincount(inverse, weights=sum_arr[:, c], minlength=unique.shape[0])
    return BucketFrame(
        metrics=tuple(metrics),
        groups=tuple(groups),
        metric=unique[:, 0].astype(np.int32),
        group=unique[:, 1].astype(np.int32),
        bucket=unique[:, 2].astype(np.int64),
        n=np.rint(merged[:, 0]).astype(np.int64),
        total=merged[:, 1],
        squares=merged[:, 2],
        positives=np.rint(merged[:, 3]).astype(np.int64),
        log_total=merged[:, 4],
        log_squares=merged[:, 5],
    )


def drift_points_at(
    session: Session,
    job: str,
    facts: Sequence[MetricFacts],
    at: float,
    longest_s: float,
    kept: Mapping[str, Folding],
    config: DriftConfig,
) -> list[tuple[Window, WindowAggregate]]:
    """The detectors' points of every watched metric and group at `at`."""
    watched = [f.name for f in facts if f.direction in ("higher", "lower")]
    if not watched or not config.detectors:
        return []
    frame = read_frame(session, job, [f.name for f in facts], at - longest_s, at, kept)
    return drift_points_from_frame(frame, facts, at, longest_s, config)
