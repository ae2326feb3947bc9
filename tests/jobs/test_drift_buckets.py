"""The drift detectors' engine: per-minute bucket sums to CUSUM points."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.outcome_columns import LabelFold, OutcomeColumns, drift_points, frame_from_columns
from collector.jobs.buckets.frame import BUCKET_S, BucketFrame, log_values, series
from collector.jobs.drift.detector import DETECTABLE, Detector, DriftConfig, MetricFacts
from collector.jobs.drift.scores import trace_steps
from collector.jobs.drift.sums import SeriesRows, baseline, drift_points_from_frame, normalised
from collector.jobs.windows.labels import LabelLimits, LabelPolicy
from collector.jobs.windows.window import OVERALL, group_for
from evaluators.outcome import Failed, Outcome, Score, Skipped

H = 3600.0
DAYS = 3
LONGEST = DAYS * 24 * H

FACTS = [
    MetricFacts("hit_rate@1", "higher", "ratio"),
    MetricFacts("precision@3", "higher", "ratio"),
    MetricFacts("faithfulness", "higher", "score"),
    MetricFacts("latency", "lower", "ms"),
    MetricFacts("tokens", "none", "count"),  # no direction: no detector
]
TENANTS = ("acme", "beta", "gamma", "delta")
SHARES = (0.5, 0.3, 0.15, 0.05)
CONFIG = DriftConfig(
    (
        Detector(
            "page",
            0.15,
            0.5,
            H,
            metrics=frozenset({"hit_rate@1", "faithfulness"}),
            series_metrics=2,
        ),
        Detector(
            "ticket", 0.05, 2.0, H, series_metrics=4, within_by_metric={"faithfulness": 3 * H}
        ),
    ),
    span_s=24 * H,
    min_baseline=30,
)


def _traffic(
    per_hour: float, hours: float, seed: int, drop_at: float | None = None, drop: float = 0.2
) -> OutcomeColumns:
    """Traces of four tenants; from `drop_at` on, acme's hit rate and faithfulness fall by
    `drop` and its latency grows by as much. Some outcomes are skipped or failed."""
    rng = np.random.default_rng(seed)
    n = int(rng.poisson(per_hour * hours))
    ts = np.sort(rng.uniform(0.0, hours * H, n))
    tenant = rng.choice(len(TENANTS), n, p=SHARES)
    hit_p = np.array([0.75, 0.65, 0.8, 0.7])[tenant]
    faith = np.full(n, 0.85)
    latency = rng.lognormal(np.log(180.0), 0.5, n)
    if drop_at is not None:
        hit = (tenant == 0) & (ts >= drop_at)
        hit_p[hit] *= 1 - drop
        faith[hit] *= 1 - drop
        latency[hit] *= 1 + drop
    hits = (rng.random(n) < hit_p).astype(float)
    judged = rng.beta(faith * 8.0, (1 - faith) * 8.0)
    precision = np.floor(rng.random(n) * 4) / 3.0 * (rng.random(n) < 0.5)
    precision = np.where(precision > 0, 1 / 3, 0.0)
    columns = OutcomeColumns([m.name for m in FACTS], ["tenant"])
    for i in range(n):
        t = float(ts[i])
        outcomes: dict[str, Outcome] = {
            "hit_rate@1": Score(float(hits[i])),
            "precision@3": Score(float(precision[i])),
            "latency": Score(float(latency[i])),
            "tokens": Score(float(i % 7)),
        }
        if i % 3 == 0:
            outcomes["faithfulness"] = Score(float(judged[i]))
        elif i % 3 == 1:
            outcomes["faithfulness"] = Skipped("no context")
        else:
            outcomes["faithfulness"] = Failed("timeout")
        columns.put(f"t{i}", t, t, {"tenant": TENANTS[tenant[i]]}, outcomes)
    return columns


Points = dict[tuple[str, str, str], tuple[float | None, int]]


def _buckets(
    columns: OutcomeColumns, now: float, folds: dict[str, LabelFold] | None = None
) -> Points:
    frame = frame_from_columns(columns, now - LONGEST, now, folds)
    made = drift_points_from_frame(frame, FACTS, now, LONGEST, CONFIG)
    return {(w.name, i.group.key, i.aggregate.metric): (i.aggregate.value, i.aggregate.n)
            for w, i in made}  # fmt: skip


@pytest.mark.parametrize("per_hour", [55.0, 400.0, pytest.param(3000.0, marks=pytest.mark.slow)])
def test_rows_in_hand_give_the_stored_sums_statistic(per_hour: float) -> None:
    """`drift_points` over rows is the engine over their per-minute sums, at 55/h (two
    tenants' buckets about 44 and 73 minutes long) and at 3,000/h (the overall series
    steps every minute); a 30% drop of acme's hit rate pages acme within six hours."""
    drop_at = (DAYS - 0.5) * 24 * H
    columns = _traffic(per_hour, DAYS * 24 + 6, seed=11, drop_at=drop_at, drop=0.3)
    for now in (DAYS * 24 * H, drop_at + 3 * H, drop_at + 6 * H):
        made = drift_points(columns, FACTS, now, LONGEST, None, CONFIG)
        rows = {(w.name, i.group.key, i.aggregate.metric): (i.aggregate.value, i.aggregate.n)
                for w, i in made}  # fmt: skip
        assert rows == _buckets(columns, now)
    acme = _buckets(columns, drop_at + 6 * H)[("drift:page", "tenant=acme", "hit_rate@1")][0]
    assert acme is not None and acme >= 1.0


