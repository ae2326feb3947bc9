"""Production-like traffic for the alerting benchmark at every volume (issue 40), streamed
an hour at a time so that no run holds more than the hour it is making.

Five tenants, weekday shares 50/30/15/4/1% (`TENANTS`); at weekends the volume halves and
the mix moves towards the small tenants (30/40/20/7/3%): normal behaviour, not a change,
though the overall series' mix (hence its hit rate and judge scores) moves with it. A daily
cycle (1 +- 0.6, peak at 14:00) on top; the scale keeps the week's mean at the nominal
traces/h. Simulated time 0 is a Monday 00:00. Per trace, as `benchmarks.alerting_traffic`
(the 14 retrieval metrics from one rank on half the traces, three Beta judge scores
sharing a per-trace factor on 5%, two text scores on 20%, a log-normal judge latency on
all) but with per-tenant hit rates, judge means and latency medians.

`hour(per_hour, seed, h, drops)` makes hour `h` from its own generator (seed, h), so the
rows path and the sums path of a benchmark see identical traces without holding them:
`Frame` sums hours into the per-minute rows of a `BucketFrame` (what the product's bucket
table holds), `feed` puts an hour's traces into `OutcomeColumns` (what the rows path reads).
`hit_frame` draws only hit_rate@1's per-minute (count, hits) from the same rates (Poisson
thinning: the same law as per-trace draws), for the detection delays at any volume.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from benchmarks.alerting_traffic import JUDGED, LATENCY, METRICS, RETRIEVAL, TEXT, Drop, _retrieval
from benchmarks.outcome_columns import OutcomeColumns
from collector.jobs.buckets.frame import BucketFrame, log_values
from collector.jobs.buckets.stats import BUCKET_S
from collector.jobs.windows.window import OVERALL, Group, group_for
from evaluators.outcome import Score

H = 3600.0
DAY = 24 * H
WEEK = 7 * DAY


@dataclass(frozen=True)
class Tenant:
    name: str
    weekday: float
    """Share of the traffic Monday to Friday."""
    weekend: float
    hit_rate: float
    judge_offset: float
    """Added to every judge metric's mean."""
    latency_ms: float
    """Median judge latency."""


TENANTS = (
    Tenant("acme", 0.50, 0.30, 0.75, 0.00, 180.0),
    Tenant("globex", 0.30, 0.40, 0.65, -0.04, 200.0),
    Tenant("initech", 0.15, 0.20, 0.80, 0.03, 170.0),
    Tenant("umbrella", 0.04, 0.07, 0.70, -0.02, 220.0),
    Tenant("hooli", 0.01, 0.03, 0.60, -0.06, 250.0),
)
NAMES = tuple(t.name for t in TENANTS)
GROUPS: tuple[Group, ...] = (OVERALL, *(group_for("tenant", t.name) for t in TENANTS))
WEEKEND_VOLUME = 0.5
SCALE = 7.0 / (5.0 + 2.0 * WEEKEND_VOLUME)
"""Keeps the week's mean rate at the nominal one (the daily cycle averages to 1)."""
GROUND_TRUTH = 0.5
JUDGED_SHARE = 0.05


def weekend(t: float) -> bool:
    return (t % WEEK) >= 5 * DAY


def rate_factor(t: float) -> float:
    """Traces/h at time `t` over the nominal rate."""
    daily = 1.0 + 0.6 * math.cos(2 * math.pi * ((t % DAY) / H - 14.0) / 24.0)
    return SCALE * daily * (WEEKEND_VOLUME if weekend(t) else 1.0)


def shares(t: float) -> np.ndarray:
    return np.array([x.weekend if weekend(t) else x.weekday for x in TENANTS])


def mean_share(tenant: str) -> float:
    """A tenant's share of the week's traces."""
    x = TENANTS[NAMES.index(tenant)]
    return (5 * x.weekday + 2 * WEEKEND_VOLUME * x.weekend) / (5 + 2 * WEEKEND_VOLUME)


def _beta(rng: np.random.Generator, mean: np.ndarray, factor: np.ndarray) -> np.ndarray:
    m = np.clip(mean + 0.05 * factor, 0.02, 0.98)
    return rng.beta(m * 8.0, (1.0 - m) * 8.0)


