"""A trace's contribution to a job's per-minute bucket sums, and changes to them.

A job's windows are sums over time buckets of one minute (`BUCKET_S`): per (metric,
group, bucket, outcome) the count `n`, and for scored values (`outcome` "") their sum,
sum of squares, count of positive values and the sum and sum of squares of
ln(max(x, 1e-3)) (latencies are judged on the log scale). Outcomes skipped or failed
count under `outcome` "skipped:<reason>" / "error:<type>". Metric "" counts the traces of
a group. Every field is a sum, so sums of buckets merge, and a trace scored again moves
its contribution: `Delta.add(old, -1)` then `Delta.add(new, +1)`, in the transaction
that stores the new outcomes (`bucket_store.apply`).

A trace counts in the overall group "" and in `label=value` for each group label it has
(one label at a time, `collector.jobs.windows`).

The scored values of a metric read by quantile (`binned`: `quantiles=True` in the
registry, latencies) also count in DDSketch bins per (metric, group, bucket, bin)
(`evaluators.quantiles.bin_of`), which move with the sums: `Delta.bins`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from collector.jobs import outcome_codec as codec
from collector.jobs.labels import DEFAULT_MAX_LENGTH, clean_value
from collector.jobs.outcome_codec import kind_of
from collector.store.models import BUCKET_S
from evaluators.errors import UnknownMetricError
from evaluators.quantiles import bin_of
from evaluators.registry import describe

__all__ = ["BUCKET_S", "Delta", "Sums", "binned", "bucket_of", "group_keys", "outcome_key"]

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


class Delta:
    """Changes to a job's bucket sums, accumulated over many traces."""

    def __init__(self, metrics: frozenset[str] | None = None) -> None:
        """`metrics`: the metrics counted (None: every stored one)."""
        self.metrics = metrics
        self.sums: dict[Key, Sums] = {}
        self.bins: dict[BinKey, int] = {}
        """Changes to the bins' counts of the quantile metrics' scored values."""

    def __len__(self) -> int:
        return len(self.sums)

    def _at(self, key: Key) -> Sums:
        found = self.sums.get(key)
        if found is None:
            found = self.sums[key] = Sums()
        return found

    def add(
        self,
        ts: float,
        groups: Mapping[str, Any] | None,
        outcomes: Mapping[str, Any],
        sign: int = 1,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        """Add (`sign` 1) or take out (-1) one trace's stored outcomes (`outcome_codec`'s
        form) at its timestamp `ts`."""
        bucket = bucket_of(ts)
        keys = group_keys(groups, max_length)
        parts: list[tuple[str, str, float | None, int | None]] = []
        for metric, encoded in outcomes.items():
            if self.metrics is not None and metric not in self.metrics:
                continue
            outcome = outcome_key(encoded)
            if outcome is None:
                continue
            value = float(encoded) if outcome == SCORED else None
            index = bin_of(value) if value is not None and binned(metric) else None
            parts.append((metric, outcome, value, index))
        for grp in keys:
            self._at((TRACES, grp, bucket, SCORED)).n += sign
            for metric, outcome, value, index in parts:
                sums = self._at((metric, grp, bucket, outcome))
                sums.n += sign
                if index is not None:
                    key = (metric, grp, bucket, index)
                    self.bins[key] = self.bins.get(key, 0) + sign
                if value is not None:
                    logged = math.log(max(value, LOG_FLOOR))
                    sums.total += sign * value
                    sums.squares += sign * value * value
                    sums.positives += sign * (value > 0)
                    sums.log_total += sign * logged
                    sums.log_squares += sign * logged * logged

    def items(self) -> Iterator[tuple[Key, Sums]]:
        """Non-empty changes, in key order (writers lock bucket rows in this order, so two
        workers' transactions cannot deadlock on them)."""
        for key in sorted(self.sums):
            sums = self.sums[key]
            if not sums.empty():
                yield key, sums

    def bin_items(self) -> Iterator[tuple[BinKey, int]]:
        """Non-zero changes to the bins' counts, in key order."""
        for key in sorted(self.bins):
            count = self.bins[key]
            if count:
                yield key, count

    def merge(self, other: Delta) -> None:
        """Add `other`'s changes to these."""
        for key, sums in other.sums.items():
            into = self._at(key)
            into.n += sums.n
            into.total += sums.total
            into.squares += sums.squares
            into.positives += sums.positives
            into.log_total += sums.log_total
            into.log_squares += sums.log_squares
        for index, count in other.bins.items():
            self.bins[index] = self.bins.get(index, 0) + count