def test_uniform_buckets_step_as_a_bucket_of_the_mean_size() -> None:
    """With every bucket of the mean size a step is z - k sqrt(m); a bucket of a quarter of
    the traces drifts down a quarter as much, with a quarter of the variance."""
    z = np.array([0.3, -1.2, 2.0])
    m = np.array([16.0, 16.0, 16.0])
    got = trace_steps(z, np.sqrt(m), 16.0, 0.1)
    np.testing.assert_allclose(got, z - 0.1 * 4.0, rtol=1e-12)
    small = trace_steps(np.array([1.0]), np.array([2.0]), 16.0, 0.1)
    np.testing.assert_allclose(small, [(1.0 * 2.0 - 0.1 * 4.0) / 4.0], rtol=1e-12)


def test_folded_groups_are_kept_values_and_other() -> None:
    columns = _traffic(300.0, DAYS * 24 + 1, seed=12)
    now = DAYS * 24 * H
    limits = LabelLimits(LabelPolicy(max_values=2))
    folds = columns.folds(now - LONGEST, limits)
    buckets = _buckets(columns, now, folds)
    assert {g for _, g, _ in buckets} == {"", "tenant=acme", "tenant=beta", "tenant=other"}


def test_continuous_metrics_stay_quiet_on_steady_traffic() -> None:
    """A steady day, every two hours: no page (0.5 a week over 10 series), and no ticket
    for the skewed judge scores (Beta, mean 0.85, a long tail towards worse). (The smallest
    tenant's latency ticket reaches 1.5 on this draw, from today's rank scores too.)"""
    columns = _traffic(400.0, DAYS * 24 + 24, seed=13)
    frame = frame_from_columns(columns, 0.0, (DAYS + 1) * 24 * H)
    worst: dict[tuple[str, str], float] = {}
    for now in np.arange(LONGEST, LONGEST + 24 * H + 1, 2 * H):
        for window, item in drift_points_from_frame(frame, FACTS, float(now), LONGEST, CONFIG):
            key = (window.name, item.aggregate.metric)
            worst[key] = max(worst.get(key, 0.0), item.aggregate.value or 0.0)
    assert 0.0 < worst[("drift:page", "faithfulness")] < 1.0
    assert worst[("drift:page", "hit_rate@1")] < 1.0
    assert worst[("drift:ticket", "faithfulness")] < 1.0


