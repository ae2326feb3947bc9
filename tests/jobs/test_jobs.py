"""Scheduled jobs on real databases: incremental windows, locks, failures, skips."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine, func, select

from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import JobRunner, build_runner, definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import Settings, load_settings
from collector.store.models import JobState, MetricResult, Trace
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from exporters.prometheus import OperationsMetrics
from exporters.quality import ResultsCache
from tests.fixtures.db import create_postgres_database, drop_postgres_database
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def _env(engine: Engine, settings: Settings, **kw: Any) -> JobEnvironment:
    return JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        results=kw.pop("results", ResultsCache()),
        to_sample=kw.pop("to_sample", trace_to_sample),
        **kw,
    )


def _retrieval_trace(session: Any, i: int, ts: datetime, hit: bool, tenant: str) -> Trace:
    return add_trace(
        session,
        f"t{i}",
        ts,
        purposes=("real_users_benchmark",),
        contexts=[{"id": "d1"}, {"id": "d2"}],
        relevant_ids=["d1" if hit else "d9"],
        tags={"tenant": tenant},
    )


def _latest(engine: Engine, metric: str, window: str, group: str = "") -> MetricResult:
    with make_session_factory(engine)() as session:
        row = session.scalars(
            select(MetricResult)
            .where(
                MetricResult.metric == metric,
                MetricResult.window == window,
                MetricResult.group_key == group,
            )
            .order_by(MetricResult.id.desc())
            .limit(1)
        ).one()
    return row


def test_incremental_windows(engine: Engine, settings: Settings) -> None:
    factory = make_session_factory(engine)
    with factory() as session:
        # Two hours ago: a miss (acme); ten minutes ago: a hit (acme) and a hit (beta).
        _retrieval_trace(session, 1, NOW - timedelta(hours=2), False, "acme")
        _retrieval_trace(session, 2, NOW - timedelta(minutes=10), True, "acme")
        _retrieval_trace(session, 3, NOW - timedelta(minutes=10), True, "beta")
        session.commit()
    results = ResultsCache()
    defs = definitions(settings)
    job = IncrementalJob(defs["real_users_benchmark"], _env(engine, settings, results=results))
    report = job.run(NOW)
    assert (report.status, report.new_traces) == ("ok", 3)
    job.publish()
    assert _latest(engine, "hit_rate@1", "1h").value == 1.0
    assert _latest(engine, "hit_rate@1", "1h").n == 2
    day = _latest(engine, "hit_rate@1", "24h")
    assert (day.n, day.value) == (3, pytest.approx(2 / 3))
    assert day.ci_lower is not None and day.ci_lower < day.value < day.ci_upper
    acme = _latest(engine, "hit_rate@1", "24h", "tenant=acme")
    assert (acme.n, acme.value, acme.group_labels) == (2, 0.5, {"tenant": "acme"})
    assert any(p.metric == "mrr" and p.group_key == "tenant=beta" for p in results.snapshot())

    # Nothing new: nothing evaluated again.
    assert job.run(NOW + timedelta(seconds=30)).new_traces == 0

    # One new trace and one updated by feedback (the miss becomes a hit): only those two.
    with factory() as session:
        _retrieval_trace(session, 4, NOW + timedelta(minutes=1), False, "beta")
        old = session.scalars(select(Trace).where(Trace.trace_id == "t1")).one()
        old.relevant_ids = ["d1"]
        old.updated_at = NOW + timedelta(minutes=1)
        session.commit()
    later = NOW + timedelta(minutes=2)
    assert job.run(later).new_traces == 2
    day = _latest(engine, "hit_rate@1", "24h")
    assert (day.n, day.value) == (4, 0.75)

    # Slide: 55 minutes later the traces from 10 minutes before NOW left the 1h window.
    job.run(NOW + timedelta(minutes=55))
    hour = _latest(engine, "hit_rate@1", "1h")
    assert (hour.n, hour.value) == (1, 0.0)

    # A fresh process (new job object) loads the stored outcomes and evaluates nothing.
    again = IncrementalJob(defs["real_users_benchmark"], _env(engine, settings))
    report = again.run(NOW + timedelta(minutes=66))
    assert report.new_traces == 0
    assert _latest(engine, "hit_rate@1", "24h").n == 4


def test_traces_deleted_while_a_run_reads_them_are_not_an_error(
    engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retention may delete traces between finding them new and fetching their rows: the
    run evaluates nothing and succeeds (it used to fail on max() of no rows)."""
    with make_session_factory(engine)() as session:
        _retrieval_trace(session, 1, NOW - timedelta(minutes=10), True, "acme")
        session.commit()
    monkeypatch.setattr("collector.jobs.run.engine.fetch_rows", lambda *_a, **_k: [])
    job = IncrementalJob(definitions(settings)["real_users_benchmark"], _env(engine, settings))
    report = job.run(NOW)
    assert (report.status, report.new_traces) == ("ok", 0)


