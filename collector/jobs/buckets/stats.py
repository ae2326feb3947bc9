"""A trace's contribution to a job's per-minute bucket sums, and changes to them.

A job's windows are sums over time buckets of one minute (`BUCKET_S`): per (metric,
group, bucket, outcome) the count `n`, and for scored values (`outcome` "") their sum,
sum of squares, count of positive values and the sum and sum of squares of
ln(max(x, 1e-3)) (latencies are judged on the log scale). Outcomes skipped or failed
count under `outcome` "skipped:<reason>" / "error:<type>". Metric "" counts the traces of
a group. Every field is a sum, so sums of buckets merge, and a trace scored again moves
its contribution: `Contributions.add(old, -1)` then `Contributions.add(new, +1)`
(`contributions`), in the transaction that stores the new outcomes
(`bucket_store.apply`).

A trace counts in the overall group "" and in `label=value` for each group label it has
(one label at a time, `collector.jobs.windows.window`).

The scored values of a metric read by quantile (`binned`: `quantiles=True` in the
registry, latencies) also count in DDSketch bins per (metric, group, bucket, bin)
(`evaluators.quantiles.bin_of`), which move with the sums (`Changes.bin_items`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collector.jobs.outcomes import codec
from collector.jobs.outcomes.codec import kind_of
from collector.jobs.windows.labels import DEFAULT_MAX_LENGTH, clean_value
from collector.store.models import BUCKET_S
from evaluators.errors import UnknownMetricError
from evaluators.registry import describe

__all__ = ["BUCKET_S", "Sums", "binned", "bucket_of", "group_keys", "outcome_key"]

TRACES = ""
"""The metric name under which a group's traces are counted."""
SCORED = ""
"""The `outcome` of the scored values' sums."""
LOG_FLOOR = 1e-3
"""Values below it count as it on the log scale (a latency of 0 ms has no logarithm)."""

Key = tuple[str, str, int, str]
"""(metric, group key, bucket, outcome)."""
BinKey = tuple[str, str, int, int]
"""(metric, group key, bucket, bin)."""


def bucket_of(ts: float) -> int:
    return math.floor(ts / BUCKET_S)


def group_keys(groups: Mapping[str, Any] | None, max_length: int = DEFAULT_MAX_LENGTH) -> list[str]:
    """ "" and `label=value` for every group label of a stored row (values cleaned as the
    label values are; one that cleans to nothing is left out)."""
    keys = [""]
    for label, raw in (groups or {}).items():
        value = clean_value(str(raw), max_length)
        if value is not None:
            keys.append(f"{label}={value}")
    return keys


@functools.cache
def binned(metric: str) -> bool:
    """Whether `metric` is read by quantile (`quantiles=True` in the registry): its scored
    values also count in DDSketch bins. Names the registry does not know are not."""
    try:
        spec = describe(metric)
    except UnknownMetricError:
        return False
    return bool(getattr(spec, "quantiles", False))


def outcome_key(encoded: Any) -> str | None:
    """The `outcome` a stored outcome counts under; None for one waiting for a retry
    (`retry.py`: not measured yet, like a metric not run)."""
    kind = kind_of(encoded)
    if kind is None:
        return None
    return SCORED if kind[0] == codec.SCORED else f"{kind[0]}:{kind[1]}"


@dataclass(slots=True)
class Sums:
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    positives: int = 0
    log_total: float = 0.0
    log_squares: float = 0.0

    def empty(self) -> bool:
        return (
            self.n == 0
            and self.positives == 0
            and self.total == 0.0
            and self.squares == 0.0
            and self.log_total == 0.0
            and self.log_squares == 0.0
        )