@dataclass
class Hour:
    """One hour of traces: times, tenant codes, and per metric (rows scored, values)."""

    ts: np.ndarray
    tenant: np.ndarray
    scores: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def _dropped(drops: Sequence[Drop], metric: str, ts: np.ndarray, tenant: np.ndarray) -> list[
    tuple[np.ndarray, float]
]:  # fmt: skip
    out = []
    for drop in drops:
        if drop.metric == metric:
            hit = ts >= drop.at
            if drop.tenant is not None:
                hit &= tenant == NAMES.index(drop.tenant)
            out.append((hit, drop.size))
    return out


def _times(rng: np.random.Generator, per_hour: float, h: int) -> np.ndarray:
    start = h * H
    n = int(rng.poisson(per_hour * rate_factor(start + H / 2)))
    return np.sort(rng.uniform(start, start + H, n))


def hour_times(per_hour: float, seed: int, h: int) -> np.ndarray:
    """The times of hour `h`'s traces alone: `hour(...).ts`, without the rest."""
    return _times(np.random.default_rng([seed, h]), per_hour, h)


def hour(per_hour: float, seed: int, h: int, drops: Sequence[Drop] = ()) -> Hour:
    """Hour `h`'s traces (its own generator: the same whichever hours are made)."""
    rng = np.random.default_rng([seed, h])
    start = h * H
    ts = _times(rng, per_hour, h)
    n = ts.size
    tenant = rng.choice(len(TENANTS), n, p=shares(start))
    p1 = np.array([x.hit_rate for x in TENANTS])[tenant]
    for hit, size in _dropped(drops, "hit_rate@1", ts, tenant):
        p1 = np.where(hit, p1 * (1 - size), p1)
    out = Hour(ts, tenant)
    gt = rng.random(n) < GROUND_TRUTH
    tail = 2 + np.minimum(rng.geometric(0.35, n) - 1, 8)
    rank = np.where(rng.random(n) < p1, 1, np.where(rng.random(n) < 0.7, tail, 0))
    for metric, values in _retrieval(rank[gt]).items():
        out.scores[metric] = (gt, values)
    judged = rng.random(n) < JUDGED_SHARE
    factor = rng.standard_normal(n)
    offset = np.array([x.judge_offset for x in TENANTS])[tenant]
    for metric, mean in JUDGED:
        means = mean + offset
        for hit, size in _dropped(drops, metric, ts, tenant):
            means = np.where(hit, means * (1 - size), means)
        out.scores[metric] = (judged, _beta(rng, means[judged], factor[judged]))
    ref = rng.random(n) < 0.2
    for metric, mean in TEXT:
        out.scores[metric] = (ref, _beta(rng, np.full(int(ref.sum()), mean), factor[ref]))
    median = np.array([x.latency_ms for x in TENANTS])[tenant]
    out.scores[LATENCY] = (np.ones(n, dtype=bool), rng.lognormal(np.log(median), 0.5))
    return out