def test_an_empty_retrieval_is_a_miss_and_counted_on_schedule(
    engine: Engine, settings: Settings
) -> None:
    # Benchmark traces with ground truth: a hit, an empty retrieval (an outage), a miss;
    # and two traces outside the benchmark sample, one of them empty too.
    with make_session_factory(engine)() as session:
        ts = NOW - timedelta(minutes=10)
        bench = ("real_users_benchmark",)
        for trace_id, contexts in (
            ("hit", [{"id": "d1"}, {"id": "d2"}]),
            ("empty", []),
            ("miss", [{"id": "d3"}, {"id": "d2"}]),
        ):
            add_trace(session, trace_id, ts, purposes=bench, contexts=contexts, relevant_ids=["d1"])
        add_trace(session, "other", ts, contexts=[{"id": "d1"}])
        add_trace(session, "other-empty", ts, contexts=None)
        session.commit()
    defs = definitions(settings)
    for name in ("real_users_benchmark", "retrieval_health"):
        assert IncrementalJob(defs[name], _env(engine, settings)).run(NOW).status == "ok"
    # Seed 004 §4.3 in full, the empty retrieval counted as a miss (trec_eval -c).
    expected = {"hit_rate@1": 1 / 3, "mrr": 1 / 3, "ndcg@5": 1 / 3, "ndcg@10": 1 / 3}
    expected |= {f"recall@{k}": 1 / 3 for k in (1, 3, 5, 10)}
    expected |= {f"precision@{k}": 1 / 3 / k for k in (1, 3, 5, 10)}
    expected |= {"hit_rate@5": 1 / 3, "hit_rate@10": 1 / 3}
    for metric, value in expected.items():
        row = _latest(engine, metric, "1h")
        assert row.n == 3 and row.value == pytest.approx(value), metric
    # Over every trace of the window, sampled for the benchmark or not: 2 of 5 empty.
    empty = _latest(engine, "retrieval_empty_rate", "1h")
    assert (empty.n, empty.skipped) == (5, 0) and empty.value == pytest.approx(0.4)
    assert empty.ci_lower is not None and empty.ci_upper is not None
    assert empty.ci_lower < 0.4 < empty.ci_upper


