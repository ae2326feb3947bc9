"""A back-fill's steps: blocks on worker processes give what one process gives, and the
shortcuts the steps take (running sums, rows rolled from step to step, end minutes read
by batch, results written by COPY) give what the direct reads give."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, func, select

from collector.jobs.backfill import workers as backfill_workers
from collector.jobs.backfill.runner import backfill
from collector.jobs.backfill.workers import blocks, recomputed
from collector.jobs.buckets import store as bucket_store
from collector.jobs.buckets.frame import BucketFrame
from collector.jobs.buckets.frame_series import SeriesIndex
from collector.jobs.drift.sums import SeriesRows, baseline
from collector.jobs.run.result_store import write_steps
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import OVERALL, Window, group_for
from collector.settings import load_settings
from collector.store.models import MetricResult, Trace
from collector.store.session import make_engine, make_session_factory
from evaluators.aggregate import bootstrap_ci
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_retrieval_traces

JOB = "real_users_benchmark"
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
MINUTES = (0, 1, 2, 3, 5, 8, 9, 10, 14, 15, 20, 21, 22, 30)


def _times(count: int, step_s: float) -> list[datetime]:
    return [NOW - timedelta(seconds=step_s * (count - 1 - i)) for i in range(count)]


def test_blocks_start_where_one_process_recomputes_the_detectors() -> None:
    times = _times(40, 120)  # 2-minute steps, detectors every 5 minutes
    fresh = recomputed(times, 300.0)
    assert fresh[:6] == [True, False, False, True, False, False]
    parts = blocks(times, 300.0, 7)
    assert [t for part in parts for t in part] == times
    starts = {part[0] for part in parts}
    assert all(fresh[times.index(at)] for at in starts)
    assert all(len(part) >= 7 for part in parts[:-1])
    assert len(blocks(times, 0.0, 7)) == 6  # every step recomputes: cut every 7


def test_a_backlog_is_split_in_spans_of_as_many_traces_once_it_is_large(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(postgres_url)
    factory = make_session_factory(engine)
    with factory() as session:
        add_retrieval_traces(session, NOW, 900, 48, seed=3)
        session.commit()
        since = NOW - timedelta(hours=48)
        assert backfill_workers.spans(session, since, 3) == [(since, None)]  # 900 < 3 x 40,000
        monkeypatch.setattr(backfill_workers, "PARALLEL_SCORING", 100)
        parts = backfill_workers.spans(session, since, 3)
        assert len(parts) == 3 and parts[0][0] == since and parts[-1][1] is None
        assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))
        counts = [
            session.scalar(
                select(func.count()).where(
                    Trace.timestamp >= start, *([Trace.timestamp < end] if end else [])
                )
            )
            for start, end in parts
        ]
        assert sum(counts) == 900 and max(counts) - min(counts) <= 3
    engine.dispose()


def _results(url: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        rows = session.scalars(select(MetricResult).where(MetricResult.job == JOB)).all()
        out = {
            (r.computed_at, r.metric, r.window, r.group_key): (
                r.value,
                r.n,
                r.skipped,
                r.errors,
                r.ci_lower,
                r.ci_upper,
                r.skip_reasons,
                r.window_start,
                r.window_end,
                r.signature,
            )
            for r in rows
        }
    engine.dispose()
    return out


@pytest.mark.parametrize("every_s", [0.0, 1500.0])
def test_steps_on_worker_processes_equal_one_process(
    two_databases: tuple[str, str], every_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same traces in two PostgreSQL databases, back-filled by one process and by
    three workers (scoring a shard each, then the steps in blocks): the same rows and
    counts, the same values (to the last bits of the sums, which the workers add to in
    either order), the same points emitted in time order; the detectors recomputed at
    every step, then every 25 minutes at 10-minute steps (the workers' blocks start where
    one process recomputes)."""
    monkeypatch.setattr(backfill_workers, "PARALLEL_SCORING", 0)  # split even 1,500 traces
    times = _times(48, 600)
    emitted: dict[int, list[tuple[datetime, list[Any]]]] = {}
    for workers, url in zip((1, 3), two_databases, strict=True):
        engine = make_engine(url)
        with make_session_factory(engine)() as session:
            add_retrieval_traces(session, NOW, 1500, 9 * 24, seed=7)
            session.commit()
        settings = load_settings(database={"url": url}, scheduler={"jobs": [JOB]})
        env = job_environment(settings, engine, embedder=None, judge=None)
        assert env.drift is not None
        env = replace(env, drift=replace(env.drift, every_s=every_s))
        out: list[tuple[datetime, list[Any]]] = []
        report = backfill(
            definitions(settings)[JOB],
            env,
            times,
            emit=lambda at, points, out=out: out.append((at, points)),
            workers=workers,
        )
        assert report.status == "ok" and report.steps == len(times)
        emitted[workers] = out
        engine.dispose()
    one, three = (_results(url) for url in two_databases)
    assert len(one) > 48 * 100
    assert one.keys() == three.keys()
    for key, want in one.items():
        _same(three[key], want, key)
    assert [at for at, _ in emitted[1]] == times == [at for at, _ in emitted[3]]
    for (_, mine), (_, theirs) in zip(emitted[3], emitted[1], strict=True):
        assert [p.key for p in mine] == [p.key for p in theirs]
        for got, want in zip(mine, theirs, strict=True):
            _same(
                (got.value, got.n, got.ci_lower, got.ci_upper),
                (want.value, want.n, want.ci_lower, want.ci_upper),
                got.key,
            )