@pytest.mark.parametrize("metric", ["faithfulness", "latency"])
def test_a_drop_of_a_continuous_metric_pages_for_that_tenant(metric: str) -> None:
    drop_at = LONGEST
    columns = _traffic(400.0, DAYS * 24 + 8, seed=14, drop_at=drop_at, drop=0.25)
    before = _buckets(columns, drop_at)[("drift:ticket", "tenant=acme", metric)][0]
    assert before is not None and before < 1.0
    after = _buckets(columns, drop_at + 8 * H)
    assert after[("drift:ticket", "tenant=acme", metric)][0] >= 1.0  # type: ignore[operator]
    assert after[("drift:ticket", "tenant=beta", metric)][0] < 1.0  # type: ignore[operator]


def test_points_n_and_detectable_semantics() -> None:
    """drift n = scores in the span, mde n = scores in the baseline; the detectable drop
    shrinks with volume, and a metric without a direction has no points."""
    columns = _traffic(400.0, DAYS * 24, seed=15)
    now = LONGEST
    buckets = _buckets(columns, now)
    _, scored = columns.scores("faithfulness")
    ts, alive = columns.timestamps()
    span = alive & scored & (ts >= now - CONFIG.span_s) & (ts <= now)
    base = alive & scored & (ts >= now - LONGEST) & (ts < now - CONFIG.span_s)
    assert buckets[("drift:page", "", "faithfulness")][1] == int(span.sum())
    assert buckets[(DETECTABLE, "", "faithfulness")][1] == int(base.sum())
    big = buckets[(DETECTABLE, "", "hit_rate@1")][0]
    small = buckets[(DETECTABLE, "tenant=delta", "hit_rate@1")][0]
    assert big is not None and small is not None and 0 < big < small
    assert not any(m == "tokens" for _, _, m in buckets)
    assert ("drift:page", "", "latency") not in buckets  # page watches two metrics only
    assert ("drift:ticket", "", "latency") in buckets


def test_empty_and_short_baselines_give_n_zero_points() -> None:
    columns = _traffic(10.0, 25, seed=16)  # the span and one hour before it: 10 scores
    now = 25 * H
    buckets = _buckets(columns, now)
    assert buckets and all(value is None and n == 0 for value, n in buckets.values())
    empty = frame_from_columns(OutcomeColumns([m.name for m in FACTS], ["tenant"]), 0.0, now)
    points = drift_points_from_frame(empty, FACTS, now, LONGEST, CONFIG)
    assert {item.group.key for _, item in points} == {""}
    assert all(item.aggregate.value is None and item.aggregate.n == 0 for _, item in points)
    assert drift_points_from_frame(empty, FACTS, now, CONFIG.span_s, CONFIG) == []


def test_frame_rows_are_per_minute_sums() -> None:
    columns = _traffic(200.0, 5, seed=17)
    frame = frame_from_columns(columns, 0.0, 5 * H)
    assert frame.groups[0] == OVERALL
    rows = series(frame, "latency", group_for("tenant", "beta"))
    assert rows.size and np.all(np.diff(frame.bucket[rows]) > 0)
    values, scored = columns.scores("latency")
    ts, _ = columns.timestamps()
    beta = np.array([g == "beta" for g in _tenants(columns)])
    minute = np.floor(ts / BUCKET_S)
    for row in rows[:20].tolist():
        mask = scored & beta & (minute == frame.bucket[row])
        x = values[mask]
        assert frame.n[row] == x.size
        assert frame.total[row] == pytest.approx(x.sum(), rel=1e-12)
        assert frame.squares[row] == pytest.approx((x * x).sum(), rel=1e-12)
        assert frame.positives[row] == int((x > 0).sum())
        assert frame.log_total[row] == pytest.approx(log_values(x).sum(), rel=1e-12)
        assert frame.log_squares[row] == pytest.approx((log_values(x) ** 2).sum(), rel=1e-12)
    faith = series(frame, "faithfulness", OVERALL)
    _, judged = columns.scores("faithfulness")
    assert int(frame.n[faith].sum()) == int(judged.sum())  # skipped and failed: not scores
    assert series(frame, "nope", OVERALL).size == 0
    assert math.isclose(BUCKET_S, 60)


