"""`Contributions` sums exactly what adding each trace to a dict of `Sums` one at a time
sums (`_Reference`, the plain definition), in the same key order.

Mixed traces: scored values (repeated, zero, negative, integral), skips, errors, outcomes
waiting for a retry (left out), metrics the job does not count, the binned latency
metric, traces without groups or with groups of other types, and traces taken out
(sign -1, as a trace scored again moves its old contribution out) before others go in.
Floating-point sums are compared for equality: same values, same order, same bits.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from collector.jobs.buckets.contributions import Contributions
from collector.jobs.buckets.stats import (
    LOG_FLOOR,
    SCORED,
    TRACES,
    BinKey,
    Key,
    Sums,
    binned,
    bucket_of,
    group_keys,
    outcome_key,
)
from evaluators.quantiles import bin_of

METRICS = frozenset({"mrr", "hit_rate@1", "latency_ms", "ndcg@5"})
GROUPS: list[dict[str, Any] | None] = [
    None,
    {},
    {"tenant": "acme"},
    {"tenant": "beta", "version": "v1"},
    {"version": "v1"},
    {"tenant": 1},
    {"tenant": True},
    {"tenant": "  spaced\tvalue "},
]


class _Reference:
    """The sums by definition: each trace added to a dict of `Sums` in turn."""

    def __init__(self, metrics: frozenset[str] | None = None) -> None:
        self.metrics = metrics
        self.sums: dict[Key, Sums] = {}
        self.bins: dict[BinKey, int] = {}

    def add(
        self,
        ts: float,
        groups: Mapping[str, Any] | None,
        outcomes: Mapping[str, Any],
        sign: int = 1,
    ) -> None:
        bucket = bucket_of(ts)
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
        for grp in group_keys(groups):
            self.sums.setdefault((TRACES, grp, bucket, SCORED), Sums()).n += sign
            for metric, outcome, value, index in parts:
                sums = self.sums.setdefault((metric, grp, bucket, outcome), Sums())
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
        return ((k, self.sums[k]) for k in sorted(self.sums) if not self.sums[k].empty())

    def bin_items(self) -> Iterator[tuple[BinKey, int]]:
        return ((k, self.bins[k]) for k in sorted(self.bins) if self.bins[k])


def _encoded(rng: random.Random, metric: str) -> Any:
    roll = rng.random()
    if roll < 0.1:
        return {"skipped": rng.choice(["no ground truth", "no relevant documents"])}
    if roll < 0.15:
        return {"error": rng.choice(["timeout", "parse_error"])}
    if roll < 0.2:
        return {"error": "rate_limited", "transient": True, "attempts": 1}
    if roll < 0.25:
        return rng.choice([0.0, -0.0, 1, 1.0, -2.5])
    if metric == "latency_ms":
        return rng.lognormvariate(6.5, 1.0)
    return rng.choice([0.1, 0.2, 1 / 3, 0.5, 1.0, rng.random()])


def _traces(
    seed: int, count: int, span_s: float = 3 * 3600
) -> list[tuple[float, Any, dict[str, Any], int]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        metrics = [*sorted(METRICS), "other"]
        outcomes = {m: _encoded(rng, m) for m in metrics if rng.random() < 0.9}
        ts = 1_772_000_000 + rng.uniform(0, span_s)
        sign = -1 if i < count // 4 else 1
        out.append((ts, rng.choice(GROUPS), outcomes, sign))
    return out


@pytest.mark.parametrize("metrics", [METRICS, None])
@pytest.mark.parametrize(
    ("seed", "count", "span_s"),
    [(1, 3000, 3 * 3600), (2, 3000, 3 * 3600), (3, 300, 14 * 86400)],  # dense, sparse keys
)
def test_same_sums_and_bins_as_the_reference(
    seed: int, count: int, span_s: float, metrics: frozenset[str] | None
) -> None:
    delta = _Reference(metrics)
    gathered = Contributions(metrics)
    for ts, groups, outcomes, sign in _traces(seed, count, span_s):
        delta.add(ts, groups, outcomes, sign)
        gathered.add(ts, groups, outcomes, sign)
    changes = gathered.changes()
    assert len(changes) == len(list(delta.items())) > 0
    assert list(changes.items()) == list(delta.items())
    assert list(changes.bin_items()) == list(delta.bin_items())
    assert any(key[0] == "latency_ms" for key, _ in delta.bin_items())


def test_moved_out_then_in_again() -> None:
    """Traces taken out then put back: counts cancel, float residues are the reference's."""
    delta = _Reference(METRICS)
    gathered = Contributions(METRICS)
    traces = _traces(4, 200)
    for sign in (-1, 1):
        for ts, groups, outcomes, _ in traces:
            delta.add(ts, groups, outcomes, sign)
            gathered.add(ts, groups, outcomes, sign)
    changes = gathered.changes()
    assert list(changes.items()) == list(delta.items())
    assert not changes.n.any() and not changes.positives.any()
    assert len(changes.bin_n) == 0


def test_nothing_added() -> None:
    changes = Contributions().changes()
    assert len(changes) == 0
    assert list(changes.items()) == []


@pytest.mark.parametrize(
    "outcomes",
    [{}, {"bleu": 0.5}, {"mrr": {"error": "rate_limited", "transient": True, "attempts": 1}}],
)
def test_traces_without_a_counted_outcome_count_as_traces(outcomes: dict[str, Any]) -> None:
    """A job whose traces carry no outcome it counts (no per-sample metric, another job's
    metric, only outcomes waiting for a retry): only the trace counts, as in the reference."""
    delta = _Reference(METRICS)
    gathered = Contributions(METRICS)
    for i in range(5):
        delta.add(60.0 * i, {"tenant": "acme"}, outcomes)
        gathered.add(60.0 * i, {"tenant": "acme"}, outcomes)
    changes = gathered.changes()
    assert list(changes.items()) == list(delta.items())
    assert len(changes) == 10  # overall and tenant=acme, five minutes