class Frame:
    """Per-minute sums of hours as they come, then one `BucketFrame` (rows per metric,
    group and minute that hold a score: what `outcome_columns.frame_from_columns` makes of
    the same traces)."""

    def __init__(self, metrics: Sequence[str] = METRICS) -> None:
        self.metrics = tuple(metrics)
        self.parts: list[dict[str, np.ndarray]] = []
        self.minutes: list[np.ndarray] = []
        self.traces: list[np.ndarray] = []

    def add(self, made: Hour) -> None:
        found, inverse = self.count(made.ts)
        for m, metric in enumerate(self.metrics):
            rows, values = made.scores[metric]
            idx = inverse[rows]
            grp = made.tenant[rows] + 1
            logs = log_values(values)
            for g in range(len(GROUPS)):
                mask = slice(None) if g == 0 else grp == g
                self._part(m, g, found, idx[mask], values[mask], logs[mask])

    def count(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Count traces at `ts` per minute; (the minutes, each trace's minute index)."""
        minute = np.floor(ts / BUCKET_S).astype(np.int64)
        found, inverse = np.unique(minute, return_inverse=True)
        self.minutes.append(found)
        self.traces.append(np.bincount(inverse, minlength=found.size))
        return found, inverse

    def _part(self, m: int, g: int, found: np.ndarray, idx: np.ndarray, values: np.ndarray,
              logs: np.ndarray) -> None:  # fmt: skip
        size = found.size
        n = np.bincount(idx, minlength=size)
        held = n > 0
        if not held.any():
            return
        cols = {
            "n": n,
            "total": np.bincount(idx, values, size),
            "squares": np.bincount(idx, values * values, size),
            "positives": np.bincount(idx, (values > 0).astype(np.float64), size).astype(np.int64),
            "log_total": np.bincount(idx, logs, size),
            "log_squares": np.bincount(idx, logs * logs, size),
        }
        part = {k: v[held] for k, v in cols.items()}
        part["bucket"] = found[held]
        part["metric"] = np.full(int(held.sum()), m, dtype=np.int32)
        part["group"] = np.full(int(held.sum()), g, dtype=np.int32)
        self.parts.append(part)

    def frame(self) -> BucketFrame:
        keys = ("metric", "group", "bucket", "n", "total", "squares", "positives",
                "log_total", "log_squares")  # fmt: skip
        arrays = {k: np.concatenate([p[k] for p in self.parts]) for k in keys}
        return BucketFrame(self.metrics, GROUPS, **arrays)

    def trace_minutes(self) -> tuple[np.ndarray, np.ndarray]:
        """(minute, traces) of every minute with traces, ascending."""
        return np.concatenate(self.minutes), np.concatenate(self.traces)


def feed(columns: OutcomeColumns, made: Hour, h: int) -> None:
    """Put an hour's traces into the rows a job reads (one `put` per trace, as a load)."""
    n = made.ts.size
    per_trace: list[dict[str, Score]] = [{} for _ in range(n)]
    for metric, (rows, values) in made.scores.items():
        for i, v in zip(np.flatnonzero(rows).tolist(), values.tolist(), strict=True):
            per_trace[i][metric] = Score(v)
    for i, (t, code) in enumerate(zip(made.ts.tolist(), made.tenant.tolist(), strict=True)):
        columns.put(f"h{h}-{i}", t, t, {"tenant": NAMES[code]}, per_trace[i])


def hit_frame(per_hour: float, seed: int, hours: float, drop: Drop) -> BucketFrame:
    """hit_rate@1 alone, per tenant and minute: (scores, hits) drawn from the traffic's
    rates (Poisson counts, binomial hits), overall their sum."""
    rng = np.random.default_rng([seed, 40])
    minutes = np.arange(int(hours * 60))
    mid = (minutes + 0.5) * 60.0
    factor = np.array([rate_factor(t) for t in mid.tolist()])
    end = np.array([weekend(t) for t in mid.tolist()])
    n_all = np.zeros(minutes.size, dtype=np.int64)
    hits_all = np.zeros(minutes.size, dtype=np.int64)
    parts: list[tuple[int, np.ndarray, np.ndarray]] = []
    for g, x in enumerate(TENANTS, start=1):
        share = np.where(end, x.weekend, x.weekday)
        n = rng.poisson(per_hour / 60.0 * factor * share * GROUND_TRUTH)
        p = np.full(minutes.size, x.hit_rate)
        if drop.tenant in (None, x.name):
            p = np.where(minutes * 60.0 >= drop.at, p * (1 - drop.size), p)
        hits = rng.binomial(n, p)
        n_all += n
        hits_all += hits
        parts.append((g, n, hits))
    parts.insert(0, (0, n_all, hits_all))
    floor = float(log_values(np.zeros(1))[0])
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("metric", "group", "bucket", "n",
                                                        "total", "squares", "positives",
                                                        "log_total", "log_squares")}  # fmt: skip
    for g, n, hits in parts:
        held = n > 0
        miss = (n - hits)[held].astype(np.float64)
        cols["metric"].append(np.zeros(int(held.sum()), dtype=np.int32))
        cols["group"].append(np.full(int(held.sum()), g, dtype=np.int32))
        cols["bucket"].append(minutes[held].astype(np.int64))
        cols["n"].append(n[held].astype(np.int64))
        cols["total"].append(hits[held].astype(np.float64))
        cols["squares"].append(hits[held].astype(np.float64))
        cols["positives"].append(hits[held].astype(np.int64))
        cols["log_total"].append(miss * floor)
        cols["log_squares"].append(miss * floor * floor)
    arrays = {k: np.concatenate(v) for k, v in cols.items()}
    return BucketFrame(("hit_rate@1",), GROUPS, **arrays)


__all__ = ["GROUPS", "METRICS", "RETRIEVAL", "TENANTS", "Frame", "Hour", "feed", "hit_frame",
           "hour", "hour_times", "mean_share"]  # fmt: skip