def _same(got: tuple[Any, ...], want: tuple[Any, ...], key: Any) -> None:
    """Equal, floats to 1e-12 (sums added in another order differ in their last bits)."""
    assert len(got) == len(want), key
    for mine, theirs in zip(got, want, strict=True):
        if isinstance(theirs, float) and isinstance(mine, float):
            assert mine == pytest.approx(theirs, rel=1e-12, abs=1e-15), key
        else:
            assert mine == theirs, key


def _frame(rng: np.random.Generator) -> BucketFrame:
    """Two metrics x two groups of per-minute sums, in no particular row order."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("metric", "group", "bucket")}
    sums: dict[str, list[np.ndarray]] = {k: [] for k in SeriesRows.__slots__ if k != "bucket"}
    for metric in range(2):
        for group in range(2):
            minutes = np.sort(rng.choice(np.arange(20_000, 30_000), 3_000, replace=False))
            n = rng.integers(1, 30, minutes.size)
            values = [rng.lognormal(7.0, 0.4, k) if metric else rng.beta(8, 2, k) for k in n]
            logs = [np.log(v) for v in values]
            parts["metric"].append(np.full(minutes.size, metric))
            parts["group"].append(np.full(minutes.size, group))
            parts["bucket"].append(minutes)
            sums["n"].append(n)
            sums["total"].append(np.array([v.sum() for v in values]))
            sums["squares"].append(np.array([(v * v).sum() for v in values]))
            sums["positives"].append(n.copy())
            sums["log_total"].append(np.array([v.sum() for v in logs]))
            sums["log_squares"].append(np.array([(v * v).sum() for v in logs]))
    shuffle = rng.permutation(12_000)
    columns = {k: np.concatenate(v)[shuffle] for k, v in {**parts, **sums}.items()}
    return BucketFrame(
        metrics=("faithfulness", "latency_ms"),
        groups=(OVERALL, group_for("tenant", "acme")),
        metric=columns["metric"].astype(np.int32),
        group=columns["group"].astype(np.int32),
        bucket=columns["bucket"].astype(np.int64),
        n=columns["n"].astype(np.int64),
        total=columns["total"],
        squares=columns["squares"],
        positives=columns["positives"].astype(np.int64),
        log_total=columns["log_total"],
        log_squares=columns["log_squares"],
    )


def test_running_sums_give_every_spans_baseline_as_its_rows_do() -> None:
    frame = _frame(np.random.default_rng(5))
    index = SeriesIndex(frame)
    for first, split in ((19_000, 25_000), (21_234, 28_000), (26_000, 26_500)):
        spans = index.spans(first, split, 31_000)
        for i, key in enumerate(index.keys.tolist()):
            rows = np.flatnonzero(
                (frame.metric * 2 + frame.group == key)
                & (frame.bucket >= first)
                & (frame.bucket < split)
            )
            rows = rows[np.argsort(frame.bucket[rows])]
            direct = SeriesRows(*(getattr(frame, name)[rows] for name in SeriesRows.__slots__))
            lo, hi = int(spans.first[i]), int(spans.split[i])
            assert hi - lo == rows.size
            for name in SeriesRows.__slots__[1:]:
                got = float(index.sums(name, spans.first, spans.split)[i])
                assert got == pytest.approx(float(getattr(direct, name).sum()), rel=1e-12)
            for log in (False, True):
                want = baseline(direct, log)
                total = direct.log_total if log else direct.total
                mu = float(total.sum()) / float(direct.n.sum())
                third = float(np.sum((total - direct.n * mu) ** 3))
                assert index.third(lo, hi, mu, log) == pytest.approx(third, rel=1e-12)
                assert want is not None and want.skew != 0.0


def _scored(url: str, count: int, hours: float, seed: int) -> tuple[Engine, Any]:
    """`count` traces over the `hours` before NOW, scored (a back-fill of one step)."""
    engine = make_engine(url)
    factory = make_session_factory(engine)
    with factory() as session:
        add_retrieval_traces(session, NOW, count, hours, seed=seed)
        session.commit()
    settings = load_settings(database={"url": url}, scheduler={"jobs": [JOB]})
    env = job_environment(settings, engine, embedder=None, judge=None)
    assert backfill(definitions(settings)[JOB], env, [NOW], workers=1).status == "ok"
    return engine, factory


def test_end_minutes_read_by_batch_equal_one_query_each(postgres_url: str) -> None:
    engine, factory = _scored(postgres_url, 900, 3, seed=13)
    ends = [(NOW - timedelta(minutes=m)).timestamp() for m in MINUTES] + [
        (NOW - timedelta(minutes=4, seconds=20)).timestamp()  # off the minute
    ]
    with factory() as session:
        batch = bucket_store.after_ends(session, JOB, ends)
        for end in ends:
            one = bucket_store.after_end(session, JOB, end)
            assert dict(batch[end].items()) == dict(one.items())
            assert dict(batch[end].bin_items()) == dict(one.bin_items())
        assert sum(len(d) for d in batch.values()) > 50
    engine.dispose()


def test_results_written_by_copy_read_back_as_inserted(db_url: str) -> None:
    from collector.jobs.windows.aggregate import WindowAggregate
    from evaluators.aggregate import Aggregate

    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    tenant = group_for("tenant", 'a "quoted"\ttab\\slash')
    points = [
        (Window("1h", 3600), WindowAggregate(OVERALL, Aggregate("mrr", 0.1 + 0.2, 7, 0.1, 0.5))),
        (
            Window("24h", 86400),
            WindowAggregate(
                tenant,
                Aggregate(
                    "mrr",
                    None,
                    0,
                    skipped=3,
                    errors=1,
                    skip_reasons={"no labels": 3},
                    error_types={"timeout": 1},
                ),
            ),
        ),
    ]
    with factory() as session:
        assert write_steps(session, JOB, [(NOW, points)], timedelta(days=30)) == 2
        session.commit()
    with factory() as session:
        rows = {r.window: r for r in session.scalars(select(MetricResult))}
    assert rows["1h"].value == 0.1 + 0.2 and rows["1h"].ci_upper == 0.5
    assert rows["1h"].group_labels is None and rows["1h"].computed_at == NOW
    assert rows["24h"].group_key == tenant.key and rows["24h"].value is None
    assert rows["24h"].group_labels == dict(tenant.labels)
    assert rows["24h"].skip_reasons == {"no labels": 3, "error: timeout": 1}
    assert rows["24h"].window_start == NOW - timedelta(days=1)
    engine.dispose()


@pytest.mark.parametrize("n", [2, 37, 500, 501])
def test_a_cached_bootstrap_draws_what_a_fresh_one_draws(n: int) -> None:
    values = np.sort(np.random.default_rng(n).random(n))
    first = bootstrap_ci(values, 0)
    again = bootstrap_ci(values[::-1].copy()[::-1], 0)  # cached matrix
    idx = np.random.default_rng(0).integers(0, n, size=(1000, n))
    tail = (1.0 - 0.95) / 2.0 * 100.0  # as the evaluators compute it (not exactly 2.5)
    lo, hi = np.percentile(values[idx].mean(axis=1), [tail, 100.0 - tail])
    assert first == again == (float(lo), float(hi))