def _tenants(columns: OutcomeColumns) -> list[str]:
    """Each row's tenant, read back through the groups the columns yield."""
    ts, alive = columns.timestamps()
    out = [""] * ts.size
    for group, mask in columns.groups_in(alive):
        if group.key:
            for row in np.flatnonzero(mask).tolist():
                out[row] = group.labels["tenant"]
    return out


def test_skewed_means_are_normalised_in_the_worse_tail() -> None:
    """Means of 20 judge-like scores (Beta, mean 0.85, long tail towards worse): the plain
    standardised mean crosses 3.5 sd over three times as often as a normal; normalised for
    the skewness that `baseline` estimates from minute sums, close to the normal tail."""
    rng = np.random.default_rng(18)
    values = rng.beta(6.8, 1.2, (200_000, 20))
    minutes = SeriesRows(
        np.arange(20_000), np.full(20_000, 3), values[:20_000, :3].sum(axis=1),
        (values[:20_000, :3] ** 2).sum(axis=1), np.full(20_000, 3),
        np.zeros(20_000), np.zeros(20_000),
    )  # fmt: skip
    base = baseline(minutes, log=False)
    assert base is not None and base.skew == pytest.approx(-1.2, abs=0.1)
    x = -(values.mean(axis=1) - base.mu) / (base.sigma / math.sqrt(20))  # higher is better
    z = normalised(x, np.full(x.size, -base.skew / math.sqrt(20)))
    assert np.mean(x > 3.5) > 3 * 0.000233  # P(N(0, 1) > 3.5)
    assert np.mean(z > 3) == pytest.approx(0.00135, rel=0.3)
    assert np.mean(z > 2) == pytest.approx(0.02275, rel=0.1)
    for g in (-5.0, -0.9, -0.3, 0.3, 2.0):  # non-decreasing, reaching 3 sd either way
        z = normalised(np.linspace(-8, 8, 161), np.full(161, g))
        assert np.all(np.diff(z) >= 0) and z.min() <= -3 and z.max() >= 3
        if abs(g) <= 0.3:  # a mean of 16 or more values: increasing over +-3 sd
            assert np.all(np.diff(z[50:111]) > 0)


def test_a_frame_without_the_overall_group_still_has_its_series() -> None:
    """A reader's frame that lists only a tenant's group: the overall series is there,
    empty, and the tenant's rows are not read as another metric's."""
    columns = _traffic(200.0, DAYS * 24, seed=19)
    full = frame_from_columns(columns, 0.0, LONGEST)
    acme = full.groups.index(group_for("tenant", "acme"))
    keep = full.group == acme
    frame = BucketFrame(
        full.metrics, (full.groups[acme],), full.metric[keep], np.zeros(int(keep.sum()), np.int32),
        full.bucket[keep], full.n[keep], full.total[keep], full.squares[keep],
        full.positives[keep], full.log_total[keep], full.log_squares[keep],
    )  # fmt: skip
    made = drift_points_from_frame(frame, FACTS, LONGEST, LONGEST, CONFIG)
    points = {(w.name, i.group.key, i.aggregate.metric): i.aggregate for w, i in made}
    assert points[(DETECTABLE, "", "hit_rate@1")].n == 0
    expected = _buckets(columns, LONGEST)
    assert {g for _, g, _ in points} == {"", "tenant=acme"}
    for (window, group, metric), aggregate in points.items():
        if group == "tenant=acme":  # its own sums (the family, so h, is smaller here)
            assert aggregate.n == expected[(window, group, metric)][1] > 0
            assert aggregate.value is not None
