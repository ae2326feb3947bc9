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
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from collector.jobs.labels import DEFAULT_MAX_LENGTH, clean_value
from collector.store.models import BUCKET_S

__all__ = ["BUCKET_S", "Delta", "Sums", "bucket_of", "group_keys", "outcome_key"]

TRACES = ""
"""The metric name under which a group's traces are counted."""
SCORED = ""
"""The `outcome` of the scored values' sums."""
LOG_FLOOR = 1e-3
"""Values below it count as it on the log scale (a latency of 0 ms has no logarithm)."""

Key = tuple[str, str, int, str]
"""(metric, group key, bucket, outcome)."""


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


def outcome_key(encoded: Any) -> str | None:
    """The `outcome` a stored outcome counts under; None for one waiting for a retry
    (`retry.py`: not measured yet, like a metric not run)."""
    if not isinstance(encoded, dict):
        return SCORED
    if "skipped" in encoded:
        return f"skipped:{encoded['skipped']}"
    if encoded.get("transient") is True:
        return None
    return f"error:{encoded.get('error', 'unknown')}"


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
        """Add (`sign` 1) or take out (-1) one trace's stored outcomes (`encode_outcome`'s
        JSON form) at its timestamp `ts`."""
        bucket = bucket_of(ts)
        keys = group_keys(groups, max_length)
        parts: list[tuple[str, str, float | None]] = []
        for metric, encoded in outcomes.items():
            if self.metrics is not None and metric not in self.metrics:
                continue
            outcome = outcome_key(encoded)
            if outcome is None:
                continue
            parts.append((metric, outcome, float(encoded) if outcome == SCORED else None))
        for grp in keys:
            self._at((TRACES, grp, bucket, SCORED)).n += sign
            for metric, outcome, value in parts:
                sums = self._at((metric, grp, bucket, outcome))
                sums.n += sign
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