def test_failing_job_is_counted_and_others_run(engine: Engine, settings: Settings) -> None:
    with make_session_factory(engine)() as session:
        now = datetime.now(UTC)
        _retrieval_trace(session, 1, now - timedelta(minutes=5), True, "acme")
        add_trace(session, "j1", now - timedelta(minutes=5), judge_decision=True, judge_label=True)
        session.commit()

    def broken(row: Trace) -> Any:
        raise RuntimeError("mapping exploded")

    env = _env(engine, settings)
    defs = definitions(settings)
    jobs = {
        "real_users_benchmark": IncrementalJob(
            defs["real_users_benchmark"], replace(env, to_sample=broken)
        ),
        "judge_pipeline": IncrementalJob(defs["judge_pipeline"], env),
    }
    registry = CollectorRegistry()
    runner = JobRunner(jobs, engine, operations=OperationsMetrics(registry))
    reports = {r.job: r for r in runner.run_many()}
    assert reports["real_users_benchmark"].status == "error"
    assert "mapping exploded" in reports["real_users_benchmark"].message
    assert reports["judge_pipeline"].status == "ok"
    value = registry.get_sample_value
    assert value("ragpulse_job_runs_total", {"job": "real_users_benchmark", "status": "error"}) == 1
    assert value("ragpulse_job_runs_total", {"job": "judge_pipeline", "status": "ok"}) == 1
    assert value("ragpulse_job_last_success_timestamp_seconds", {"job": "judge_pipeline"}) > 0


def test_no_judge_is_a_visible_skip(
    engine: Engine, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    runner = build_runner(settings, engine, _env(engine, settings), names=["rag_quality"])
    with caplog.at_level(logging.INFO, logger="collector.jobs.scheduler"):
        (report,) = runner.run_many()
    assert report.status == "skipped" and "no judge" in report.message
    # the log line says why, and what to set
    (line,) = [r.getMessage() for r in caplog.records if "job rag_quality" in r.getMessage()]
    assert "skipped (no judge configured: set RAGPULSE_JUDGE__MODELS" in line
    with make_session_factory(engine)() as session:
        state = session.get(JobState, "rag_quality")
        assert state is not None and state.last_status == "skipped"


def _slow(seconds: float) -> Any:
    def to_sample(row: Trace) -> Any:
        time.sleep(seconds)
        return trace_to_sample(row)

    return to_sample


def test_a_job_never_overlaps_itself(sqlite_url: str, settings: Settings) -> None:
    engine = make_engine(sqlite_url)
    with make_session_factory(engine)() as session:
        _retrieval_trace(session, 1, datetime.now(UTC), True, "acme")
        session.commit()
    defs = definitions(settings)
    job = IncrementalJob(defs["real_users_benchmark"], _env(engine, settings, to_sample=_slow(1.0)))
    runner = JobRunner({"real_users_benchmark": job}, engine)
    reports: list[str] = []
    threads = [
        threading.Thread(target=lambda: reports.append(runner.run("real_users_benchmark").status))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()
    assert sorted(reports) == ["locked", "ok"]


def test_two_instances_on_postgresql_run_a_job_once(
    settings: Settings, postgres_template: str
) -> None:
    url = create_postgres_database(template=postgres_template)
    try:
        engines = [make_engine(url), make_engine(url)]
        with make_session_factory(engines[0])() as session:
            for i in range(3):
                _retrieval_trace(session, i, datetime.now(UTC), True, "acme")
            session.commit()
        defs = definitions(settings)
        runners = [
            JobRunner(
                {
                    "real_users_benchmark": IncrementalJob(
                        defs["real_users_benchmark"], _env(e, settings, to_sample=_slow(0.5))
                    )
                },
                e,
            )
            for e in engines
        ]
        barrier = threading.Barrier(2)
        reports: list[Any] = []

        def go(runner: JobRunner) -> None:
            barrier.wait()
            reports.append(runner.run("real_users_benchmark"))

        threads = [threading.Thread(target=go, args=(r,)) for r in runners]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r.status for r in reports) == ["locked", "ok"]
        with make_session_factory(engines[0])() as session:
            runs = session.scalar(
                select(func.count(func.distinct(MetricResult.computed_at))).where(
                    MetricResult.job == "real_users_benchmark"
                )
            )
        assert runs == 1
        # The lock is released: the other instance runs it next time (and evaluates nothing).
        again = runners[1].run("real_users_benchmark")
        assert again.status == "ok"
        for e in engines:
            e.dispose()
    finally:
        drop_postgres_database(url)
